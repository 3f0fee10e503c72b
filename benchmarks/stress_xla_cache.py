"""Stress the persistent compilation cache the way the switching tests use it, and
count native crashes per 1,000 compilations.

    python -m benchmarks.stress_xla_cache                       # the default matrix
    python -m benchmarks.stress_xla_cache --rounds 6 --procs 2 \\
        --workload rowsplit --threads pool --store mdlnb --keep all

Each round starts ``--procs`` child processes at once on one cache directory
(fresh per round, or ``--cache filled``: one filled by an earlier round). A
child runs ``--units`` units of work, each compiling programs no earlier unit
compiled, and prints its count of backend compilations after each unit; a child
killed by a signal is a crash (its last count and its fault-handler trace are
kept under ``--log``), not the end of the run.

Workloads:

* ``rowsplit``: ``mdlnb.switching.codelength(L, "bayes")`` on L of 4·MIN_ROWS + 64·j
  rows (the row-split pass: ``_totals`` and four ``_part`` programs, first called
  from the pool's threads at once), exactly what the crashing tests ran;
* ``synthetic``: ``--nthreads`` threads released by a barrier, each calling a jitted
  ``lax.fori_loop`` program of its own for the first time.

Conditions bisected: ``--threads pool|serial`` (serial: the row-split pool's
``map`` runs in the calling thread), ``--store mdlnb|jax|off`` (mdlnb's
``AtomicFileCache``, JAX's own ``LRUCache`` on the same directory, no persistent
cache), ``--keep all|default`` (``min_compile_time_secs = 0`` and
``min_entry_size_bytes = -1``, or JAX's 1 s / 0 bytes), ``--cache fresh|filled``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


# ----------------------------------------------------------------------------- child


def _child(a: argparse.Namespace) -> int:
    import faulthandler

    faulthandler.enable()
    if a.store == "off":
        os.environ["MDLNB_XLA_CACHE"] = "0"
    import jax

    if a.store == "jax":
        jax.config.update("jax_compilation_cache_dir", str(Path(a.dir) / "jax"))
    from jax import monitoring

    from mdlnb import _xla_cache

    _xla_cache.ensure()
    if a.keep == "all":
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    else:
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    count = {"compiles": 0, "writes": 0}
    lock = threading.Lock()

    def on_duration(event, duration, **_):
        if event == "/jax/core/compile/backend_compile_duration":
            with lock:
                count["compiles"] += 1

    def on_event(event, **_):
        if event == "/jax/compilation_cache/cache_misses":
            with lock:
                count["writes"] += 1

    monitoring.register_event_duration_secs_listener(on_duration)
    monitoring.register_event_listener(on_event)
    unit = {
        "rowsplit": _rowsplit_unit,
        "synthetic": _synthetic_unit,
        "free": _free_unit,
        "overlap": _overlap_unit,
    }[a.workload]
    if a.threads == "serial":
        from mdlnb.switching import _rowsplit

        class _Serial:
            @staticmethod
            def map(f, it):
                return map(f, it)

        _rowsplit._pool = lambda: _Serial()
    for j in range(a.units):
        unit(j, a)
        print(json.dumps({"unit": j, **count}), flush=True)
    return 0


def _rowsplit_unit(j: int, a: argparse.Namespace) -> None:
    import numpy as np

    from mdlnb import switching as sw
    from mdlnb.switching import _rowsplit

    n = 4 * _rowsplit.MIN_ROWS + 64 * (j + a.offset)  # new part shapes: new programs
    L = np.random.default_rng(j).exponential(1.0, size=(n, 3)).astype(np.float32)
    res = sw.codelength(L, "bayes")
    assert np.isfinite(res.total_nats)


def _program(salt: float, kernels: int):
    """A jitted program of its own (``salt`` is a constant in it: a new cache key) with
    ``kernels`` fusions split by reductions inside a loop, a cumulative sum and a sort
    (a comparator), like the switching kernels' mix."""
    import jax
    import jax.numpy as jnp

    @jax.jit
    def f(x):
        def body(t, s):
            for k in range(kernels):
                s = jnp.tanh(s * (salt + k) + jnp.roll(s, k + 1, axis=0))
                s = s - jnp.max(s, axis=0) + t
            return s

        s = jax.lax.fori_loop(0, 8, body, x)
        return jnp.sort(jnp.cumsum(s, axis=0), axis=0).sum()

    return f


