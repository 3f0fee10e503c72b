"""The on-disk cache: checksummed entries, damaged files recomputed with a warning,
file permissions, and processes racing on the same key."""

import hashlib
import multiprocessing as mp
import os
import warnings
from pathlib import Path

import numpy as np
import pytest

import mdlnb
from mdlnb import prequential
from mdlnb.board import readouts
from mdlnb.board.experts import Expert
from mdlnb.infra import _io


def _arrays():
    rng = np.random.default_rng(0)
    return {
        "losses": rng.random((50, 3)).astype(np.float32),
        "order": np.arange(50),
        "name": np.array("digits"),
        "flag": np.array([True, False]),
        "empty": np.zeros((0, 2)),
    }


def _damage(path: Path, how: str, at: float = 0.5) -> None:
    raw = bytearray(path.read_bytes())
    if how == "truncate":
        raw = raw[: int(len(raw) * at)]
    elif how == "flip":
        raw[int(len(raw) * at)] ^= 0xFF
    elif how == "zero":
        raw = bytearray(len(raw))
    path.write_bytes(bytes(raw))


# --------------------------------------------------------------------- checksums


def test_checksum_is_sha256_of_names_dtypes_shapes_and_bytes(tmp_path):
    arrays = _arrays()
    path = _io.atomic_savez(tmp_path / "e.npz", **arrays)
    with np.load(path) as z:  # plain np.load still reads it
        stored = str(z[_io.CHECKSUM_KEY])
    h = hashlib.sha256()
    for name in sorted(arrays):  # the documented recipe, by hand
        a = arrays[name]
        h.update(f"{name}\0{a.dtype.str}\0{a.shape}\0".encode() + a.tobytes())
    assert stored == h.hexdigest()
    back = _io.read_npz(path)
    assert set(back) == set(arrays)
    for k in arrays:
        np.testing.assert_array_equal(back[k], arrays[k])
        assert back[k].dtype == arrays[k].dtype


def test_checksum_key_is_reserved(tmp_path):
    with pytest.raises(ValueError, match="arrays: the name '__sha256__' is reserved"):
        _io.atomic_savez(tmp_path / "e.npz", __sha256__=np.zeros(1))


@pytest.mark.parametrize(
    "how,at",
    [("truncate", 0.0), ("truncate", 0.3), ("truncate", 0.97), ("truncate", 0.9999), ("zero", 0.0)],
)
def test_damaged_file_raises_damagedfile_naming_it(tmp_path, how, at):
    path = _io.atomic_savez(tmp_path / "entry.npz", **_arrays())
    _damage(path, how, at)
    with pytest.raises(_io.DamagedFile, match=r"entry\.npz"):
        _io.read_npz(path)


def test_savez_streams_to_disk_and_an_interrupted_write_keeps_the_old_file(tmp_path, monkeypatch):
    """The npz goes straight into the temporary file (a stage-1 checkpoint of the
    vtab board is ~10 GB: building it in memory first OOM-killed a run), and a
    write that fails halfway leaves the previous file and no temporary behind."""
    path = _io.atomic_savez(tmp_path / "ck.npz", x=np.arange(5.0))
    big = np.ones((1 << 20,), np.float32)  # 4 MiB
    seen = []

    def writes_then_fails(f, **arrays):
        seen.append(type(f).__name__)
        f.write(b"PK\x03\x04 partial")
        raise KeyboardInterrupt("killed while writing")

    monkeypatch.setattr(np, "savez", writes_then_fails)
    with pytest.raises(KeyboardInterrupt):
        _io.atomic_savez(path, x=big)
    monkeypatch.undo()
    assert seen == ["BufferedWriter"]  # a real file, not a BytesIO
    np.testing.assert_array_equal(_io.read_npz(path)["x"], np.arange(5.0))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck.npz"]
    np.testing.assert_array_equal(_io.read_npz(_io.atomic_savez(path, x=big))["x"], big)


