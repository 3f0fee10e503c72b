"""The intervals behind a verdict: an effect's 95 % interval from its units.

Each function takes a claim's units (tasks, encoders, seeds, orders), builds
one interval of the effect — Student t of a mean, Welch of a difference of
means, a percentile bootstrap of any statistic over units, Clopper–Pearson of
a share — and hands it to :func:`mdlnb.research._verdicts.effect_decision`, which
answers direction and size from it. Re-exported by :mod:`mdlnb.research.claims`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy import stats

from mdlnb.core._checks import check_int
from mdlnb.research._verdicts import (
    UNDETERMINED,
    Decision,
    _check_level,
    _finite,
    _fmt,
    effect_decision,
)


def t_interval(samples: Any, *, level: float = 0.95) -> tuple[float, float, float]:
    """(mean, lo, hi): the two-sided Student-t ``level`` interval of the mean,
    mean ± t_{(1+level)/2, n−1} · s/√n (s: sample std, ddof = 1); n ≥ 2."""
    a = _finite(samples, "samples")
    if a.size < 2:
        raise ValueError(f"samples: need at least 2 values for an interval, got {a.size}")
    _check_level(level)
    mean, sem = float(a.mean()), float(stats.sem(a))
    if sem == 0:
        return mean, mean, mean
    lo, hi = stats.t.interval(level, a.size - 1, loc=mean, scale=sem)
    return mean, float(lo), float(hi)


def _no_interval(
    n: int,
    *,
    paper_effect: float,
    side: str,
    null: float,
    unit: str,
    label: str,
    why: str,
    estimate: float = float("nan"),
) -> Decision:
    d = effect_decision(
        estimate,
        float("nan"),
        float("nan"),
        paper_effect=paper_effect,
        n=n,
        side=side,
        null=null,
        unit=unit,
        label=label,
    )
    return d._replace(detail=f"{why}: no interval")


def t_effect(
    samples: Any,
    *,
    paper_effect: float,
    side: str = "above",
    null: float = 0.0,
    level: float = 0.95,
    unit: str = "units",
) -> Decision:
    """:func:`effect_decision` on the Student-t interval of the mean of ``samples``
    (each an independent unit)."""
    a = _finite(samples, "samples")
    label = f"{level:.0%} t interval"
    if a.size < 2:
        return _no_interval(
            int(a.size),
            paper_effect=paper_effect,
            side=side,
            null=null,
            unit=unit,
            label=label,
            why=f"{a.size} {unit}",
            estimate=float(a.mean()) if a.size else float("nan"),
        )
    mean, lo, hi = t_interval(a, level=level)
    return effect_decision(
        mean,
        lo,
        hi,
        paper_effect=paper_effect,
        n=int(a.size),
        side=side,
        null=null,
        unit=unit,
        label=label,
    )


def welch_effect(
    a: Any,
    b: Any,
    *,
    paper_effect: float,
    side: str = "above",
    level: float = 0.95,
    unit: str = "units",
) -> Decision:
    """:func:`effect_decision` on mean(a) − mean(b) of two independent samples, with
    Welch's t interval (unequal variances, :func:`scipy.stats.ttest_ind`); ``n`` is
    the two samples' total size."""
    x, y = _finite(a, "a"), _finite(b, "b")
    label = f"{level:.0%} Welch interval"
    _check_level(level)
    if x.size < 2 or y.size < 2:
        return _no_interval(
            int(x.size + y.size),
            paper_effect=paper_effect,
            side=side,
            null=0.0,
            unit=unit,
            label=label,
            why=f"samples of {x.size} and {y.size} {unit}",
            estimate=float(x.mean() - y.mean()) if x.size and y.size else float("nan"),
        )
    diff = float(x.mean() - y.mean())
    if np.var(x) == 0 and np.var(y) == 0:
        lo = hi = diff
    else:
        ci = stats.ttest_ind(x, y, equal_var=False).confidence_interval(level)
        lo, hi = float(ci.low), float(ci.high)
    d = effect_decision(
        diff,
        lo,
        hi,
        paper_effect=paper_effect,
        n=int(x.size + y.size),
        side=side,
        unit=unit,
        label=label,
    )
    return d._replace(
        detail=f"{_fmt(x.mean())} (n = {x.size}) − {_fmt(y.mean())} (n = {y.size}) = " + d.detail
    )


