"""Claims: two-part verdict rules against SciPy/hand computations; files and the page."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from mdlnb.research import claims
from mdlnb.research.claims import (
    CONSISTENT,
    LARGER,
    REPLICATED,
    REVERSED,
    SMALLER,
    UNDETERMINED,
    Claim,
)


def _decision(lo, hi, paper=0.14, n=10, **kw):
    return claims.effect_decision((lo + hi) / 2, lo, hi, paper_effect=paper, n=n, **kw)


# -- the two parts, each able to fail both ways ------------------------------------------------


@pytest.mark.parametrize(
    "lo, hi, direction, size",
    [
        (0.02, 0.30, REPLICATED, CONSISTENT),  # excludes 0, contains the paper's 0.14
        (0.01, 0.05, REPLICATED, SMALLER),  # excludes 0, wholly below 0.14
        (0.20, 0.40, REPLICATED, LARGER),  # wholly above 0.14
        (-0.30, -0.01, REVERSED, SMALLER),  # wholly below 0
        (-0.05, 0.10, UNDETERMINED, SMALLER),  # contains 0, excludes 0.14 from below
        (-0.10, 0.40, UNDETERMINED, CONSISTENT),  # contains both: the run told us little
    ],
)
def test_effect_decision_two_parts(lo, hi, direction, size):
    d = _decision(lo, hi, unit="tasks")
    assert (d.direction, d.size) == (direction, size)
    assert "paper 0.14" in d.detail and d.unit == "tasks" and d.n == 10
    assert (d.lo, d.hi, d.estimate) == (lo, hi, (lo + hi) / 2)
    # an undetermined direction says at how many units it would settle; a settled one does not
    assert ("would settle at n ≈" in d.detail) == (direction == UNDETERMINED)
    assert math.isnan(d.settle_at) == (direction != UNDETERMINED)


def test_rule_text_is_written_by_the_deciding_code():
    d = _decision(0.02, 0.30, label="95% bootstrap interval")
    assert d.rule == claims.rule_clause(paper_effect=0.14, label="95% bootstrap interval")
    assert d.rule.startswith(
        "95% bootstrap interval: direction replicated if it lies wholly "
        "above 0, reversed if wholly below"
    )
    assert "smaller than the paper's 0.14 if wholly below it, larger if wholly above" in d.rule
    down = claims.effect_decision(-0.2, -0.3, -0.1, paper_effect=-0.5, n=4, side="below")
    assert "replicated if it lies wholly below 0" in down.rule
    assert "smaller than the paper's -0.5 if wholly above it" in down.rule
    c = Claim.decided("x1", "s", "Fig. 1", "0.14", "per task, a statistic", d, effect="e")
    assert c.rule == "per task, a statistic; " + d.rule
    assert (c.direction, c.size, c.estimate, c.ci_low, c.ci_high, c.paper_effect, c.n) == (
        REPLICATED,
        CONSISTENT,
        d.estimate,
        0.02,
        0.30,
        0.14,
        10,
    )


def test_below_mirrors_above_and_a_null_shifts_both():
    up = claims.effect_decision(0.1, 0.02, 0.18, paper_effect=0.5, n=5)
    down = claims.effect_decision(-0.1, -0.18, -0.02, paper_effect=-0.5, n=5, side="below")
    assert (up.direction, up.size) == (down.direction, down.size) == (REPLICATED, SMALLER)
    # an effect larger in magnitude than a negative paper effect is 'larger'
    big = claims.effect_decision(-0.9, -1.0, -0.8, paper_effect=-0.5, n=5, side="below")
    assert big.size == LARGER
    assert claims.effect_decision(-0.1, -0.18, -0.02, paper_effect=0.5, n=5).direction == REVERSED
    # the same interval against a null of 0.5 (a share against chance)
    s = claims.effect_decision(0.7, 0.55, 0.85, paper_effect=1.0, n=20, null=0.5)
    assert (s.direction, s.size) == (REPLICATED, SMALLER)
    assert s.standardized == pytest.approx((0.4, 0.1, 0.7))
    with pytest.raises(ValueError, match="paper_effect"):
        claims.effect_decision(0.1, 0.0, 0.2, paper_effect=-0.5, n=5)
    with pytest.raises(ValueError, match="side"):
        claims.effect_decision(0.1, 0.0, 0.2, paper_effect=0.5, n=5, side="up")
    with pytest.raises(ValueError, match="n:"):
        claims.effect_decision(0.1, 0.0, 0.2, paper_effect=0.5, n=-1)


def test_effect_decision_does_not_rest_on_rounding():
    """1 − τ of two equal orders comes out as 1.1e-16, not 0: an interval starting there
    does not exclude zero."""
    tiny = 1.1102230246251565e-16  # 1.0 - 0.9999999999999999
    d = claims.effect_decision(tiny, tiny, 0.862, paper_effect=0.4, n=5, unit="tasks")
    assert d.direction == UNDETERMINED and d.size == CONSISTENT
    assert claims.effect_decision(0.01, 1e-9, 0.862, paper_effect=0.4, n=5).direction == REPLICATED


def test_no_interval_is_undetermined_both_ways():
    d = claims.effect_decision(0.2, float("nan"), float("nan"), paper_effect=0.5, n=1)
    assert (d.direction, d.size) == (UNDETERMINED, UNDETERMINED)
    assert claims.t_effect([0.1], paper_effect=0.14).direction == UNDETERMINED
    assert "1 units: no interval" in claims.t_effect([0.1], paper_effect=0.14).detail
    assert claims.welch_effect([1.0, 2.0], [1.0], paper_effect=2.0).size == UNDETERMINED
    assert claims.bootstrap_effect([1.0], np.mean, paper_effect=1.0).size == UNDETERMINED


def test_runs_to_decide_closed_form():
    # half-width 0.28 at n = 5 around mean 0.07: zero is excluded once 0.28/sqrt(n'/5) < 0.07,
    # i.e. n' = 5 * 4**2 = 80; the paper's 0.14 is as far away, so also 80
    assert claims.runs_to_decide(5, 0.07, 0.28, 0.14) == pytest.approx(80.0)
    assert claims.runs_to_decide(5, 0.0, 0.28, 0.14) == pytest.approx(5 * 2**2)
    assert claims.runs_to_decide(5, 0.1, 0.0, 0.14) == float("inf")
    # an asymmetric (bootstrap) interval: only the reach towards the excluded value counts
    assert claims.runs_to_decide(5, 0.25, 0.21, 0.14, below=0.34, above=0.08) == pytest.approx(
        min(5 * (0.34 / 0.25) ** 2, 5 * (0.34 / 0.11) ** 2)
    )
    # 1 − τ ≥ 0 with its bootstrap interval [0, 0.76] ending on zero: the reach equals the
    # distance and would project n itself, so the half-width is used
    assert claims.runs_to_decide(
        17, 0.2857, 0.381, 0.4, below=0.2857, above=0.4762
    ) == pytest.approx(17 * (0.381 / 0.2857) ** 2)
    # a null other than zero
    assert claims.runs_to_decide(10, 0.7, 0.3, None, null=0.5) == pytest.approx(10 * 1.5**2)
    # the direction's settling size in a decision: against the null alone
    d = claims.effect_decision(0.25, -0.09, 0.33, paper_effect=0.14, n=17, unit="tasks")
    assert d.settle_at == pytest.approx(17 * (0.34 / 0.25) ** 2)
    assert f"direction would settle at n ≈ {math.ceil(17 * (0.34 / 0.25) ** 2)} tasks" in d.detail


# -- the intervals, against textbook formulas --------------------------------------------------


def test_t_interval_by_hand():
    x = np.array([1.0, 2.0, 4.0, 7.0])
    mean, lo, hi = claims.t_interval(x, level=0.9)
    s = math.sqrt(((x - x.mean()) ** 2).sum() / 3)
    half = 2.3533634348018264 * s / 2  # t_{0.95, 3} (table value) · s/√4
    assert mean == pytest.approx(3.5)
    assert (lo, hi) == pytest.approx((3.5 - half, 3.5 + half), rel=1e-9)
    with pytest.raises(ValueError, match="samples"):
        claims.t_interval([1.0])


def test_t_effect_uses_the_student_t_interval():
    x = np.array([0.1, 0.3, -0.05, 0.2, 0.15, 0.25])
    m, s = x.mean(), x.std(ddof=1)
    half = stats.t.ppf(0.975, x.size - 1) * s / np.sqrt(x.size)
    d = claims.t_effect(x, paper_effect=0.14, unit="tasks")
    assert (d.direction, d.size) == (REPLICATED, CONSISTENT)  # m - half > 0
    assert (d.lo, d.hi) == pytest.approx((m - half, m + half))
    with pytest.raises(ValueError, match="samples"):
        claims.t_effect([np.nan, 1.0], paper_effect=0.14)


def test_bootstrap_interval_matches_the_normal_interval_on_a_large_sample():
    rng = np.random.default_rng(1)
    x = rng.normal(2.0, 1.0, size=400)
    value, lo, hi = claims.bootstrap_interval(
        list(x), lambda g: float(np.mean(g)), resamples=2000, seed=3
    )
    assert value == pytest.approx(x.mean())
    half = 1.96 * x.std(ddof=1) / np.sqrt(x.size)
    assert (hi - lo) / 2 == pytest.approx(half, rel=0.1)
    assert claims.bootstrap_interval(
        list(x), np.mean, resamples=200, seed=3
    ) == claims.bootstrap_interval(list(x), np.mean, resamples=200, seed=3)
    assert claims.bootstrap_interval([1.0, 1.0, 1.0], np.mean)[1:] == (1.0, 1.0)
    d = claims.bootstrap_effect(list(x), np.mean, paper_effect=1.0, resamples=500)
    assert (d.direction, d.size, d.n) == (REPLICATED, LARGER, 400)
    with pytest.raises(ValueError, match="groups"):
        claims.bootstrap_interval([1.0], np.mean)


def test_welch_effect_matches_the_textbook_interval():
    a = np.array([2.0, 2.5, 3.1, 1.8, 2.9])
    b = np.array([0.5, 1.2, 0.1, 0.9])
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    dof = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
    half = stats.t.ppf(0.975, dof) * np.sqrt(va + vb)
    diff = a.mean() - b.mean()
    d = claims.welch_effect(a, b, paper_effect=2.0, unit="tasks")
    assert (d.lo, d.hi) == pytest.approx((diff - half, diff + half))
    assert (d.direction, d.size, d.n) == (REPLICATED, CONSISTENT, 9)


def test_share_effect_is_the_exact_clopper_pearson_interval():
    # 8 of 8: the exact lower end is 0.025^(1/8) (the upper end is 1)
    d = claims.share_effect(8, 8, unit="seeds")
    assert d.lo == pytest.approx(0.025 ** (1 / 8)) and d.hi == 1.0
    assert (d.direction, d.size) == (REPLICATED, CONSISTENT)
    # 4 of 8 against ½: undetermined, and smaller than 'every seed' (its hi < 1)
    d = claims.share_effect(4, 8)
    lo = stats.beta.ppf(0.025, 4, 5)
    hi = stats.beta.ppf(0.975, 5, 4)
    assert (d.lo, d.hi) == pytest.approx((lo, hi))
    assert (d.direction, d.size) == (UNDETERMINED, SMALLER)
    assert claims.share_effect(0, 8).direction == REVERSED
    # 3 of 3 cannot exclude ½ (0.025^(1/3) = 0.29); all of n excludes it once 0.025^(1/n) > ½,
    # i.e. from n = 6 (0.025^(1/5) = 0.478, 0.025^(1/6) = 0.541)
    three = claims.share_effect(3, 3, unit="seeds")
    assert three.direction == UNDETERMINED and three.settle_at == 6
    assert "direction would settle at n ≈ 6 seeds" in three.detail
    assert claims.share_effect(4, 8).settle_at == float("inf")  # a share of ½ never does
    with pytest.raises(ValueError, match="successes"):
        claims.share_effect(9, 8)


# -- records, files, the page ------------------------------------------------------------------


def _claim(i, lo=0.02, hi=0.30):
    return Claim.decided(
        i,
        "a statement, with a comma",
        "Fig. 5",
        "0.14",
        "a statistic",
        _decision(lo, hi),
        effect=f"effect of {i}",
    )


def test_claim_validates():
    c = _claim("a")
    with pytest.raises(ValueError, match="direction"):
        Claim("a", "s", "Fig. 5", "", "1", "rule", "holds", CONSISTENT)
    with pytest.raises(ValueError, match="size"):
        Claim("a", "s", "Fig. 5", "", "1", "rule", REPLICATED, "passes")
    with pytest.raises(ValueError, match="statement"):
        Claim("a", "", "Fig. 5", "", "1", "rule", REPLICATED, CONSISTENT)
    with pytest.raises(ValueError, match="kind"):
        Claim("a", "s", "Fig. 5", "", "1", "rule", REPLICATED, CONSISTENT, kind="test")
    with pytest.raises(ValueError, match="decision"):
        Claim.decided("a", "s", "F", "", "r", (REPLICATED, CONSISTENT))
    k = Claim.checked("c1", "s", "A.1", "bound", "ratio < 1", passed=False, detail="1.2")
    assert (k.kind, k.direction, k.size, k.our_value) == ("check", claims.FAILS, "—", "1.2")
    assert c.our_value == _decision(0.02, 0.30).detail


def test_describe():
    c = _claim("b")
    k = Claim.checked("c1", "It is bounded.", "A.1", "", "ratio < 1", passed=True, detail="0.3")
    lines = claims.describe([c, k]).splitlines()
    assert lines[0] == (
        "(b) direction replicated, size consistent with the paper's: a statement, with a comma"
    )
    assert lines[3] == "(c1) implementation check passes: It is bounded."


def test_write_read_and_merge(tmp_path):
    claims.write_claims([_claim("c"), _claim("b", -0.3, -0.01)], tmp_path, "nb_two")
    claims.write_claims([_claim("a", -0.1, 0.4)], tmp_path, "nb_one")
    claims.write_setting([("tasks", "19 VTAB tasks", "17 embedded tasks")], tmp_path, "nb_one")
    df = pd.read_csv(tmp_path / "claims" / "nb_two.csv")
    assert list(df.columns) == list(claims.COLUMNS) and list(df["id"]) == ["c", "b"]
    back = claims.read_claims(tmp_path)
    assert list(back["id"]) == ["a", "b", "c"]
    assert back.loc[2, "ci_low"] == 0.02 and back.loc[2, "n"] == 10  # numbers round-trip
    assert claims.main([str(tmp_path)]) == 0
    text = (tmp_path / "claims.md").read_text()
    assert (
        "**Direction** (3 claims): 1 replicated, 1 reversed, 1 undetermined. **Size** "
        "against the paper's effect: 1 smaller, 2 consistent, 0 larger."
    ) in text
    assert "| nb_one | tasks | 19 VTAB tasks | 17 embedded tasks |" in text
    assert "claims_forest.png" in text and (tmp_path / "claims_forest.png").stat().st_size > 0
    assert "n ≈ " in text  # a's direction is undetermined: where it settles
    first = (text, (tmp_path / "claims_forest.png").read_bytes())
    claims.merge_claims(tmp_path)
    assert (
        (tmp_path / "claims.md").read_text(),
        (tmp_path / "claims_forest.png").read_bytes(),
    ) == first  # deterministic
    with pytest.raises(ValueError, match="ids"):
        claims.write_claims([_claim("a"), _claim("a")], tmp_path, "dup")
    with pytest.raises(ValueError, match="rows"):
        claims.write_setting([("tasks", "", "x")], tmp_path, "nb")


def test_implementation_checks_are_listed_apart_and_not_counted(tmp_path):
    checks = [
        Claim.checked(i, "holds by construction", "A.1", "", "ratio < 1", passed=True, detail="0.2")
        for i in ("c1", "c2")
    ]
    claims.write_claims(checks + [_claim("b1", -0.3, -0.01)], tmp_path, "nb")
    text = claims.merge_claims(tmp_path).read_text()
    papers, impl = text.split("## Implementation checks")
    assert "**Direction** (1 claims): 0 replicated, 1 reversed" in papers
    assert "| b1 |" in papers and "| c1 |" not in papers
    assert "| c1 |" in impl and "| c2 |" in impl and "by construction" in impl
    assert "| passes |" in impl
