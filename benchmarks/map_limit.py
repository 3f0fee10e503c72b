"""The test workers' segfault reproduced: a process at ``vm.max_map_count``.

    python -m benchmarks.map_limit                      # 5 runs guard off, 5 guard on
    python -m benchmarks.map_limit --runs 3 --headroom 6000 --widths 80

Each run is a child process that first fills its memory-map table up to
``limit - headroom`` with inert one-page mappings (standing in for what the
programs of a thousand earlier tests leave in a long-lived xdist worker), then
calls ``mdlnb.switching.codelength`` on ``--widths`` matrix widths K = 2, 3, ...,
each compiling programs no earlier call compiled (about 150 mappings a width).
With the guard off (:func:`mdlnb.infra._mapguard.relieve` replaced by a no-op) the
run reaches the cap and the next compilation kills the process (SIGSEGV in
libgcc's unwinder, the exception jaxlib throws for the failed mapping); with
it on, JAX's programs are dropped once the count passes half the cap and the
run ends. A child killed by a signal counts as a crash. Prints one line per
run and a summary.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import subprocess
import sys
import time

PAGE = 4096


def fill(headroom: int) -> int:
    """Fill this process's map table to ``vm.max_map_count - headroom`` with
    one-page mappings (a region whose every other page is made inaccessible,
    so the kernel cannot merge them); returns the count reached."""
    from mdlnb.infra import _mapguard

    cap, now = _mapguard.limit(), _mapguard.count()
    if cap is None or now is None:
        raise RuntimeError("no /proc/self/maps or vm.max_map_count here (not Linux)")
    n = max(0, (cap - headroom - now) // 2)  # each protected page splits off 2 mappings
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int]
    libc.mmap.argtypes += [ctypes.c_int, ctypes.c_long]
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    if n:
        base = libc.mmap(None, 2 * n * PAGE, 0x1 | 0x2, 0x02 | 0x20, -1, 0)  # RW, private|anon
        if base in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "mmap")
        for i in range(n):
            libc.mprotect(base + 2 * i * PAGE, PAGE, 0)
    return _mapguard.count() or 0


def work(widths: int) -> None:
    """``switching.codelength`` (fixed share, the default) on ``widths`` new widths."""
    import numpy as np

    import mdlnb.switching as sw

    rng = np.random.default_rng(0)
    for k in range(2, 2 + widths):
        sw.codelength(rng.exponential(1.0, size=(40, k)).astype(np.float32))


def _child(headroom: int, widths: int, guard: bool) -> None:
    import faulthandler

    faulthandler.enable()
    from mdlnb.infra import _mapguard

    if not guard:
        _mapguard.relieve = lambda **_: False  # type: ignore[assignment]
    filled = fill(headroom)
    t = time.perf_counter()
    work(widths)
    out = dict(_mapguard.stats(), filled=filled, seconds=round(time.perf_counter() - t, 1))
    print(json.dumps(out), flush=True)


def run_child(headroom: int, widths: int, guard: bool, timeout: float = 600) -> dict:
    """One child run: ``{"guard", "rc", "crashed", ...the child's stats}``."""
    code = (
        "from benchmarks.map_limit import _child; "
        f"_child({int(headroom)}, {int(widths)}, {bool(guard)})"
    )
    p = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout
    )
    row = {"guard": guard, "rc": p.returncode, "crashed": p.returncode < 0}
    last = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if last:
        row.update(json.loads(last[-1]))
    elif not row["crashed"]:
        row["stderr"] = p.stderr[-2000:]
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="runs per guard setting")
    ap.add_argument("--headroom", type=int, default=6000, help="mappings left below the cap")
    ap.add_argument("--widths", type=int, default=80, help="matrix widths compiled per run")
    a = ap.parse_args(argv)
    crashes = {False: 0, True: 0}
    for guard in (False, True):
        for _ in range(a.runs):
            row = run_child(a.headroom, a.widths, guard)
            crashes[guard] += row["crashed"]
            print(json.dumps(row), flush=True)
    for guard in (False, True):
        print(f"guard {'on ' if guard else 'off'}: {crashes[guard]} crashes in {a.runs} runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
