"""The pretraining stage: the plateau rule, resumable and deterministic training,
artifacts checked by SHA-256, and the committed encoders themselves."""

from __future__ import annotations

import json
import zipfile

import jax
import numpy as np
import pandas as pd
import pytest

import mdlnb
from mdlnb.encoders import Plateau, pretrain, train_until_plateau
from mdlnb.encoders import _pretrain as P
from mdlnb.studies import pretraining as PT
from mdlnb.studies.pretraining._result import OVERVIEW


@pytest.fixture(scope="module")
def images():
    return mdlnb.data.load("fashion_mnist", split="train", size=200, seed=3)


class Scripted:
    """A monitor that returns a fixed value per evaluation (and counts its calls)."""

    def __init__(self, values, fail_at=None):
        self.values, self.fail_at, self.calls = list(values), fail_at, []

    def __call__(self, step, encoder):
        if self.fail_at is not None and step == self.fail_at:
            self.fail_at = None
            raise KeyboardInterrupt("simulated interruption")
        self.calls.append(step)
        return {"probe_accuracy": self.values[len(self.calls) - 1]}


def _leaves(tree):
    return [np.asarray(v) for v in jax.tree_util.tree_leaves(tree)]


# -- the rule ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "values, patience, delta, chosen, stopped",
    [
        ([0.5, 0.6, 0.7], 2, 0.0, 2, False),
        ([0.5, 0.6, 0.6, 0.6], 2, 0.0, 3, False),  # ties improve by >= 0
        ([0.5, 0.6, 0.6, 0.6], 2, 0.01, 1, True),  # ... but not by 0.01
        ([0.5, 0.6, 0.55, 0.603, 0.604], 3, 0.005, 1, True),  # gains below delta over the best
        ([0.5, 0.6, 0.55, 0.604, 0.611], 3, 0.005, 4, False),  # 0.011 over the best counts
        ([0.9, 0.1, 0.2, 0.3], 3, 0.0, 0, True),  # step 0 can be the best
    ],
)
def test_plateau_rule(values, patience, delta, chosen, stopped):
    rule = Plateau(eval_every=10, max_steps=100, patience=patience, min_delta=delta)
    assert rule.chosen(values) == chosen
    assert rule.stopped(values) is stopped


@pytest.mark.parametrize(
    "kwargs, arg",
    [
        ({"eval_every": 0}, "eval_every"),
        ({"max_steps": 25, "eval_every": 10}, "max_steps"),
        ({"patience": 1.5}, "patience"),
        ({"min_delta": -1.0}, "min_delta"),
    ],
)
def test_plateau_rejects(kwargs, arg):
    with pytest.raises(ValueError, match=arg):
        Plateau(**kwargs)


# -- training ---------------------------------------------------------------------------

RULE = Plateau(eval_every=10, max_steps=60, patience=2, min_delta=0.0)
HP = P.Hyper(batch_size=16)


def test_stops_at_the_plateau_and_returns_the_chosen_parameters(images, tmp_path):
    mon = Scripted([0.1, 0.3, 0.5, 0.4, 0.45, 0.9, 0.9])
    run = train_until_plateau(
        "supervised",
        "vit",
        "XS",
        images,
        mon,
        plateau=RULE,
        hyper=HP,
        directory=tmp_path,
        chunk_steps=10,
    )
    # evaluations at 0, 10, 20, 30, 40: the best (0.5) at step 20, two without gain -> stop
    assert mon.calls == [0, 10, 20, 30, 40]
    assert (run.chosen_step, run.trained_steps, run.reason) == (20, 40, "plateau")
    assert [r["step"] for r in run.curve] == [0, 10, 20, 30, 40]
    assert run.encoder.meta["steps"] == 20
    # the chosen parameters are those at step 20 of the same schedule, evaluated less often
    mid = train_until_plateau(
        "supervised",
        "vit",
        "XS",
        images,
        Scripted([0.1, 0.5, 0.4, 0.3]),
        plateau=Plateau(eval_every=20, max_steps=60, patience=2),
        hyper=HP,
        directory=tmp_path / "mid",
        chunk_steps=10,
    )
    assert (mid.chosen_step, mid.trained_steps) == (20, 60)
    assert PT.params_bytes(run.encoder.params) == PT.params_bytes(mid.encoder.params)
    init = P._init_encoder(P.archs.config("vit", "XS"), 0)
    assert PT.params_bytes(run.encoder.params) != PT.params_bytes(init)


