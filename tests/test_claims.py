"""Claims: rule helpers against SciPy/hand computations; files and the merged page."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from mdlnb import claims
from mdlnb.claims import FAILS, HOLDS, INCONCLUSIVE, Claim


def test_sign_on_every():
    assert claims.sign_on_every([-1, -0.9, -1.2]).verdict == HOLDS
    d = claims.sign_on_every([-1, 0.0, -2])
    assert d.verdict == FAILS and d.detail.startswith("2/3 negative")
    assert claims.sign_on_every([1, 1.1, 1.2], sign="positive").verdict == HOLDS
    # the size of the effect beside its sign: the t interval of the mean, by hand
    d = claims.sign_on_every([-1, -0.5, -2])
    half = stats.t.ppf(0.975, 2) * np.std([-1, -0.5, -2], ddof=1) / np.sqrt(3)
    assert f"mean {-3.5 / 3:.4g}, 95% t interval [{-3.5 / 3 - half:.4g}, {-3.5 / 3 + half:.4g}]" \
        " (n=3)" in d.detail
    # one unit has no interval; two that straddle nothing but reach 0 are not decided
    one = claims.sign_on_every([-1])
    assert one.verdict == INCONCLUSIVE and "one unit: no interval" in one.detail
    wide = claims.sign_on_every([50.4, 64.07], sign="positive")   # t(1 dof) = 12.7
    lo = 57.235 - stats.t.ppf(0.975, 1) * np.std([50.4, 64.07], ddof=1) / np.sqrt(2)
    assert lo < 0 and wide.verdict == INCONCLUSIVE and "reaches 0" in wide.detail
    h = (57.235 - lo)
    assert f"would decide at n ≈ {math.ceil(2 * (h / 57.235) ** 2)}" in wide.detail
    assert claims.sign_on_every([]).verdict == INCONCLUSIVE
    with pytest.raises(ValueError, match="sign"):
        claims.sign_on_every([1], sign="up")
    with pytest.raises(ValueError, match="values"):
        claims.sign_on_every([np.nan])


def test_t_interval_by_hand():
    x = np.array([1.0, 2.0, 4.0, 7.0])
    mean, lo, hi = claims.t_interval(x, level=0.9)
    s = math.sqrt(((x - x.mean()) ** 2).sum() / 3)
    half = 2.3533634348018264 * s / 2   # t_{0.95, 3} (table value) · s/√4
    assert mean == pytest.approx(3.5)
    assert (lo, hi) == pytest.approx((3.5 - half, 3.5 + half), rel=1e-9)


def test_interval_excludes_three_ways():
    rng = np.random.default_rng(0)
    below = rng.normal(-5, 0.5, size=6)
    assert claims.interval_excludes(below, 0.0).verdict == HOLDS
    assert claims.interval_excludes(below, 0.0, side="above").verdict == FAILS
    assert claims.interval_excludes(below, -5.0).verdict == INCONCLUSIVE
    assert claims.interval_excludes([1.0], 0.0).verdict == INCONCLUSIVE
    # Interval boundary by hand: n=2, [0, 2] → mean 1, sem 1, t_{.975,1} = 12.706
    d = claims.interval_excludes([0.0, 2.0], 13.0)
    assert d.verdict == INCONCLUSIVE and "[-11.71, 13.71]" in d.detail
    assert claims.interval_excludes([0.0, 2.0], 13.8).verdict == HOLDS
    assert claims.interval_excludes([0.0, 2.0], 13.6).verdict == INCONCLUSIVE


def test_paired_test_matches_scipy_and_binomial():
    a = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0])
    b = a + np.array([0.5, 1.1, 0.2, 2.0, 0.9, 1.7, 0.3, 1.4])   # a < b everywhere
    d = claims.paired_test(a, b)
    assert d.verdict == HOLDS
    # exact Wilcoxon, all 8 differences negative: p = 1/2^8
    assert f"p={1 / 256:.3g}" in d.detail
    assert claims.paired_test(b, a).verdict == FAILS
    # sign test: 6 of 8 negative → binomial tail P(K ≤ 2 | 8, ½) = (1 + 8 + 28)/256
    c = a - np.array([0.5, 0.5, -1, -1, 0.5, 0.5, 0.5, 0.5])
    d = claims.paired_test(c, a, method="sign")
    assert f"p={37 / 256:.3g}" in d.detail and d.verdict == INCONCLUSIVE
    assert claims.paired_test(a, a).verdict == INCONCLUSIVE
    p = stats.wilcoxon(c - a, alternative="less").pvalue
    assert f"p={p:.3g}" in claims.paired_test(c, a).detail
    with pytest.raises(ValueError, match="b"):
        claims.paired_test(a, b[:3])


def _claim(i, verdict=HOLDS):
    return Claim(i, "a statement, with a comma", "Fig. 5", "qualitative", "1.0", "rule", verdict)


def test_claim_validates():
    with pytest.raises(ValueError, match="verdict"):
        _claim("a", "maybe")
    with pytest.raises(ValueError, match="statement"):
        Claim("a", "", "Fig. 5", "", "1", "rule", HOLDS)
    c = Claim.decided("b", "s", "Fig. 5", "", "rule", claims.sign_on_every([-1, -1.1, -0.9]))
    assert c.verdict == HOLDS and c.our_value.startswith("3/3 negative")


def test_describe():
    c = Claim("b", "It holds.", "Fig. 5", "", "3/3 negative", "sign on every", HOLDS)
    d = Claim("d", "It fails.", "Tab. 1", "", "0/3", "sign on every", FAILS)
    assert claims.describe([c, d]).splitlines() == [
        "(b) HOLDS: It holds.", "    ours: 3/3 negative", "    rule: sign on every",
        "(d) DOES NOT HOLD: It fails.", "    ours: 0/3", "    rule: sign on every"]


def test_write_and_merge(tmp_path):
    claims.write_claims([_claim("c"), _claim("b", FAILS)], tmp_path, "nb_two")
    claims.write_claims([_claim("a", INCONCLUSIVE)], tmp_path, "nb_one")
    df = pd.read_csv(tmp_path / "claims" / "nb_two.csv")
    assert list(df.columns) == list(claims.COLUMNS) and list(df["id"]) == ["c", "b"]
    out = claims.main([str(tmp_path)])
    assert out == 0
    text = (tmp_path / "claims.md").read_text()
    assert "1 holds, 1 does not hold, 1 inconclusive" in text
    rows = [ln for ln in text.splitlines() if ln.startswith("| ") and not ln.startswith("| id ")]
    assert [r.split(" | ")[0] for r in rows] == ["| a", "| b", "| c"]
    first = text
    claims.merge_claims(tmp_path)
    assert (tmp_path / "claims.md").read_text() == first   # deterministic
    with pytest.raises(ValueError, match="ids"):
        claims.write_claims([_claim("a"), _claim("a")], tmp_path, "dup")


def test_interval_side_three_ways_and_nan():
    assert claims.interval_side(1.0, 0.5, 1.5, 0.0, side="above").verdict == HOLDS
    assert claims.interval_side(1.0, 0.5, 1.5, 2.0, side="above").verdict == FAILS
    d = claims.interval_side(1.0, -0.5, 2.5, 0.0, side="above", label="95% interval",
                             suffix=" (3 tasks)")
    assert d.verdict == INCONCLUSIVE and d.detail == "mean 1, 95% interval [-0.5, 2.5] (3 tasks)"
    assert claims.interval_side(1.0, 0.5, 1.5, 2.0).verdict == HOLDS        # below
    assert claims.interval_side(0.0, np.nan, np.nan, 1.0).verdict == INCONCLUSIVE
    # interval_excludes is interval_side on the t-interval
    x = [1.0, 2.0, 4.0, 7.0]
    mean, lo, hi = claims.t_interval(x)
    assert claims.interval_excludes(x, 0.0, side="above") == claims.interval_side(
        mean, lo, hi, 0.0, side="above", label="95% CI", suffix=" (n=4)")
    with pytest.raises(ValueError, match="side"):
        claims.interval_side(0, 0, 0, 0, side="left")


def test_rank_sum_test_matches_scipy_exact():
    a, b = [5.0, 6.0, 7.0, 8.0], [1.0, 2.0, 3.0, 4.0]
    d = claims.rank_sum_test(a, b)
    # every a above every b: exact one-sided p = 1 / C(8, 4)
    assert d.verdict == HOLDS and f"p={1 / 70:.3g}" in d.detail
    assert claims.rank_sum_test(b, a).verdict == FAILS
    assert claims.rank_sum_test(a, b, alternative="less").verdict == FAILS
    c = [1.0, 6.0, 3.0, 8.0]
    p = stats.mannwhitneyu(c, b, alternative="greater").pvalue
    d = claims.rank_sum_test(c, b)
    assert d.verdict == INCONCLUSIVE and f"p={p:.3g}" in d.detail
    assert claims.rank_sum_test([], b).verdict == INCONCLUSIVE
    with pytest.raises(ValueError, match="alternative"):
        claims.rank_sum_test(a, b, alternative="two-sided")


def test_all_of_conjunction():
    h, f, i = (claims.Decision(HOLDS, "x"), claims.Decision(FAILS, "y"),
               claims.Decision(INCONCLUSIVE, "z"))
    assert claims.all_of([h, h]).verdict == HOLDS
    assert claims.all_of([h, i]).verdict == INCONCLUSIVE
    assert claims.all_of([i, f, h]).verdict == FAILS
    assert claims.all_of([]).verdict == INCONCLUSIVE
    d = claims.all_of([h, f], labels=["N/K=2", "N/K=5"])
    assert d.detail == "N/K=2: x → holds; N/K=5: y → does not hold"
    with pytest.raises(ValueError, match="labels"):
        claims.all_of([h], labels=["a", "b"])


# -- three-way verdicts against zero and the paper's effect ---------------------------------

@pytest.mark.parametrize("lo, hi, verdict, note", [
    (0.02, 0.30, claims.HOLDS, ""),                      # excludes 0, contains the paper's
    (0.01, 0.05, claims.HOLDS, "smaller than the paper's"),
    (-0.30, -0.01, claims.FAILS, "opposite sign"),
    (-0.05, 0.10, claims.FAILS, "excludes the paper's effect"),
    (-0.10, 0.40, claims.INCONCLUSIVE, "would decide at n"),
])
def test_effect_decision_three_ways(lo, hi, verdict, note):
    d = claims.effect_decision((lo + hi) / 2, lo, hi, paper_effect=0.14, n=10, unit="tasks")
    assert d.verdict == verdict
    assert note in d.detail and "paper 0.14" in d.detail


def test_effect_decision_does_not_rest_on_rounding():
    """1 − τ of two equal orders comes out as 1.1e-16, not 0: an interval starting there
    does not exclude zero (it was once read as 'holds')."""
    tiny = 1.1102230246251565e-16            # 1.0 - 0.9999999999999999
    d = claims.effect_decision(tiny, tiny, 0.862, paper_effect=0.4, n=5, unit="tasks")
    assert d.verdict == claims.INCONCLUSIVE
    assert claims.effect_decision(0.01, 1e-9, 0.862, paper_effect=0.4, n=5).verdict == \
        claims.HOLDS


def test_effect_decision_below_mirrors_above():
    up = claims.effect_decision(0.1, 0.02, 0.18, paper_effect=0.5, n=5)
    down = claims.effect_decision(-0.1, -0.18, -0.02, paper_effect=-0.5, n=5, side="below")
    assert up.verdict == down.verdict == claims.HOLDS
    assert claims.effect_decision(-0.1, -0.18, -0.02, paper_effect=0.5, n=5).verdict == \
        claims.FAILS
    with pytest.raises(ValueError, match="paper_effect"):
        claims.effect_decision(0.1, 0.0, 0.2, paper_effect=-0.5, n=5)
    with pytest.raises(ValueError, match="side"):
        claims.effect_decision(0.1, 0.0, 0.2, paper_effect=0.5, n=5, side="up")


def test_runs_to_decide_closed_form():
    # half-width 0.28 at n = 5 around mean 0.07: zero is excluded once 0.28/sqrt(n'/5) < 0.07,
    # i.e. n' = 5 * 4**2 = 80; the paper's 0.14 is as far away, so also 80
    assert claims.runs_to_decide(5, 0.07, 0.28, 0.14) == pytest.approx(80.0)
    assert claims.runs_to_decide(5, 0.0, 0.28, 0.14) == pytest.approx(5 * 2 ** 2)
    assert claims.runs_to_decide(5, 0.1, 0.0, 0.14) == float("inf")
    # an asymmetric (bootstrap) interval: only the reach towards the excluded value shrinks
    # to decide; mean 0.25 in [-0.09, 0.33]: zero lies 0.25 below, the interval reaches
    # 0.34 below -> 5 * (0.34 / 0.25)^2; the paper's 0.14 lies below too (same reach)
    assert claims.runs_to_decide(5, 0.25, 0.21, 0.14, below=0.34, above=0.08) == pytest.approx(
        min(5 * (0.34 / 0.25) ** 2, 5 * (0.34 / 0.11) ** 2))
    # mean below the paper's effect: the upper reach decides "does not hold"
    assert claims.runs_to_decide(4, 0.05, 0.1, 0.5, below=0.1, above=0.3) == pytest.approx(
        min(4 * (0.1 / 0.05) ** 2, 4 * (0.3 / 0.45) ** 2))
    # claim l: 1 - tau >= 0, its bootstrap interval [0, 0.76] ends on zero; the reach (0.29)
    # equals the distance and would project n = 17 itself: the half-width (0.38) is used
    assert claims.runs_to_decide(17, 0.2857, 0.381, 0.4, below=0.2857, above=0.4762) == \
        pytest.approx(17 * (0.381 / 0.2857) ** 2)
    d = claims.effect_decision(0.25, -0.09, 0.33, paper_effect=0.14, n=17, unit="tasks")
    assert d.verdict == claims.INCONCLUSIVE
    assert f"would decide at n ≈ {math.ceil(17 * (0.34 / 0.25) ** 2)} tasks" in d.detail
    d = claims.effect_decision(0.07, -0.21, 0.35, paper_effect=0.14, n=5, unit="tasks")
    assert "would decide at n ≈ 80 tasks" in d.detail


def test_t_effect_uses_the_student_t_interval():
    x = np.array([0.1, 0.3, -0.05, 0.2, 0.15, 0.25])
    m, s = x.mean(), x.std(ddof=1)
    half = stats.t.ppf(0.975, x.size - 1) * s / np.sqrt(x.size)
    d = claims.t_effect(x, paper_effect=0.14, unit="tasks")
    assert d.verdict == claims.HOLDS                       # m - half > 0
    assert f"[{m - half:.4g}, {m + half:.4g}]" in d.detail
    assert claims.t_effect([0.1], paper_effect=0.14).verdict == claims.INCONCLUSIVE


def test_bootstrap_interval_matches_the_normal_interval_on_a_large_sample():
    rng = np.random.default_rng(1)
    x = rng.normal(2.0, 1.0, size=400)
    value, lo, hi = claims.bootstrap_interval(list(x), lambda g: float(np.mean(g)),
                                              resamples=2000, seed=3)
    assert value == pytest.approx(x.mean())
    half = 1.96 * x.std(ddof=1) / np.sqrt(x.size)
    assert (hi - lo) / 2 == pytest.approx(half, rel=0.1)
    assert lo < value < hi
    # the same seed gives the same interval; constant groups give a zero-width one
    assert claims.bootstrap_interval(list(x), np.mean, resamples=200, seed=3) == \
        claims.bootstrap_interval(list(x), np.mean, resamples=200, seed=3)
    assert claims.bootstrap_interval([1.0, 1.0, 1.0], np.mean)[1:] == (1.0, 1.0)
    with pytest.raises(ValueError, match="groups"):
        claims.bootstrap_interval([1.0], np.mean)


def test_welch_effect_matches_the_textbook_interval():
    a = np.array([2.0, 2.5, 3.1, 1.8, 2.9])
    b = np.array([0.5, 1.2, 0.1, 0.9])
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    dof = (va + vb) ** 2 / (va ** 2 / (a.size - 1) + vb ** 2 / (b.size - 1))
    half = stats.t.ppf(0.975, dof) * np.sqrt(va + vb)
    diff = a.mean() - b.mean()
    d = claims.welch_effect(a, b, paper_effect=2.0, unit="tasks")
    assert f"[{diff - half:.4g}, {diff + half:.4g}]" in d.detail
    assert d.verdict == claims.HOLDS and "(n=9 tasks)" in d.detail
    assert claims.welch_effect(a, [1.0], paper_effect=2.0).verdict == claims.INCONCLUSIVE


def test_implementation_checks_are_listed_apart_and_not_counted(tmp_path):
    claims.write_claims([_claim("c1"), _claim("c2"), _claim("b1", FAILS)], tmp_path, "nb")
    text = claims.merge_claims(tmp_path).read_text()
    papers, impl = text.split("## Implementation checks")
    assert "0 holds, 1 does not hold, 0 inconclusive" in papers
    assert "| b1 |" in papers and "| c1 |" not in papers
    assert "| c1 |" in impl and "| c2 |" in impl and "by construction" in impl
