"""Two-stage bootstrap intervals and the power analysis that sized the study."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from mdlnb.studies.transferability import _power as P
from mdlnb.studies.transferability._bootstrap import intervals, two_stage


def _exact_distribution(values):
    """Every two-stage resample of a tiny table, enumerated: {mean: probability}."""
    tasks = list(values.values())
    t = len(tasks)
    out = {}
    for draw in itertools.product(range(t), repeat=t):
        inner = [list(itertools.product(tasks[i], repeat=len(tasks[i]))) for i in draw]
        p_outer = 1.0 / t**t
        for combo in itertools.product(*inner):
            p = p_outer * np.prod([1.0 / len(c) for c in inner])
            m = round(float(np.mean([np.mean(c) for c in combo])), 12)
            out[m] = out.get(m, 0.0) + p
    return out


def test_two_stage_quantiles_match_the_enumerated_distribution():
    values = {"a": [0.0, 1.0], "b": [2.0, 4.0, 7.0]}
    exact = _exact_distribution(values)
    support = np.array(sorted(exact))
    cdf = np.cumsum([exact[k] for k in support])
    mean, lo, hi, n = two_stage(values, resamples=40_000, seed=1)
    assert n == 2 and mean == pytest.approx(np.mean([0.5, 13 / 3]))
    # the bootstrap quantiles sit where the exact CDF crosses 2.5 % and 97.5 %
    assert lo == pytest.approx(support[np.searchsorted(cdf, 0.025 - 1e-3)], abs=0.34)
    assert hi == pytest.approx(support[np.searchsorted(cdf, 0.975 - 1e-3)], abs=0.34)
    # and the resampled means follow the exact law (probability of each support value)
    rng_means = _draw_means(values, 40_000, seed=1)
    for v, p in exact.items():
        assert np.mean(np.isclose(rng_means, v)) == pytest.approx(p, abs=0.01)


def _draw_means(values, resamples, seed):
    """The resampled means two_stage draws, recomputed with its generator in plain loops."""
    cols = [np.asarray(v, float) for v in values.values()]
    t, r = len(cols), max(len(c) for c in cols)
    rng = np.random.default_rng(seed)
    tasks = rng.integers(0, t, size=(resamples, t))
    u = rng.random((resamples, t, r))
    out = np.empty(resamples)
    for b in range(resamples):
        per = []
        for j in range(t):
            c = cols[tasks[b, j]]
            per.append(np.mean([c[int(np.floor(u[b, j, k] * len(c)))] for k in range(len(c))]))
        out[b] = np.mean(per)
    return out


def test_two_stage_edge_cases():
    assert two_stage({"a": [0.3, 0.3], "b": [0.3]})[:3] == pytest.approx((0.3, 0.3, 0.3))
    mean, lo, hi, n = two_stage({"a": [0.1, 0.5]})
    assert n == 1 and mean == pytest.approx(0.3) and math.isnan(lo) and math.isnan(hi)
    assert two_stage({"a": [np.nan], "b": [0.2, 0.4], "c": [0.6]})[3] == 2
    assert math.isnan(two_stage({})[0])
    with pytest.raises(ValueError, match="level"):
        two_stage({"a": [1.0], "b": [2.0]}, level=1.5)
    with pytest.raises(ValueError, match="resamples"):
        two_stage({"a": [1.0], "b": [2.0]}, resamples=0)


def test_two_stage_covers_the_true_mean_about_95_percent_of_the_time():
    """Hierarchical data: task means ~ N(0.3, 0.2²), subsamples ~ N(task mean, 0.3²)."""
    rng = np.random.default_rng(0)
    hits = 0
    for sim in range(300):
        mus = rng.normal(0.3, 0.2, 12)
        vals = {t: rng.normal(mu, 0.3, 3) for t, mu in enumerate(mus)}
        _, lo, hi, _ = two_stage(vals, resamples=1000, seed=sim)
        hits += lo <= 0.3 <= hi
    assert 0.86 <= hits / 300 <= 0.99  # percentile bootstrap at T = 12: a bit short


def test_intervals_groups_every_metric_with_the_same_draws():
    rows = [
        dict(zoo="z", metric=m, ratio=2, task=t, repeat=r, tau=v)
        for m, off in (("a", 0.0), ("b", 0.5))
        for t in range(4)
        for r in range(2)
        for v in [off + 0.1 * t + 0.01 * r]
    ]
    out = intervals(pd.DataFrame(rows), by=["zoo", "metric", "ratio"], resamples=500)
    a, b = out.set_index("metric").loc["a"], out.set_index("metric").loc["b"]
    # b is a shifted by 0.5: same draws, so the interval shifts exactly
    assert (b["lo"] - a["lo"], b["hi"] - a["hi"]) == pytest.approx((0.5, 0.5))
    assert a["tasks"] == 4 and a["mean"] == pytest.approx(0.155)


def test_tau_sd_matches_brute_force_over_all_permutations():
    from scipy.stats import kendalltau

    for k in (4, 5, 6):
        taus = [kendalltau(np.arange(k), p).statistic for p in itertools.permutations(range(k))]
        assert P.tau_sd(k) == pytest.approx(np.std(taus), rel=1e-12)
    with pytest.raises(ValueError, match="k"):
        P.tau_sd(1)


def test_spreads_from_a_per_task_table():
    t = pd.DataFrame(
        [
            dict(
                ratio=2, metric="pactran_gaussian", a=0.5, **{"a sd": 0.3}, b=0.7, **{"b sd": 0.4}
            ),
            dict(ratio=2, metric="logme", a=0.1, **{"a sd": 0.4}, b=0.5, **{"b sd": 0.3}),
        ]
    )
    s = P.spreads(t, ["a", "b"], pairs=[("pactran_gaussian", "logme")]).iloc[0]
    assert s["sigma_task"] == pytest.approx(np.std([0.4, 0.2], ddof=1))
    assert s["sigma_repeat"] == pytest.approx(0.5)  # hypot(0.3, 0.4) twice


def test_half_width_and_tasks_to_decide():
    assert P.half_width(4, 1, 0.2, 0.0) == pytest.approx(1.96 * 0.1)
    assert P.half_width(1, 4, 0.0, 0.2) == pytest.approx(1.96 * 0.1)
    t = P.tasks_to_decide(0.26, 0.16, 0.126, 3)
    assert P.half_width(t, 3, 0.16, 0.126) <= 0.13 < P.half_width(t - 1, 3, 0.16, 0.126)
    with pytest.raises(ValueError, match="tasks"):
        P.half_width(0, 1, 0.1, 0.1)


def test_plan_reproduces_the_numbers_of_the_module_docstring():
    p = P.plan().set_index("repeats")["half_width"].round(3)
    assert p.to_dict() == {1: 0.133, 2: 0.120, 3: 0.115, 5: 0.111, 10: 0.108}
    assert P.plan()["limit"].iloc[0] == pytest.approx(0.1045, abs=1e-4)
