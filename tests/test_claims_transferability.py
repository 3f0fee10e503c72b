"""Claims (h) and (i) of the transferability study on hand-made scores whose verdicts are
known; the paired τ differences and their intervals re-derived with SciPy."""

import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from mdlnb.claims import REPLICATED, REVERSED, SMALLER, UNDETERMINED
from mdlnb.studies import transferability as tr
from mdlnb.studies.transferability import _claims

ENC = ["e0", "e1", "e2", "e3", "e4"]
ACC = {"e0": 0.9, "e1": 0.8, "e2": 0.7, "e3": 0.6, "e4": 0.5}
TASKS, RATIOS, REPEATS = ("t0", "t1", "t2"), (2, 5), 4


def _truth():
    return pd.DataFrame(
        [
            dict(
                encoder=e,
                task=t,
                readout="best",
                model="linear",
                accuracy=a,
                **{"val_loss [nats]": 1.0},
            )
            for t in TASKS
            for e, a in ACC.items()
        ]
    )


def _scores(makers):
    """makers: {metric: f(encoder, task, ratio, repeat) -> value or None (no row)}."""
    rows = []
    for m, f in makers.items():
        for t in TASKS:
            for r in RATIOS:
                for k in range(REPEATS):
                    for e in ENC:
                        v = f(e, t, r, k)
                        if v is not None:
                            rows.append(
                                dict(
                                    encoder=e,
                                    task=t,
                                    ratio=r,
                                    n=10 * r,
                                    repeat=k,
                                    metric=m,
                                    value=float(v),
                                )
                            )
    return tr.orient(pd.DataFrame(rows))


def _noisy(seed, sign=+1, scale=0.08):
    def f(e, t, r, k):
        rng = np.random.default_rng([seed, TASKS.index(t), r, k, ENC.index(e)])
        return sign * (ACC[e] + scale * rng.normal())

    return f


perfect = _noisy(0, scale=0.0)  # higher-is-better, τ = 1
reversed_ = _noisy(0, sign=-1, scale=0.0)  # higher-is-better metric, τ = −1


def _result(scores):
    truth = _truth()
    return SimpleNamespace(
        scores=scores,
        truth=truth,
        tau=tr.kendall_table(scores, truth),
        config=SimpleNamespace(ratios=RATIOS, truth="best"),
    )


def _by_hand(scores, a, b, ratio, encoders=ENC):
    """Mean over tasks of per-task mean τ_a − τ_b and its 95 % half-width (tasks fixed)."""
    means, var, dof = [], 0.0, 0
    for t in TASKS:
        d = []
        for k in range(REPEATS):

            def tau(m, t=t, k=k):
                g = scores[
                    (scores.metric == m)
                    & (scores.task == t)
                    & (scores.ratio == ratio)
                    & (scores.repeat == k)
                    & scores.encoder.isin(encoders)
                ]
                g = g.set_index("encoder").loc[encoders]
                return stats.kendalltau(g["oriented"], [ACC[e] for e in encoders]).statistic

            d.append(tau(a) - tau(b))
        means.append(np.mean(d))
        var += np.var(d, ddof=1) / REPEATS
        dof += REPEATS - 1
    return np.mean(means), stats.t.ppf(0.975, dof) * math.sqrt(var) / len(TASKS)


def test_h_holds_fails_and_missing_metrics_by_hand():
    # PT-Gauss is lower-is-better: its value is −accuracy (+ noise) so that it ranks well
    pt = _noisy(1, sign=-1, scale=0.02)
    scores = _scores(
        {
            "pactran_gaussian": pt,
            "logme": _noisy(2, scale=0.15),
            "leep": lambda e, t, r, k: -ACC[e] if e in ("e0", "e1", "e2") else None,
        }
    )
    h1, h2, h3, h4, *_ = _claims.claims(_result(scores))
    for r in RATIOS:
        mean, half = _by_hand(scores, "pactran_gaussian", "logme", r)
        assert (
            f"N/K={r}: {mean:.4g}, 95% interval [{mean - half:.4g}, {mean + half:.4g}]"
            in h1.our_value
        )
        assert mean - half > 0
    assert h1.direction == REPLICATED
    assert h2.direction == UNDETERMINED and "N-LEEP not computed" in h2.our_value
    # LEEP exists on e0..e2 only and is reversed there: PT-Gauss over those 3 encoders
    mean, half = _by_hand(scores, "pactran_gaussian", "leep", 2, encoders=["e0", "e1", "e2"])
    assert "(3 tasks, 3 encoders)" in h3.our_value and h3.direction == REPLICATED
    assert h3.estimate == pytest.approx(mean)
    assert h4.direction == UNDETERMINED
    # the other way round: PT-Gauss reversed, LogME perfect → does not hold
    bad = _scores({"pactran_gaussian": perfect, "logme": perfect, "nleep": reversed_})
    h1, h2, *_ = _claims.claims(_result(bad))
    assert h1.direction == REVERSED  # PT-Gauss lower-is-better: "perfect" values rank reversed
    assert h2.direction == REVERSED


