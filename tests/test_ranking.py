"""Rank statistics against hand-computed tables, SciPy, and Demšar (2006)."""

from __future__ import annotations

import math

import matplotlib
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats

from mdlnb.research import ranking as rk

matplotlib.use("Agg")

# Demšar (2006), Table 5(a): two-tailed Nemenyi q_α for k = 2..10.
DEMSAR_Q05 = [1.960, 2.343, 2.569, 2.728, 2.850, 2.949, 3.031, 3.102, 3.164]
DEMSAR_Q10 = [1.645, 2.052, 2.291, 2.459, 2.589, 2.693, 2.780, 2.855, 2.920]


def _tied_scores():
    return pd.DataFrame(
        {"A": [0.9, 0.5, 0.3], "B": [0.8, 0.7, 0.3], "C": [0.8, 0.6, 0.3], "D": [0.1, 0.6, 0.9]},
        index=["d1", "d2", "d3"],
    )


def test_average_ranks_with_ties_hand_table():
    # d1: A 1, B 2.5, C 2.5, D 4;  d2: B 1, C 2.5, D 2.5, A 4;  d3: D 1, A B C 3.
    hand = {"A": 8 / 3, "B": 6.5 / 3, "C": 8 / 3, "D": 7.5 / 3}
    got = rk.average_ranks(_tied_scores())
    assert list(got.index) == ["A", "B", "C", "D"]
    np.testing.assert_allclose(got.to_numpy(), [hand[m] for m in "ABCD"])
    low = rk.average_ranks(_tied_scores(), higher_is_better=False)
    np.testing.assert_allclose(low.to_numpy(), [5 - hand[m] for m in "ABCD"])
    np.testing.assert_allclose(rk.rank_table(_tied_scores()).loc["d2"], [4, 1, 2.5, 2.5])


@settings(max_examples=40, deadline=None)
@given(
    arrays(
        np.float64,
        st.tuples(st.integers(1, 8), st.integers(2, 6)),
        elements=st.integers(-3, 3).map(float),
    )
)
def test_rank_properties(x):
    n, k = x.shape
    r = rk.average_ranks(x)
    assert r.sum() == pytest.approx(k * (k + 1) / 2)  # ranks 1..k per row
    np.testing.assert_allclose(rk.average_ranks(x, higher_is_better=False), k + 1 - r)
    # rank statistics ignore strictly increasing transforms of the scores
    np.testing.assert_allclose(rk.average_ranks(np.exp(x) * 3 - 1), r)
    res = rk.friedman(x, tie_correction=True) if np.ptp(x, axis=1).max() > 0 else None
    if res is not None and n > 1 and k >= 3:  # scipy needs >= 3 methods
        ref = stats.friedmanchisquare(*x.T)
        assert res.statistic == pytest.approx(ref.statistic, rel=1e-9, abs=1e-12)


def test_friedman_matches_scipy_without_and_with_ties():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(12, 5)) + np.arange(5) * 0.4
    res, ref = rk.friedman(x), stats.friedmanchisquare(*x.T)
    assert res.statistic == pytest.approx(ref.statistic, rel=1e-12)
    assert res.pvalue == pytest.approx(ref.pvalue, rel=1e-10)
    tied = np.round(x, 0)
    ref = stats.friedmanchisquare(*tied.T)
    assert rk.friedman(tied, tie_correction=True).statistic == pytest.approx(
        ref.statistic, rel=1e-12
    )
    assert rk.friedman(tied, tie_correction=True).pvalue == pytest.approx(ref.pvalue, rel=1e-10)
    assert rk.friedman(tied).statistic < ref.statistic  # Demšar's form, uncorrected


def test_friedman_demsar_example():
    # Demšar (2006) Sec. 3.2.4: four C4.5 variants on 14 data sets, average
    # ranks 3.143, 2.000, 2.893, 1.964 → χ²_F = 9.28, F_F = 3.69; the critical
    # F(3, 39) at α = 0.05 is 2.85, so the null hypothesis is rejected.
    res = rk.friedman_from_ranks([3.143, 2.000, 2.893, 1.964], 14)
    assert round(res.statistic, 2) == 9.28
    assert round(res.iman_davenport, 2) == 3.69
    assert res.iman_davenport_pvalue < 0.05
    assert stats.f.ppf(0.95, 3, 39) == pytest.approx(2.85, abs=5e-3)
    # and the same CD: 2.569·√(4·5 / (6·14)) = 1.25 at α = 0.05, 1.12 at α = 0.10
    assert round(rk.nemenyi_cd(4, 14, 0.05), 2) == 1.25
    assert round(rk.nemenyi_cd(4, 14, 0.10), 2) == 1.12


