"""The Makefile's notebook pipeline: a notebook reruns only when its source, its own
profile entry or the library changed, `make -j2` orders the encoder-study trio,
and a reproduce run ends with the merge and the per-notebook table.

Runs GNU make on a copy of the repository's Makefile, notebooks/ and mdlnb/ with
a stub venv whose ``python`` logs each notebook run instead of executing it (the
profile stamps are written by the real ``mdlnb.tools.runner --write-params``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted(p.stem for p in (ROOT / "notebooks").glob("*.py") if not p.stem.startswith("_"))

_STUB = r"""
import os, subprocess, sys, time
from pathlib import Path
args = sys.argv[1:]
log = Path(os.environ["STUB_LOG"])
if args[:2] != ["-m", "mdlnb.tools.runner"] or "--write-params" in args or "--check" in args:
    sys.exit(subprocess.call([os.environ["REAL_PYTHON"], *args]))
rest = args[2:]
if "--html" in rest:
    ipynb = Path(rest[-1]); ipynb.with_suffix(".html").write_text("html")
    sys.exit(0)
if "--summary" in rest:
    with log.open("a") as f: f.write(" ".join(["summary", *rest]) + "\n")
    sys.exit(0)
profile, name = rest[rest.index("--profile") + 1], rest[-1]
with log.open("a") as f: f.write(f"start {name} {time.time()}\n")
time.sleep(float(os.environ.get("STUB_SLEEP", "0")))
out = Path("build/notebooks") / profile / f"{name}.ipynb"
out.parent.mkdir(parents=True, exist_ok=True); out.write_text("{}")
with log.open("a") as f: f.write(f"end {name} {time.time()}\n")
"""


@pytest.fixture
def tree(tmp_path):
    if shutil.which("make") is None:
        pytest.skip("GNU make is not installed")
    for part in ("Makefile", "pyproject.toml"):
        shutil.copy(ROOT / part, tmp_path / part)
    for part in ("notebooks", "mdlnb"):
        shutil.copytree(
            ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__", "*.ipynb")
        )
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    (tmp_path / "stub.py").write_text(_STUB)
    stub = tmp_path / "stub.py"
    (venv / "python").write_text(f'#!/bin/sh\nexec {sys.executable} {stub} "$@"\n')
    (venv / "python").chmod(0o755)
    (tmp_path / "venv" / ".installed").touch()
    return tmp_path


def _make(tree, *targets, jobs=1, sleep=0.0, dry=False, profile="smoke"):
    log = tree / "log.txt"
    log.unlink(missing_ok=True)
    env = {
        **os.environ,
        "STUB_LOG": str(log),
        "REAL_PYTHON": sys.executable,
        "STUB_SLEEP": str(sleep),
        "PYTHONPATH": str(tree),
    }
    # data-packages needs the Debian package; pretend it is there
    cmd = [
        "make",
        "--no-print-directory",
        f"-j{jobs}",
        "VENV=venv",
        "FMNIST=Makefile",
        f"PROFILE={profile}",
        *(["-n"] if dry else []),
        *targets,
    ]
    res = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    runs = (
        [ln.split()[1] for ln in log.read_text().splitlines() if ln.startswith("start")]
        if log.exists()
        else []
    )
    return res.stdout, runs, (log.read_text().splitlines() if log.exists() else [])


def _dry_runs(out):
    return sorted(
        ln.split()[-1]
        for ln in out.splitlines()
        if "mdlnb.tools.runner --profile smoke" in ln and "--summary" not in ln
    )


def _later(path):
    time.sleep(0.01)  # newer than every output so far (make compares nanoseconds)
    path.touch()


def test_reruns_only_what_changed(tree):
    _, runs, _ = _make(tree, "notebooks")
    assert sorted(runs) == NOTEBOOKS  # a fresh tree runs everything
    assert all((tree / f"build/notebooks/smoke/{n}.html").exists() for n in NOTEBOOKS)
    out, runs, _ = _make(tree, "notebooks")
    assert runs == [], out  # nothing changed: nothing runs
    assert _dry_runs(_make(tree, "notebooks", dry=True)[0]) == []

    _later(tree / "notebooks/quickstart.py")  # one source
    out, _, _ = _make(tree, "notebooks", dry=True)
    assert _dry_runs(out) == ["quickstart"]
    assert "--html build/notebooks/smoke/quickstart.ipynb" in out
    assert _make(tree, "notebooks")[1] == ["quickstart"]

    _later(tree / "notebooks/objectives.py")  # order-only: no cascade
    assert _make(tree, "notebooks")[1] == ["objectives"]

    yaml = tree / "notebooks/profiles.yaml"  # one notebook's profile entry
    text = yaml.read_text()
    assert "    n_examples: 200\n" in text
    yaml.write_text(text.replace("    n_examples: 200\n", "    n_examples: 201\n"))
    assert _dry_runs(_make(tree, "notebooks", dry=True)[0]) == ["parity_toy"]
    assert _make(tree, "notebooks")[1] == ["parity_toy"]
    yaml.write_text(yaml.read_text() + "\n# a comment changes no entry\n")
    assert _make(tree, "notebooks")[1] == []

    _later(tree / "mdlnb/switching/__init__.py")  # the library: everything
    assert sorted(_make(tree, "notebooks")[1]) == NOTEBOOKS


def test_parallel_run_orders_the_encoder_trio_and_reproduce_ends_with_the_merge(tree):
    _, runs, log = _make(tree, "reproduce", jobs=1, sleep=0.3)  # JOBS=2 by default
    assert sorted(runs) == NOTEBOOKS
    times = {
        (ln.split()[0], ln.split()[1]): float(ln.split()[2])
        for ln in log
        if ln.startswith(("start", "end"))
    }
    for later in ("scaling", "readout_preference"):
        assert times[("start", later)] >= times[("end", "objectives")]
    starts = sorted(v for (k, _), v in times.items() if k == "start")
    ends = sorted(v for (k, _), v in times.items() if k == "end")
    assert starts[1] < ends[0]  # two notebooks did run at once
    assert log[-1].startswith("summary --summary --profile smoke --since ")  # after all
    assert "--compare-to-git" not in log[-1]  # smoke writes no paper/ numbers
    out = _make(tree, "reproduce", dry=True, profile="default")[0]
    assert "--compare-to-git HEAD" in out and "mdlnb.research.claims paper" in out
    # the summary reads the executed notebooks where --paper runs put them
    assert "--summary --profile default" in out and "--paper --compare-to-git HEAD" in out
