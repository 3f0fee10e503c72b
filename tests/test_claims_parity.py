"""Claim (g) on hand-made loss-data curves whose VA/MDL/SDL/εSC winners are known by hand."""

import math

import numpy as np
import pytest

from mdlnb.baselines import curves
from mdlnb.baselines.curves import LossDataCurve
from mdlnb.research.claims import CONSISTENT, FAILS, PASSES, SMALLER, UNDETERMINED
from mdlnb.studies.parity import parity_claims

SIZES = np.array([2, 4, 8, 16, 32, 64])
LOG2 = math.log(2)


def _curve(name, rows):
    rows = np.asarray(rows, float)
    return LossDataCurve(name, SIZES, rows, None, None, num_classes=2)


# A learns at once but stays at 0.4 nats; B is a coin until n = 16, then perfect.
QUICK = _curve("A", [[0.40] * 6, [0.41] * 6, [0.39] * 6])
LIMIT = _curve("B", [[LOG2, LOG2, LOG2, 0, 0, 0]] * 3)


def test_parity_claims_hold_on_a_clean_flip():
    g1, g2, g3 = parity_claims(QUICK, LIMIT, 0.2, at=[4, 64])
    # by hand, seed 0: VA(4) A 0.40 < B 0.69; VA(64) B 0 < A 0.40.
    # MDL(4) = 2 log 2 + 2 L(2): A 2.19 < B 2.77; MDL(64) = 2 log 2 + 62·0.40 = 26.2 for A,
    # 2 log 2 + 14 log 2 = 11.1 for B
    assert 2 * LOG2 + 2 * 0.4 < 4 * LOG2 and 16 * LOG2 < 2 * LOG2 + 62 * 0.39
    assert g1.our_value.startswith("A at n=4 → B at n=64 on 4/4 curves")
    # 3 of 3 seeds: the exact binomial interval's lower end solves p^3 = 0.025 (< ½: three
    # seeds cannot settle the direction against chance), its upper end 1 (the paper's)
    assert (g1.ci_low, g1.ci_high) == pytest.approx((0.025 ** (1 / 3), 1.0))
    assert (g1.direction, g1.size, g1.n, g1.unit) == (UNDETERMINED, CONSISTENT, 3, "seeds")
    assert "direction would settle at n ≈" in g1.our_value
    assert g2.direction == UNDETERMINED
    # SDL(ε = 0.2): A never below ε (lower bound), B tight once L = 0 ≤ ε/2 → only B is named
    assert (g3.kind, g3.direction) == ("check", PASSES)
    assert "one winner each on all 4 curves" in g3.our_value
    assert "SDL ε=0.2: undetermined (all lower bounds) → B" in g3.our_value


def test_parity_claims_fail_when_a_seed_never_learns():
    stuck = _curve("B", [[LOG2, LOG2, LOG2, 0, 0, 0]] * 2 + [[LOG2] * 6])
    g1, g2, g3 = parity_claims(QUICK, stuck, 0.2, at=[4, 64])
    assert "on 3/4 curves" in g1.our_value
    # MDL(64) of the stuck seed: 64 log 2 = 44.4 > A's 2 log 2 + 62·0.39 = 25.6
    assert g2.estimate == pytest.approx(2 / 3)
    # its SDL and εSC stay lower bounds for both: no winner named on that seed
    assert g3.direction == FAILS and "seed 2 SDL" in g3.our_value
    # 2 of 3 seeds: Clopper-Pearson [q, r] with P(X >= 2 | q) = 0.025, P(X <= 2 | r) = 0.025
    from scipy import optimize, stats

    q = optimize.brentq(lambda p: stats.binom.sf(1, 3, p) - 0.025, 1e-9, 1 - 1e-9)
    r = optimize.brentq(lambda p: stats.binom.cdf(2, 3, p) - 0.025, 1e-9, 1 - 1e-9)
    assert (g1.ci_low, g1.ci_high) == pytest.approx((q, r))
    assert (g1.direction, g1.size) == (UNDETERMINED, SMALLER)


def test_parity_claims_inconclusive_before_b_learns_and_bad_input():
    g3 = parity_claims(QUICK, LIMIT, 0.2, at=[2, 8])[2]
    assert g3.direction == FAILS and "never named a winner" in g3.our_value
    with pytest.raises(ValueError, match="at"):
        parity_claims(QUICK, LIMIT, 0.2, at=[4])
    with pytest.raises(ValueError, match="limit"):
        parity_claims(QUICK, _curve("B", [[0.1] * 6]), 0.2, at=[4, 64])
    with pytest.raises(ValueError, match="quick"):
        parity_claims("A", LIMIT, 0.2, at=[4, 64])


def _toy(alpha):
    """The notebook's setting, small: d = 6, 300 examples; (count curve of the noisy label,
    GF(2)-elimination curve of the raw bits), 3 seeds, 8 sizes."""
    raw, noisy, _ = curves.parity_tasks(6, 300, alpha=alpha, seed=0)
    pool_b, test_b = curves.split_test(raw, 0.2)
    pool_a, test_a = curves.split_test(noisy, 0.2)
    grid = curves.log_grid(pool_b.n, 8, n_min=2)
    return (
        curves.algorithm_curve(pool_a, "bernoulli", test=test_a, sizes=grid, seeds=3),
        curves.algorithm_curve(pool_b, "gf2", test=test_b, sizes=grid, seeds=3),
    )