def test_friedman_consistent_with_average_ranks_and_iman_davenport_form():
    x = np.random.default_rng(1).normal(size=(9, 4))
    res = rk.friedman(x)
    again = rk.friedman_from_ranks(rk.average_ranks(x).to_numpy(), 9)
    assert res == again
    chi2, n, k = res.statistic, 9, 4
    assert res.iman_davenport == pytest.approx((n - 1) * chi2 / (n * (k - 1) - chi2))
    perfect = np.tile(np.arange(4.0), (6, 1))
    assert rk.friedman(perfect).statistic == pytest.approx(6 * 3)  # N(k − 1)
    assert rk.friedman(perfect).iman_davenport == math.inf


@pytest.mark.parametrize("alpha,table", [(0.05, DEMSAR_Q05), (0.10, DEMSAR_Q10)])
def test_nemenyi_q_against_demsar_table(alpha, table):
    got = [rk.nemenyi_q(k, alpha) for k in range(2, 11)]
    np.testing.assert_allclose(got, table, atol=1e-3)


def test_nemenyi_cd_and_paper_thresholds():
    # r = 6, N = 19 at α = 0.10: 2.5885·√(42/114) = 1.571 (the paper prints 1.894).
    assert rk.nemenyi_cd(6, 19, 0.10) == pytest.approx(2.58852 * math.sqrt(42 / 114), rel=1e-4)
    rep = rk.cd_thresholds_report()
    assert len(rep) == 5
    np.testing.assert_allclose(rep["implied_q"].iloc[:3], 3.12, atol=5e-3)
    np.testing.assert_allclose(rep["paper_q_cd"], [1.894, 3.65, 3.12, 4.127, 2.918], atol=5e-3)
    # the printed 2.92 / 4.13 for N = 4 / 8 imply q = 2.21 / 4.41: listed in swapped order
    np.testing.assert_allclose(rep["implied_q"].iloc[3:], [2.207, 4.415], atol=5e-3)
    np.testing.assert_allclose(rep["q"], [2.589, 3.030, 2.589, 2.589, 2.589], atol=1e-3)
    np.testing.assert_allclose(rep["cd"], [1.571, 3.544, 2.589, 3.424, 2.421], atol=1e-3)


def test_cd_cliques_hand_examples():
    r = pd.Series({"a": 1.2, "b": 2.0, "c": 2.9, "d": 4.1, "e": 4.8})
    assert rk.cd_cliques(r, 1.5) == [("a", "b"), ("b", "c"), ("c", "d"), ("d", "e")]
    assert rk.cd_cliques(r, 2.0) == [("a", "b", "c"), ("c", "d", "e")]
    assert rk.cd_cliques(r, 10.0) == [("a", "b", "c", "d", "e")]
    assert rk.cd_cliques(pd.Series({"x": 1.0, "y": 2.0}), 1.0) == []  # |Δ| = CD is significant
    assert rk.cd_cliques(r.sample(frac=1.0, random_state=0), 1.5) == rk.cd_cliques(r, 1.5)


def test_plot_cd_renders_headless_with_all_labels():
    import matplotlib.pyplot as plt

    r = pd.Series(
        {
            "MDL": 1.3,
            "linear": 2.9,
            "mlp-1": 2.2,
            "mlp-3": 3.6,
            "mlp-7": 4.0,
            "knn": 5.0,
            "logme": 5.5,
        }
    )
    ax = rk.plot_cd(r, 1.9)
    ax.figure.canvas.draw()
    labels = [t.get_text() for t in ax.texts]
    for name in r.index:
        assert sum(lab.startswith(f"{name} (") for lab in labels) == 1
    assert sum(lab.startswith("CD = 1.900") for lab in labels) == 1
    thick = [ln for ln in ax.lines if ln.get_linewidth() == 3.5]
    # sorted 1.3 2.2 2.9 3.6 4.0 5.0 5.5; a clique spans ranks within < 1.9 of its first
    assert rk.cd_cliques(r, 1.9) == [
        ("MDL", "mlp-1", "linear"),
        ("mlp-1", "linear", "mlp-3", "mlp-7"),
        ("mlp-3", "mlp-7", "knn"),
        ("mlp-7", "knn", "logme"),
    ]
    assert len(thick) == 4
    plt.close(ax.figure)


