"""Transferability study: protocol pieces on tiny synthetic cases with known answers."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from mdlnb import Task
from mdlnb.studies import transferability as tr


def _tau_a(x, y):
    """PACTran App. B.8: (1/(C(C−1))) Σ_{i≠j} sign(x_i − x_j) sign(y_i − y_j) (no ties here)."""
    s = sum(
        np.sign(x[i] - x[j]) * np.sign(y[i] - y[j])
        for i, j in itertools.permutations(range(len(x)), 2)
    )
    return s / (len(x) * (len(x) - 1))


# ----------------------------------------------------------------------------- subsamples


@pytest.mark.parametrize(
    "ratio,k,min_n,expected",
    [
        (2, 10, 20, 20),
        (5, 10, 20, 50),
        (10, 16, 20, 160),
        (2, 4, 20, 20),
        (10, 4, 20, 40),
        (5, 2, 7, 10),
    ],
)
def test_subsample_size_is_max_of_ratio_k_and_min_n(ratio, k, min_n, expected):
    assert tr.subsample_size(ratio, k, min_n) == expected


def test_subsample_indices_stratified_seeded_and_shared():
    y = np.repeat(np.arange(10), 30)
    a = tr.subsample_indices(y, 5, 10, min_n=20, seed=3, repeat=1)
    assert len(a) == 50 and len(np.unique(a)) == 50
    assert np.array_equal(np.bincount(y[a], minlength=10), np.full(10, 5))
    assert np.array_equal(a, tr.subsample_indices(y, 5, 10, min_n=20, seed=3, repeat=1))
    b = tr.subsample_indices(y, 5, 10, min_n=20, seed=3, repeat=2)
    c = tr.subsample_indices(y, 5, 10, min_n=20, seed=4, repeat=1)
    assert not np.array_equal(a, b) and not np.array_equal(a, c)
    # N/K = 2 with K = 4 hits the floor N = 20: 5 per class
    y4 = np.repeat(np.arange(4), 25)
    d = tr.subsample_indices(y4, 2, 4, min_n=20, seed=0)
    assert np.array_equal(np.bincount(y4[d]), [5, 5, 5, 5])
    with pytest.raises(ValueError, match="ratio"):
        tr.subsample_indices(y4, 50, 4, min_n=20)


def test_subsample_size_rejects_bad_input():
    with pytest.raises(ValueError, match="ratio"):
        tr.subsample_size(0, 10)
    with pytest.raises(ValueError, match="num_classes"):
        tr.subsample_size(2, 1.5)


# ----------------------------------------------------------------------------- Kendall τ


def _frame(values, metric, task="t", ratio=2, repeat=0):
    return [
        dict(encoder=f"e{i}", task=task, ratio=ratio, n=20, repeat=repeat, metric=metric, value=v)
        for i, v in enumerate(values)
        if v is not None
    ]


def _truth(acc, task="t"):
    return pd.DataFrame(
        [
            dict(encoder=f"e{i}", task=task, readout="best", model="linear", accuracy=a)
            for i, a in enumerate(acc)
        ]
    )


def test_kendall_table_against_hand_computed_tau():
    acc = [0.9, 0.8, 0.7, 0.6]
    rows = (
        _frame([4, 3, 2, 1], "logme", repeat=0)  # τ = 1
        + _frame([3, 4, 2, 1], "logme", repeat=1)  # one discordant pair: τ = 4/6
        + _frame([1, 2, 3, 4], "linear", repeat=0)  # lower is better: τ = 1
        + _frame([4, 3, 2, 1], "linear", repeat=1)  # τ = −1
        + _frame([0.1, 0.3, 0.2, None], "leep", repeat=0)  # no source classifier for e3
        + _frame([5, 5, 5, 5], "hscore", repeat=0)  # constant: τ = 0
        + _frame([2, np.nan, 1, 0], "mdl", repeat=0)
    )  # failed on e1: τ over 3 = −1
    tau = tr.kendall_table(pd.DataFrame(rows), _truth(acc)).set_index("metric")
    assert tau.loc["logme", "tau"] == pytest.approx((1 + 4 / 6) / 2)
    # sample standard deviation of {1, 4/6}: |1 − 4/6| / √2
    assert tau.loc["logme", "tau_std"] == pytest.approx((1 / 3) / np.sqrt(2))
    assert tau.loc["logme", "repeats"] == 2
    assert tau.loc["linear", "tau"] == pytest.approx(0.0)
    assert tau.loc["linear", "tau_std"] == pytest.approx(np.sqrt(2.0))
    assert np.isnan(tau.loc["leep", "tau_std"])  # one repeat: no spread
    # leep over e0..e2: acc 0.9 > 0.8 > 0.7, leep 0.1 < 0.3 > 0.2 → pairs (+,−,−)... brute force
    assert tau.loc["leep", "tau"] == pytest.approx(_tau_a([0.1, 0.3, 0.2], acc[:3]))
    assert tau.loc["leep", "encoders"] == 3
    assert tau.loc["hscore", "tau"] == 0.0
    assert tau.loc["mdl", "tau"] == pytest.approx(-_tau_a([2, 1, 0], [0.9, 0.7, 0.6]))
    assert tau.loc["mdl", "encoders"] == 3 and tau.loc["mdl", "nonfinite"] == 1
    assert tau.loc["logme", "nonfinite"] == 0


def test_kendall_table_matches_brute_force_on_random_scores():
    rng = np.random.default_rng(0)
    acc = rng.permutation(7) / 10.0
    rows, expected = [], []
    for rep in range(3):
        v = rng.normal(size=7)
        rows += _frame(v, "pactran_gaussian", repeat=rep)  # lower is better
        expected.append(_tau_a(-v, acc))
    tau = tr.kendall_table(pd.DataFrame(rows), _truth(acc))
    assert tau["tau"].item() == pytest.approx(np.mean(expected))
    assert tau["tau_std"].item() == pytest.approx(np.std(expected, ddof=1))


def test_kendall_table_rejects_missing_readout():
    with pytest.raises(ValueError, match="readout"):
        tr.kendall_table(pd.DataFrame(_frame([1, 2], "logme")), _truth([0.5, 0.6]), readout="mlp")


def test_average_table_equals_mean_of_per_task_table():
    rng = np.random.default_rng(1)
    rows = [
        dict(task=t, ratio=r, metric=m, tau=rng.uniform(-1, 1), tau_std=0.0, repeats=5, encoders=e)
        for t in ("a", "b", "c")
        for r in (2, 5, 10)
        for m, e in (("logme", 6), ("leep", 3), ("mdl", 6))
    ]
    tau = pd.DataFrame(rows)
    avg = tr.average_table(tau).set_index("metric")
    assert list(avg.index) == ["leep", "logme", "mdl"]  # registry order
    for m in ("logme", "leep", "mdl"):
        for r in (2, 5, 10):
            sel = tau[(tau.metric == m) & (tau.ratio == r)]["tau"]
            assert avg.loc[m, f"N/K={r}"] == pytest.approx(sel.mean())
    assert avg.loc["leep", "encoders"] == 3
    per_task = tr.per_task_table(tau)
    assert per_task.set_index(["ratio", "metric"]).loc[(5, "mdl"), "b"] == pytest.approx(
        tau[(tau.task == "b") & (tau.ratio == 5) & (tau.metric == "mdl")]["tau"].item()
    )


# ----------------------------------------------------------------------------- grid and CLID


def test_select_grid_picks_knob_agreeing_with_linear_valid():
    lv = [0.2, 0.5, 0.9]  # LINEAR-VALID losses of e0, e1, e2
    scores = pd.DataFrame(_frame(lv, "linear_valid"))
    grid = []
    for knob, vals in (
        ("beta=0.1N", [3.0, 2.0, 1.0]),
        ("beta=1N", [1.0, 2.0, 3.0]),
        ("beta=10N", [1.0, 3.0, 2.0]),
    ):
        grid += [{**r, "knob": knob} for r in _frame(vals, "linear_grid")]
    rows, chosen = tr.select_grid(pd.DataFrame(grid), scores)
    assert chosen["knob"].tolist() == ["beta=1N"]
    assert rows.sort_values("encoder")["value"].tolist() == [1.0, 2.0, 3.0]
    assert set(rows["metric"]) == {"linear_grid"}


def test_add_clid_is_sum_of_min_max_normalized_cl_and_id():
    cl, ids = [0.2, 0.6, 0.4], [3.0, 1.0, 2.0]
    scores = pd.DataFrame(
        _frame(cl, "cl")
        + _frame(ids, "twonn_id")
        + _frame([0.5, 0.5, 0.5], "cl", repeat=1)
        + _frame([1.0, 2.0, 5.0], "twonn_id", repeat=1)
    )
    out = tr.add_clid(scores)
    c0 = out[(out.metric == "clid") & (out.repeat == 0)].sort_values("encoder")["value"]
    # min–max: CL → [0, 1, .5], ID → [1, 0, .5]
    assert c0.tolist() == pytest.approx([1.0, 1.0, 1.0])
    c1 = out[(out.metric == "clid") & (out.repeat == 1)].sort_values("encoder")["value"]
    assert c1.tolist() == pytest.approx([0.0, 0.25, 1.0])  # constant CL contributes 0


def test_orient_uses_each_metric_sign():
    scores = pd.DataFrame(
        _frame([1.0, 2.0], "logme") + _frame([1.0, 2.0], "mdl") + _frame([1.0, 2.0], "clid")
    )
    o = tr.orient(scores)
    assert o["oriented"].tolist() == [1.0, 2.0, -1.0, -2.0, 1.0, 2.0]
    with pytest.raises(ValueError, match="name"):
        tr.metric_sign("accuracy")


# ----------------------------------------------------------------------------- end to end


def _noisy_label_features(noise, n_train=240, n_test=400, k=4, d=8, seed=0, n_val=120):
    """Features = class mean (fixed, well separated) + isotropic noise of std ``noise``:
    (train, test, val) Tasks."""
    rng = np.random.default_rng(seed)
    means = 3.0 * np.linalg.qr(rng.normal(size=(d, d)))[0][:k]
    out = []
    for n, off in ((n_train, 0), (n_test, 1), (n_val, 2)):
        y = np.arange(n) % k
        r = np.random.default_rng([seed, off, int(noise * 100)])
        x = (means[y] + noise * r.normal(size=(n, d))).astype(np.float32)
        out.append(Task("toy", x, y, k))
    return out


def _featureset(name, noise, **kw):
    train, test, val = _noisy_label_features(noise, **kw)
    return tr.FeatureSet(name, "toy", train, test, val=val)


TOY_CFG = dict(
    encoders=("lite0@32", "lite1@32", "lite2@32"),
    tasks=("toy",),
    ratios=(10,),
    repeats=2,
    min_n=20,
    metrics=("logme", "linear_valid"),
    grid_metrics=True,
    label_free=False,
    mdl=True,
    mdl_batch_size=4,
    truth="probe",
    resamples=200,
)


@pytest.fixture(scope="module")
def toy_study():
    sets = [_featureset(f"enc{i}", noise) for i, noise in enumerate((0.5, 2.0, 6.0))]
    cfg = tr.TransferabilityConfig(**TOY_CFG)
    truth = pd.DataFrame(tr.probe_rows("all", sets), columns=tr._truth.TRUTH_COLUMNS)
    unit = tr.score_unit(sets, 10, cfg)
    scores = pd.DataFrame(
        [
            dict(zoo="all", task="toy", ratio=10, encoder=e, repeat=r, n=n, metric=m, value=v)
            for e, r, n, m, v in unit["scores"]
        ]
    )
    grid = pd.DataFrame(
        [
            dict(
                zoo="all",
                task="toy",
                ratio=10,
                encoder=e,
                repeat=r,
                n=n,
                metric=m,
                knob=kn,
                value=v,
            )
            for e, r, n, m, kn, v in unit["grid"]
        ]
    )
    extra, chosen = tr.select_grid(grid, scores)
    scores = tr.orient(pd.concat([scores, extra], ignore_index=True))
    return truth, scores, chosen, sets


def test_noisier_encoders_have_lower_ground_truth(toy_study):
    truth = toy_study[0].set_index("encoder")["accuracy"]
    assert truth["enc0"] > truth["enc1"] > truth["enc2"]
    assert truth["enc0"] > 0.95 and truth["enc2"] < 0.8
    assert set(toy_study[0]["readout"]) == {"probe"}


def test_probe_rows_pick_beta_on_validation_and_match_a_scipy_fit(toy_study):
    """The chosen β has the lowest validation cross-entropy of the grid; its test accuracy
    is that of the scipy fit at the same β on the same standardised features."""
    from scipy.special import log_softmax

    from mdlnb.baselines.transfer import _softmax

    truth, _, _, sets = toy_study
    for fs, row in zip(sets, truth.to_dict("records")):
        mu, sd = fs.train.x.mean(0), fs.train.x.std(0)
        z = [(np.asarray(t.x, np.float64) - mu) / sd for t in (fs.train, fs.val, fs.test)]
        vals = {}
        for f in (0.01, 0.1, 1.0, 10.0, 100.0):
            p = _softmax.fit(z[0], fs.train.y, 4, f * fs.train.n).params
            lv = log_softmax(z[1] @ p[:-1] + p[-1], axis=1)
            lt = log_softmax(z[2] @ p[:-1] + p[-1], axis=1)
            vals[f] = (
                -lv[np.arange(fs.val.n), fs.val.y].mean(),
                np.mean(lt.argmax(1) == fs.test.y),
            )
        best = min(vals, key=lambda f: vals[f][0])
        assert row["model"] == f"logistic beta={best:g}N"
        # at β = 100N the optimum is flat: within the fits' gtol (parameters within
        # β‖g‖ ≈ 6e-3) the small validation loss agrees to ~1e-4 relative
        assert row["val_loss [nats]"] == pytest.approx(vals[best][0], rel=1e-3)
        assert row["accuracy"] == pytest.approx(vals[best][1])


def test_well_behaved_metrics_rank_noisy_encoders_perfectly(toy_study):
    truth, scores, chosen, _ = toy_study
    assert set(scores["n"]) == {40}  # N = 10 · K
    assert len(chosen) == 2 * 2  # two grid metrics × two repeats
    tau = tr.kendall_table(scores, truth, readout="probe").set_index("metric")
    for m in ("logme", "linear_valid", "mdl", "pactran_gaussian_grid", "linear_grid"):
        assert tau.loc[m, "tau"] == pytest.approx(1.0), m
        assert tau.loc[m, "encoders"] == 3


def test_score_unit_fits_equal_the_registry_metrics(toy_study):
    """The unit's batched LINEAR-VALID (and the grids behind the grid metrics) equal the
    registry's scipy metrics on the same subsample, fold seed and checkpoint."""
    from mdlnb.baselines import transfer

    _, scores, _, sets = toy_study
    cfg = tr.TransferabilityConfig(**TOY_CFG)
    for rep in (0, 1):
        idx = tr.subsample_indices(sets[0].train.y, 10, 4, min_n=20, seed=cfg.seed, repeat=rep)
        seed = tr.subsample_seed(cfg.seed, 10, rep)
        for fs in sets:
            got = scores[
                (scores.encoder == fs.encoder)
                & (scores.repeat == rep)
                & (scores.metric == "linear_valid")
            ]["value"].item()
            want = transfer.linear_valid(fs.train.x[idx], fs.train.y[idx], num_classes=4, seed=seed)
            assert got == pytest.approx(want, rel=1e-5)