def _free_unit(j: int, a: argparse.Namespace) -> None:
    """``a.nthreads`` threads, each compiling (and caching) ``a.per_thread`` programs
    of its own one after the other, without waiting for the others."""
    import jax
    import jax.numpy as jnp

    x = jnp.ones((64, 8), jnp.float32)

    def run(i):
        for r in range(a.per_thread):
            salt = 1.0 + 1e-3 * (j + a.offset) + 1e-6 * (i * a.per_thread + r)
            jax.block_until_ready(_program(salt, a.kernels)(x))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(a.nthreads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def _overlap_unit(j: int, a: argparse.Namespace) -> None:
    """The calling thread compiles (and caches) ``a.per_thread`` new programs while
    ``a.nthreads`` other threads keep executing compiled loops: compilation and cache
    writes overlapping executions, as when a chunked pass compiles its last chunk's
    program while the earlier chunks still run (asynchronous dispatch)."""
    import jax
    import jax.numpy as jnp

    x = jnp.ones((256, 64), jnp.float32)
    busy = _program(0.5, a.kernels)
    jax.block_until_ready(busy(x))
    stop = threading.Event()

    def execute():
        while not stop.is_set():
            jax.block_until_ready(busy(x))

    threads = [threading.Thread(target=execute) for _ in range(a.nthreads)]
    for t in threads:
        t.start()
    try:
        small = jnp.ones((64, 8), jnp.float32)
        for r in range(a.per_thread):
            salt = 2.0 + 1e-3 * (j + a.offset) + 1e-6 * r
            _program(salt, a.kernels)(small)  # dispatched, not awaited: the next compiles
    finally:
        stop.set()
        for t in threads:
            t.join()


def _synthetic_unit(j: int, a: argparse.Namespace) -> None:
    import jax
    import jax.numpy as jnp

    salt = 1.0 + 1e-3 * (j + a.offset)

    def make(i):
        c = salt + 1e-6 * i  # a constant in the program: a new cache key

        @jax.jit
        def f(x):
            def body(t, s):  # ``a.kernels`` fusions split by reductions: many kernels
                for k in range(a.kernels):
                    s = jnp.tanh(s * (c + k) + jnp.roll(s, k + 1, axis=0))
                    s = s - jnp.max(s, axis=0) + t
                return s

            return jax.lax.fori_loop(0, 8, body, x).sum()

        return f

    fns = [make(i) for i in range(a.nthreads)]
    x = jnp.ones((256, 8), jnp.float32)
    barrier = threading.Barrier(a.nthreads)

    def run(f):
        barrier.wait()
        jax.block_until_ready(f(x))

    threads = [threading.Thread(target=run, args=(f,)) for f in fns]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


# ----------------------------------------------------------------------------- parent


CRASH_SIGNALS = {signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT, signal.SIGILL, signal.SIGFPE}


def _round(a: argparse.Namespace, r: int, root: Path, log: Path, deadline: float) -> list[dict]:
    cache = root / (f"round{r}" if a.cache == "fresh" else "filled")
    cache.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, MDLNB_CACHE=str(cache / "mdlnb"), PYTHONFAULTHANDLER="1")
    # every round runs the same units: on a fresh directory each (fresh), or on one the
    # first round filled (filled)
    cmd = [
        sys.executable,
        "-m",
        "benchmarks.stress_xla_cache",
        "--child",
        "--dir",
        str(cache),
        "--workload",
        a.workload,
        "--threads",
        a.threads,
        "--store",
        a.store,
        "--keep",
        a.keep,
        "--units",
        str(a.units),
        "--nthreads",
        str(a.nthreads),
        "--kernels",
        str(a.kernels),
        "--per-thread",
        str(a.per_thread),
        "--offset",
        str(a.offset),
    ]
    procs = []
    for p in range(a.procs):
        out = open(log / f"r{r}-p{p}.out", "w")
        err = open(log / f"r{r}-p{p}.err", "w")
        procs.append(
            (
                subprocess.Popen(cmd, env=env, stdout=out, stderr=err, text=True, cwd=HERE.parent),
                out,
                err,
            )
        )
    results = []
    for proc, out, err in procs:
        try:
            proc.wait(timeout=max(deadline - time.monotonic(), 1))
        except subprocess.TimeoutExpired:  # out of time: stopped, not crashed
            proc.terminate()
            proc.wait()
        out.close()
        err.close()
        lines = [
            json.loads(x) for x in Path(out.name).read_text().splitlines() if x.startswith("{")
        ]
        last = lines[-1] if lines else {"unit": -1, "compiles": 0, "writes": 0}
        rc = proc.returncode
        sig = signal.Signals(-rc) if rc < 0 else None
        results.append(
            {
                "rc": rc,
                "signal": sig.name if sig else None,
                "crash": sig in CRASH_SIGNALS,
                "units": last["unit"] + 1,
                "compiles": last["compiles"],
                "writes": last["writes"],
                "stderr": err.name,
            }
        )
        if rc == 0:
            os.unlink(out.name)
            os.unlink(err.name)
    if a.cache == "fresh":
        shutil.rmtree(cache, ignore_errors=True)
    return results