def test_parity_claims_on_the_exact_algorithms():
    a, b = _toy(0.1)
    eps = 0.5 * curves.binary_entropy(0.1)
    got = [(c.direction, c.size) for c in parity_claims(a, b, eps, at=[3, 100])]
    assert got == [(UNDETERMINED, CONSISTENT)] * 2 + [(PASSES, "—")]  # 3 seeds: CP ≥ 0.29


def test_g3_on_a_noisy_label_whose_sdl_can_be_tight():
    """At alpha = 0.1 the count's held-out loss stays near 0.36 nats > log 2 / 2: its SDL is a
    lower bound at every ε < log 2 (Alg. 1), so g3 could only be inconclusive. At 0.05 and
    ε = 2.5 H(0.05) both SDLs are decided once B has learned s (d = 6: n ≈ 8-16)."""
    a, b = _toy(0.05)
    h = curves.binary_entropy(0.05)
    assert a.loss[:, -1].max() < 2.5 * h / 2 < LOG2 / 2  # A tight at the end
    g3 = parity_claims(a, b, 2.5 * h, at=[3, 100], floor=h)[2]
    assert g3.direction == PASSES and "one winner each on all 4 curves" in g3.our_value
    # the same toy at alpha = 0.1 and its old ε = 1.5 H: A's SDL never tight, nothing named
    a1, _ = _toy(0.1)
    h1 = curves.binary_entropy(0.1)
    g3 = parity_claims(a1, b, 1.5 * h1, at=[3, 100])[2]
    assert g3.direction == FAILS and "never named a winner" in g3.our_value


def test_g3_eps_must_exceed_twice_the_floor():
    for floor in (0.3, 0.15, 0.1):  # 0.2 nats is not above 2 x floor
        with pytest.raises(ValueError, match="eps"):
            parity_claims(QUICK, LIMIT, 0.2, at=[4, 64], floor=floor)
    g3 = parity_claims(QUICK, LIMIT, 0.2, at=[4, 64], floor=0.09)[2]
    assert "ε = 0.2 nats > twice the noisy label's floor 0.09" in g3.rule


def test_parity_result_reads_its_curves():
    """ParityResult's tables, ε and claims are those of the curves module on its curves
    (the switching reports are not needed for them)."""
    from mdlnb.studies.parity import ParityConfig, ParityResult

    config = ParityConfig(
        d=3,
        alpha=0.1,
        eps_fraction=0.5,
        g3_alpha=0.05,
        g3_eps_fraction=2.5,
        seeds=3,
        at=[4, 64, 10_000],
    )
    r = ParityResult(
        config, np.array([1, 0, 1]), 64, 16, 80, SIZES, QUICK, LIMIT, QUICK, LIMIT, None, None
    )
    h = -0.1 * math.log(0.1) - 0.9 * math.log(0.9)
    h3 = -0.05 * math.log(0.05) - 0.95 * math.log(0.95)
    assert r.h_alpha == pytest.approx(h) and r.eps.value == pytest.approx(0.5 * h)
    # without a g3 curve g3 reads curve_a at alpha
    assert r.eps_g3.value == pytest.approx(2.5 * h) and r.at == [4, 64]
    g3_quick = _curve("A'", [[0.30, 0.20, 0.12, 0.11, 0.10, 0.10]] * 3)
    r3 = ParityResult(
        config,
        np.array([1, 0, 1]),
        64,
        16,
        80,
        SIZES,
        QUICK,
        LIMIT,
        QUICK,
        LIMIT,
        None,
        None,
        g3_quick,
    )
    assert r3.h_alpha_g3 == pytest.approx(h3) and r3.eps_g3.value == pytest.approx(2.5 * h3)
    got3 = [(c.id, c.direction, c.our_value) for c in r3.claims()]
    want3 = (
        parity_claims(QUICK, LIMIT, 0.5 * h, at=[4, 64])[:2]
        + parity_claims(g3_quick, LIMIT, 2.5 * h3, at=[4, 64], floor=h3)[2:]
    )
    assert got3 == [(c.id, c.direction, c.our_value) for c in want3]
    assert r3.claims()[2].direction == PASSES
    want = curves.measure_table([QUICK, LIMIT], 0.5 * h, at=[4, 64])
    assert r.measure_table().equals(want)
    assert list(r.rankings().set_index(["measure", "n"]).loc["VA", "prefers"]) == ["A", "B"]
    assert r.claims()[2].rule == parity_claims(QUICK, LIMIT, 2.5 * h, at=[4, 64], floor=h)[2].rule
    with pytest.raises(ValueError, match="g3_eps_fraction"):
        ParityConfig(g3_alpha=0.1, g3_eps_fraction=2.5)  # log 2 / H(0.1) = 2.13
    assert "VA as n grows: A → B" in r.exact_findings()
    with pytest.raises(ValueError, match="probes"):
        r.measure_table("nope")
    with pytest.raises(ValueError, match="alpha"):
        ParityConfig(alpha=0.5)