def test_load_splits_are_disjoint_stratified_and_capped():
    sp = tr.load_splits(["digits"], train_size=300, val_size=100, test_size=400, seed=0)["digits"]
    assert (sp.train.n, sp.val.n, sp.test.n) == (300, 100, 400)
    rows = [{tuple(r) for r in t.x.reshape(t.n, -1)} for t in sp]
    # no image is in two splits (digits has a few exact duplicates: allow those)
    assert len(rows[0] & rows[1]) + len(rows[0] & rows[2]) + len(rows[1] & rows[2]) <= 3
    assert np.bincount(sp.train.y).min() >= 28  # ≈ 30 per class
    with pytest.raises(ValueError, match="train_size"):
        tr.load_splits(["digits"], train_size=1400, val_size=100, test_size=10)


# ----------------------------------------------------------------------------- config, encoders


def test_parse_encoder():
    assert tr.parse_encoder("lite1@64") == tr.EncoderSpec("efficientnet", variant=1, resolution=64)
    assert tr.parse_encoder("lite2").resolution == 260
    s = tr.parse_encoder("simclr:vit_XS:120:3")
    assert (s.family, s.arch, s.size, s.steps, s.seed) == ("simclr", "vit", "XS", 120, 3)
    assert not s.has_source_classifier
    assert tr.parse_encoder("random:resnet_S").steps == 0
    z = tr.parse_encoder("zoo:simclr@300")
    assert (z.family, z.arch, z.size, z.member) == ("simclr", "vit", "S", "simclr@300")
    assert tr.zoo_of(z) == "vit_S" and tr.zoo_of(tr.parse_encoder("lite1@64")) == "lite"
    assert tr.parse_encoder("zoo:random").member == "random"
    for bad in (
        "lite@64",
        "nonsense:resnet_S",
        "simclr",
        "simclr:resnet_S:many",
        "",
        "zoo:simclr",
        "zoo:simclr@x",
    ):
        with pytest.raises(ValueError, match="encoders"):
            tr.parse_encoder(bad)


