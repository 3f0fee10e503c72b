"""The persistent compilation cache (``mdlnb.infra._xla_cache``, cache kind ``xla``).

The end-to-end tests run a small ``mdlnb.evaluate`` in fresh processes
(``tests/_compile_worker.py``) on their own cache roots and count JAX's
persistent-cache events: a process started after another compiled the same
shapes compiles nothing (every lookup a hit, no entry written), also when the
first cache was filled by two processes writing at once; a damaged entry is
recompiled with a warning and rewritten.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mdlnb.infra import _io, _xla_cache
from mdlnb.tools import cache

ROOT = Path(__file__).resolve().parents[1]
WORKER = Path(__file__).with_name("_compile_worker.py")


def _env(root, **extra):
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("JAX_COMPILATION_CACHE_DIR", _xla_cache.ENV_SWITCH)
    }
    env.update(
        PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        JAX_PLATFORMS="cpu",
        MDLNB_CACHE=str(root),
        **extra,
    )
    return env


def _start(root, out, **extra):
    return subprocess.Popen(
        [sys.executable, str(WORKER), str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(root, **extra),
    )


def _finish(proc, out):
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    return json.loads(Path(out).read_text()), err


def _run(root, out, **extra):
    return _finish(_start(root, out, **extra), out)


def test_second_process_compiles_nothing(tmp_path):
    root = tmp_path / "cache"
    # two processes fill an empty cache at once (the same keys written concurrently)
    procs = [
        (_start(root, tmp_path / f"first{i}.json"), tmp_path / f"first{i}.json") for i in range(2)
    ]
    firsts = [_finish(p, out)[0] for p, out in procs]
    for first in firsts:
        assert first["cache"] == str(root / "xla" / _xla_cache.host_tag())
        assert first["requests"] >= first["misses"]
    # an empty cache: the programs were compiled (running at once, one writer may already
    # read back some of what the other wrote, so only the larger count is certain)
    assert max(f["misses"] for f in firsts) > 10
    store = root / "xla" / _xla_cache.host_tag()
    names = os.listdir(store)  # nothing half-written left behind
    assert not [n for n in names if n.endswith(_io.TMP_SUFFIX)]
    assert len(names) >= firsts[0]["requests"] - firsts[0]["hits"]

    second, _ = _run(root, tmp_path / "second.json")
    assert second["requests"] == firsts[0]["requests"]  # the same programs are needed…
    assert second["hits"] == second["requests"]  # …and every one is read back
    assert second["misses"] == 0  # nothing compiled, nothing written
    assert second["total_nats"] == firsts[0]["total_nats"] == firsts[1]["total_nats"]
    assert sorted(os.listdir(store)) == sorted(names)


def test_damaged_entry_is_recompiled_with_a_warning(tmp_path):
    root = tmp_path / "cache"
    first, _ = _run(root, tmp_path / "first.json")
    store = root / "xla" / _xla_cache.host_tag()
    programs = sorted(store.glob("jit__run_chunk-*-cache"))
    assert programs  # stage 1's chunk program is cached
    damaged = programs[0]
    data = bytearray(damaged.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte
    damaged.write_bytes(bytes(data))
    programs[-1].write_bytes(data[:100])  # and a truncated one

    again, err = _run(root, tmp_path / "again.json")
    assert "damaged compiled program" in err and damaged.name in err
    assert again["misses"] == len(set(programs[:1] + programs[-1:]))  # those recompiled only
    assert again["total_nats"] == first["total_nats"]
    third, err = _run(root, tmp_path / "third.json")
    assert third["misses"] == 0 and "damaged" not in err  # rewritten whole


def test_store_atomic_checksummed_and_replaces_what_jax_could_not_load(tmp_path):
    store = _xla_cache.AtomicFileCache(tmp_path)
    assert store.get("k") is None
    store.put("k", b"program")
    _xla_cache.AtomicFileCache(tmp_path).put("k", b"other")  # another process: a valid entry stays
    assert (tmp_path / "k-cache").read_bytes().endswith(b"program")
    assert store.get("k") == b"program"
    # JAX puts a key it got from us only when it could not deserialize it: replaced
    store.put("k", b"recompiled")
    assert store.get("k") == b"recompiled"
    (tmp_path / "k-cache").write_bytes(b"garbage")
    with pytest.warns(_io.CacheWarning, match="k-cache: damaged compiled program"):
        assert store.get("k") is None
    assert not (tmp_path / "k-cache").exists()  # removed, so it is written again
    store.put("k", b"fresh")
    assert store.get("k") == b"fresh"
    assert [p.name for p in tmp_path.iterdir()] == ["k-cache"]  # no temporary files left


def test_listed_and_cleared_as_a_kind(monkeypatch, tmp_path):
    monkeypatch.setenv("MDLNB_CACHE", str(tmp_path))
    store = _xla_cache.AtomicFileCache(_io.cache_dir("xla"))
    store.put("a", b"x" * 1000)
    store.put("b", b"y" * 10)
    u = cache.usage().set_index("kind")
    assert u.loc["xla", "files"] == 2 and u.loc["xla", "bytes"] > 1010
    assert "xla" in cache.KINDS
    assert sorted(e.path.name for e in cache.clear(kind="xla")) == ["a-cache", "b-cache"]
    assert store.get("a") is None


_PROBE = """
import json, sys
import numpy as np
import jax
from mdlnb import switching
from mdlnb.infra import _xla_cache
switching.codelength(np.ones((8, 3), np.float32))
print(json.dumps({"path": str(_xla_cache.status()["path"]), "reason": _xla_cache.status()["reason"],
                  "dir": jax.config.jax_compilation_cache_dir,
                  "min_s": jax.config.jax_persistent_cache_min_compile_time_secs}))