def test_h_inconclusive_over_two_encoders():
    scores = _scores(
        {
            "pactran_gaussian": _noisy(1, sign=-1, scale=0.0),
            "leep": lambda e, t, r, k: -ACC[e] if e in ("e0", "e1") else None,
        }
    )
    h3 = _claims.claims(_result(scores))[2]
    assert h3.direction == UNDETERMINED and "τ over 2 encoders" in h3.our_value


def test_i_clid_positive_beats_id_ties_cl():
    scores = _scores({"clid": _noisy(3, scale=0.05), "twonn_id": reversed_, "cl": perfect})
    i1, i2, i3 = _claims.claims(_result(scores))[4:]
    tau = tr.mean_over_tasks(tr.kendall_table(scores, _truth()))
    row = tau[(tau.metric == "clid") & (tau.ratio == 5)].iloc[0]
    assert i1.direction == REPLICATED and row.tau - row.ci > 0
    assert (i1.ci_low, i1.ci_high) == pytest.approx((row.tau - row.ci, row.tau + row.ci))
    assert "at N/K=5" in i1.our_value and "N/K=2:" in i1.our_value
    assert i2.direction == REPLICATED and i2.our_value.startswith("N/K=5:")  # largest N/K only
    mean, half = _by_hand(scores, "clid", "cl", 5)
    assert mean < 0 and i3.estimate == pytest.approx(mean)
    assert i3.direction == (REVERSED if mean + half < 0 else UNDETERMINED)
    none = _claims.claims(_result(_scores({"logme": perfect})))
    assert [c.direction for c in none] == [UNDETERMINED] * 7
    assert none[4].our_value == "CLID not computed in this run"


def test_paired_tau_uses_common_encoders():
    scores = _scores({"logme": perfect, "leep": lambda e, t, r, k: ACC[e] if e != "e4" else np.nan})
    p = _claims.paired_tau(scores, _truth(), "logme", "leep")
    assert len(p) == len(TASKS) * len(RATIOS) * REPEATS
    assert (p["encoders"] == 4).all() and p["diff"].to_numpy() == pytest.approx(0.0)
    assert _claims.paired_tau(scores, _truth(), "logme", "nleep").empty


def test_tied_ground_truth_gives_no_tau_and_is_named():
    truth = _truth()
    truth.loc[truth["task"] == "t2", "accuracy"] = 1.0  # every encoder at 1.0 on t2
    scores = _scores(
        {"pactran_gaussian": _noisy(1, sign=-1, scale=0.02), "logme": _noisy(2, scale=0.15)}
    )
    per = tr.kendall_per_repeat(scores, truth)
    assert "t2" not in set(per["task"]) and set(per["task"]) == {"t0", "t1"}
    from mdlnb.studies.transferability._kendall import tied_truth

    assert tied_truth(truth) == ["t2"] and tied_truth(_truth()) == []
    res = SimpleNamespace(
        scores=scores,
        truth=truth,
        tau=tr.kendall_table(scores, truth),
        config=SimpleNamespace(ratios=RATIOS, truth="best"),
    )
    h1 = next(c for c in _claims.claims(res) if c.id == "h1")
    assert "no τ on t2 (ground truth tied" in h1.our_value
    assert "(2 tasks," in h1.our_value


def test_h_is_smaller_when_the_interval_excludes_the_papers_effect():
    # A and B equally good, up to small noise: the difference's interval sits around 0,
    # far below PACTran's 0.5: size smaller, whatever the direction
    scores = _scores(
        {"pactran_gaussian": _noisy(1, sign=-1, scale=0.01), "logme": _noisy(2, scale=0.01)}
    )
    h1 = next(c for c in _claims.claims(_result(scores)) if c.id == "h1")
    mean, half = _by_hand(scores, "pactran_gaussian", "logme", 2)
    assert mean + half < 0.654 - 0.149
    n2 = h1.our_value.split("N/K=5")[0]
    assert "paper 0.505" in n2 and h1.size == SMALLER
    assert h1.direction == (REPLICATED if mean - half > 0 else UNDETERMINED)
