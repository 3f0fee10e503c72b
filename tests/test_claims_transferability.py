"""Claims (h) and (i) of the transferability study on hand-made scores whose verdicts are
known; the paired τ differences re-derived with SciPy, the intervals with the two-stage
bootstrap (itself checked against exact enumeration in test_transferability_bootstrap)."""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from mdlnb.research.claims import LARGER, REPLICATED, REVERSED, SMALLER, UNDETERMINED
from mdlnb.studies import transferability as tr
from mdlnb.studies.transferability import _claims

ENC = ["e0", "e1", "e2", "e3", "e4"]
ACC = {"e0": 0.9, "e1": 0.8, "e2": 0.7, "e3": 0.6, "e4": 0.5}
TASKS, RATIOS, REPEATS = ("t0", "t1", "t2", "t3"), (2, 5), 3


def _truth(tasks=TASKS):
    return pd.DataFrame(
        [
            dict(
                zoo="z",
                encoder=e,
                task=t,
                readout="finetune",
                model="ft",
                accuracy=a,
                **{"val_loss [nats]": 1.0},
            )
            for t in tasks
            for e, a in ACC.items()
        ]
    )


def _scores(makers, ratios=RATIOS, repeats=REPEATS):
    """makers: {metric: f(encoder, task, ratio, repeat) -> value or None (no row)}."""
    rows = []
    for m, f in makers.items():
        for t in TASKS:
            for r in ratios:
                for k in range(repeats):
                    for e in ENC:
                        v = f(e, t, r, k)
                        if v is not None:
                            rows.append(
                                dict(
                                    zoo="z",
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


def _result(scores, truth=None, full=None):
    truth = _truth() if truth is None else truth
    cfg = SimpleNamespace(
        ratios=RATIOS, truth="finetune", resamples=2000, seed=0, zoos=lambda: {"z": tuple(ENC)}
    )
    return SimpleNamespace(scores=scores, truth=truth, full_label_free=full, config=cfg)


def _tau(scores, m, t, r, k, encoders):
    g = (
        scores[
            (scores.metric == m) & (scores.task == t) & (scores.ratio == r) & (scores.repeat == k)
        ]
        .set_index("encoder")
        .loc[encoders]
    )
    return stats.kendalltau(g["oriented"], [ACC[e] for e in encoders]).statistic


def _by_hand(scores, a, b, encoders=ENC, ratios=RATIOS):
    """Per task, the paired differences τ_a − τ_b of every (N/K, repeat) (SciPy τ)."""
    return {
        t: [
            _tau(scores, a, t, r, k, encoders) - _tau(scores, b, t, r, k, encoders)
            for r in ratios
            for k in range(REPEATS)
        ]
        for t in TASKS
    }


def test_h_replicated_reversed_and_missing_metrics_by_hand():
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
    d = _by_hand(scores, "pactran_gaussian", "logme")
    mean, lo, hi, n = tr.two_stage(d, resamples=2000, seed=0)
    assert h1.estimate == pytest.approx(np.mean([np.mean(v) for v in d.values()]))
    assert (h1.estimate, h1.ci_low, h1.ci_high, h1.n) == pytest.approx((mean, lo, hi, 4))
    assert h1.direction == REPLICATED and h1.unit == "tasks"
    assert h1.paper_effect == pytest.approx(np.mean([0.654 - 0.149, 0.673 - 0.196, 0.641 - 0.233]))
    assert "per N/K: 2: " in h1.our_value and "; 5: " in h1.our_value
    assert h2.direction == UNDETERMINED and "N-LEEP not computed" in h2.our_value
    # LEEP exists on e0..e2 only and is reversed there: PT-Gauss over those 3 encoders
    d3 = _by_hand(scores, "pactran_gaussian", "leep", encoders=["e0", "e1", "e2"])
    assert "(3 checkpoints)" in h3.our_value and h3.direction == REPLICATED
    assert h3.estimate == pytest.approx(np.mean([np.mean(v) for v in d3.values()]))
    assert h4.direction == UNDETERMINED
    # the other way round: PT-Gauss reversed, LogME perfect
    bad = _scores({"pactran_gaussian": perfect, "logme": perfect, "nleep": reversed_})
    h1, h2, *_ = _claims.claims(_result(bad))
    assert h1.direction == REVERSED and h2.direction == REVERSED
    assert h1.estimate == pytest.approx(-2.0)


def test_h_undetermined_over_two_encoders():
    scores = _scores(
        {
            "pactran_gaussian": _noisy(1, sign=-1, scale=0.0),
            "leep": lambda e, t, r, k: -ACC[e] if e in ("e0", "e1") else None,
        }
    )
    h3 = _claims.claims(_result(scores))[2]
    assert h3.direction == UNDETERMINED and "τ over 2 checkpoints" in h3.our_value


def test_h_size_smaller_when_the_interval_lies_short_of_the_papers_effect():
    # A and B equally good up to small noise: the interval sits around 0, far short of 0.5
    scores = _scores(
        {"pactran_gaussian": _noisy(1, sign=-1, scale=0.01), "logme": _noisy(2, scale=0.01)}
    )
    h1 = _claims.claims(_result(scores))[0]
    assert h1.ci_high < h1.paper_effect and h1.size == SMALLER


def _full(makers):
    rows = [
        dict(
            zoo="z",
            encoder=e,
            task=t,
            ratio=0,
            n=100,
            repeat=0,
            metric=m,
            value=float(f(e, t, 0, 0)),
        )
        for m, f in makers.items()
        for t in TASKS
        for e in ENC
    ]
    return tr.orient(pd.DataFrame(rows))


def test_i_clid_positive_beats_id_ties_cl():
    full = _full({"clid": _noisy(3, scale=0.05), "twonn_id": reversed_, "cl": perfect})
    i1, i2, i3 = _claims.claims(_result(_scores({"logme": perfect}), full=full))[4:]
    taus = {
        t: [
            stats.kendalltau(
                full[(full.metric == "clid") & (full.task == t)]
                .set_index("encoder")
                .loc[ENC]["oriented"],
                [ACC[e] for e in ENC],
            ).statistic
        ]
        for t in TASKS
    }
    mean, lo, hi, n = tr.two_stage(taus, resamples=2000, seed=0)
    assert (i1.estimate, i1.ci_low, i1.ci_high) == pytest.approx((mean, lo, hi))
    assert i1.direction == REPLICATED and i1.paper_effect == 0.70
    assert i2.direction == REPLICATED and i2.estimate == pytest.approx(mean + 1.0)
    # CL ranks perfectly too: CLID − CL is 0 on every task, no direction, short of 0.31
    assert i3.estimate == pytest.approx(mean - 1.0, abs=1e-12) and mean == pytest.approx(1.0)
    assert i3.direction == UNDETERMINED and i3.size == SMALLER
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
    per = tr.kendall_per_repeat(scores, truth, readout="finetune")
    assert "t2" not in set(per["task"])
    h1 = _claims.claims(_result(scores, truth=truth))[0]
    assert "no τ on t2 (ground truth tied" in h1.our_value and h1.n == 3


def test_size_larger_when_the_interval_lies_beyond_the_papers_effect():
    # τ(A) = 1 and τ(B) = 0.4 on every subsample (B swaps the three weakest checkpoints):
    # the difference is 0.6 everywhere, beyond PACTran's mean 0.463
    split = lambda e, t, r, k: ACC[e] if e in ("e0", "e1") else -ACC[e]  # noqa: E731
    scores = _scores({"pactran_gaussian": _noisy(1, sign=-1, scale=0.0), "logme": split})
    h1 = _claims.claims(_result(scores))[0]
    assert (h1.estimate, h1.ci_low, h1.ci_high) == pytest.approx((0.6, 0.6, 0.6))
    assert h1.direction == REPLICATED and h1.size == LARGER