def test_interrupted_run_resumes_bit_for_bit(images, tmp_path):
    values = [0.1, 0.2, 0.3, 0.35, 0.3, 0.3, 0.3]
    whole = train_until_plateau(
        "simclr",
        "vit",
        "XS",
        images,
        Scripted(values),
        plateau=RULE,
        hyper=HP,
        directory=tmp_path / "a",
    )
    mon = Scripted(values, fail_at=20)
    with pytest.raises(KeyboardInterrupt):
        train_until_plateau(
            "simclr", "vit", "XS", images, mon, plateau=RULE, hyper=HP, directory=tmp_path / "b"
        )
    resumed_mon = Scripted(values[2:])
    resumed = train_until_plateau(
        "simclr", "vit", "XS", images, resumed_mon, plateau=RULE, hyper=HP, directory=tmp_path / "b"
    )
    assert resumed_mon.calls == [20, 30, 40, 50]  # steps 0 and 10 were not redone
    assert [r["step"] for r in resumed.curve] == [r["step"] for r in whole.curve]
    assert PT.params_bytes(resumed.encoder.params) == PT.params_bytes(whole.encoder.params)
    assert resumed.chosen_step == whole.chosen_step == 30


def test_random_is_the_initialization_every_objective_starts_from(images, tmp_path):
    run = train_until_plateau(
        "random", "vit", "XS", images, Scripted([0.4]), plateau=RULE, directory=tmp_path
    )
    assert (run.chosen_step, run.trained_steps, run.reason) == (0, 0, "untrained")
    ref = pretrain("random", "vit", "XS", images, 0, 0)
    assert PT.params_bytes(run.encoder.params) == PT.params_bytes(ref.params)


def test_monitor_must_return_the_key(images, tmp_path):
    with pytest.raises(ValueError, match="plateau.key"):
        train_until_plateau(
            "random",
            "vit",
            "XS",
            images,
            lambda s, e: {"acc": 1.0},
            plateau=RULE,
            directory=tmp_path,
        )
    with pytest.raises(ValueError, match="chunk_steps"):
        train_until_plateau(
            "supervised",
            "vit",
            "XS",
            images,
            Scripted([0]),
            plateau=RULE,
            chunk_steps=3,
            directory=tmp_path,
        )


# -- artifacts --------------------------------------------------------------------------


