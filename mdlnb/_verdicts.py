"""The verdict rules of :mod:`mdlnb.claims`: each turns measured values into a
:class:`Decision` (a verdict of :data:`VERDICTS` and the numbers behind it) — a
sign on every unit, t / Welch / bootstrap intervals against zero and the paper's
effect (three-way: holds, does not hold, inconclusive), one-sided paired and
rank-sum tests, and their conjunction. Re-exported by :mod:`mdlnb.claims`."""

from __future__ import annotations

import math
from typing import Any, NamedTuple, Sequence

import numpy as np

# Imported inside the functions that use them, so that importing this module does not load
# them: SciPy.

HOLDS, FAILS, INCONCLUSIVE = "holds", "does not hold", "inconclusive"
VERDICTS = (HOLDS, FAILS, INCONCLUSIVE)


class Decision(NamedTuple):
    """A rule's outcome: ``verdict`` in :data:`VERDICTS` and ``detail``, the
    numbers that decided it as text (goes into the claim's ``our_value``)."""

    verdict: str
    detail: str


def _finite(values: Any, name: str) -> np.ndarray:
    a = np.asarray(values, dtype=np.float64).reshape(-1)
    if a.size and not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: must be finite, got {a}")
    return a


def _fmt(v: float) -> str:
    return f"{v:.4g}"


def sign_on_every(values: Any, *, sign: str = "negative") -> Decision:
    """Holds if every value is strictly ``sign`` (``"negative"``/``"positive"``) and
    the 95 % Student-t interval of their mean (:func:`t_interval`, the values taken
    as independent units) excludes zero on that side.

    Does not hold if any value has the wrong sign (or is 0). Inconclusive for no
    values, for a single value (no interval), and when every sign is right but
    the interval still reaches zero — then the detail says at how many units the
    same mean and spread would exclude it (:func:`runs_to_decide`)."""
    if sign not in ("negative", "positive"):
        raise ValueError(f"sign: must be 'negative' or 'positive', got {sign!r}")
    a = _finite(values, "values")
    if a.size == 0:
        return Decision(INCONCLUSIVE, "no values")
    ok = a < 0 if sign == "negative" else a > 0
    detail = f"{int(ok.sum())}/{a.size} {sign}; range [{_fmt(a.min())}, {_fmt(a.max())}]"
    if not ok.all():
        return Decision(FAILS, detail)
    if a.size < 2:
        return Decision(INCONCLUSIVE, detail + "; one unit: no interval")
    mean, lo, hi = t_interval(a)
    detail += f"; mean {_fmt(mean)}, 95% t interval [{_fmt(lo)}, {_fmt(hi)}] (n={a.size})"
    if (hi < 0) if sign == "negative" else (lo > 0):
        return Decision(HOLDS, detail)
    need = runs_to_decide(a.size, mean, (hi - lo) / 2, None)
    return Decision(INCONCLUSIVE, detail + f"; the interval reaches 0: would decide at "
                                           f"n ≈ {math.ceil(need):,}")


def t_interval(samples: Any, *, level: float = 0.95) -> tuple[float, float, float]:
    """(mean, lo, hi): the two-sided Student-t ``level`` interval of the mean,
    mean ± t_{(1+level)/2, n−1} · s/√n (s: sample std, ddof = 1); n ≥ 2."""
    from scipy import stats

    a = _finite(samples, "samples")
    if a.size < 2:
        raise ValueError(f"samples: need at least 2 values for an interval, got {a.size}")
    if not 0 < level < 1:
        raise ValueError(f"level: must lie in (0, 1), got {level!r}")
    mean, sem = float(a.mean()), float(stats.sem(a))
    if sem == 0:
        return mean, mean, mean
    lo, hi = stats.t.interval(level, a.size - 1, loc=mean, scale=sem)
    return mean, float(lo), float(hi)


def interval_excludes(samples: Any, value: float, *, level: float = 0.95,
                      side: str = "below") -> Decision:
    """Is the mean of ``samples`` (seeds/orders) ``side`` of ``value``?

    Holds if the whole ``level`` t-interval (:func:`t_interval`) lies strictly
    ``side`` (``"below"``/``"above"``) of ``value``; does not hold if it lies
    strictly on the other side; inconclusive if it contains ``value`` or there
    are fewer than 2 samples."""
    if side not in ("below", "above"):
        raise ValueError(f"side: must be 'below' or 'above', got {side!r}")
    a = _finite(samples, "samples")
    if a.size < 2:
        return Decision(INCONCLUSIVE, f"{a.size} sample(s): no interval")
    mean, lo, hi = t_interval(a, level=level)
    return interval_side(mean, lo, hi, value, side=side,
                         label=f"{level:.0%} CI", suffix=f" (n={a.size})")