"""


def _probe(root, **extra):
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE],
        capture_output=True,
        text=True,
        env=_env(root, **extra),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_users_own_cache_dir_is_left_alone_and_the_switch_turns_it_off(tmp_path):
    root, own = tmp_path / "cache", tmp_path / "own"
    got = _probe(root, JAX_COMPILATION_CACHE_DIR=str(own))
    assert got["dir"] == str(own) and got["path"] == str(own) and "user" in got["reason"]
    assert got["min_s"] == 1.0  # the user's (JAX's default) threshold
    assert not (root / "xla").exists() or not os.listdir(root / "xla")
    got = _probe(root, MDLNB_XLA_CACHE="0")
    assert got["dir"] is None and got["path"] == "None" and "off" in got["reason"]
    assert not (root / "xla").exists() or not os.listdir(root / "xla")
    got = _probe(root)
    assert got["dir"] == str(root / "xla" / _xla_cache.host_tag()) and got["min_s"] == 0.0
    assert os.listdir(root / "xla")


def test_the_test_session_uses_the_shared_compilation_cache():
    import jax

    status = _xla_cache.status()
    if _xla_cache._disabled_by_env():
        pytest.skip("compilation cache turned off for this session")
    assert status["path"] is not None
    assert jax.config.jax_compilation_cache_dir == str(status["path"])
    assert Path(status["path"]).is_dir()


def test_importing_the_cache_and_the_cli_loads_no_jax():
    """Importing ``mdlnb.tools.cache``, ``mdlnb.infra._xla_cache`` or ``mdlnb.tools.cli`` loads no JAX (the
    module docstring's promise): the store's class, a subclass of JAX's
    ``CacheInterface``, is built when the cache is enabled or first named."""
    code = (
        "import sys, mdlnb.tools.cli, mdlnb.tools.cache, mdlnb.infra._xla_cache as x; "
        "assert 'jax' not in sys.modules, 'jax imported'; "
        "C = x.AtomicFileCache; from jax._src.compilation_cache_interface import "
        "CacheInterface; assert issubclass(C, CacheInterface) and C is x.AtomicFileCache"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ})
