"""Faults a run of the notebooks must survive, on one small notebook of the smoke profile
(``parity_toy``: its study runs two cached stage-1 units and writes tables, a figure and
claims): killed with SIGKILL to its whole process group and run again, two runs at once
on one cache, a full disk under the cache or under the output folder, a cache that
cannot be written. The property each time: the run ends with the same bytes as an
uninterrupted run, or with a clear error naming the path; never a half-written file.

Full disks and read-only folders are real ones where the kernel lets an unprivileged
user make them (a small tmpfs, mounted read-only or not, inside ``unshare --user
--mount``: nothing outside the test's processes sees it); elsewhere those tests are
skipped, and the library-level tests of ``tests/test_faults_io.py`` (a file-size limit
standing in for the full disk) still run.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = "parity_toy"
PROFILE = "smoke"


def _env(cache: Path) -> dict[str, str]:
    return {
        **os.environ,
        "MDLNB_CACHE": str(cache),
        "MPLBACKEND": "Agg",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }


def _command(paper: Path, out: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "mdlnb.tools.runner",
        "--profile",
        PROFILE,
        NOTEBOOK,
        "--out-dir",
        str(out),
        "-p",
        f"paper_dir={paper}",
    ]


def _start(cache: Path, paper: Path, out: Path, *, wrap: str | None = None) -> subprocess.Popen:
    """The runner (and, below it, papermill's kernel) in a process group of its own."""
    cmd = _command(paper, out)
    if wrap is not None:  # a shell line that ends by exec'ing the command ("$@")
        cmd = ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", wrap, "sh", *cmd]
    return subprocess.Popen(
        cmd,
        cwd=ROOT,
        env=_env(cache),
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _finish(proc: subprocess.Popen, timeout: float = 600) -> str:
    out, _ = proc.communicate(timeout=timeout)
    return out


def _files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (hidden ones included: a temporary file left behind
    is a difference), by relative path; the manifest's date column (the day of the run)
    blanked."""
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            data = p.read_bytes()
            if p.parent.name == "manifest" and p.suffix == ".csv":
                data = b"\n".join(line.rsplit(b",", 1)[0] for line in data.splitlines())
            out[str(p.relative_to(folder))] = data
    return out


def _hidden_temporaries(*folders: Path) -> list[str]:
    return [str(p) for f in folders if f.exists() for p in f.rglob(".*.tmp")]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """One uninterrupted run: its paper files and its wall time."""
    base = tmp_path_factory.mktemp("faults-reference")
    t0 = time.perf_counter()
    proc = _start(base / "cache", base / "paper", base / "nb")
    out = _finish(proc)
    assert proc.returncode == 0, out[-3000:]
    files = _files(base / "paper")
    assert any(n.endswith(".png") for n in files) and any(n.endswith(".csv") for n in files)
    return files, time.perf_counter() - t0


def _namespace_ok() -> bool:
    """Whether ``unshare --user --mount`` can mount a tmpfs here."""
    if shutil.which("unshare") is None or sys.platform != "linux":
        return False
    probe = subprocess.run(
        [
            "unshare",
            "--user",
            "--map-root-user",
            "--mount",
            "sh",
            "-c",
            'd=$(mktemp -d) && mount -t tmpfs -o size=64k tmpfs "$d"',
        ],
        capture_output=True,
    )
    return probe.returncode == 0


needs_mounts = pytest.mark.skipif(
    not _namespace_ok(), reason="no unprivileged tmpfs mounts (unshare) here"
)


def _mount(folder: Path, *, size: str, read_only: bool = False) -> str:
    """A shell line mounting a tmpfs of ``size`` over ``folder`` (read-only after
    ``seed`` is copied in, if asked), then exec'ing the command."""
    q = shlex.quote(str(folder))
    line = f"mkdir -p {q} && mount -t tmpfs -o size={size} tmpfs {q}"
    if read_only:
        line += f" && cp -a {q}.seed/. {q}/ 2>/dev/null; mount -o remount,ro {q}"
    return line + ' && exec "$@"'


# ----------------------------------------------------------------------------- killed


def test_killed_runs_resume_to_the_same_bytes(tmp_path, reference):
    """SIGKILL to the runner's process group at 25 %, 50 % and 85 % of an uninterrupted
    run's wall time (each run resuming from what the previous ones cached), then a run
    to the end: the paper files are byte-identical to the uninterrupted run's, and no
    temporary file of a killed write is left in the output or the cache."""
    want, wall = reference
    cache, paper, nb = tmp_path / "cache", tmp_path / "paper", tmp_path / "nb"
    killed = []
    for fraction in (0.25, 0.5, 0.85):
        proc = _start(cache, paper, nb)
        try:
            proc.wait(timeout=fraction * wall)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            killed.append(fraction)
        _finish(proc)
        time.sleep(1.5)  # the kernel's parent poller ends the orphaned kernel within 1 s
        # a killed run leaves no half file: every file present is a whole one
        for name, data in _files(paper).items():
            if not name.startswith(".") and "/." not in name:
                assert data == want[name], f"{name} differs after a kill at {fraction}"
    assert killed, "every run finished before its kill point"
    print(f"killed at {killed} of {wall:.0f} s")  # shown by pytest -rP
    proc = _start(cache, paper, nb)
    out = _finish(proc)
    assert proc.returncode == 0, out[-3000:]
    got = _files(paper)
    assert sorted(got) == sorted(want), (killed, sorted(set(got) ^ set(want)))
    assert [n for n in want if got[n] != want[n]] == []
    assert _hidden_temporaries(paper, cache / "losses") == []
    assert (nb / f"{NOTEBOOK}.ipynb").exists()


# ----------------------------------------------------------------------------- together


def test_two_runs_at_once_on_one_cache_write_the_same_bytes(tmp_path, reference):
    """Two runs of the notebook started together on one cache root, writing the same
    output folders (two `make reproduce` in one checkout): both finish, and the files
    are those of a run alone."""
    want, _ = reference
    cache, paper, nb = tmp_path / "cache", tmp_path / "paper", tmp_path / "nb"
    procs = [_start(cache, paper, nb) for _ in range(2)]
    outs = [_finish(p) for p in procs]
    for p, out in zip(procs, outs):
        assert p.returncode == 0, out[-3000:]
    got = _files(paper)
    assert sorted(got) == sorted(want) and [n for n in want if got[n] != want[n]] == []
    assert sorted(p.name for p in nb.iterdir() if p.suffix == ".ipynb") == [f"{NOTEBOOK}.ipynb"]


# ----------------------------------------------------------------------------- disks


@needs_mounts
def test_full_cache_disk_warns_and_the_run_ends_with_the_same_bytes(tmp_path, reference):
    """The cache root on a 600 KiB tmpfs: the compiled programs and loss matrices do
    not fit. The run warns once per folder (naming it), stores what fits, leaves no
    partial entry, and writes the same paper files as with room."""
    want, _ = reference
    cache, paper, nb = tmp_path / "cache", tmp_path / "paper", tmp_path / "nb"
    proc = _start(cache, paper, nb, wrap=_mount(cache, size="600k"))
    out = _finish(proc)
    assert proc.returncode == 0, out[-3000:]
    got = _files(paper)
    assert sorted(got) == sorted(want) and [n for n in want if got[n] != want[n]] == []
    # the warnings are in the executed notebook's outputs
    text = (nb / f"{NOTEBOOK}.ipynb").read_text()
    assert "not stored (No space left on device)" in text, text[-2000:]


@needs_mounts
def test_full_output_disk_is_a_clear_error_and_a_rerun_with_room_succeeds(tmp_path, reference):
    """The paper folder on a 16 KiB tmpfs: the run fails with an error naming the file it
    could not write and the disk's reason, leaves no partial file there; the next run,
    with room, reuses the cache and writes the same files as an uninterrupted run."""
    want, _ = reference
    cache, paper, nb = tmp_path / "cache", tmp_path / "paper", tmp_path / "nb"
    proc = _start(cache, paper, nb, wrap=_mount(paper, size="16k"))
    out = _finish(proc)
    assert proc.returncode != 0
    assert "No space left on device; cannot write" in out and str(paper) in out, out[-3000:]
    assert not (nb / f"{NOTEBOOK}.ipynb").exists()  # the make target is not made
    proc = _start(cache, paper, nb)
    out = _finish(proc)
    assert proc.returncode == 0, out[-3000:]
    got = _files(paper)
    assert sorted(got) == sorted(want) and [n for n in want if got[n] != want[n]] == []


@needs_mounts
def test_read_only_cache_runs_without_it(tmp_path, reference):
    """A cache root on a read-only disk: one warning naming it, the run goes on without
    the on-disk cache and writes the same paper files. (A cache root below a regular
    file, or missing with no right to create it, takes the same path:
    tests/test_faults_io.py.)"""
    want, _ = reference
    cache, paper, nb = tmp_path / "cache", tmp_path / "paper", tmp_path / "nb"
    (tmp_path / "cache.seed").mkdir()
    proc = _start(cache, paper, nb, wrap=_mount(cache, size="64k", read_only=True))
    out = _finish(proc)
    assert proc.returncode == 0, out[-3000:]
    got = _files(paper)
    assert sorted(got) == sorted(want) and [n for n in want if got[n] != want[n]] == []
    text = (nb / f"{NOTEBOOK}.ipynb").read_text()
    assert "cannot be used (Read-only file system); running without the on-disk cache" in text