def interval_side(mean: float, lo: float, hi: float, value: float, *, side: str = "below",
                  label: str = "95% CI", suffix: str = "") -> Decision:
    """The verdict of an interval ``[lo, hi]`` computed elsewhere (e.g. a study's
    own spread formula): holds if it lies strictly ``side`` (``"below"``/``"above"``)
    of ``value``, does not hold if strictly on the other side, inconclusive if it
    contains ``value`` or is not finite (NaN: no spread could be computed)."""
    if side not in ("below", "above"):
        raise ValueError(f"side: must be 'below' or 'above', got {side!r}")
    detail = f"mean {_fmt(mean)}, {label} [{_fmt(lo)}, {_fmt(hi)}]{suffix}"
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return Decision(INCONCLUSIVE, detail)
    below, above = hi < value, lo > value
    if side == "below":
        return Decision(HOLDS if below else FAILS if above else INCONCLUSIVE, detail)
    return Decision(HOLDS if above else FAILS if below else INCONCLUSIVE, detail)


def _check_one_sided(alternative: str, alpha: float) -> str:
    """Validate a one-sided test's ``alternative`` and ``alpha``; returns the opposite side."""
    if alternative not in ("less", "greater"):
        raise ValueError(f"alternative: must be 'less' or 'greater', got {alternative!r}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha: must lie in (0, 1), got {alpha!r}")
    return "greater" if alternative == "less" else "less"


def _one_sided_verdict(p_claim: float, p_other: float, alpha: float) -> str:
    """Holds if the claimed direction's p < alpha, does not hold if the opposite's is."""
    return HOLDS if p_claim < alpha else FAILS if p_other < alpha else INCONCLUSIVE


def paired_test(a: Any, b: Any, *, alternative: str = "less", alpha: float = 0.05,
                method: str = "wilcoxon") -> Decision:
    """One-sided paired test of ``a < b`` (``alternative="less"``) or ``a > b``.

    ``method="wilcoxon"``: :func:`scipy.stats.wilcoxon` on a − b (exact for
    small n without ties); ``"sign"``: the exact sign test, a binomial test of
    the count of positive differences (zeros dropped). Holds if the p-value of
    the claimed direction is < ``alpha``; does not hold if that of the
    opposite direction is; inconclusive otherwise."""
    from scipy import stats

    other = _check_one_sided(alternative, alpha)
    if method not in ("wilcoxon", "sign"):
        raise ValueError(f"method: must be 'wilcoxon' or 'sign', got {method!r}")
    x, y = _finite(a, "a"), _finite(b, "b")
    if x.shape != y.shape:
        raise ValueError(f"b: must have the shape of a, {x.shape}, got {y.shape}")
    d = x - y
    nz = d[d != 0]
    if nz.size == 0:
        return Decision(INCONCLUSIVE, f"all {d.size} differences are 0")

    def p(alt: str) -> float:
        if method == "wilcoxon":
            return float(stats.wilcoxon(nz, alternative=alt).pvalue)
        k = int((nz > 0).sum())
        return float(stats.binomtest(k, nz.size, 0.5, alternative=alt).pvalue)

    p_claim, p_other = p(alternative), p(other)
    detail = (f"median a−b {_fmt(float(np.median(d)))}, {method} one-sided p={p_claim:.3g} "
              f"(n={d.size})")
    return Decision(_one_sided_verdict(p_claim, p_other, alpha), detail)


def rank_sum_test(a: Any, b: Any, *, alternative: str = "greater", alpha: float = 0.05
                  ) -> Decision:
    """One-sided Mann–Whitney U (Wilcoxon rank-sum) test of two independent
    samples: ``a`` tends to be larger than ``b`` (``alternative="greater"``) or
    smaller (``"less"``), :func:`scipy.stats.mannwhitneyu` (exact without ties
    for small samples, else the normal approximation with tie correction).
    Holds if the claimed direction's p < ``alpha``; does not hold if the
    opposite direction's is; inconclusive otherwise or with an empty sample."""
    from scipy import stats

    other = _check_one_sided(alternative, alpha)
    x, y = _finite(a, "a"), _finite(b, "b")
    if x.size == 0 or y.size == 0:
        return Decision(INCONCLUSIVE, f"empty sample (n_a={x.size}, n_b={y.size})")
    p_claim = float(stats.mannwhitneyu(x, y, alternative=alternative).pvalue)
    p_other = float(stats.mannwhitneyu(x, y, alternative=other).pvalue)
    detail = (f"median a {_fmt(float(np.median(x)))} (n={x.size}) vs b "
              f"{_fmt(float(np.median(y)))} (n={y.size}), Mann–Whitney one-sided p={p_claim:.3g}")
    return Decision(_one_sided_verdict(p_claim, p_other, alpha), detail)


