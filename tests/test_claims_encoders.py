"""Claims (a), (d), (f) of the encoder study on hand-made frames whose verdicts are known;
numbers checked against SciPy on the raw values (not the study's rank tables)."""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from mdlnb.research.claims import CONSISTENT, LARGER, REPLICATED, REVERSED, SMALLER, UNDETERMINED
from mdlnb.studies import encoder_grid as st
from mdlnb.studies.encoder_grid import _claims

ENC = ["e0", "e1", "e2", "e3"]
TASKS = {
    "n1": "natural",
    "n2": "natural",
    "n3": "natural",
    "s1": "structured",
    "s2": "structured",
    "s3": "structured",
}


def _rows(metric, values, seeds=(0,)):
    """values: {task: [per-encoder value]} (or per-encoder lists of per-seed values)."""
    out = []
    for task, vals in values.items():
        for enc, v in zip(ENC, vals):
            for s, x in zip(seeds, np.atleast_1d(v)):
                out.append(
                    dict(
                        encoder=enc,
                        architecture="a",
                        objective="o",
                        size="S",
                        task=task,
                        group=TASKS[task],
                        metric=metric,
                        value=float(x),
                        seed=s,
                    )
                )
    return out


def _frame(linear, mlp, mdl_means, *, sd=1.0, seeds=(0, 1, 2)):
    rng = np.random.default_rng(0)
    rows = _rows("linear accuracy", linear) + _rows("mlp accuracy", mlp)
    # codelength per order: the mean plus ±sd-ish noise that averages to the mean exactly
    noise = rng.normal(size=len(seeds))
    noise = (noise - noise.mean()) / noise.std(ddof=1) * sd if len(seeds) > 1 else noise * 0
    cl = {t: [[m + e for e in noise] for m in ms] for t, ms in mdl_means.items()}
    rows += _rows("codelength [nats]", cl, seeds)
    return pd.DataFrame(rows)


def _curves(frame, sizes=(100, 200, 400), n=400):
    """Cumulative codelengths at prefixes: the mean grows as n, the order noise as √n (so
    (f)'s statistic −log10(sd / gap) grows by ½·log10 n, the law the claim restates)."""
    cl = frame[frame["metric"] == "codelength [nats]"]
    mean = cl.groupby(["task", "encoder"])["value"].transform("mean")
    rows = [
        pd.DataFrame(
            {
                "encoder": cl["encoder"],
                "task": cl["task"],
                "seed": cl["seed"],
                "n": k,
                "cumulative [nats]": mean * k / n + (cl["value"] - mean) * np.sqrt(k / n),
            }
        )
        for k in sizes
    ]
    return pd.concat(rows, ignore_index=True)


def _result(frame, posterior=None, seeds=(0, 1, 2)):
    cfg = SimpleNamespace(protocol="small", seeds=seeds, posterior_bins=8)
    return SimpleNamespace(
        frame=frame,
        posterior=posterior,
        config=cfg,
        curves=_curves(frame),
        sizes={t: 400 for t in TASKS},
    )


# linear order e0 > e1 > e2 > e3 on every task; the MLP order differs per task
LIN = {t: [0.9, 0.8, 0.7, 0.6] for t in TASKS}
MLP = {
    "n1": [0.6, 0.7, 0.8, 0.9],
    "n2": [0.9, 0.8, 0.6, 0.7],
    "n3": [0.7, 0.9, 0.8, 0.6],
    "s1": [0.8, 0.9, 0.6, 0.7],
    "s2": [0.6, 0.8, 0.7, 0.9],
    "s3": [0.9, 0.6, 0.7, 0.8],
}


def test_readout_depth():
    assert [_claims.readout_depth(n) for n in ("linear", "mlp3", "mlp2x256")] == [0, 3, 2]
    with pytest.raises(ValueError, match="name"):
        _claims.readout_depth("resnet")


def _avg_rank_delta_tau(linear, mlp, mdl_means, tasks):
    """(a2)'s statistic from the raw values with SciPy: average ranks over ``tasks``."""

    def avg(values, higher_is_better=True):
        r = [stats.rankdata([-v if higher_is_better else v for v in values[t]]) for t in tasks]
        return np.mean(r, axis=0)

    lin, ml, md = avg(linear), avg(mlp), avg(mdl_means, higher_is_better=False)
    return stats.kendalltau(ml, md).statistic - stats.kendalltau(ml, lin).statistic


def _avg_rank_tau(x, y, tasks, x_higher=True, y_higher=True):
    """Kendall τ of two methods' average-rank orders over ``tasks``, from the raw values."""

    def avg(values, higher_is_better):
        r = [stats.rankdata([-v if higher_is_better else v for v in values[t]]) for t in tasks]
        return np.mean(r, axis=0)

    return stats.kendalltau(avg(x, x_higher), avg(y, y_higher)).statistic