@pytest.mark.parametrize(
    "change,arg",
    [
        (dict(encoders=("lite0@32",)), "encoders"),
        (dict(ratios=(2, 0)), "ratios"),
        (dict(repeats=0), "repeats"),
        (dict(metrics=("lep",)), "metrics"),
        (dict(truth="linear"), "truth"),
        (dict(train_size=1), "train_size"),
        (dict(ft_learning_rates=()), "ft_learning_rates"),
        (dict(encoders=("lite0@32", "zoo:random")), "encoders"),
        (dict(mdl_standardize="global"), "mdl_standardize"),
        (dict(mdl_m=0.5), "mdl_m"),
        (dict(nleep_components=0), "nleep_components"),
        (dict(linear_beta_factors=(1.0, -1.0)), "linear_beta_factors"),
    ],
)
def test_config_rejects_bad_input(change, arg):
    with pytest.raises(ValueError, match=arg):
        tr.TransferabilityConfig(**change)


def test_source_probs_is_softmax_of_the_head():
    from mdlnb.encoders import Encoder

    rng = np.random.default_rng(0)
    w, b = rng.normal(size=(5, 7)), rng.normal(size=7)
    enc = Encoder("toy", {"classifier": {"w": w, "b": b}}, lambda p, x: x, (4, 4), 1, 5)
    f = rng.normal(size=(3, 5))
    logits = f @ w + b
    expected = np.exp(logits - logits.max(1, keepdims=True))
    expected /= expected.sum(1, keepdims=True)
    assert tr.source_probs(enc, f) == pytest.approx(expected, rel=1e-6)
    assert tr.source_probs(enc.__class__("t", {"w": w}, enc.apply, (4, 4), 1, 5), f) is None