def test_artifacts_round_trip_and_detect_damage(images, tmp_path):
    cfg = PT.PretrainingConfig(
        suite=("supervised:vit_XS",),
        probe_train_size=100,
        probe_test_size=60,
        eval_every=10,
        max_steps=20,
        patience=5,
        batch_size=16,
        mdl_size=100,
        mdl_protocol="small",
    )
    provs = PT.run(cfg, directory=tmp_path, progress=False)
    (prov,) = provs
    assert prov["name"] == "supervised-vit_XS-s0" and prov["trained_steps"] == 20
    assert 0.0 <= prov["probe_accuracy"] <= 1.0 and prov["rankme"] >= 1.0
    for field in (
        "source_commit",
        "command",
        "seed",
        "chosen_step",
        "final_loss",
        "sha256",
        "machine",
        "hyper",
        "plateau",
        "data_hash",
    ):
        assert field in prov
    enc = PT.load_encoder("supervised", "vit", "XS", directory=tmp_path)
    blob = (tmp_path / "supervised-vit_XS-s0.npz").read_bytes()
    assert PT.params_bytes(enc.params) == blob  # load -> same bytes
    with zipfile.ZipFile(tmp_path / "supervised-vit_XS-s0.npz") as zf:
        assert {i.date_time for i in zf.infolist()} == {(1980, 1, 1, 0, 0, 0)}
    # the monitor's value at the chosen step, recomputed from the loaded encoder
    again = PT.monitor(cfg)(prov["chosen_step"], enc)
    assert again["probe_accuracy"] == pytest.approx(prov["probe_accuracy"], abs=1e-12)
    row = PT.result(tmp_path).curves.set_index("step").loc[prov["chosen_step"]]
    assert again["lidar"] == pytest.approx(row["lidar"], rel=1e-5)
    assert again["mdl_nats_per_example"] == pytest.approx(row["mdl_nats_per_example"], rel=1e-5)
    assert prov["monitor"]["mdl_task"] == "digits" and prov["monitor"]["mdl_size"] == 100
    assert 1.0 <= again["lidar"] <= enc.feature_dim
    # a second run finds the artifact and trains nothing
    assert PT.run(cfg, directory=tmp_path, progress=False)[0]["sha256"] == prov["sha256"]
    res = PT.result(tmp_path)
    assert list(res.encoders["encoder"]) == ["supervised:vit_XS"]
    assert list(res.curves["step"]) == [0, 10, 20]
    # one flipped byte is caught
    damaged = bytearray(blob)
    damaged[-40] ^= 1
    (tmp_path / "supervised-vit_XS-s0.npz").write_bytes(bytes(damaged))
    with pytest.raises(PT.ChecksumError, match="SHA-256"):
        PT.verify(tmp_path)
    with pytest.raises(FileNotFoundError, match="no encoder artifact"):
        PT.check("byol-vit_S-s0", directory=tmp_path)


@pytest.mark.parametrize(
    "kwargs, arg",
    [
        ({"suite": ("mae:resnet_S",)}, "suite"),
        ({"suite": ("simclr-vit",)}, "suite"),
        ({"suite": ()}, "suite"),
        ({"probe_train_size": 0}, "probe_train_size"),
        ({"probe_test_size": 3}, "probe_test_size"),
        ({"max_steps": 1234}, "max_steps"),
        ({"mdl_task": "nope"}, "mdl_task"),
        ({"mdl_task": "fashion_mnist"}, "mdl_task"),
        ({"mdl_size": 5}, "mdl_size"),
        ({"mdl_protocol": "nope"}, "protocol"),
    ],
)
def test_config_rejects(kwargs, arg):
    with pytest.raises(ValueError, match=arg):
        PT.PretrainingConfig(**kwargs)


# -- the committed encoders ---------------------------------------------------------------

COMMITTED = PT.names()


@pytest.mark.skipif(not COMMITTED, reason="no committed encoder artifacts")
def test_committed_encoders_verify_and_load():
    provs = PT.verify()
    assert [p["name"] for p in provs] == COMMITTED
    for p in provs:
        assert p["stop_reason"] in ("plateau", "max_steps", "untrained")
        curve = PT.result().curves
        mine = curve[curve["encoder"] == f"{p['objective']}:{p['arch']}_{p['size']}"]
        chosen = mine[mine["step"] == p["chosen_step"]]
        assert float(chosen["probe_accuracy"].iloc[0]) == pytest.approx(p["probe_accuracy"])


@pytest.mark.skipif(not COMMITTED, reason="no committed encoder artifacts")
def test_overview_is_one_row_per_committed_encoder():
    res = PT.result()
    view = res.overview()
    assert list(view.columns) == list(OVERVIEW)
    pd.testing.assert_frame_equal(view, res.encoders[list(OVERVIEW)])