def _parent(a: argparse.Namespace) -> dict:
    log = Path(a.log)
    log.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="mdlnb-stress-", dir=a.tmp))
    t0 = time.perf_counter()
    deadline = time.monotonic() + a.seconds
    runs = []
    try:
        for r in range(a.rounds):
            if time.monotonic() >= deadline:
                break
            res = _round(a, r, root, log, deadline)
            runs += res
            print(
                f"round {r}: "
                + ", ".join(
                    f"rc={x['rc']} units={x['units']} compiles={x['compiles']}" for x in res
                )
                + "".join(f"  CRASH ({x['signal']}) {x['stderr']}" for x in res if x["crash"]),
                flush=True,
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    compiles = sum(x["compiles"] for x in runs)
    crashes = [x for x in runs if x["crash"]]
    summary = {
        "config": {
            k: getattr(a, k)
            for k in (
                "workload",
                "threads",
                "store",
                "keep",
                "cache",
                "procs",
                "rounds",
                "units",
                "nthreads",
                "kernels",
                "per_thread",
            )
        },
        "processes": len(runs),
        "compiles": compiles,
        "writes": sum(x["writes"] for x in runs),
        "crashes": len(crashes),
        "signals": sorted({x["signal"] for x in crashes}),
        "per_1000_compiles": round(1000 * len(crashes) / max(compiles, 1), 3),
        "wall_s": round(time.perf_counter() - t0, 1),
    }
    print(json.dumps(summary), flush=True)
    return summary


def _args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--dir", help=argparse.SUPPRESS)
    p.add_argument(
        "--workload", choices=["rowsplit", "synthetic", "free", "overlap"], default="rowsplit"
    )
    p.add_argument("--threads", choices=["pool", "serial"], default="pool")
    p.add_argument("--store", choices=["mdlnb", "jax", "off"], default="mdlnb")
    p.add_argument("--keep", choices=["all", "default"], default="all")
    p.add_argument("--cache", choices=["fresh", "filled"], default="fresh")
    p.add_argument("--procs", type=int, default=2)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--units", type=int, default=6)
    p.add_argument("--nthreads", type=int, default=4)
    p.add_argument("--kernels", type=int, default=12, help="synthetic: fusions per program")
    p.add_argument("--per-thread", type=int, default=10, help="free: programs per thread and unit")
    p.add_argument("--offset", type=int, default=0, help="first unit's index (new programs)")
    p.add_argument(
        "--seconds",
        type=float,
        default=600,
        help="stop (SIGTERM, not counted as a crash) after this long",
    )
    p.add_argument("--log", default=str(HERE.parent / "build" / "stress"))
    p.add_argument("--tmp", default=None)
    return p.parse_args(argv)


if __name__ == "__main__":
    args = _args(sys.argv[1:])
    raise SystemExit(_child(args) if args.child else (_parent(args) and 0))
