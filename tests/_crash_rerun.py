"""A test whose xdist worker *process* died is run once more, on a new worker.

Why: six times in about twenty-five runs of the suite from an empty compilation
cache (2026-11-24 … 11-27), an xdist worker died of a segmentation fault inside
jaxlib 0.10.2: five times in ``executable.serialize()`` while JAX wrote a freshly
compiled program to the persistent compilation cache
(``jax._src.compilation_cache.put_executable_and_time``), once while it compiled
one (``backend_compile_and_load``); every time in a test of the switching code
(``tests/test_switching.py`` five times, ``tests/test_switching_speed.py`` once;
a different test each time; each passes on its own). It is native code, out of
mdlnb's reach, and no stress run reproduced it (``benchmarks/RESULTS.md``; the
switching, aligned and row-split tests also passed under glibc's checking
allocator, ``MALLOC_CHECK_=3``). A crash is a lost process, not a
failed assertion, so rerunning it proves nothing away: the rerun must pass
on its own, and the crash is listed in the terminal summary.

Only crashes are rerun (a failed assertion or an error is reported as usual),
each test at most once; ``MDLNB_TEST_CRASH_RERUN=0`` turns reruns off. The
hook is xdist's ``pytest_handlecrashitem``, whose documented use this is.
"""

from __future__ import annotations

import pytest

from mdlnb._io import switched_off

ENV_SWITCH = "MDLNB_TEST_CRASH_RERUN"

_crashed: list[str] = []


@pytest.hookimpl(optionalhook=True)
def pytest_handlecrashitem(crashitem, report, sched):
    """xdist (controller): the worker running ``crashitem`` died; queue it again once."""
    if switched_off(ENV_SWITCH) or crashitem in _crashed or not hasattr(sched, "mark_test_pending"):
        return
    _crashed.append(crashitem)
    sched.mark_test_pending(crashitem)
    report.outcome = "rerun"  # neither passed nor failed: not counted as a failure


def pytest_report_teststatus(report):
    if report.outcome == "rerun":
        return "rerun", "R", ("RERUN", {"yellow": True})
    return None


def pytest_terminal_summary(terminalreporter):
    if not _crashed:
        return
    terminalreporter.write_sep("=", "worker crashes (run again once on a new worker)", yellow=True)
    for nodeid in _crashed:
        terminalreporter.write_line(
            f"{nodeid}: its worker process died (a signal, not a failed assertion; the "
            "'Fatal Python error' trace above names where); its result is the rerun's")