def test_a_replicates_when_mdl_follows_the_mlp_order():
    # MDL codelength ordered like the MLP accuracy (lower codelength where MLP is higher)
    mdl = {t: [1000 - 1000 * a for a in v] for t, v in MLP.items()}
    res = _result(_frame(LIN, MLP, mdl))
    a1, a2, f = _claims.objectives_claims(res, ENC)
    # a1: the paper's statistic, 1 − τ between the average-rank orders (SciPy on raw values)
    gap = 1 - _avg_rank_tau(LIN, MLP, list(TASKS))
    assert a1.estimate == pytest.approx(gap) and gap > 0
    assert a1.ci_low <= gap <= a1.ci_high and a1.n == 6 and a1.unit == "tasks"
    assert "1 − Kendall τ between the average-rank orders of 4 encoders" in a1.rule
    # Δτ of the average-rank orders, recomputed from the raw values
    dt = _avg_rank_tau(MLP, mdl, list(TASKS), y_higher=False) - _avg_rank_tau(MLP, LIN, list(TASKS))
    assert dt > 0.14 and a2.estimate == pytest.approx(dt)
    assert a2.direction in (REPLICATED, UNDETERMINED) and "bootstrap interval" in a2.rule
    # codelengths 100 nats apart with sd 1 over orders: sd / gap = 0.01 in all 24 cells,
    # −log10 = 2 against the paper's 1.54 restated at N = 400: 1.54 − ½·log10(125)
    assert (f.direction, f.size) == (REPLICATED, LARGER)
    assert f.our_value.startswith("sd < gap in 24/24 cells") and f.estimate == pytest.approx(2)
    assert f.paper_effect == pytest.approx(-np.log10(134 / 4643) - 0.5 * np.log10(125))
    # the prefixes' noise grows as √n and the gaps as n: the measured law is ½
    assert "slope of the statistic against log10 n 0.500" in f.our_value


def test_a_and_f_reverse_or_shrink_when_the_probes_agree_under_order_noise():
    mdl = {t: [10.0, 11.0, 12.0, 13.0] for t in TASKS}  # gaps 1 nat, sd 5
    res = _result(_frame(LIN, LIN, mdl, sd=5.0))
    a1, a2, f = _claims.objectives_claims(res, ENC)
    # 1 − τ = 0 in every resample: [0, 0] contains no effect and lies below the paper's 0.27
    assert (a1.direction, a1.size) == (UNDETERMINED, SMALLER) and a1.ci_high == 0
    # MDL order = linear = MLP on every task: Δτ = 0 in every resample
    assert (a2.direction, a2.size) == (UNDETERMINED, SMALLER) and (a2.ci_low, a2.ci_high) == (0, 0)
    # sd / gap = 5 everywhere: −log10 5 < 0, reversed
    assert (f.direction, f.size) == (REVERSED, SMALLER)
    assert f.our_value.startswith("sd < gap in 0/24 cells")
    assert f.estimate == pytest.approx(-np.log10(5))


def test_f_without_orders_and_a_with_two_tasks():
    two = {t: LIN[t] for t in ("n1", "s1")}
    res = _result(
        _frame(two, {t: MLP[t] for t in two}, {t: [1.0, 2.0, 3.0, 4.0] for t in two}, seeds=(0,)),
        seeds=(0,),
    )
    a1, a2, f = _claims.objectives_claims(res, ENC)
    assert a1.n == 2 and a1.direction in (UNDETERMINED, REPLICATED)
    assert (f.direction, f.size) == (UNDETERMINED, UNDETERMINED)
    assert "0 tasks: no interval" in f.our_value


def _posterior(target):
    """Posterior per (encoder, task, seed, bin) in the bins 0, 1, 2, 4, 9, 20, 42, 89, 189,
    400 of t: the prior (uniform) up to t = 20, 0.9 on linear up to t = 189, then 0.9 on
    ``target[task]`` hidden layers; readouts linear, mlp1..mlp3."""
    edges = st.stream_bins(400, 8)
    assert list(edges) == [0, 1, 2, 4, 9, 20, 42, 89, 189, 400]
    rows = []
    for enc in ENC:
        for task, group in TASKS.items():
            for s in (0, 1):
                for a, b in zip(edges[:-1], edges[1:]):
                    depth = 0 if b <= 189 else target[task]
                    for k, r in enumerate(("linear", "mlp1", "mlp2", "mlp3")):
                        p = 0.25 if b <= 20 else 0.9 if k == depth else 0.1 / 3
                        rows.append(
                            dict(
                                encoder=enc,
                                task=task,
                                group=group,
                                seed=s,
                                t_start=int(a),
                                t_end=int(b),
                                readout=r,
                                probability=p,
                            )
                        )
    return pd.DataFrame(rows)


