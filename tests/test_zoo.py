"""The checkpoint zoo: members, artifacts and their checksums, and a rebuild that writes the
same bytes."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from mdlnb.studies import zoo


def test_members_are_the_initialization_the_steps_and_the_finals():
    c = zoo.ZooConfig()
    m = c.members()
    assert len(m) >= 30 and len(set(m)) == len(m)
    assert m[0] == "random" and m[-1] == f"{c.families[-1]}@final"
    assert all(f"{f}@{s}" in m for f in c.families for s in c.steps)
    assert zoo.parse_member("dino@300") == ("dino", "300")
    assert zoo.parse_member("random") == ("random", "final")
    assert zoo.file_name("mae@500") == "mae-vit_S-s0-step500"
    assert zoo.file_name("mae@final") == "mae-vit_S-s0"  # the committed encoder
    for bad in ("dino", "dino@", "@300", "dino@x"):
        with pytest.raises(ValueError, match="member"):
            zoo.parse_member(bad)


@pytest.mark.parametrize(
    "change,arg",
    [
        (dict(families=()), "families"),
        (dict(families=("random",)), "families"),
        (dict(families=("mae", "mae")), "families"),
        (dict(steps=(300, 100)), "steps"),
        (dict(steps=(75,)), "steps"),
        (dict(steps=(10**6,)), "steps"),
        (dict(chunk_steps=0), "chunk_steps"),
    ],
)
def test_config_rejects_bad_input(change, arg):
    with pytest.raises(ValueError, match=arg):
        zoo.ZooConfig(**change)


def test_committed_checkpoints_verify_and_load():
    """Every committed checkpoint's weights match the SHA-256 of its provenance; the loaded
    encoder is a ViT-S of 64-d features whose parameters are those bytes."""
    provs = zoo.verify()
    if not provs:
        pytest.skip("no zoo checkpoints committed yet")
    p = provs[0]
    member = f"{p['objective']}@{p['step']}"
    enc = zoo.load_member(member)
    assert enc.feature_dim == 64 and enc.meta["steps"] == p["step"]
    from mdlnb.studies.pretraining import params_bytes, sha256

    assert sha256(params_bytes(enc.params)) == p["sha256"]
    assert 0.5 < p["probe_accuracy"] < 1.0 and p["feature_dim"] == 64


def test_a_damaged_checkpoint_is_refused(tmp_path):
    provs = zoo.verify()
    if not provs:
        pytest.skip("no zoo checkpoints committed yet")
    p = provs[0]
    src = zoo.zoo_dir()
    for ext in (".npz", ".json"):
        (tmp_path / f"{p['name']}{ext}").write_bytes((src / f"{p['name']}{ext}").read_bytes())
    blob = bytearray((tmp_path / f"{p['name']}.npz").read_bytes())
    blob[len(blob) // 2] ^= 1
    (tmp_path / f"{p['name']}.npz").write_bytes(bytes(blob))
    from mdlnb.studies.pretraining import ChecksumError

    with pytest.raises(ChecksumError, match="SHA-256"):
        zoo.verify(tmp_path)


def test_a_build_is_resumable_and_a_rebuild_writes_the_same_bytes(tmp_path, monkeypatch):
    """A tiny zoo (supervised, steps 50 and 100, no probe): built, interrupted and resumed
    into one directory, and rebuilt from nothing into another — the same bytes."""
    from mdlnb.studies.zoo import _build

    monkeypatch.setenv("MDLNB_CACHE", str(tmp_path / "cache"))
    cfg = zoo.ZooConfig(families=("supervised",), steps=(50, 100), probe=False)
    # a smaller pretraining set keeps the test short: the first 512 images
    from mdlnb import data

    real_load = data.load

    def small(name, **kw):
        t = real_load(name, **kw)
        return t.take(np.arange(512)) if name == "fashion_mnist" else t

    monkeypatch.setattr(_build.data, "load", small)
    real_write = _build._artifacts.write

    def stop_at_100(params, prov, directory=None):
        if prov["step"] == 100:
            raise KeyboardInterrupt  # killed before step 100 was written
        return real_write(params, prov, directory=directory)

    monkeypatch.setattr(_build._artifacts, "write", stop_at_100)
    with pytest.raises(KeyboardInterrupt):
        _build.build_family("supervised", cfg, directory=tmp_path / "a")
    states = list((tmp_path / "cache" / "zoo").glob("zoo-supervised-*.ckpt.npz"))
    assert len(states) == 1  # the state after step 50 was kept
    monkeypatch.setattr(_build._artifacts, "write", real_write)
    written = _build.build_family("supervised", cfg, directory=tmp_path / "a")
    assert [p["step"] for p in written] == [100]
    _build.build_family("supervised", cfg, directory=tmp_path / "b", rebuild=True)
    for s in (50, 100):
        a = json.loads((tmp_path / "a" / f"supervised-vit_S-s0-step{s}.json").read_text())
        b = json.loads((tmp_path / "b" / f"supervised-vit_S-s0-step{s}.json").read_text())
        assert a["sha256"] == b["sha256"] and a["step"] == s
        assert (tmp_path / "a" / f"supervised-vit_S-s0-step{s}.npz").read_bytes() == (
            tmp_path / "b" / f"supervised-vit_S-s0-step{s}.npz"
        ).read_bytes()
    assert dataclasses.asdict(cfg)["steps"] == (50, 100)