def bootstrap_interval(
    groups: Sequence[Any],
    statistic: Callable[[list], float],
    *,
    resamples: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float]:
    """(value, lo, hi): ``statistic(groups)`` and its percentile bootstrap interval,
    resampling the ``groups`` (e.g. one table per task) with replacement,
    ``resamples`` times from ``numpy.random.default_rng(seed)``; resamples whose
    statistic is not finite are dropped."""
    groups = list(groups)
    if len(groups) < 2:
        raise ValueError(f"groups: need at least 2 to resample, got {len(groups)}")
    _check_level(level)
    rng = np.random.default_rng(seed)
    value = float(statistic(groups))
    draws = np.array(
        [
            statistic([groups[i] for i in rng.integers(0, len(groups), len(groups))])
            for _ in range(int(resamples))
        ],
        dtype=float,
    )
    draws = draws[np.isfinite(draws)]
    if draws.size == 0:
        return value, float("nan"), float("nan")
    lo, hi = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2])
    return value, float(lo), float(hi)


def bootstrap_effect(
    groups: Sequence[Any],
    statistic: Callable[[list], float],
    *,
    paper_effect: float,
    side: str = "above",
    null: float = 0.0,
    level: float = 0.95,
    unit: str = "units",
    resamples: int = 2000,
    seed: int = 0,
) -> Decision:
    """:func:`effect_decision` on the percentile bootstrap interval of
    ``statistic(groups)``, resampling the groups (:func:`bootstrap_interval`)."""
    label = f"{level:.0%} bootstrap interval"
    groups = list(groups)
    if len(groups) < 2:
        return _no_interval(
            len(groups),
            paper_effect=paper_effect,
            side=side,
            null=null,
            unit=unit,
            label=label,
            why=f"{len(groups)} {unit}",
        )
    value, lo, hi = bootstrap_interval(
        groups, statistic, level=level, resamples=resamples, seed=seed
    )
    return effect_decision(
        value,
        lo,
        hi,
        paper_effect=paper_effect,
        n=len(groups),
        side=side,
        null=null,
        unit=unit,
        label=label,
    )


def _share_settles(
    share: float, trials: int, *, null: float, level: float, most: int = 100_000
) -> float:
    """The fewest units (> ``trials``, ≤ ``most``) whose exact Clopper–Pearson interval at
    the same ``share`` (k = round(share·n)) excludes ``null``; inf if none does. The
    interval's ends in the beta-quantile form: lo = B⁻¹(α/2; k, n − k + 1), hi =
    B⁻¹(1 − α/2; k + 1, n − k)."""
    if share == null:
        return float("inf")
    n = np.arange(trials + 1, most + 1, dtype=np.float64)
    k = np.round(share * n)
    a = (1 - level) / 2
    with np.errstate(invalid="ignore"):
        lo = np.where(k > 0, stats.beta.ppf(a, np.maximum(k, 1), n - k + 1), 0.0)
        hi = np.where(k < n, stats.beta.ppf(1 - a, k + 1, np.maximum(n - k, 1)), 1.0)
    ok = np.flatnonzero((lo > null) | (hi < null))
    return float(n[ok[0]]) if ok.size else float("inf")


def share_effect(
    successes: int,
    trials: int,
    *,
    paper_effect: float = 1.0,
    null: float = 0.5,
    level: float = 0.95,
    unit: str = "units",
) -> Decision:
    """:func:`effect_decision` on a share ``successes / trials`` with its exact
    Clopper–Pearson interval (:func:`scipy.stats.binomtest`), against a ``null``
    share (default ½: no better than a coin) and the paper's share (default 1: the
    paper's statement taken as holding on every unit)."""
    trials = check_int("trials", trials, minimum=0)
    successes = check_int("successes", successes, minimum=0, maximum=trials)
    label = f"{level:.0%} Clopper–Pearson interval"
    side = "above" if paper_effect > null else "below"
    if trials == 0:
        return _no_interval(
            0,
            paper_effect=paper_effect,
            side=side,
            null=null,
            unit=unit,
            label=label,
            why=f"0 {unit}",
        )

    def interval(k: int, n: int) -> tuple[float, float]:
        ci = stats.binomtest(k, n).proportion_ci(level, method="exact")
        return float(ci.low), float(ci.high)

    share = successes / trials
    d = effect_decision(
        share,
        *interval(int(successes), int(trials)),
        paper_effect=paper_effect,
        n=int(trials),
        side=side,
        null=null,
        unit=unit,
        label=label,
    )
    detail = (
        f"{successes}/{trials} {unit}: "
        + d.detail.split("; direction would settle")[0].split("; no spread")[0]
    )
    if d.direction == UNDETERMINED:
        settle = _share_settles(share, int(trials), null=null, level=level)
        detail += (
            f"; direction would settle at n ≈ {int(settle):,} {unit}"
            if np.isfinite(settle)
            else "; no number of units settles the direction"
        )
        d = d._replace(settle_at=settle)
    return d._replace(detail=detail)
