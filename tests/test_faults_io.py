"""Disk faults at the library's level (mdlnb.infra._io, mdlnb.infra._xla_cache): a write that runs out
of room, a cache root that cannot be used, what a writer killed mid-write leaves behind.
A full disk is stood in for by a file-size limit (``RLIMIT_FSIZE``: a write past it
fails with EFBIG, as one on a full disk fails with ENOSPC), in a subprocess; the notebook
runs on real full and read-only disks are in tests/test_faults.py."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from mdlnb.infra import _io

ROOT = Path(__file__).resolve().parent.parent

# In a subprocess: a write past ``limit`` bytes of a file fails (EFBIG) instead of killing
# it (SIGXFSZ).
_LIMITED = """
import json, os, resource, signal, sys, warnings
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
import numpy as np
from mdlnb.infra import _io
out = {}
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    try:
        {body}
    except OSError as e:
        out["error"] = [type(e).__name__, e.errno, str(e)]
out["warnings"] = [str(x.message) for x in w]
print(json.dumps(out))
"""


def _limited(body: str, cache: Path, limit: int = 65536) -> dict:
    env = {
        **os.environ,
        "MDLNB_CACHE": str(cache),
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    code = _LIMITED.replace("{body}", body).replace("{limit}", str(limit))
    res = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_a_write_that_runs_out_of_room_names_the_file_and_keeps_the_old_one(tmp_path):
    """Outside the cache: an OSError of the disk's errno naming the file; the previous
    version of the file is intact and no temporary file is left."""
    target = tmp_path / "out" / "table.npz"
    target.parent.mkdir()
    _io.atomic_savez(target, x=np.arange(10))
    before = target.read_bytes()
    got = _limited(f"_io.atomic_savez({str(target)!r}, x=np.zeros(100_000))", tmp_path / "c")
    name, err, text = got["error"]
    assert err == 27 and str(target) in text and "cannot write" in text, got  # EFBIG
    assert target.read_bytes() == before
    assert sorted(p.name for p in target.parent.iterdir()) == ["table.npz"]


def test_a_cache_entry_that_does_not_fit_is_skipped_with_one_warning(tmp_path):
    """Inside the cache: compute_once returns what it computed, warns once per folder
    naming it, and leaves neither the entry nor a temporary file; a small entry next to
    it is still stored."""
    cache = tmp_path / "cache"
    body = (
        "a = _io.compute_once(_io.cache_dir('features') / 'big.npz', "
        "lambda: {'x': np.ones(100_000)}); "
        "b = _io.compute_once(_io.cache_dir('features') / 'big2.npz', "
        "lambda: {'x': np.ones(100_000)}); "
        "c = _io.compute_once(_io.cache_dir('features') / 'small.npz', "
        "lambda: {'x': np.ones(10)}); "
        "out['sums'] = [float(a['x'].sum()), float(b['x'].sum()), float(c['x'].sum())]"
    )
    got = _limited(body, cache)
    assert "error" not in got and got["sums"] == [100_000.0, 100_000.0, 10.0]
    assert len(got["warnings"]) == 1, got["warnings"]
    assert str(cache / "features") in got["warnings"][0] and "not stored" in got["warnings"][0]
    assert sorted(p.name for p in (cache / "features").iterdir()) == ["small.npz"]
    assert _io.read_npz(cache / "features" / "small.npz")["x"].sum() == 10


def test_compiled_programs_that_do_not_fit_are_compiled_and_not_stored(tmp_path):
    """mdlnb's compilation-cache store where the programs do not fit (files limited to
    2 KiB): they run, one warning naming the folder, no partial entry, no temporary file
    (a tiny program that fits is stored whole)."""
    body = (
        "from mdlnb.infra import _xla_cache; import jax, jax.numpy as jnp; "
        "_xla_cache.ensure(); "
        "out['v'] = [float(jax.jit(lambda x, k=k: jnp.cumsum(x * k).sum())(jnp.ones(3000))) "
        "for k in (1.0, 2.0, 3.0)]"
    )
    got = _limited(body, tmp_path / "cache", limit=2048)
    assert "error" not in got and got["v"] == [4501500.0, 9003000.0, 13504500.0]
    mine = [w for w in got["warnings"] if w.startswith("mdlnb cache")]
    assert len(mine) == 1 and "not stored (File too large)" in mine[0], got["warnings"]
    from mdlnb.infra._xla_cache import _AtomicStore

    files = [p for p in (tmp_path / "cache" / "xla").rglob("*") if p.is_file()]
    assert not any(p.name.endswith(_io.TMP_SUFFIX) for p in files)
    assert all(_AtomicStore._unpack(p.read_bytes()) is not None for p in files)  # whole ones


@pytest.mark.parametrize("how", ["under_a_file", "is_a_file"])
def test_an_unusable_cache_root_warns_once_and_runs_without_it(tmp_path, monkeypatch, how):
    """``MDLNB_CACHE`` below a regular file, or a regular file itself: one CacheWarning
    naming it, then a private stand-in; the compilation cache says it is off."""
    (tmp_path / "f").write_text("x")
    root = tmp_path / "f" / "cache" if how == "under_a_file" else tmp_path / "f"
    monkeypatch.setenv("MDLNB_CACHE", str(root))
    with pytest.warns(_io.CacheWarning, match=r"cannot be used \(.*\); running without"):
        d = _io.cache_dir("losses")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _io.cache_dir("features").parent == d.parent  # no second warning
        assert not _io.cache_usable()
        e = _io.compute_once(d / "k.npz", lambda: {"x": np.arange(3)})
    assert e["x"].tolist() == [0, 1, 2] and (d / "k.npz").exists()
    assert not str(d).startswith(str(tmp_path))
    code = (
        "import warnings; warnings.simplefilter('ignore'); from mdlnb.infra import _xla_cache; "
        "print(_xla_cache.ensure(), _xla_cache.status()['reason'])"
    )
    res = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "MDLNB_CACHE": str(root)},
        cwd=ROOT,
        timeout=120,
    )
    assert res.stdout.startswith("None off: the cache root") and str(root) in res.stdout, res


def test_lock_on_a_folder_without_room_or_rights_is_skipped(tmp_path, monkeypatch):
    """``locked`` where its lock file cannot be created: a warning, and the body runs."""
    real_open = os.open

    def refuse(path, *a, **k):
        if str(path).endswith(_io.LOCK_SUFFIX):
            raise OSError(28, "No space left on device")
        return real_open(path, *a, **k)

    monkeypatch.setattr(os, "open", refuse)
    ran = []
    with pytest.warns(_io.CacheWarning, match="not stored"):
        with _io.locked(tmp_path / "entry.npz"):
            ran.append(1)
    assert ran == [1]


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_temporaries_of_killed_writers_are_removed_and_live_ones_kept(tmp_path):
    """What a writer killed mid-write left (this host, its process gone) is removed when
    the file is written again, or when the cache folder is first used; a temporary file
    of a live process, of another host, or of another target stays."""
    host = _io.owner().rsplit("_", 1)[0]
    dead, live = _dead_pid(), os.getpid()
    names = {
        "dead": f".t.csv.{host}_{dead}.abcd1234.tmp",
        "live": f".t.csv.{host}_{live}.abcd1234.tmp",
        "other_host": f".t.csv.elsewhere-9_{dead}.abcd1234.tmp",
        "other_file": f".u.csv.{host}_{dead}.abcd1234.tmp",
        "old_style": ".t.csv.abcd1234.tmp",
    }
    for n in names.values():
        (tmp_path / n).write_text("partial")
    _io.atomic_write_text(tmp_path / "t.csv", "a,b\n")
    left = sorted(p.name for p in tmp_path.iterdir())
    assert names["dead"] not in left
    assert {
        names["live"],
        names["other_host"],
        names["other_file"],
        names["old_style"],
        "t.csv",
    } == set(left)
    assert _io.remove_stale_temporaries(tmp_path) == [tmp_path / names["other_file"]]
    assert socket.gethostname()  # the owner's host is this one's name


def test_cache_dir_sweeps_what_killed_writers_left(tmp_path, monkeypatch):
    monkeypatch.setenv("MDLNB_CACHE", str(tmp_path))
    host = _io.owner().rsplit("_", 1)[0]
    (tmp_path / "losses").mkdir()
    stale = tmp_path / "losses" / f".k.npz.{host}_{_dead_pid()}.zz99yy88.tmp"
    stale.write_bytes(b"\0" * 100)
    assert _io.cache_dir("losses") == tmp_path / "losses" and not stale.exists()
