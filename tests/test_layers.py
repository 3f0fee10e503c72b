"""mdlnb.encoders.layers: one Encoder per intermediate layer.

References: the encoders' own ``apply`` (the last layer must equal it bit for
bit), the ResNet/ViT run by hand on a truncated configuration or block by
block with ``archs.block_apply``, and ``np.concatenate`` of the parts. The
EfficientNet stages are checked against a plain NumPy forward pass in
``tests/test_efficientnet.py``.
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest

import mdlnb
from mdlnb import Task
from mdlnb.encoders import _pretrain, archs, base, efficientnet_lite, layer_names, layers


def _random(kind: str, size: str):
    cfg = archs.config(kind, size)
    params = jax.tree_util.tree_map(jax.numpy.asarray, archs.init(jax.random.key(3), cfg))
    return _pretrain._encoder("random", cfg, params, {"steps": 0, "seed": 3})


@pytest.fixture(scope="module")
def resnet():
    return _random("resnet", "M")  # 1, 2, 2 blocks per stage


@pytest.fixture(scope="module")
def vit():
    return _random("vit", "M")  # 4 blocks


@pytest.fixture(scope="module")
def grey():
    return np.random.default_rng(0).uniform(size=(5, 28, 28, 1)).astype(np.float32)


def _feats(enc, x):
    return np.asarray(jax.jit(enc.apply)(enc.params, x))


def test_names_and_shapes(resnet, vit, grey):
    assert layer_names(resnet) == ["stem", "stage0", "stage1", "stage2"]
    assert layer_names(vit) == ["embed", "block0", "block1", "block2", "block3"]
    encs = layers(resnet)
    assert list(encs) == [f"{resnet.name}/{n}" for n in layer_names(resnet)]
    for (name, e), dim in zip(encs.items(), (24, 24, 48, 96)):
        assert e.name == name and e.feature_dim == dim
        assert e.input_size == resnet.input_size and e.channels == resnet.channels
        assert e.params is resnet.params and e.meta["source_encoder"] == resnet.name
        assert _feats(e, grey).shape == (5, dim)
    sub = layers(vit, which=["block3", 1, -5], concat_last=3)
    assert list(sub) == [f"{vit.name}/{n}" for n in ("block3", "block0", "embed", "last3")]
    assert [e.feature_dim for e in sub.values()] == [96, 96, 96, 288]
    assert sub[f"{vit.name}/last3"].meta["layers"] == ["block1", "block2", "block3"]
    assert list(layers(vit, "block2", pooling="max")) == [f"{vit.name}/block2[max]"]


def test_lite0_layer_names_and_widths():
    enc = efficientnet_lite(0, resolution=32)
    encs = layers(enc, which=["stem", "stage3", "head"])
    assert [e.feature_dim for e in encs.values()] == [32, 80, 1280]


@pytest.mark.parametrize("which", ["resnet", "vit", "lite0"])
def test_last_layer_is_the_encoders_own_features_bit_for_bit(which, resnet, vit, grey):
    enc = {"resnet": resnet, "vit": vit}.get(which) or efficientnet_lite(0, resolution=32)
    x = (
        grey
        if enc.channels == 1
        else np.random.default_rng(1).uniform(size=(4, 32, 32, 3)).astype(np.float32)
    )
    last = layers(enc, which=-1)
    ((name, e),) = last.items()
    assert name == f"{enc.name}/{layer_names(enc)[-1]}"
    np.testing.assert_array_equal(_feats(e, x), _feats(enc, x))
    # and through the cached feature extraction, with batch padding
    task = Task("imgs", (x * 255).astype(np.uint8), np.arange(len(x)) % 2, 2)
    np.testing.assert_array_equal(
        base.features(e, task, batch_size=3, cache=False).x,
        base.features(enc, task, batch_size=3, cache=False).x,
    )


def test_resnet_stage_equals_a_truncated_network(resnet, grey):
    """stage1 of ResNet-M is the default features of the same parameters under a
    configuration with the first two stages only."""
    cfg = resnet.apply.keywords["cfg"]
    short = dataclasses.replace(cfg, widths=cfg.widths[:2], blocks=cfg.blocks[:2])
    want = np.asarray(jax.jit(lambda p, x: archs.apply(p, x, short))(resnet.params, grey))
    got = _feats(layers(resnet, "stage1")[f"{resnet.name}/stage1"], grey)
    assert got.shape == (5, 48)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_vit_block_equals_blocks_run_by_hand(vit, grey):
    cfg, p = vit.apply.keywords["cfg"], vit.params

    def by_hand(x, k):
        t = archs.dense(p["embed"], archs.patchify((x - 0.5) * 2.0, cfg.patch)) + p["pos"]
        for blk in p["blocks"][:k]:
            t = archs.block_apply(blk, t, cfg.heads)
        t = np.asarray(archs.layer_norm(p["ln"], t))
        return t.mean(1), t.max(1)

    encs = layers(vit, which=["embed", "block1"])
    for name, k in (("embed", 0), ("block1", 2)):
        mean, mx = by_hand(grey, k)
        np.testing.assert_allclose(
            _feats(encs[f"{vit.name}/{name}"], grey), mean, rtol=1e-5, atol=1e-5
        )
        np.testing.assert_allclose(
            _feats(layers(vit, name, pooling="max")[f"{vit.name}/{name}[max]"], grey),
            mx,
            rtol=1e-5,
            atol=1e-5,
        )
    # block1 differs from block3 (the default features): a real intermediate layer
    assert np.abs(by_hand(grey, 2)[0] - _feats(vit, grey)).max() > 1e-3


def test_concatenation_is_the_parts_side_by_side(vit, resnet, grey):
    for enc, k in ((vit, 4), (resnet, 2)):
        encs = layers(enc, concat_last=k)
        parts = [_feats(encs[f"{enc.name}/{n}"], grey) for n in layer_names(enc)[-k:]]
        np.testing.assert_allclose(
            _feats(encs[f"{enc.name}/last{k}"], grey),
            np.concatenate(parts, axis=1),
            rtol=1e-6,
            atol=1e-6,
        )


def test_bad_arguments_name_themselves(vit, resnet):
    with pytest.raises(
        ValueError,
        match=r"which: unknown layer 'block9'.*available.*'embed', "
        r"'block0'",
    ):
        layers(vit, which=["block9"])
    with pytest.raises(ValueError, match=r"which: index 4 out of range.*'stage2'"):
        layers(resnet, which=[4])
    with pytest.raises(ValueError, match="which: no layers"):
        layers(resnet, which=[])
    with pytest.raises(ValueError, match="which: layer 'stem' given twice"):
        layers(resnet, which=["stem", 0])
    with pytest.raises(ValueError, match="pooling: .* no CLS token"):
        layers(vit, pooling="cls")
    with pytest.raises(ValueError, match="pooling: must be one of"):
        layers(vit, pooling="attention")
    with pytest.raises(ValueError, match=r"concat_last: must be an integer in \[2, 5\]"):
        layers(vit, concat_last=9)
    with pytest.raises(ValueError, match="encoder: .* does not expose intermediate layers"):
        layers(dataclasses.replace(vit, apply=lambda p, x: x.mean((1, 2))))
    with pytest.raises(ValueError, match="taps: unknown layers"):
        archs.apply(
            vit.params,
            np.zeros((1, 28, 28, 1), np.float32),
            vit.apply.keywords["cfg"],
            taps=("stage0",),
        )


def test_compare_ranks_layers_as_encoders(resnet, monkeypatch, tmp_path):
    monkeypatch.setenv("MDLNB_CACHE", str(tmp_path))
    rng = np.random.default_rng(0)
    task = Task(
        "grey", rng.integers(0, 256, size=(64, 28, 28, 1), dtype=np.uint8), np.arange(64) % 2, 2
    )
    encs = layers(resnet, which=["stem", "stage2"])
    res = mdlnb.compare(encs, task, protocol="small", seeds=(0, 1, 2))
    assert set(res.encoders) == set(encs)
    assert len(res.runs) == 6 and np.isfinite(res.totals()).all()
    # cached features live in flat files: '/' of the layer names is not a directory
    feats = list((tmp_path / "features").rglob("*.npz"))
    assert len(feats) == 2 and all(p.parent.name == "features" for p in feats)


def _comparison(enc: str, steps: dict[str, list[np.ndarray]]):
    """A Comparison built from given per-step losses (nats), 3 orders."""
    import pandas as pd

    from mdlnb.api._comparison import Comparison

    seeds = (0, 1, 2)
    n = len(next(iter(steps.values()))[0])
    rows, per, mass = [], {}, {}
    for layer, by_seed in steps.items():
        for s, v in zip(seeds, by_seed):
            name = f"{enc}/{layer}"
            per[(name, s)] = np.asarray(v, float)
            mass[(name, s)] = {"linear": 1.0}
            rows.append(
                {
                    "encoder": name,
                    "seed": s,
                    "total [nats]": float(np.sum(v)),
                    "per example [bits]": float(np.sum(v)) / np.log(2) / n,
                    "best expert [nats]": float(np.sum(v)),
                    "preferred readout": "linear",
                }
            )
    return Comparison(
        runs=pd.DataFrame(rows),
        per_step_nats=per,
        readout_mass=mass,
        protocol=None,
        n=n,
        num_classes=2,
        seeds=seeds,
        task_name="toy",
    )


def test_layers_study_tables_leaders_and_findings():
    """Hand-made streams: on every order 'early' is 0.1 nats/example cheaper than
    'head' over examples 5..9 and 'deep' over examples 10..19 only; the first 4
    examples cost the same (a tie)."""
    from mdlnb.studies.layers import LayersResult

    base_loss = np.full(20, 0.6)
    early, deep = base_loss.copy(), base_loss.copy()
    early[4:9] -= 0.1  # ahead from n = 5: 0.5 nats by n = 9
    deep[9:20] -= 0.1  # ahead from n = 10, 1.1 nats by n = 20
    jitter = [0.0, 0.01, -0.01]
    steps = {
        name: [v + j for j in jitter]
        for name, v in (("early", early), ("deep", deep), ("head", base_loss))
    }
    res = LayersResult(
        encoder="enc",
        layers=("early", "deep", "head"),
        reference="head",
        comparisons={"toy": _comparison("enc", steps)},
        feature_dims={"early": 4, "deep": 8, "head": 16},
    )
    tab = res.table().set_index("layer")
    assert list(tab.index) == ["deep", "early", "head"] and list(tab["rank"]) == [1, 2, 3]
    np.testing.assert_allclose(tab["vs head [nats]"], [-1.1, -0.5, 0.0], atol=1e-9)
    np.testing.assert_allclose(tab["vs head std [nats]"], 0.0, atol=1e-9)
    cur = res.along_n(points=100)
    at = cur[cur["layer"] == "early"].set_index("n")["mean"]
    np.testing.assert_allclose(at.loc[[4, 9, 20]], [0.0, -0.5, -0.5], atol=1e-9)
    lead = res.leaders(points=100).iloc[0]
    assert lead["best"] == "deep"
    # at n = 14 deep catches up with early exactly (−0.5 each): a tie
    assert (
        lead["leader at n"] == "tie from n = 1, early from n = 5, tie from n = 14, deep from n = 15"
    )
    assert lead["from n"] == 15  # -0.1·(n−9) < −0.5 from n = 15 on
    text = res.findings()
    assert "Best: **deep**, ranked first in 3/3 orders" in text
    assert "runner-up early is +0.6 ± 0.0 nats behind" in text and "deep shorter in 3/3" in text
    assert "deep leads from n = 15 on" in text


def test_layers_study_holds_both_encoders_under_distinct_prefixes(tmp_path):
    """LayersStudy: the Lite and the ViT result saved side by side (``layers_*``,
    ``layers_vit_*``), each file the one its own result writes; findings name both."""
    import pandas as pd

    from mdlnb.studies.layers import LayersResult, LayersStudy

    def result(enc, names, offsets):
        steps = {
            n: [np.full(12, 0.6 - o) + j for j in (0.0, 0.01, -0.01)]
            for n, o in zip(names, offsets)
        }
        return LayersResult(
            encoder=enc,
            layers=tuple(names),
            reference=names[-1],
            comparisons={"toy": _comparison(enc, steps)},
            feature_dims={n: 4 for n in names},
        )

    lite = result("lite", ("stage2", "head"), (0.0, 0.05))
    vit = result("vit", ("embed", "block0", "block1"), (0.1, 0.0, 0.02))
    both = LayersStudy(lite=lite, vit=vit)
    assert list(both.results()) == ["layers", "layers_vit"]
    assert list(LayersStudy(lite=lite).results()) == ["layers"]
    both.save(tmp_path, points=20)
    for prefix, r in both.results().items():
        tab = pd.read_csv(tmp_path / f"{prefix}_table.csv")
        assert list(tab["layer"]) == list(r.table()["layer"])
        assert (tmp_path / f"{prefix}_codelengths.png").exists()
    vt = pd.read_csv(tmp_path / "layers_vit_table.csv").set_index("layer")
    # per example embed 0.5, block0 0.6, block1 0.58 nats, over 12 examples
    np.testing.assert_allclose(
        vt.loc[["embed", "block0", "block1"], "vs block1 [nats]"], [-0.96, 0.24, 0.0], atol=1e-9
    )
    text = both.findings()
    assert text.index("**lite**") < text.index("**vit**")
    assert "Best: **head**" in text and "Best: **embed**" in text


def test_layers_config_loads_the_committed_vit_and_checks_its_name():
    """The default config's second encoder is the committed supervised ViT-S, whose
    layers are those of ``vit_which`` and whose last layer is its own features."""
    from mdlnb.studies.layers import LayersConfig

    config = LayersConfig()
    assert {mdlnb.data.info().set_index("name").loc[t, "group"] for t in config.task_names} == {
        "natural",
        "specialized",
        "structured",
    }
    enc = config.vit_encoder()
    assert enc.meta["artifact"] == "supervised-vit_S-s0"
    assert tuple(layer_names(enc)) == config.vit_which
    x = np.random.default_rng(1).uniform(size=(4, 28, 28, 1)).astype(np.float32)
    last = layers(enc, config.vit_which[-1])[f"{enc.name}/{config.vit_which[-1]}"]
    np.testing.assert_array_equal(_feats(last, x), _feats(enc, x))
    assert LayersConfig(vit=None).vit_encoder() is None
    for bad in ("supervised:vit_S", "supervised:resnet_S:trained", "lite0@64", "vit"):
        with pytest.raises(ValueError, match="vit: "):
            LayersConfig(vit=bad)


def test_run_takes_a_config_like_every_study_and_keeps_the_encoder_form(monkeypatch, capsys):
    """``run(config)`` runs both encoders of the config through :func:`run_encoder` with
    the config's settings (nobody watching, as here: one summary line per encoder, the
    comparisons quiet); ``run(encoder, tasks, ...)`` is ``run_encoder``; ``run_config``
    is ``run`` without a bar."""
    from mdlnb.studies import layers as study
    from mdlnb.studies.layers import _run

    calls = []

    def fake(encoder, tasks, **kw):
        calls.append((encoder, tuple(tasks), kw))
        return f"result:{encoder}"

    monkeypatch.setattr(_run, "run_encoder", fake)
    monkeypatch.setattr(study.LayersConfig, "tasks", lambda self: ["t1", "t2"])
    monkeypatch.setattr(study.LayersConfig, "encoder", lambda self: "lite")
    monkeypatch.setattr(study.LayersConfig, "vit_encoder", lambda self: self.vit and "vit")
    config = study.LayersConfig(seeds=[3, 4, 5], pooling="max")
    both = study.run(config)
    assert isinstance(both, study.LayersStudy)
    assert (both.lite, both.vit) == ("result:lite", "result:vit")
    shared = dict(pooling="max", seeds=[3, 4, 5], protocol="small", progress=False, cache=True)
    assert calls == [
        ("lite", ("t1", "t2"), {"which": list(config.which), **shared}),
        ("vit", ("t1", "t2"), {"which": list(config.vit_which), **shared}),
    ]
    printed = capsys.readouterr().out.splitlines()
    assert [line.split(" in ")[0] for line in printed] == [
        f"layers: lite: 2 tasks × {len(config.which)} layers × 3 orders",
        f"layers: vit: 2 tasks × {len(config.vit_which)} layers × 3 orders",
    ]
    calls.clear()
    study.run(config, progress=True)  # asked for: compare's own bars, no summary line
    assert [c[2]["progress"] for c in calls] == [True, True]
    assert capsys.readouterr().out == ""
    calls.clear()
    assert study.run_config(study.LayersConfig(vit=None)).vit is None
    assert [c[2]["progress"] for c in calls] == [False]
    calls.clear()
    assert study.run("enc", ["t"], which=["a", "b"], seeds=[0, 1, 2]) == "result:enc"
    assert calls == [
        ("enc", ("t",), dict(which=["a", "b"], seeds=[0, 1, 2], progress=None, cache=True))
    ]
    with pytest.raises(ValueError, match="expected a LayersConfig"):
        study.run("enc")
    with pytest.raises(ValueError, match="tasks, which: set by the config"):
        study.run(config, ["t"], which=["a"])