def runs_to_decide(n: int, mean: float, half_width: float, paper_effect: float | None, *,
                   below: float | None = None, above: float | None = None) -> float:
    """Sample size (in the units of ``n``) at which a 95 % interval of the same mean
    and spread would be decided: half-width ∝ 1/√n, so it excludes zero at
    n·(h/|mean|)² and the paper's effect at n·(h/|effect − mean|)²; the smaller
    of the two (inf when neither can move: zero spread, or the mean sits on both).
    ``paper_effect`` None: a qualitative claim, decided against zero alone.

    ``below``, ``above``: the interval's reach below and above ``mean`` where it is
    not symmetric (a percentile bootstrap); h is then the reach on the side that
    faces the value to exclude (default: ``half_width`` on both sides); where that reach
    ends exactly on the value (a percentile interval of a bounded statistic, such as
    1 − τ ≥ 0, at its bound) the projection would be n itself, and the half-width is
    used instead."""
    below = half_width if below is None else below
    above = half_width if above is None else above
    needs = []
    for v in (0.0, paper_effect):
        if v is None or mean == v:
            continue
        reach = below if mean > v else above
        # an interval that ends exactly on v (a bounded statistic's percentile interval at its
        # bound) projects n itself, where nothing is decided: use the half-width there
        if math.isclose(reach, abs(mean - v), rel_tol=1e-9, abs_tol=1e-12):
            reach = half_width
        needs.append(n * (reach / abs(mean - v)) ** 2)
    return (float(min(needs)) if needs and min(below, above) > 0 else float("inf"))


#: Interval ends this close to zero (relative to the paper's effect, at least 1) count
#: as zero in :func:`effect_decision`: "excludes zero" must not rest on float rounding.
ROUNDING = 1e-12


def effect_decision(mean: float, lo: float, hi: float, *, paper_effect: float, n: int,
                    side: str = "above", unit: str = "units", label: str = "95% CI"
                    ) -> Decision:
    """The three-way verdict of an effect's interval against zero and the paper's effect.

    ``side="above"``: the claim is an effect > 0 (the paper measured
    ``paper_effect`` > 0); ``"below"``: an effect < 0. Holds if ``[lo, hi]``
    excludes zero on the claimed side; does not hold if it lies on the other
    side of zero, or excludes the paper's effect (the effect, if any, is
    smaller than the paper's); inconclusive if it contains both zero and the
    paper's effect — then the detail says at how many ``unit`` the same mean
    and spread would decide (:func:`runs_to_decide`)."""
    if side not in ("below", "above"):
        raise ValueError(f"side: must be 'below' or 'above', got {side!r}")
    s = 1.0 if side == "above" else -1.0
    if not s * paper_effect > 0:
        raise ValueError(f"paper_effect: must lie on the claimed side ({side}) of 0, "
                         f"got {paper_effect!r}")
    detail = (f"mean {_fmt(mean)}, {label} [{_fmt(lo)}, {_fmt(hi)}] (n={n} {unit}); "
              f"paper {_fmt(paper_effect)}")
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return Decision(INCONCLUSIVE, detail + "; no interval")
    a, b = sorted((s * lo, s * hi))          # the interval in the claimed direction
    # an end within rounding of zero (e.g. 1 − τ = 1.1e-16 for τ = 1) is zero
    a, b = (0.0 if abs(v) <= ROUNDING * max(1.0, abs(paper_effect)) else v for v in (a, b))
    effect = s * paper_effect
    if a > 0:
        return Decision(HOLDS, detail + ("; smaller than the paper's" if b < effect else ""))
    if b < 0:
        return Decision(FAILS, detail + "; the opposite sign")
    if b < effect:
        return Decision(FAILS, detail + "; excludes the paper's effect")
    need = runs_to_decide(n, mean, (hi - lo) / 2, paper_effect, below=max(mean - lo, 0.0),
                          above=max(hi - mean, 0.0))
    return Decision(INCONCLUSIVE, detail + (f"; would decide at n ≈ {math.ceil(need):,} {unit}"
                                            if np.isfinite(need) else "; cannot decide"))