def _toy_result(toy_study):
    truth, scores, chosen, _ = toy_study
    cfg = tr.TransferabilityConfig(**TOY_CFG)
    per_rep = tr.kendall_per_repeat(scores, truth, readout="probe")
    enc = pd.DataFrame(
        {
            "encoder": ["enc0", "enc1", "enc2"],
            "zoo": "all",
            "family": ["a", "b", "c"],
            "feature_dim": [8, 8, 8],
        }
    )
    noise = pd.DataFrame(
        [
            dict(
                zoo="all",
                task="toy",
                checkpoints=3,
                test_size=400,
                pairs=3,
                beyond_noise=2,
                fraction=2 / 3,
            )
        ]
    )
    source = pd.DataFrame(columns=["encoder", "metric", "value", "source_accuracy"])
    return tr.TransferabilityResult(
        cfg,
        scores,
        chosen,
        truth,
        tr.kendall_table(scores, truth, readout="probe"),
        per_rep,
        noise,
        None,
        source,
        enc,
        {"scores": 1.0},
    )


def test_result_save_writes_tables_that_read_back(toy_study, tmp_path):
    res = _toy_result(toy_study)
    paths = res.save(tmp_path, prefix="tt")
    assert {p.name for p in paths} >= {
        "tt_kendall.csv",
        "tt_kendall.md",
        "tt_kendall.png",
        "tt_truth.csv",
        "tt_scores.csv",
        "tt_figure1.png",
        "tt_truth_noise.csv",
        "tt_power.csv",
    }
    back = pd.read_csv(tmp_path / "tt_kendall.csv").set_index("metric")
    assert back.loc["mdl", "N/K=10"] == pytest.approx(1.0)
    assert back["N/K=10"].to_dict() == pytest.approx(res.tau.set_index("metric")["tau"].to_dict())
    assert back["lo N/K=10"].isna().all() and (back["tasks"] == 1).all()  # one task: no interval
    t = pd.read_csv(tmp_path / "tt_truth.csv").set_index("encoder")["probe"]
    assert t.to_dict() == pytest.approx(res.truth.set_index("encoder")["accuracy"].to_dict())
    counts = res.grid_choices()
    assert counts["times chosen"].sum() == len(res.grid_choice)
    assert counts.groupby(["zoo", "metric"])["times chosen"].sum().to_dict() == (
        res.grid_choice.value_counts(["zoo", "metric"]).to_dict()
    )