def test_every_single_byte_flip_is_caught_or_harmless(tmp_path):
    """Flip each of 64 bytes spread over the file: the read either raises DamagedFile
    or (a flip in zip metadata that carries no content) returns the exact arrays."""
    arrays = _arrays()
    path = tmp_path / "entry.npz"
    size = _io.atomic_savez(path, **arrays).stat().st_size
    caught = 0
    for at in np.linspace(0, 1, 64, endpoint=False):
        _io.atomic_savez(path, **arrays)
        _damage(path, "flip", at)
        try:
            back = _io.read_npz(path)
        except _io.DamagedFile:
            caught += 1
            continue
        for k in arrays:
            np.testing.assert_array_equal(back[k], arrays[k])
    assert caught >= 48, f"only {caught}/64 flips detected in a {size}-byte file"


def test_flip_inside_array_data_is_a_checksum_mismatch(tmp_path):
    """Rewrite the zip with an altered array but valid zip CRCs: only the checksum sees it."""
    import zipfile

    path = _io.atomic_savez(tmp_path / "entry.npz", **_arrays())
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    raw = bytearray(members["losses.npy"])
    raw[-1] ^= 0x01
    members["losses.npy"] = bytes(raw)
    with zipfile.ZipFile(path, "w") as z:
        for n, b in members.items():
            z.writestr(n, b)
    with pytest.raises(_io.DamagedFile, match="checksum mismatch"):
        _io.read_npz(path)


def test_file_without_checksum(tmp_path):
    path = tmp_path / "user.npz"
    np.savez(path, x=np.ones(3))
    with pytest.raises(_io.DamagedFile, match="has no checksum"):
        _io.read_npz(path)
    np.testing.assert_array_equal(_io.read_npz(path, require_checksum=False)["x"], np.ones(3))


def test_load_entry_warns_removes_and_misses(tmp_path):
    path = _io.atomic_savez(tmp_path / "entry.npz", **_arrays())
    _damage(path, "truncate", 0.5)
    with pytest.warns(_io.CacheWarning, match=r"entry\.npz: unreadable \(BadZipFile"):
        assert _io.load_entry(path) is None
    assert not path.exists()
    assert _io.load_entry(path) is None  # absent: a plain miss, no warning


# --------------------------------------------------------------------- real cache entries


def _board():
    return [
        Expert(readouts.linear(), 1e-2, replay_streams=2),
        Expert(readouts.mlp(1, 16), 3e-3, replay_streams=2),
    ]


@pytest.fixture(scope="module")
def digits():
    task = mdlnb.data.load("digits")
    return mdlnb.Task.from_arrays(
        task.features[:160], task.y[:160], name="digits160", num_classes=task.num_classes
    )


@pytest.mark.parametrize("how", ["truncate", "flip"])
def test_damaged_loss_matrix_is_recomputed(monkeypatch, tmp_path, digits, how):
    monkeypatch.setenv("MDLNB_CACHE", str(tmp_path))
    first = prequential.run(digits, _board(), batch_size=16)
    (entry,) = (tmp_path / "losses").glob("*.npz")
    _damage(entry, how, 0.6)
    with pytest.warns(_io.CacheWarning, match=entry.name):
        again = prequential.run(digits, _board(), batch_size=16)
    np.testing.assert_array_equal(again.losses, first.losses)
    assert _io.read_npz(entry)["losses"].shape == (160, 2)  # rewritten, valid
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and now a clean hit
        np.testing.assert_array_equal(
            prequential.run(digits, _board(), batch_size=16).losses, first.losses
        )


def test_damaged_checkpoint_restarts_from_scratch(tmp_path, digits):
    kw = dict(batch_size=16, cache=False, chunk_batches=2, checkpoint_every_s=0)
    full = prequential.run(digits, _board(), **{**kw, "chunk_batches": 2})
    calls = []

    def killer(done, total, best):
        calls.append(done)
        if len(calls) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        prequential.run(digits, _board(), checkpoint_dir=tmp_path, progress=killer, **kw)
    (ckpt,) = tmp_path.glob("*.ckpt.npz")
    _damage(ckpt, "truncate", 0.8)
    seen = []
    with pytest.warns(_io.CacheWarning, match=ckpt.name):
        res = prequential.run(
            digits, _board(), checkpoint_dir=tmp_path, progress=lambda d, t, b: seen.append(d), **kw
        )
    assert seen[0] == 2 * 16  # started over at chunk 1
    np.testing.assert_array_equal(res.losses, full.losses)


