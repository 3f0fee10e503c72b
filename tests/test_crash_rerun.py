"""tests/_crash_rerun.py in a real xdist run: a test that kills its worker process
once is run again and passes; one that kills it every time fails; a failed
assertion is never rerun."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

pytest.importorskip("xdist")
pytest_plugins = ["pytester"]

HERE = Path(__file__).resolve().parent

BODY = """
import os, signal
from pathlib import Path

def _die_once(name):
    mark = Path(os.environ["CRASH_MARKS"]) / name
    if not mark.exists():
        mark.touch()
        os.kill(os.getpid(), signal.SIGSEGV)

def test_crashes_once():
    _die_once("once")

def test_fine():
    assert True

def test_crashes_always():
    os.kill(os.getpid(), signal.SIGSEGV)

def test_fails():
    assert 1 == 2
"""


def _run(pytester, monkeypatch, tmp_path, *args):
    monkeypatch.setenv("CRASH_MARKS", str(tmp_path))
    pytester.makeconftest('pytest_plugins = ["_crash_rerun"]\n')
    pytester.makepyfile(test_inner=textwrap.dedent(BODY))
    # a subprocess: the workers need the plugin on their own sys.path
    monkeypatch.setenv("PYTHONPATH", str(HERE))
    return pytester.runpytest_subprocess("-n", "1", "-p", "no:cacheprovider",
                                         "-p", "no:randomly", *args)


def test_a_crash_is_rerun_once_and_a_failure_is_not(pytester, monkeypatch, tmp_path):
    res = _run(pytester, monkeypatch, tmp_path)
    out = res.stdout.str()
    # once: crashed, rerun, passed; always: crashed, rerun, crashed again → failed
    assert res.parseoutcomes() == {"passed": 2, "failed": 2, "rerun": 2}
    assert res.ret == pytest.ExitCode.TESTS_FAILED
    assert "test_inner.py::test_crashes_once: its worker process died" in out
    assert "test_inner.py::test_crashes_always: its worker process died" in out
    assert "test_fails: its worker" not in out
    assert "crashed while running 'test_inner.py::test_crashes_always'" in out


def test_reruns_can_be_turned_off(pytester, monkeypatch, tmp_path):
    monkeypatch.setenv("MDLNB_TEST_CRASH_RERUN", "0")
    res = _run(pytester, monkeypatch, tmp_path, "-k", "crashes_once or fine")
    assert res.parseoutcomes() == {"passed": 1, "failed": 1}
    assert "worker crashes" not in res.stdout.str()


def test_a_crash_that_passes_on_rerun_is_a_green_run(pytester, monkeypatch, tmp_path):
    res = _run(pytester, monkeypatch, tmp_path, "-k", "crashes_once or fine")
    assert res.parseoutcomes() == {"passed": 2, "rerun": 1}
    assert res.ret == pytest.ExitCode.OK