def test_zscore_and_mdl_below_uniform_code():
    rng = np.random.default_rng(0)
    f = np.column_stack([rng.normal(3.0, 2.0, 40), np.full(40, 5.0), rng.normal(0, 1e-4, 40)])
    z = tr.zscore(f)
    assert z.mean(0) == pytest.approx([0, 0, 0], abs=1e-6)
    assert z.std(0) == pytest.approx([1, 0, 1], abs=1e-5)
    # labels carried by the near-constant third feature: the code must beat log K
    y = (f[:, 2] > 0).astype(int)
    assert tr.mdl_score(f, y, 2, batch_size=4) < np.log(2)
    with pytest.raises(ValueError, match="standardize"):
        tr.mdl_score(f, y, 2, standardize="global")


# ----------------------------------------------------------------------------- spreads


def _per_repeat_frame(rng, means, sds, repeats):
    """Per-repeat τ draws: task t, repeat r ~ N(means[t], sds[t]); one metric, one ratio."""
    return pd.DataFrame(
        [
            dict(
                task=f"t{t}",
                ratio=2,
                metric="logme",
                repeat=r,
                tau=rng.normal(mu, sd),
                encoders=6,
                nonfinite=0,
            )
            for t, (mu, sd) in enumerate(zip(means, sds))
            for r in range(repeats[t])
        ]
    )


def _aggregate(per_rep):
    return (
        per_rep.groupby(["task", "ratio", "metric"])
        .agg(
            tau=("tau", "mean"),
            tau_std=("tau", lambda s: np.std(s, ddof=1)),
            repeats=("tau", "size"),
            encoders=("encoders", "min"),
            nonfinite=("nonfinite", "sum"),
        )
        .reset_index()
    )


def test_mean_over_tasks_interval_from_raw_repeats():
    """The half-width equals t_{.975, Σ(R−1)} · SE with SE computed from the raw per-repeat
    values as the standard error of their (task-stratified) grand mean."""
    from scipy import stats

    rng = np.random.default_rng(3)
    per_rep = _per_repeat_frame(rng, [0.2, 0.5, 0.7], [0.1, 0.3, 0.05], [5, 4, 6])
    got = tr.mean_over_tasks(_aggregate(per_rep)).iloc[0]
    groups = [g["tau"].to_numpy() for _, g in per_rep.groupby("task")]
    mean = np.mean([g.mean() for g in groups])
    se = np.sqrt(sum(g.var(ddof=1) / len(g) for g in groups)) / len(groups)
    assert got["tau"] == pytest.approx(mean)
    assert got["ci"] == pytest.approx(stats.t.ppf(0.975, 5 + 4 + 6 - 3) * se)