@pytest.mark.skipif("random-vit_S-s0" not in COMMITTED, reason="random ViT-S not committed")
def test_committed_random_encoder_is_its_seeded_initialization():
    """Retraining the untrained encoder from scratch gives the committed bytes."""
    prov = PT.check("random-vit_S-s0")
    cfg = P.archs.config("vit", "S")
    assert PT.sha256(PT.params_bytes(P._init_encoder(cfg, prov["seed"]))) == prov["sha256"]
    json.dumps(prov)


@pytest.mark.skipif("random-vit_S-s0" not in COMMITTED, reason="random ViT-S not committed")
def test_studies_name_committed_encoders_as_trained():
    from mdlnb.studies.transferability import parse_encoder
    from mdlnb.studies.transferability._encoders import build_encoder

    spec = parse_encoder("random:vit_S:trained")
    assert spec.trained and (spec.family, spec.arch, spec.size, spec.seed) == (
        "random",
        "vit",
        "S",
        0,
    )
    enc = build_encoder(spec)
    assert PT.sha256(PT.params_bytes(enc.params)) == PT.check("random-vit_S-s0")["sha256"]
    with pytest.raises(ValueError, match="steps must be an integer or 'trained'"):
        parse_encoder("simclr:vit_S:soon")


def test_kept_evaluations_are_the_parameters_at_each_step(images, tmp_path):
    values = [0.1, 0.2, 0.3, 0.25, 0.25]
    run = train_until_plateau(
        "supervised",
        "vit",
        "XS",
        images,
        Scripted(values),
        plateau=RULE,
        hyper=HP,
        directory=tmp_path,
        keep_evaluations=True,
    )
    kept = run.evaluations()
    assert sorted(kept) == [10, 20, 30, 40]  # step 0 is the seeded init
    assert PT.params_bytes(kept[20]) == PT.params_bytes(run.encoder.params)  # chosen: 20
    # a second call with the same arguments trains nothing and finds the same files
    again = train_until_plateau(
        "supervised",
        "vit",
        "XS",
        images,
        Scripted([]),
        plateau=RULE,
        hyper=HP,
        directory=tmp_path,
        keep_evaluations=True,
    )
    assert again.trained_steps == 40
    assert PT.params_bytes(again.evaluations()[40]) == PT.params_bytes(kept[40])


