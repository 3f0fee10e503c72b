"""Keep a long-lived process below the kernel's limit on memory mappings.

On a CPU backend XLA JIT-links every program it compiles into the process,
and every linked program holds memory mappings of its own (the switching
code's programs for one matrix width: about 150; ``tests/test_switching.py``
alone: 12,500). JAX's in-memory caches keep every program of every jitted
function alive, so a process that compiles thousands of programs (a test
worker, a notebook kernel running a whole study) only ever adds mappings.
Linux caps them per process at ``vm.max_map_count`` (65,530 by default).
At the cap the next compilation (or the serialisation of a program for the
persistent cache, which links it a second time) fails to map its code, and
jaxlib 0.10.2 turns that error into a C++ exception whose unwinding faults
in libgcc's ``_Unwind_Find_FDE``: the process dies of a segmentation fault
instead of raising (reproduced with ``python -m benchmarks.map_limit``;
``benchmarks/RESULTS.md``).

:func:`relieve` is the guard. Called on the way into mdlnb's compiled code
(:func:`mdlnb.infra._xla_cache.ensure`), it counts the process's mappings
(``/proc/self/maps``: 0.5 ms at 1,000 mappings, 12 ms at 30,000) once
:data:`PROGRAMS` programs have been compiled or loaded since the last count
(JAX's backend-compile event, :mod:`jax.monitoring`: only a program adds
mappings), and past :data:`FRACTION` of the limit it drops JAX's compiled
programs (``jax.clear_caches()``), which unmaps every program nothing else
holds. The next call of each program recompiles it or, far more often,
reads it from the persistent compilation cache. Nothing happens while a
function is being traced (``step`` may be called under ``jit``), or where
``/proc`` is absent (not Linux: no such count to keep).
"""

from __future__ import annotations

import logging
import threading

logger = logging.getLogger("mdlnb")

MAPS_FILE = "/proc/self/maps"
LIMIT_FILE = "/proc/sys/vm/max_map_count"
FRACTION = 0.5  # drop JAX's programs past this share of vm.max_map_count
PROGRAMS = 8  # programs compiled or loaded between two counts (a count is O(mappings))
COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"  # jax._src.dispatch's

_lock = threading.Lock()
_state = {"programs": 0, "counted_at": -PROGRAMS, "listening": False, "relieved": 0, "peak": 0}


def count() -> int | None:
    """Memory mappings the process holds now (``None`` where ``/proc`` is absent)."""
    try:
        with open(MAPS_FILE, "rb") as f:
            return f.read().count(b"\n")
    except OSError:
        return None


def limit() -> int | None:
    """The kernel's cap on one process's mappings, ``vm.max_map_count`` (``None``
    where it cannot be read)."""
    try:
        with open(LIMIT_FILE) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def stats() -> dict:
    """``{"count", "limit", "peak", "relieved"}``: mappings now, the cap, the
    most seen by a check, and how many times :func:`relieve` dropped programs."""
    return {
        "count": count(),
        "limit": limit(),
        "peak": _state["peak"],
        "relieved": _state["relieved"],
    }


def _tracing() -> bool:
    try:
        from jax._src import core

        return not core.trace_state_clean()
    except (ImportError, AttributeError):  # pragma: no cover - another JAX version
        return False


def _on_event(event: str, duration: float, **kwargs) -> None:
    if event == COMPILE_EVENT:
        _state["programs"] += 1


def _listen() -> None:
    import jax

    with _lock:
        if not _state["listening"]:
            jax.monitoring.register_event_duration_secs_listener(_on_event)
            _state["listening"] = True


def relieve(*, force: bool = False) -> bool:
    """Drop JAX's compiled programs if the process holds more than
    ``FRACTION`` of ``vm.max_map_count`` mappings; returns whether it did.

    Counts only once ``PROGRAMS`` programs were compiled or loaded since the
    last count (the first call counts), unless ``force``.
    """
    if not _state["listening"]:
        _listen()
    if not force and _state["programs"] - _state["counted_at"] < PROGRAMS:
        return False
    with _lock:
        if not force and _state["programs"] - _state["counted_at"] < PROGRAMS:
            return False
        _state["counted_at"] = _state["programs"]
        n, cap = count(), limit()
        if n is None or cap is None:
            return False
        _state["peak"] = max(_state["peak"], n)
        if n <= FRACTION * cap or _tracing():
            return False
        import jax

        jax.clear_caches()
        _state["relieved"] += 1
        logger.info(
            "mdlnb: %d of the %d memory mappings a process may hold (vm.max_map_count) "
            "in use, %d after dropping JAX's compiled programs (they are recompiled or read "
            "from the compilation cache when next needed)",
            n,
            cap,
            count() or 0,
        )
        return True