def test_mean_over_tasks_interval_covers_the_true_mean_95_percent_of_the_time():
    rng = np.random.default_rng(0)
    means, sds, runs = [0.1, 0.4, 0.8], [0.3, 0.2, 0.4], 1000
    draws = rng.normal(np.repeat(means, 5), np.repeat(sds, 5), size=(runs, 15))
    per_rep = pd.DataFrame(
        {
            "metric": np.repeat([f"m{i:04d}" for i in range(runs)], 15),
            "task": np.tile(np.repeat(["a", "b", "c"], 5), runs),
            "repeat": np.tile(np.arange(5), 3 * runs),
            "ratio": 2,
            "tau": draws.ravel(),
            "encoders": 6,
            "nonfinite": 0,
        }
    )
    got = tr.mean_over_tasks(_aggregate(per_rep))
    hits = (got["tau"] - np.mean(means)).abs() <= got["ci"]
    assert len(got) == runs and 0.93 <= hits.mean() <= 0.97


def test_average_and_per_task_tables_carry_spreads():
    rng = np.random.default_rng(4)
    per_rep = pd.concat(
        [_per_repeat_frame(rng, [0.2, 0.6], [0.1, 0.2], [5, 5]).assign(ratio=r) for r in (2, 10)]
    )
    tau = _aggregate(per_rep)
    avg = tr.average_table(tau).set_index("metric")
    long = tr.mean_over_tasks(tau).set_index("ratio")
    for r in (2, 10):
        assert avg.loc["logme", f"±95% N/K={r}"] == pytest.approx(long.loc[r, "ci"])
        assert avg.loc["logme", f"±95% N/K={r}"] > 0
    per_task = tr.per_task_table(tau).set_index(["ratio", "metric"])
    sd = per_rep[(per_rep.task == "t1") & (per_rep.ratio == 10)]["tau"].std(ddof=1)
    assert per_task.loc[(10, "logme"), "t1 sd"] == pytest.approx(sd)


def test_differences_flag_moves_beyond_combined_half_widths():
    cur = pd.DataFrame(
        {
            "metric": ["mdl", "clid"],
            "N/K=2": [0.746, 0.112],
            "±95% N/K=2": [0.04, 0.2],
            "encoders": [6, 6],
        }
    )
    ref = pd.DataFrame(
        {
            "metric": ["mdl", "clid"],
            "N/K=2": [0.801, 0.255],
            "±95% N/K=2": [0.03, 0.2],
            "encoders": [6, 6],
        }
    )
    d = tr.differences(cur, ref).set_index("metric")
    assert d.loc["mdl", "noise"] == pytest.approx(0.05)  # sqrt(.04² + .03²)
    assert d.loc["mdl", "beyond_noise"]  # |Δ| = 0.055 > 0.05
    assert not d.loc["clid", "beyond_noise"]  # |Δ| = 0.143 < 0.283
    text = tr.noise_summary(tr.differences(cur, ref))
    assert text.startswith("1 of 2") and "mdl at N/K = 2 (0.801 → 0.746" in text
    # a reference saved without spreads contributes 0 to the combined half-width
    d0 = tr.differences(cur, ref.drop(columns="±95% N/K=2")).set_index("metric")
    assert d0.loc["mdl", "noise"] == pytest.approx(0.04)
    assert tr.noise_summary(None).startswith("No earlier table")


# ----------------------------------------------------------------------------- one source


def test_notebook_and_profiles_hold_no_copy_of_the_config_defaults():
    from mdlnb.tools import runner

    params = runner.notebook_parameters("transferability_baselines")
    assert params["study"] == "transferability" and params["overrides"] == {}
    assert set(params) == {"profile", "paper_dir", "study", "overrides"}
    runner.check_profiles()  # every override names a real field with a valid value
    smoke = runner.profile_parameters("transferability_baselines", "smoke")["overrides"]
    cfg = tr.TransferabilityConfig.from_overrides(smoke)
    assert cfg.repeats == 2 and cfg.min_n == tr.TransferabilityConfig().min_n


def test_from_overrides_rejects_unknown_fields():
    assert tr.TransferabilityConfig.from_overrides({}) == tr.TransferabilityConfig()
    with pytest.raises(ValueError, match="overrides.*repeat"):
        tr.TransferabilityConfig.from_overrides({"repeat": 3})


def test_default_config_is_the_run_that_wrote_paper():
    """The committed paper/ tables were written by the default config: the same
    checkpoints, in the same zoos."""
    from pathlib import Path

    enc = pd.read_csv(
        Path(__file__).resolve().parent.parent / "paper" / "transferability_encoders.csv"
    )
    cfg = tr.TransferabilityConfig()
    assert tuple(enc["encoder"]) == cfg.encoders
    assert {z: tuple(g["encoder"]) for z, g in enc.groupby("zoo", sort=False)} == cfg.zoos()
    assert len(cfg.zoos()["vit_S"]) >= 30 and len(cfg.tasks) >= 9
    assert cfg.mdl_protocol() == {
        "experts": "small",
        "batch_size": 4,
        "strategy": "fixed_share",
        "m": 11.0,
        "standardize": "subsample",
        "seed": 0,
    }


