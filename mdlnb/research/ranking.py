"""Rank statistics for comparing methods over datasets (Demšar 2006).

* :func:`average_ranks` — rank the methods within each dataset (1 = best,
  ties get the average of the ranks they span) and average over datasets.
* :func:`friedman` — χ²_F = 12N/(k(k+1)) [Σ_j R_j² − k(k+1)²/4] on k − 1
  degrees of freedom, and the Iman–Davenport
  F_F = (N − 1) χ²_F / (N(k − 1) − χ²_F) on (k − 1, (k − 1)(N − 1)).
  ``tie_correction=True`` divides χ²_F by 1 − Σ(t³ − t)/(N k (k² − 1)), as
  ``scipy.stats.friedmanchisquare`` does; Demšar's formula has no correction.
* :func:`nemenyi_cd` — CD = q_α √(k(k+1)/(6N)) with
  q_α = ``studentized_range.ppf(1 − α, k, ∞) / √2`` for the *actual* number
  of methods k; :func:`plot_cd` draws the critical-difference diagram
  (Orange's version is gone from recent releases).
* :func:`kendall_tau`, :func:`weighted_tau` (scipy), :func:`rank_product`
  (the joint rank of CLID Sec. 3.5: geometric mean of the ranks).

The readout-switching paper's thresholds
-----------------------------------------
Sec. 4 (Table 1a and Fig. 6) states that average ranks of r = 6
representations over N = 19 VTAB datasets differ significantly at
γ = 0.1 above q_0.1 √(r(r+1)/6N) = 1.894 "where q_0.1 = 3.12"; Table 1b and
Fig. 8 give 3.65 for r = 12, N = 19; Table 2 and Fig. 7 give 3.12, 2.92 and
4.13 for the natural (N = 7), specialized (N = 4) and structured (N = 8)
groups, r = 6. All five thresholds follow from the single constant q = 3.12
(3.12·√(42/114) = 1.894, 3.12·√(156/114) = 3.65, 3.12·√(42/42) = 3.12,
3.12·√(42/48) = 2.92, 3.12·√(42/24) = 4.13), so the last two are listed in
swapped order: 2.92 belongs to structured (N = 8) and 4.13 to specialized
(N = 4). The constant is not the Nemenyi q for these k: q_0.10 is 2.589 for
k = 6 and 3.030 for k = 12 (q_0.05: 2.850 and 3.268); 3.12 lies between
Demšar's q_0.05 for k = 9 (3.102) and k = 10 (3.164). The correct CDs at
α = 0.10 are 1.571 (not 1.894) and 3.544 (not 3.65), and 2.589 / 3.424 /
2.421 for the natural / specialized / structured groups. The paper's
thresholds are therefore conservative for r = 6 (by 21%) and slightly for
r = 12 (3%). :func:`cd_thresholds_report` tabulates both.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from mdlnb.core._checks import as_array, check_finite, check_int, check_nonempty, check_same_length

# Imported inside the functions that use them, so that importing this module does not load
# them: matplotlib.

__all__ = [
    "FriedmanResult",
    "rank_table",
    "average_ranks",
    "friedman",
    "friedman_from_ranks",
    "nemenyi_q",
    "nemenyi_cd",
    "cd_cliques",
    "plot_cd",
    "kendall_tau",
    "weighted_tau",
    "rank_product",
    "cd_thresholds_report",
]


# ----------------------------------------------------------------------------
# average ranks


def _scores_frame(scores: Any, name: str = "scores") -> pd.DataFrame:
    if isinstance(scores, pd.DataFrame):
        df = scores
    else:
        df = pd.DataFrame(as_array(scores, name, ndim=2))
    if df.shape[0] < 1 or df.shape[1] < 2:
        raise ValueError(
            f"{name}: need >= 1 dataset (rows) and >= 2 methods (columns), got shape {df.shape}"
        )
    if any(np.issubdtype(d, np.complexfloating) for d in df.dtypes):
        raise ValueError(f"{name}: entries must be real numbers, got a complex dtype")
    try:
        values = df.to_numpy(dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: entries must be numeric") from None
    check_finite(values, name)
    if df.columns.has_duplicates:
        raise ValueError(f"{name}: duplicate method (column) names")
    return df


def rank_table(scores: Any, *, higher_is_better: bool = True) -> pd.DataFrame:
    """Per-dataset ranks of ``scores`` (datasets × methods): 1 = best, ties
    averaged."""
    df = _scores_frame(scores)
    return df.rank(axis=1, method="average", ascending=not higher_is_better)


def average_ranks(scores: Any, *, higher_is_better: bool = True) -> pd.Series:
    """Average rank of each method over the datasets (rows); lower = better.
    ``scores`` is a datasets × methods DataFrame (or 2-D array)."""
    return rank_table(scores, higher_is_better=higher_is_better).mean(axis=0).rename("average_rank")


# ----------------------------------------------------------------------------
# Friedman and Iman–Davenport


@dataclasses.dataclass(frozen=True)
class FriedmanResult:
    """Friedman χ²_F with its p-value, and the Iman–Davenport F_F with its."""

    statistic: float
    pvalue: float
    iman_davenport: float
    iman_davenport_pvalue: float
    n_datasets: int
    n_methods: int


def _friedman(chi2: float, n: int, k: int) -> FriedmanResult:
    p = float(stats.chi2.sf(chi2, k - 1))
    denom = n * (k - 1) - chi2
    if denom <= 1e-12 * n * (k - 1):  # every dataset ranks the methods alike
        ff, pf = math.inf, 0.0
    else:
        ff = (n - 1) * chi2 / denom
        pf = float(stats.f.sf(ff, k - 1, (k - 1) * (n - 1))) if n > 1 else math.nan
    return FriedmanResult(float(chi2), p, float(ff), pf, n, k)


def friedman_from_ranks(avg_ranks: Any, n_datasets: int) -> FriedmanResult:
    """Friedman test from the k average ranks over ``n_datasets`` datasets
    (Demšar 2006, Eq. for χ²_F; no tie correction)."""
    r = check_finite(
        check_nonempty(as_array(avg_ranks, "avg_ranks", ndim=1, dtype=np.float64), "avg_ranks"),
        "avg_ranks",
    )
    k, n = len(r), _count(n_datasets, "n_datasets", 1, "datasets")
    if k < 2:
        raise ValueError(f"avg_ranks: need >= 2 methods, got {k}")
    chi2 = 12.0 * n / (k * (k + 1)) * (np.sum(r**2) - k * (k + 1) ** 2 / 4.0)
    return _friedman(float(chi2), n, k)


def friedman(scores: Any, *, tie_correction: bool = False) -> FriedmanResult:
    """Friedman test that all methods (columns) perform alike over the
    datasets (rows), and its Iman–Davenport F form. The statistic does not
    depend on whether higher or lower scores are better."""
    ranks = rank_table(scores).to_numpy()
    n, k = ranks.shape
    res = friedman_from_ranks(ranks.mean(axis=0), n)
    if not tie_correction:
        return res
    ties = 0.0
    for row in ranks:
        _, t = np.unique(row, return_counts=True)
        ties += float(np.sum(t**3 - t))
    c = 1.0 - ties / (n * k * (k * k - 1))
    if c <= 0:
        raise ValueError("scores: every dataset ties all methods; the test is undefined")
    return _friedman(res.statistic / c, n, k)


# ----------------------------------------------------------------------------
# Nemenyi critical difference


def _count(v: Any, name: str, minimum: int, what: str) -> int:
    """``v`` as an int >= ``minimum`` (integral floats accepted); ValueError naming ``name``."""
    return check_int(
        name,
        v,
        minimum=minimum,
        whole_floats=True,
        what=f"an integer number of {what} >= {minimum}",
    )


def nemenyi_q(k: int, alpha: float = 0.05) -> float:
    """Two-tailed Nemenyi q_α for k methods: the 1 − α quantile of the
    studentized range of k normals (∞ d.o.f.) divided by √2."""
    k = _count(k, "k", 2, "methods")
    if (
        isinstance(alpha, bool)
        or not isinstance(alpha, (int, float, np.integer, np.floating))
        or not 0.0 < alpha < 1.0
    ):
        raise ValueError(f"alpha: must lie in (0, 1), got {alpha!r}")
    return float(stats.studentized_range.ppf(1.0 - alpha, int(k), np.inf) / math.sqrt(2.0))


def nemenyi_cd(k: int, n: int, alpha: float = 0.05) -> float:
    """Critical difference of average ranks (in rank units) for k methods over
    n datasets: q_α √(k(k+1)/(6n))."""
    n = _count(n, "n", 1, "datasets")
    q = nemenyi_q(k, alpha)
    k = int(k)
    return q * math.sqrt(k * (k + 1) / (6.0 * n))


def _ranks_series(avg_ranks: Any) -> pd.Series:
    s = (
        avg_ranks
        if isinstance(avg_ranks, pd.Series)
        else pd.Series(as_array(avg_ranks, "avg_ranks", ndim=1, dtype=np.float64))
    )
    if len(s) < 2:
        raise ValueError(f"avg_ranks: need >= 2 methods, got {len(s)}")
    check_finite(s.to_numpy(dtype=np.float64), "avg_ranks")
    return s.astype(np.float64).sort_values(kind="stable")


def cd_cliques(avg_ranks: Any, cd: float) -> list[tuple]:
    """Maximal groups of methods (sorted by average rank) whose ranks all lie
    within less than ``cd`` of each other — not significantly different.
    Singletons are omitted."""
    if (
        isinstance(cd, bool)
        or not isinstance(cd, (int, float, np.integer, np.floating))
        or not (np.isfinite(cd) and cd > 0)
    ):
        raise ValueError(f"cd: must be a positive number, got {cd}")
    s = _ranks_series(avg_ranks)
    r, names = s.to_numpy(), list(s.index)
    out, last_end = [], -1
    for i in range(len(r)):
        j = int(np.searchsorted(r, r[i] + cd, side="left")) - 1  # last with r_j − r_i < cd
        if j > i and j > last_end:
            out.append(tuple(names[i : j + 1]))
            last_end = j
    return out


def plot_cd(avg_ranks: Any, cd: float, ax: Any = None, *, title: str | None = None):
    """Critical-difference diagram: an average-rank axis (1 = best at the left),
    each method joined to its rank by an elbow line (better half labelled on
    the left, worse half on the right), a bar of length ``cd``, and a thick
    bar under each clique of :func:`cd_cliques`. Returns the matplotlib Axes."""
    import matplotlib.pyplot as plt

    s = _ranks_series(avg_ranks)
    cliques = cd_cliques(s, cd)
    k = len(s)
    lo, hi = 1, max(k, int(math.ceil(s.max())))
    half = (k + 1) // 2
    n_rows = max(half, k - half)
    if ax is None:
        _, ax = plt.subplots(
            figsize=(max(6.0, 0.8 * (hi - lo + 1) + 3), 1.6 + 0.3 * n_rows + 0.15 * len(cliques))
        )
    line_y = 0.0
    ax.plot([lo, hi], [line_y, line_y], color="black", lw=1)
    for t in range(lo, hi + 1):
        ax.plot([t, t], [line_y, line_y + 0.1], color="black", lw=1)
        ax.text(t, line_y + 0.15, str(t), ha="center", va="bottom", fontsize=9)
    # CD bar above the axis, starting at rank 1
    cd_y = line_y + 0.65
    ax.plot([lo, lo + cd], [cd_y, cd_y], color="black", lw=1.5)
    for x in (lo, lo + cd):
        ax.plot([x, x], [cd_y - 0.05, cd_y + 0.05], color="black", lw=1.5)
    ax.text(lo + cd / 2, cd_y + 0.08, f"CD = {cd:.3f}", ha="center", va="bottom", fontsize=9)
    # cliques as thick bars just below the axis
    for c, members in enumerate(cliques):
        y = line_y - 0.2 - 0.15 * c
        ax.plot(
            [s[members[0]] - 0.03, s[members[-1]] + 0.03],
            [y, y],
            color="black",
            lw=3.5,
            solid_capstyle="round",
        )
    # method labels: elbow from the rank down to a row, text at the margin
    top = line_y - 0.35 - 0.15 * len(cliques)
    for i, (name, r) in enumerate(s.items()):
        left = i < half
        row = i if left else k - 1 - i
        y = top - 0.3 * row
        x_end = lo - 0.4 if left else hi + 0.4
        ax.plot([r, r, x_end], [line_y, y, y], color="0.3", lw=0.8)
        ax.text(
            x_end - 0.05 if left else x_end + 0.05,
            y,
            f"{name} ({r:.2f})",
            ha="right" if left else "left",
            va="center",
            fontsize=9,
        )
    ax.set_xlim(lo - 2.5, hi + 2.5)
    ax.set_ylim(top - 0.3 * n_rows, cd_y + 0.4)
    ax.axis("off")
    if title:
        ax.set_title(title)
    return ax


# ----------------------------------------------------------------------------
# rank correlations and joint ranks


def _paired(x: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    a = check_finite(check_nonempty(as_array(x, "x", ndim=1, dtype=np.float64), "x"), "x")
    b = check_finite(check_nonempty(as_array(y, "y", ndim=1, dtype=np.float64), "y"), "y")
    check_same_length(a, b, "x", "y")
    if len(a) < 2:
        raise ValueError(f"x: need >= 2 items, got {len(a)}")
    return a, b


def kendall_tau(x: Any, y: Any) -> float:
    """Kendall τ_b in [−1, 1] between two score vectors (``scipy.stats.kendalltau``);
    NaN if either is constant."""
    a, b = _paired(x, y)
    return float(stats.kendalltau(a, b).statistic)


def weighted_tau(x: Any, y: Any, *, rank: Any = True) -> float:
    """Weighted Kendall τ (Vigna 2015, ``scipy.stats.weightedtau``, additive
    hyperbolic weights 1/(r + 1)): disagreements among the top items by
    importance ``rank`` (``True``: decreasing x, and y, averaged) count more."""
    a, b = _paired(x, y)
    if not isinstance(rank, bool):
        r = np.asarray(rank)
        if (
            r.shape != a.shape
            or r.dtype.kind not in "iu"
            or sorted(r.tolist()) != list(range(len(a)))
        ):
            raise ValueError(
                f"rank: must be True, False or a permutation of 0..{len(a) - 1} "
                f"(item indices by decreasing importance), got {rank!r}"
            )
    return float(stats.weightedtau(a, b, rank=rank).statistic)


def rank_product(
    scores: Sequence[Any], *, higher_is_better: bool | Sequence[bool] = True
) -> np.ndarray:
    """Joint rank of CLID Sec. 3.5: the geometric mean over the predictors in
    ``scores`` (each a 1-D array of one value per model) of each model's rank
    (1 = best, ties averaged). Lower = better; correlate ``-rank_product`` with
    a higher-is-better performance."""
    if isinstance(scores, np.ndarray) and scores.ndim == 2:
        scores = list(scores)
    if len(scores) < 1:
        raise ValueError("scores: need at least one predictor")
    hib = (
        [bool(higher_is_better)] * len(scores)
        if isinstance(higher_is_better, bool)
        else list(higher_is_better)
    )
    if len(hib) != len(scores):
        raise ValueError(f"higher_is_better: {len(hib)} flags for {len(scores)} predictors")
    logs = []
    for i, (v, h) in enumerate(zip(scores, hib)):
        name = f"scores[{i}]"
        a = check_finite(check_nonempty(as_array(v, name, ndim=1, dtype=np.float64), name), name)
        if logs:
            check_same_length(a, logs[0], name, "scores[0]")
        logs.append(np.log(stats.rankdata(-a if h else a, method="average")))
    # the geometric mean lies in [1, n]; exp(mean(log)) can overshoot a bound by an ulp
    return np.clip(np.exp(np.mean(logs, axis=0)), 1.0, float(max(len(logs[0]), 1)))


# ----------------------------------------------------------------------------
# the paper's thresholds vs. the correct ones

# (where in the paper, r methods, N datasets, threshold as printed, group)
_PAPER_THRESHOLDS = (
    ("Sec. 4 Table 1a, Fig. 6 (objectives)", 6, 19, 1.894, "all VTAB"),
    ("Sec. 4 Table 1b, Fig. 8 (model sizes)", 12, 19, 3.65, "all VTAB"),
    ("Table 2, Fig. 7 (1st value)", 6, 7, 3.12, "natural"),
    ("Table 2, Fig. 7 (2nd value)", 6, 4, 2.92, "specialized (as printed)"),
    ("Table 2, Fig. 7 (3rd value)", 6, 8, 4.13, "structured (as printed)"),
)
_PAPER_Q = 3.12


def cd_thresholds_report(alpha: float = 0.10) -> pd.DataFrame:
    """The readout-switching paper's rank-difference thresholds next to the
    Nemenyi CDs for the same (r, N) at ``alpha`` (the paper's γ = 0.1).

    Columns: ``paper_cd`` (as printed), ``implied_q`` (paper_cd / √(r(r+1)/6N)),
    ``paper_q`` (3.12, as stated), ``q`` and ``cd`` (correct, this module),
    ``ratio`` = paper_cd / cd. The printed 2.92 (specialized, N = 4) and 4.13
    (structured, N = 8) imply q = 2.21 and 4.41; swapped, both imply 3.12.
    """
    rows = []
    for where, r, n, printed, group in _PAPER_THRESHOLDS:
        scale = math.sqrt(r * (r + 1) / (6.0 * n))
        q = nemenyi_q(r, alpha)
        rows.append(
            dict(
                where=where,
                group=group,
                r=r,
                N=n,
                paper_cd=printed,
                implied_q=printed / scale,
                paper_q=_PAPER_Q,
                paper_q_cd=_PAPER_Q * scale,
                q=q,
                cd=q * scale,
                ratio=printed / (q * scale),
            )
        )
    return pd.DataFrame(rows)