def test_kendall_tau_hand_example():
    # 7 concordant, 3 discordant pairs → τ = 0.4
    assert rk.kendall_tau([1, 2, 3, 4, 5], [3, 1, 2, 5, 4]) == pytest.approx(0.4)
    assert rk.kendall_tau([1, 2, 3], [30, 20, 10]) == pytest.approx(-1.0)


def _vigna_tau(x, y, rank):
    """Weighted τ for untied x, y: Σ w_ij sgn(Δx)sgn(Δy) / Σ w_ij,
    w_ij = 1/(rank_i + 1) + 1/(rank_j + 1)."""
    num = den = 0.0
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            w = 1 / (rank[i] + 1) + 1 / (rank[j] + 1)
            num += w * np.sign(x[i] - x[j]) * np.sign(y[i] - y[j])
            den += w
    return num / den


def test_weighted_tau_brute_force():
    x = np.array([0.9, 0.1, 0.5, 0.7, 0.3, 0.8])
    y = np.array([0.8, 0.2, 0.9, 0.1, 0.4, 0.7])
    order = np.arange(6)
    assert rk.weighted_tau(x, y, rank=order) == pytest.approx(_vigna_tau(x, y, order))
    by_x = np.argsort(np.argsort(-x))  # 0 = largest x
    by_y = np.argsort(np.argsort(-y))
    expected = (_vigna_tau(x, y, by_x) + _vigna_tau(x, y, by_y)) / 2
    assert rk.weighted_tau(x, y) == pytest.approx(expected)


def test_rank_product_hand_example():
    pred, img = [0.9, 0.5, 0.7], [70.0, 80.0, 60.0]  # ranks [1, 3, 2] and [2, 1, 3]
    np.testing.assert_allclose(rk.rank_product([pred, img]), np.sqrt([2, 3, 6]))
    np.testing.assert_allclose(
        rk.rank_product([pred, img], higher_is_better=[True, False]), np.sqrt([2, 9, 2])
    )
    np.testing.assert_allclose(rk.rank_product([[1.0, 1.0, 3.0]]), [2.5, 2.5, 1.0])


def test_bad_input_names_the_argument():
    nan = _tied_scores().copy()
    nan.iloc[0, 0] = np.nan
    cases = [
        (lambda: rk.average_ranks(nan), "scores"),
        (lambda: rk.average_ranks(pd.DataFrame({"A": [1.0, 2.0]})), "scores"),
        (lambda: rk.friedman(np.ones((3, 1))), "scores"),
        (lambda: rk.friedman_from_ranks([1.0, 2.0], 0), "n_datasets"),
        (lambda: rk.nemenyi_q(1), "k"),
        (lambda: rk.nemenyi_q(4, alpha=1.5), "alpha"),
        (lambda: rk.nemenyi_cd(4, 0), "n"),
        (lambda: rk.cd_cliques([1.0, 2.0], -1.0), "cd"),
        (lambda: rk.kendall_tau([1, 2, 3], [1, 2]), "x"),
        (lambda: rk.rank_product([[1, 2, 3], [1, 2]]), r"scores\[1\]"),
        (lambda: rk.rank_product([[1, 2]], higher_is_better=[True, False]), "higher_is_better"),
    ]
    for fn, name in cases:
        with pytest.raises(ValueError, match=name):
            fn()


def test_inputs_the_fuzzer_found():
    """Found by tests/test_fuzz.py (hypothesis, derandomized): a complex score table is
    refused naming ``scores``; a rank product stays within [1, n] (exp(mean(log)) of a
    single rank 3 is 3.0000000000000004)."""
    with pytest.raises(ValueError, match="scores: entries must be real"):
        rk.average_ranks(np.zeros((1, 2), np.complex64))
    rp = rk.rank_product([np.array([1.0, 0.0, 0.0])], higher_is_better=False)
    np.testing.assert_array_equal(rp, [3.0, 1.5, 1.5])
    rp = rk.rank_product([np.arange(7.0)] * 5, higher_is_better=False)
    assert rp.max() <= 7.0 and rp.min() >= 1.0
    np.testing.assert_allclose(rp, np.arange(1.0, 8.0), rtol=1e-15)