def test_tracking_is_kendall_tau_over_checkpoints():
    import pandas as pd
    from scipy import stats

    from mdlnb.baselines import labelfree

    rng = np.random.default_rng(0)
    rows = []
    for enc, sign in (("a:vit_S", 1.0), ("b:vit_S", -1.0)):
        acc = np.linspace(0.6, 0.9, 6)
        for i, a in enumerate(acc):
            rows.append(
                {
                    "encoder": enc,
                    "objective": enc[0],
                    "step": 500 * i,
                    "probe_accuracy": a,
                    "rankme": 10 + sign * i + 0.1 * rng.normal(),
                    "twonn_id": 5 + rng.normal(),
                    "cluster_learnability": 0.5 + 0.05 * i,
                    "alpha_req": 1 + 0.1 * i,
                    "mdl_nats_per_example": 2.0 - sign * 0.1 * i,
                    "loss": np.nan,
                    "train_seconds": 0.0,
                }
            )
    tracked = pd.DataFrame(rows)
    third = tracked[tracked["encoder"] == "a:vit_S"].assign(
        encoder="c:vit_S",
        objective="c",
        twonn_id=lambda d: d["twonn_id"] + 3.0,
        probe_accuracy=lambda d: d["probe_accuracy"] - 0.2,
    )
    chosen = pd.DataFrame(
        [
            {"encoder": "a:vit_S", "chosen_step": 2500},
            {"encoder": "b:vit_S", "chosen_step": 1500},
            {"encoder": "c:vit_S", "chosen_step": 500},
        ]
    )
    res = PT.PretrainingResult(chosen[:2], tracked)
    res3 = PT.PretrainingResult(chosen, pd.concat([tracked, third], ignore_index=True))
    t = res.tracking().set_index(["encoder", "score"])["kendall tau"]
    for enc in ("a:vit_S", "b:vit_S"):
        g = tracked
        g = g[g["encoder"] == enc]
        assert t[(enc, "rankme")] == pytest.approx(
            stats.kendalltau(g["rankme"], g["probe_accuracy"]).statistic
        )
        cl = labelfree.clid(g["cluster_learnability"].to_numpy(), g["twonn_id"].to_numpy())
        assert t[(enc, "clid")] == pytest.approx(
            stats.kendalltau(cl, g["probe_accuracy"]).statistic
        )
        assert t[(enc, "alpha_req_near_1")] == pytest.approx(-1.0)  # moves away from 1
        assert t[(enc, "neg_mdl")] == pytest.approx(1.0 if enc == "a:vit_S" else -1.0)
    # claim m is CLID's across models: each encoder at its chosen checkpoint, CLID
    # normalised across the encoders, Kendall τ with the probe accuracy
    m = res3.across_models().set_index("encoder")
    f = pd.DataFrame(rows).set_index(["encoder", "step"])
    for enc, step in (("a:vit_S", 2500), ("b:vit_S", 1500)):
        assert m.loc[enc, "twonn_id"] == f.loc[(enc, step), "twonn_id"]
    assert m.loc["c:vit_S", "twonn_id"] == f.loc[("a:vit_S", 500), "twonn_id"] + 3.0
    cl, ident = m["cluster_learnability"].to_numpy(), m["twonn_id"].to_numpy()
    assert m["clid"].to_numpy() == pytest.approx(labelfree.clid(cl, ident))
    claim = res3.tracking_claim()
    assert claim.id == "m" and claim.n == 3 and claim.unit == "encoders"
    assert claim.estimate == pytest.approx(
        stats.kendalltau(m["clid"], m["probe_accuracy"]).statistic
    )
    # the summary over encoders: mean and a t interval, re-derived by hand
    summ = res.tracking_summary().set_index("score")
    taus = np.array([t[("a:vit_S", "rankme")], t[("b:vit_S", "rankme")]])
    half = stats.t.ppf(0.975, 1) * taus.std(ddof=1) / np.sqrt(2)
    assert summ.loc["rankme", "encoders"] == 2
    assert summ.loc["rankme", "mean tau"] == pytest.approx(taus.mean())
    assert summ.loc["rankme", "95% low"] == pytest.approx(taus.mean() - half)
    assert summ.loc["neg_mdl", "mean tau"] == pytest.approx(0.0)
    assert summ.loc["neg_mdl", "min tau"] == pytest.approx(-1.0)


def test_monitor_codes_the_downstream_task(images):
    """The monitor's MDL column is the switching code of the downstream task's labels
    given the encoder's features, per example (the same call made by hand)."""
    import mdlnb
    from mdlnb import data
    from mdlnb.encoders.base import features

    cfg = PT.PretrainingConfig(
        suite=("random:vit_XS",),
        probe_train_size=100,
        probe_test_size=60,
        mdl_task="digits",
        mdl_size=120,
        mdl_protocol="small",
    )
    mon = PT.monitor(cfg)
    enc = P._encoder(
        "random",
        P.archs.config("vit", "XS"),
        P._init_encoder(P.archs.config("vit", "XS"), 0),
        {"steps": 0, "seed": 0},
    )
    got = mon(0, enc)["mdl_nats_per_example"]
    task = data.load("digits", split="train", size=120, seed=0)
    f = np.asarray(features(enc, task, cache=False).x, np.float64)
    rep = mdlnb.evaluate(
        f, task.y, protocol="small", seed=0, num_classes=10, progress=False, cache=False
    )
    assert got == pytest.approx(rep.total_nats / 120, rel=1e-12)
    assert 0.0 < got <= np.log(10) * 1.5
    assert mon.describe()["mdl_task"] == "digits" and mon.describe()["mdl_size"] == 120