def test_damaged_encoder_parameters_are_retrained(tmp_path):
    import importlib

    pretrain = importlib.import_module("mdlnb.encoders._pretrain")
    tree = {"w": np.arange(6.0, dtype=np.float32).reshape(2, 3), "b": np.ones(3, np.float32)}
    path = tmp_path / "enc.npz"
    pretrain._save(path, tree, {"steps": 3}, "k")
    params, meta = pretrain._load(path, tree)
    np.testing.assert_array_equal(params["w"], tree["w"])
    assert meta == {"steps": 3}
    raw = bytearray(path.read_bytes())
    raw[raw.index(tree["w"].tobytes()) + 5] ^= 0x10  # one bit inside the stored weights
    path.write_bytes(bytes(raw))
    with pytest.warns(_io.CacheWarning, match="enc.npz"):
        assert pretrain._load(path, tree) is None  # pretrain() then trains anew


def test_damaged_features_are_recomputed(monkeypatch, tmp_path, digits):
    import jax.numpy as jnp

    from mdlnb import encoders

    monkeypatch.setenv("MDLNB_CACHE", str(tmp_path))
    images = mdlnb.data.load("digits")
    images = images.replace(x=images.x[:40], y=images.y[:40], name="digits40")
    proj = np.random.default_rng(1).normal(size=(64, 5)).astype(np.float32)
    enc = encoders.Encoder(
        "proj", {"w": proj}, lambda p, x: jnp.reshape(x, (x.shape[0], -1)) @ p["w"], (8, 8), 1, 5
    )
    first = encoders.features(enc, images).x
    np.testing.assert_allclose(first, images.x.reshape(40, 64) / 255.0 @ proj, rtol=1e-5, atol=1e-4)
    (entry,) = (tmp_path / "features").glob("proj-digits40-*.npz")
    _damage(entry, "truncate", 0.5)
    with pytest.warns(_io.CacheWarning, match=entry.name):
        again = encoders.features(enc, images).x
    np.testing.assert_array_equal(again, first)


def test_task_from_npz_damaged_is_a_valueerror(tmp_path):
    path = mdlnb.Task.from_arrays(np.ones((4, 2)), [0, 1, 0, 1]).to_npz(tmp_path / "t.npz")
    raw = bytearray(path.read_bytes())
    raw[raw.index(np.ones((4, 2)).tobytes()) + 7] ^= 0x01  # one bit of x[0, 0]
    path.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match=r"path: not a readable \.npz file .*t\.npz.*CRC"):
        mdlnb.Task.from_npz(path)
    _damage(path, "truncate", 0.7)
    with pytest.raises(ValueError, match=r"path: .*not a readable \.npz file"):
        mdlnb.Task.from_npz(path)


# --------------------------------------------------------------------- permissions