def test_nleep_components_is_passed_on_or_refused():
    import inspect

    from mdlnb.baselines import transfer

    cfg = tr.TransferabilityConfig()
    assert tr.nleep_kwargs(cfg, ["logme", "leep"]) == {}  # no GMM metric: nothing
    if "nleep_components" in inspect.signature(transfer.score_all).parameters:
        assert tr.nleep_kwargs(cfg, ["nleep"]) == {"nleep_components": "paper"}
    else:
        with pytest.raises(ValueError, match="nleep_components"):
            tr.nleep_kwargs(cfg, ["n_pactran_gamma"])


# ----------------------------------------------------------------------------- cache, findings


def test_scores_are_cached_per_unit_and_read_back_exactly(monkeypatch):
    from mdlnb.studies.transferability import _run

    sets = [_featureset(f"enc{i}", noise, n_train=80, seed=5) for i, noise in enumerate((0.5, 3.0))]
    cfg = tr.TransferabilityConfig(
        encoders=("lite0@32", "lite1@32"),
        tasks=("toy",),
        ratios=(5,),
        repeats=2,
        metrics=("logme", "hscore"),
        grid_metrics=False,
        label_free=True,
        mdl=False,
        seed=11,
    )
    monkeypatch.setattr(tr.TransferabilityConfig, "zoos", lambda self: {"all": ("enc0", "enc1")})
    first, _, _ = tr.score_units(sets, cfg, cache=True)

    def fail(*a, **k):
        raise AssertionError("recomputed a cached unit")

    monkeypatch.setattr(_run, "score_unit", fail)  # where score_units looks it up
    again, _, _ = tr.score_units(sets, cfg, cache=True)
    pd.testing.assert_frame_equal(first, again, check_exact=True)
    with pytest.raises(AssertionError, match="recomputed"):  # another seed: new units
        tr.score_units(sets, cfg.replace(seed=12), cache=True)


def test_findings_numbers_come_from_the_summary(toy_study):
    res = _toy_result(toy_study)
    text = res.findings()
    top = res.summary().sort_values("N/K=10", ascending=False).iloc[0]
    assert (
        f"highest mean τ {tr.display_name(top.metric)} ({top['N/K=10']:.2f} "
        f"[{top['lo N/K=10']:.2f}, {top['hi N/K=10']:.2f}])"
    ) in text
    assert "2 of 3 checkpoint pairs (67%) differ in fine-tuned test accuracy" in text
    mdl = res.summary().set_index("metric").loc["mdl"]
    assert f"MDL codelength: N/K = 10: {mdl['N/K=10']:.2f} [" in text


def test_result_save_is_byte_identical_and_png_has_no_metadata(toy_study, tmp_path):
    res = _toy_result(toy_study)
    a = {p.name: p.read_bytes() for p in res.save(tmp_path / "a")}
    b = {p.name: p.read_bytes() for p in res.save(tmp_path / "b")}
    assert a == b
    png = a["transferability_kendall.png"]
    assert b"Software" not in png and b"matplotlib" not in png


def test_kendall_bars_draw_means_and_interval_half_widths():
    import matplotlib.pyplot as plt

    from mdlnb.api import plots

    long = pd.DataFrame(
        {
            "metric": ["mdl", "logme", "mdl", "logme"],
            "ratio": [2, 2, 10, 10],
            "tau": [0.8, 0.6, 0.7, -0.2],
            "ci": [0.05, 0.1, 0.2, 0.3],
        }
    )
    ax = plots.kendall_bars(long, order=["logme", "mdl"])
    heights = [p.get_height() for p in ax.patches]
    assert heights == pytest.approx([0.6, 0.8, -0.2, 0.7])  # hue N/K=2, then N/K=10
    segs = [s for c in ax.collections for s in c.get_segments()]
    assert sorted(abs(s[1][1] - s[0][1]) / 2 for s in segs) == pytest.approx([0.05, 0.1, 0.2, 0.3])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["logme", "mdl"]
    plt.close(ax.figure)
    with pytest.raises(ValueError, match="ci"):
        plots.kendall_bars(long.drop(columns="ci"))