def test_d_holds_when_structured_tasks_move_deeper():
    target = {t: (3 if g == "structured" else 1) for t, g in TASKS.items()}
    pref = {t: [float(target[t])] * 4 for t in TASKS}
    frame = pd.DataFrame(_rows("preferred readout depth", pref, seeds=(0, 1)))
    d1, d2, d3 = _claims.readout_claims(_result(frame, _posterior(target), seeds=(0, 1)))
    # reference bin: [89, 189), the first starting at t >= 2B = 64, mass 0.9 on linear
    #   → depth 0.1/3·(1+2+3) = 0.2;
    # last bin: 0.9·3 + 0.1/3·(0+1+2) = 2.8 on structured, 0.9 + 0.1/3·5 = 1.0667 on natural
    ch = _claims.depth_change(_posterior(target), first_batch=64)
    s = ch[ch["group"] == "structured"]
    assert (s["early_bin"] == "[89, 189)").all()
    assert s["early"].to_numpy() == pytest.approx(0.2)
    assert s["late"].to_numpy() == pytest.approx(2.8)
    change = np.array([2.6] * 3 + [0.1 / 3 * 5 + 0.9 - 0.2] * 3)
    mean, (lo, hi) = change.mean(), stats.t.interval(0.95, 5, change.mean(), stats.sem(change))
    assert (d1.direction, d1.size) == (REPLICATED, CONSISTENT)
    assert d1.our_value.startswith("24 (encoder, task) pairs deeper")
    assert (d1.estimate, d1.ci_low, d1.ci_high) == pytest.approx((mean, lo, hi))
    # per task: structured 3, natural 1 (no spread): the difference 2 exactly
    assert (d2.direction, d2.size) == (REPLICATED, CONSISTENT)
    assert d2.our_value.startswith("3 (n = 3) − 1 (n = 3) = 2,")
    assert d3.direction == REPLICATED and d3.estimate == pytest.approx(2.6 - change[-1])
    assert "structured tasks minus natural tasks" in d2.rule


def test_d_fails_when_the_posterior_moves_to_linear():
    target = {t: 0 for t in TASKS}
    post = _posterior(target)
    # start deep instead: the reference bin's mass on mlp3
    early = post["t_start"] == 89
    post.loc[early, "probability"] = np.where(post.loc[early, "readout"] == "mlp3", 0.9, 0.1 / 3)
    frame = pd.DataFrame(_rows("preferred readout depth", {t: [0.0] * 4 for t in TASKS}))
    d1, d2, d3 = _claims.readout_claims(_result(frame, post, seeds=(0, 1)))
    assert d1.direction == REVERSED
    assert "0 (encoder, task) pairs deeper, 24 shallower" in d1.our_value
    # every task's preferred depth is 0: the difference [0, 0] says no effect, below +2
    assert (d2.direction, d2.size) == (UNDETERMINED, SMALLER)


def test_d_undetermined_without_structured_tasks_or_long_streams():
    nat = {t: g for t, g in TASKS.items() if g == "natural"}
    post = _posterior({t: 1 for t in TASKS})
    post = post[post["task"].isin(nat)]
    frame = pd.DataFrame(_rows("preferred readout depth", {t: [1.0] * 4 for t in nat}))
    d1, d2, d3 = _claims.readout_claims(_result(frame, post, seeds=(0, 1)))
    assert (d1.direction, d1.size) == (REPLICATED, SMALLER)
    assert (d2.direction, d2.size) == (UNDETERMINED, UNDETERMINED)
    assert "samples of 0 and 3 tasks: no interval" in d2.our_value
    assert d3.direction == UNDETERMINED
    short = post[post["t_end"] <= 89]  # no two bins from t = 2B = 64 on
    d1, _, _ = _claims.readout_claims(_result(frame, short, seeds=(0, 1)))
    assert d1.direction == UNDETERMINED and "no (encoder, task) pair" in d1.our_value


def test_friedman_and_nemenyi_are_undefined_on_too_few_tasks():
    from mdlnb.research import ranking
    from mdlnb.studies.encoder_grid import _significance

    mdl = {t: [1000 - 1000 * a for a in v] for t, v in MLP.items()}
    frame = _frame(LIN, MLP, mdl)
    fr = _significance.friedman_table(frame, ENC)
    full = fr[fr["tasks"] == "all"]
    assert (full["N"] == 6).all() and (full["note"] == "").all() and full["p"].notna().all()
    grp = fr[fr["tasks"] != "all"]  # 3 natural, 3 structured: defined
    assert grp["p"].notna().all()
    two = frame[frame["task"].isin(["n1", "n2", "s1"])]
    fr2 = _significance.friedman_table(two, ENC).set_index(["tasks", "method"])
    assert fr2.loc[("structured", "mdl"), "note"] == "undefined: 1 tasks (< 3)"
    assert np.isnan(fr2.loc[("natural", "mdl"), ["chi2_F", "p", "F_F", "p (F_F)"]]).all()
    cd = _significance.cd_table(two, ENC, alpha=0.10).set_index("tasks")
    assert np.isnan(cd.loc["natural", "CD"]) and "2 tasks" in cd.loc["natural", "note"]
    assert cd.loc["all", "CD"] == pytest.approx(ranking.nemenyi_cd(4, 3, 0.10))
    # k = 2 encoders on 3 tasks at α = 0.05: the CD exceeds the largest possible rank difference 1
    assert ranking.nemenyi_cd(2, 3, 0.05) > 1
    cd2 = _significance.cd_table(two, ENC[:2], alpha=0.05).set_index("tasks")
    assert np.isnan(cd2.loc["all", "CD"]) and "k − 1 = 1" in cd2.loc["all", "note"]
