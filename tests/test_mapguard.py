"""The memory-map guard (mdlnb.infra._mapguard): a process that compiles program after
program stays below vm.max_map_count, where jaxlib 0.10.2 segfaults."""

import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import pytest

from mdlnb.infra import _mapguard

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
linux = pytest.mark.skipif(
    _mapguard.limit() is None or _mapguard.count() is None, reason="no /proc map counts here"
)


@linux
def test_count_and_limit_read_what_another_process_reads():
    other = subprocess.run(
        ["cat", f"/proc/{os.getpid()}/maps"], capture_output=True, text=True, check=True
    )
    assert abs(_mapguard.count() - other.stdout.count("\n")) <= 16  # maps move between reads
    assert _mapguard.limit() == int(open("/proc/sys/vm/max_map_count").read())


@linux
def test_programs_are_dropped_only_past_the_fraction_and_never_while_tracing(monkeypatch):
    monkeypatch.setitem(_mapguard._state, "relieved", 0)  # the summary's count stays true
    cleared = []
    monkeypatch.setattr(jax, "clear_caches", lambda: cleared.append(1))
    monkeypatch.setattr(_mapguard, "limit", lambda: 1000)
    monkeypatch.setattr(_mapguard, "count", lambda: 500)  # = FRACTION · cap: not past it
    assert not _mapguard.relieve(force=True) and not cleared
    monkeypatch.setattr(_mapguard, "count", lambda: 501)
    assert _mapguard.relieve(force=True) and cleared == [1]
    seen = []
    jax.jit(lambda x: seen.append(_mapguard.relieve(force=True)) or x + 1)(1.0)
    assert seen == [False] and cleared == [1]  # inside a trace: nothing dropped


@linux
def test_a_count_waits_for_programs(monkeypatch):
    """Between two counts, PROGRAMS programs must have been compiled (or loaded)."""
    _mapguard.relieve(force=True)  # a count now; the listener is registered
    counts = []
    real = _mapguard.count
    monkeypatch.setattr(_mapguard, "count", lambda: counts.append(1) or real())
    assert not _mapguard.relieve() and not counts
    for i in range(_mapguard.PROGRAMS):
        jax.jit(lambda x, i=i: x * (i + 0.5) + i)(jnp.ones(3 + i))  # a new program each
    _mapguard.relieve()
    assert counts  # counted once enough programs came


@linux
def test_a_process_near_the_cap_compiles_on_with_the_guard():
    """benchmarks/map_limit.py's run: the map table filled to 3,000 below the cap,
    then 30 new matrix widths (~4,500 mappings of programs: without the guard the
    run dies of SIGSEGV, benchmarks/RESULTS.md). With the guard the process
    ends, its programs dropped on the way, never past the cap."""
    sys.path.insert(0, ROOT)
    from benchmarks.map_limit import run_child

    row = run_child(headroom=3000, widths=30, guard=True)
    assert row["rc"] == 0, row
    assert row["relieved"] >= 1 and row["peak"] < row["limit"]
