"""Claims j1, j2, k, l of the encoder study on hand-made frames; the paper's effects and
our statistics recomputed with NumPy/SciPy from the raw numbers."""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from mdlnb.research.claims import REPLICATED, REVERSED, SMALLER, UNDETERMINED
from mdlnb.studies.encoder_grid import _more_claims as M

TASKS = [f"t{i}" for i in range(8)]


def _frame(rows):
    return pd.DataFrame(
        [dict(architecture="a", objective="o", size="S", group="natural", **r) for r in rows]
    )


def _bits_rows(values, seeds=(0, 1)):
    """values: {encoder: [per-task bits/example]}; the same value on every seed."""
    return [
        dict(encoder=e, task=t, metric="codelength [bits/example]", value=v, seed=s)
        for e, vs in values.items()
        for t, v in zip(TASKS, vs)
        for s in seeds
    ]


def _result(rows, sizes=None):
    return SimpleNamespace(frame=_frame(rows), sizes=sizes or {t: 1000 for t in TASKS})


def test_paper_effects_from_the_tables():
    s, l = np.array(M.TABLE_10[("mae", "S")]), np.array(M.TABLE_10[("mae", "L")])
    ss, sl = np.array(M.TABLE_10[("sup", "S")]), np.array(M.TABLE_10[("sup", "L")])
    eff = M.paper_effects()
    assert eff["j1"] == pytest.approx(np.mean((s - l) / s))
    assert eff["j2"] == pytest.approx(np.mean((s - l) / s - (ss - sl) / ss))
    acc = [v[0] for v in M.TABLE_5.values()]
    rank = [v[1] for v in M.TABLE_5.values()]
    assert eff["l"] == pytest.approx(1 - stats.kendalltau(acc, [-r for r in rank]).statistic)
    assert len(s) == len(l) == 19


def test_scaling_holds_for_mae_and_not_for_supervised():
    rng = np.random.default_rng(0)
    small = rng.uniform(1.0, 2.0, len(TASKS))
    rows = _bits_rows(
        {
            "mae_S": small,
            "mae_L": small * rng.uniform(0.4, 0.6, len(TASKS)),
            "sup_S": small,
            "sup_L": small * rng.uniform(0.97, 1.03, len(TASKS)),
        }
    )
    j1, j2 = M.scaling_claims(_result(rows), ["mae_S", "mae_L"], ["sup_S", "sup_L"])
    f = _frame(rows)
    b = f.groupby(["encoder", "task"])["value"].mean().unstack()
    r = (b.loc["mae_S"] - b.loc["mae_L"]) / b.loc["mae_S"]
    lo, hi = stats.t.interval(0.95, len(r) - 1, r.mean(), stats.sem(r))
    assert j1.direction == REPLICATED and (j1.ci_low, j1.ci_high) == pytest.approx((lo, hi))
    assert j2.direction == REPLICATED
    # no gain from size: the interval around 0 lies below the paper's 0.40
    flat = _bits_rows(
        {
            "mae_S": small,
            "mae_L": small * rng.uniform(0.99, 1.01, len(TASKS)),
            "sup_S": small,
            "sup_L": small,
        }
    )
    j1, _ = M.scaling_claims(_result(flat), ["mae_S", "mae_L"], ["sup_S", "sup_L"])
    assert (j1.direction, j1.size) == (UNDETERMINED, SMALLER)


def _switch_rows(rate_in, rate_out, encoders=("e0", "e1", "e2", "e3")):
    rng = np.random.default_rng(1)
    rows = []
    for e in encoders:
        for t in TASKS:
            rate = rate_in if t == "t0" else rate_out
            rows.append(
                dict(
                    encoder=e,
                    task=t,
                    metric="readout switches",
                    seed=0,
                    value=rate * rng.uniform(0.9, 1.1),
                )
            )
    return rows


def test_switching_more_frequent_out_of_domain_with_tasks_as_units():
    # two in-domain tasks (t0, t1) at rate 2 and 3, six out-of-domain at 8: Welch over tasks
    rows = [
        dict(r, value=r["value"] * (1.5 if r["task"] == "t1" else 1.0))
        for r in _switch_rows(2.0, 8.0)
        if r["task"] != "t1"
    ] + [
        dict(r, task="t1", value=r["value"] * 1.5)
        for r in _switch_rows(2.0, 8.0)
        if r["task"] == "t0"
    ]
    k = M.domain_claim(_result(rows), ["t0", "t1"])
    f = pd.DataFrame(rows).assign(rate=lambda d: d["value"])
    per_task = np.log2(f.groupby("task")["rate"].mean())
    inside, out = per_task[["t0", "t1"]], per_task.drop(["t0", "t1"])
    ci = stats.ttest_ind(out, inside, equal_var=False).confidence_interval(0.95)
    assert k.estimate == pytest.approx(out.mean() - inside.mean())
    assert (k.ci_low, k.ci_high) == pytest.approx((ci.low, ci.high))
    assert k.n == 8 and k.unit == "tasks"
    k = M.domain_claim(_result(_switch_rows(8.0, 2.0)), ["t0"])
    assert k.direction in (REVERSED, UNDETERMINED) and k.estimate < 0
    k = M.domain_claim(_result(_switch_rows(2.0, 8.0)), ["fashion_mnist"])
    assert k.direction == UNDETERMINED and "no interval" in k.our_value


def test_in_domain_tasks_are_those_on_the_pretraining_images():
    from mdlnb.studies.encoder_grid import EncodersResult

    grid = SimpleNamespace(
        config=SimpleNamespace(pretrain_data="fashion_mnist"),
        sizes={
            t: 1000 for t in ("digits", "fashion_mnist_category", "clevr_count", "fashion_mnist")
        },
    )
    assert EncodersResult.in_domain(grid) == ["fashion_mnist_category", "fashion_mnist"]


def test_average_accuracy_against_average_rank():
    # e0 wins most tasks narrowly and collapses on one: best average rank, worst mean accuracy
    acc = {t: [0.81, 0.80, 0.70] for t in TASKS}
    acc["t7"] = [0.10, 0.80, 0.70]
    rows = [
        dict(encoder=f"e{i}", task=t, metric="linear accuracy", seed=0, value=v)
        for t, vs in acc.items()
        for i, v in enumerate(vs)
    ]
    l = M.aggregation_claim(_result(rows), ["e0", "e1", "e2"])
    table = np.array([acc[t] for t in TASKS])
    mean_acc = table.mean(0)
    mean_rank = np.mean([stats.rankdata(-r) for r in table], axis=0)
    value = 1 - stats.kendalltau(mean_acc, -mean_rank).statistic
    assert value > 0 and l.estimate == pytest.approx(value) and l.n == len(TASKS)