def test_static_baselines_rank_by_size_and_published_accuracy():
    import jax
    import pandas as pd

    from mdlnb.encoders import efficientnet_lite
    from mdlnb.studies.transferability._scores import SOURCE_ACCURACY, add_static, encoder_statics

    enc = efficientnet_lite(0, resolution=32)
    st = encoder_statics(enc)
    body = {k: v for k, v in enc.params.items() if k != "classifier"}  # the ImageNet head is not
    assert st["params"] == sum(np.size(v) for v in jax.tree_util.tree_leaves(body))  # features
    assert st["source_accuracy"] == SOURCE_ACCURACY["efficientnet_lite0"] == 75.1
    other = SimpleNamespace(name="simclr-vit_S-0steps-seed0", params={"w": np.zeros((3, 4))})
    assert encoder_statics(other)["params"] == 12.0
    assert np.isnan(encoder_statics(other)["source_accuracy"])
    ckpt = SimpleNamespace(
        name="mae-vit_S-300steps-seed0", params={"w": np.zeros(2)}, meta={"probe_accuracy": 0.73}
    )
    assert encoder_statics(ckpt)["source_accuracy"] == 0.73  # recorded with the checkpoint
    scores = pd.DataFrame(
        [
            dict(encoder=e, task="t", ratio=2, n=20, repeat=r, metric="logme", value=1.0)
            for e in ("a", "b")
            for r in (0, 1)
        ]
    )
    out = add_static(scores, {"a": enc, "b": other})
    p = out[out["metric"] == "params"].set_index(["encoder", "repeat"])["value"]
    assert p[("b", 0)] == p[("b", 1)] == 12.0
    src = out[out["metric"] == "source_accuracy"]
    assert list(src["encoder"]) == ["a", "a"] and (src["value"] == 75.1).all()
    assert len(out) == 4 + 2 * 2 + 2


def test_ncti_and_etran_are_ranked_as_their_authors_combine_terms():
    """Per (task, ratio, repeat), NCTI = mm(seli) + mm(ncc) − mm(vc) and ETran =
    0.15 mm(energy) + 0.85 mm(cls) across that group's encoders (min–max written out
    here), replacing the term rows; other metrics pass through."""
    from mdlnb.studies.transferability._scores import COMBINED, add_combined

    rng = np.random.default_rng(3)
    rows = []
    for repeat in (0, 1):
        for enc in ("a", "b", "c"):
            for metric in (*COMBINED["ncti"], *COMBINED["etran"], "logme"):
                rows.append(
                    dict(
                        encoder=enc,
                        task="t",
                        ratio=2,
                        n=20,
                        repeat=repeat,
                        metric=metric,
                        value=float(rng.normal()),
                    )
                )
    scores = pd.DataFrame(rows)
    out = add_combined(scores)
    assert set(out["metric"]) == {"ncti", "etran", "logme"}
    pd.testing.assert_frame_equal(
        out[out["metric"] == "logme"].drop(columns="zoo").reset_index(drop=True),
        scores[scores["metric"] == "logme"].reset_index(drop=True),
    )

    def mm(v):
        return (v - v.min()) / (v.max() - v.min())

    for repeat in (0, 1):
        w = scores[scores["repeat"] == repeat].pivot(
            index="encoder", columns="metric", values="value"
        )
        got = out[out["repeat"] == repeat].pivot(index="encoder", columns="metric", values="value")
        np.testing.assert_allclose(
            got["ncti"], mm(w["ncti_seli"]) + mm(w["ncti_ncc"]) - mm(w["ncti_vc"]), rtol=1e-12
        )
        np.testing.assert_allclose(
            got["etran"], 0.15 * mm(w["etran_energy"]) + 0.85 * mm(w["etran_cls"]), rtol=1e-12
        )


def test_subsample_scores_carry_the_combined_metrics_terms():
    """A checkpoint's scores on a subsample give NCTI's and ETran's terms (from their
    result objects), not the per-model sums, so the study can combine them across
    encoders."""
    from mdlnb.baselines import transfer
    from mdlnb.studies.transferability._unit import _per_checkpoint

    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 6)).astype(np.float32)
    y = np.repeat(np.arange(3), 20)
    x[:, 0] += y
    task = Task("toy", x, y, 3)
    fs = tr.FeatureSet("enc", "toy", task, task, None)
    cfg = tr.TransferabilityConfig(
        encoders=["lite0@32", "lite1@32"],
        tasks=["digits"],
        metrics=["ncti", "etran", "logme"],
        grid_metrics=False,
        label_free=False,
        mdl=False,
        static=False,
    )
    out, _ = _per_checkpoint(fs, np.arange(60), 0, cfg)
    r, e = transfer.ncti_result(x, y, num_classes=3), transfer.etran_result(x, y, num_classes=3)
    assert out["ncti_seli"] == r.seli and out["ncti_vc"] == r.vc and out["ncti_ncc"] == r.ncc
    assert out["etran_energy"] == e.energy and out["etran_cls"] == e.classification
    assert "ncti" not in out and "etran" not in out and "logme" in out


def test_the_presentation_modules_the_cache_key_leaves_out_exist():
    """A moved or renamed module must leave the list, or its edits would go unnoticed
    by the cached units (and a stale name would leave them out of nothing)."""
    from pathlib import Path

    from mdlnb.studies.transferability import _run

    root = Path(_run.__file__).resolve().parents[2]
    assert [p for p in _run._PRESENTATION if not (root / p).is_file()] == []
    assert len(set(_run._PRESENTATION)) == len(_run._PRESENTATION)
    assert len(_run.code_fingerprint()) == 16