@pytest.mark.parametrize("umask,mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_written_files_respect_the_umask(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        a = _io.atomic_write_text(tmp_path / "table.csv", "a,b\n1,2\n")
        b = _io.atomic_savez(tmp_path / "entry.npz", x=np.ones(2))
        plain = tmp_path / "plain.txt"
        plain.write_text("x")  # what open() gives, for reference
    finally:
        os.umask(old)
    assert (a.stat().st_mode & 0o777, b.stat().st_mode & 0o777) == (mode, mode)
    assert plain.stat().st_mode & 0o777 == mode


# --------------------------------------------------------------------- concurrency


def _race(cache: str, log: str, barrier, out) -> None:
    """One process of the race: features of digits under a random projection, then
    stage 1 on them; each computation (not a cache read) appends a line to ``log``."""
    os.environ["MDLNB_CACHE"] = cache
    import time

    import jax.numpy as jnp

    from mdlnb import encoders
    from mdlnb.encoders import base
    from mdlnb.prequential import _program

    def counted(what, fn):
        def wrapper(*args, **kw):
            with open(log, "a") as f:
                f.write(f"{what}\n")
            time.sleep(0.3)  # widen the race window
            return fn(*args, **kw)

        return wrapper

    base._compute_features = counted("features", base._compute_features)
    _program._run_chunk = counted("stage1", _program._run_chunk)
    task = mdlnb.data.load("digits")
    task = task.replace(x=task.x[:128], y=task.y[:128], name="digits128")
    proj = np.random.default_rng(1).normal(size=(64, 7)).astype(np.float32)
    enc = encoders.Encoder(
        "race", {"w": proj}, lambda p, x: jnp.reshape(x, (x.shape[0], -1)) @ p["w"], (8, 8), 1, 7
    )
    barrier.wait()
    feats = encoders.features(enc, task)
    barrier.wait()
    lm = prequential.run(
        feats, [Expert(readouts.linear(), 1e-2, replay_streams=1)], batch_size=32, chunk_batches=4
    )
    out.put(
        (
            hashlib.sha256(feats.x.tobytes()).hexdigest(),
            hashlib.sha256(lm.losses.tobytes()).hexdigest(),
        )
    )


@pytest.mark.slow
def test_two_processes_compute_the_same_entry_once(tmp_path):
    """Two spawned processes ask for the same features, then the same loss matrix, at the
    same moment: each is computed by one of them, the other reads it."""
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(2), ctx.Queue()
    log = tmp_path / "computed.log"
    procs = [
        ctx.Process(target=_race, args=(str(tmp_path / "cache"), str(log), barrier, out))
        for _ in range(2)
    ]
    for p in procs:
        p.start()
    digests = [out.get(timeout=180) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert log.read_text().split() == ["features", "stage1"]  # one chunk of 4 batches, once
    assert digests[0] == digests[1]
    for kind in ("features", "losses"):  # no temp or lock file left
        (entry,) = (tmp_path / "cache" / kind).iterdir()
        _io.read_npz(entry)


def _writer(path: str, value: int, rounds: int, barrier) -> None:
    barrier.wait()
    size = 1000 + 5000 * value  # versions of different sizes
    for i in range(rounds):
        _io.atomic_savez(path, x=np.full(size, value, np.int64), i=np.int64(i))


def test_racing_writers_never_show_a_half_file(tmp_path):
    """Two processes rewrite one entry 40 times each while this one reads it:
    every read is a whole, checksummed version from one writer."""
    ctx = mp.get_context("spawn")
    path = tmp_path / "entry.npz"
    _io.atomic_savez(path, x=np.full(1000, 0, np.int64), i=np.int64(-1))
    barrier = ctx.Barrier(3)
    procs = [ctx.Process(target=_writer, args=(str(path), v, 40, barrier)) for v in (1, 2)]
    for p in procs:
        p.start()
    barrier.wait()
    seen = set()
    while any(p.is_alive() for p in procs):
        z = _io.read_npz(path)  # raises on any half file
        v = int(z["x"][0])
        assert z["x"].shape == (1000 + 5000 * v,) and np.all(z["x"] == v)
        seen.add(v)
    for p in procs:
        p.join()
        assert p.exitcode == 0
    assert int(_io.read_npz(path)["i"]) == 39
    assert sorted(f.name for f in tmp_path.iterdir()) == ["entry.npz"]  # no temp files left
    assert seen & {1, 2}


def test_lock_serialises_and_cleans_up(tmp_path):
    key = tmp_path / "k.npz"
    with _io.locked(key):
        assert (tmp_path / ".k.npz.lock").exists()
    assert not (tmp_path / ".k.npz.lock").exists()
    calls = []
    make = lambda: calls.append(1) or {"y": np.arange(3)}
    np.testing.assert_array_equal(_io.compute_once(key, make)["y"], np.arange(3))
    np.testing.assert_array_equal(_io.compute_once(key, make)["y"], np.arange(3))
    assert calls == [1]