def t_effect(samples: Any, *, paper_effect: float, side: str = "above", level: float = 0.95,
             unit: str = "units") -> Decision:
    """:func:`effect_decision` on the Student-t interval of the mean of ``samples``."""
    a = _finite(samples, "samples")
    if a.size < 2:
        return Decision(INCONCLUSIVE, f"{a.size} sample(s): no interval")
    mean, lo, hi = t_interval(a, level=level)
    return effect_decision(mean, lo, hi, paper_effect=paper_effect, n=a.size, side=side,
                           unit=unit, label=f"{level:.0%} CI")


def welch_effect(a: Any, b: Any, *, paper_effect: float, side: str = "above",
                 level: float = 0.95, unit: str = "units") -> Decision:
    """:func:`effect_decision` on mean(a) − mean(b) of two independent samples, with
    Welch's t interval (unequal variances, :func:`scipy.stats.ttest_ind`);
    ``n`` is the two samples' total size."""
    from scipy import stats

    x, y = _finite(a, "a"), _finite(b, "b")
    if x.size < 2 or y.size < 2:
        return Decision(INCONCLUSIVE, f"samples of {x.size} and {y.size}: no interval")
    diff = float(x.mean() - y.mean())
    if np.var(x) == 0 and np.var(y) == 0:
        lo = hi = diff
    else:
        ci = stats.ttest_ind(x, y, equal_var=False).confidence_interval(level)
        lo, hi = float(ci.low), float(ci.high)
    d = effect_decision(diff, lo, hi, paper_effect=paper_effect, n=x.size + y.size, side=side,
                        unit=unit, label=f"{level:.0%} Welch CI")
    return Decision(d.verdict, f"{_fmt(x.mean())} (n={x.size}) − {_fmt(y.mean())} "
                               f"(n={y.size}): " + d.detail)


def bootstrap_interval(groups: Sequence[Any], statistic: Any, *, resamples: int = 2000,
                       level: float = 0.95, seed: int = 0) -> tuple[float, float, float]:
    """(value, lo, hi): ``statistic(groups)`` and its percentile bootstrap interval,
    resampling the ``groups`` (e.g. one table per task) with replacement,
    ``resamples`` times from ``numpy.random.default_rng(seed)``; resamples whose
    statistic is not finite are dropped."""
    groups = list(groups)
    if len(groups) < 2:
        raise ValueError(f"groups: need at least 2 to resample, got {len(groups)}")
    if not 0 < level < 1:
        raise ValueError(f"level: must lie in (0, 1), got {level!r}")
    rng = np.random.default_rng(seed)
    value = float(statistic(groups))
    stats_ = np.array([statistic([groups[i] for i in rng.integers(0, len(groups), len(groups))])
                       for _ in range(int(resamples))], dtype=float)
    stats_ = stats_[np.isfinite(stats_)]
    if stats_.size == 0:
        return value, float("nan"), float("nan")
    lo, hi = np.quantile(stats_, [(1 - level) / 2, (1 + level) / 2])
    return value, float(lo), float(hi)


def all_of(decisions: Sequence[Decision], *, labels: Sequence[str] | None = None) -> Decision:
    """Conjunction of several decisions (e.g. one per N/K or per comparison):
    holds if every one holds, does not hold if any does not, inconclusive
    otherwise (and for none). ``labels`` prefix each part's detail."""
    decisions = list(decisions)
    if not all(isinstance(d, Decision) for d in decisions):
        raise ValueError("decisions: expected Decision objects")
    if labels is not None and len(labels) != len(decisions):
        raise ValueError(f"labels: need {len(decisions)} labels, got {len(labels)}")
    if not decisions:
        return Decision(INCONCLUSIVE, "nothing to decide")
    parts = [f"{lab}: {d.detail} → {d.verdict}" if labels is not None else d.detail
             for lab, d in zip(labels or [None] * len(decisions), decisions)]
    verdicts = [d.verdict for d in decisions]
    verdict = (HOLDS if all(v == HOLDS for v in verdicts) else
               FAILS if FAILS in verdicts else INCONCLUSIVE)
    return Decision(verdict, "; ".join(parts))
