"""TwoNN intrinsic dimension (Facco et al. 2017; CLID Sec. 2.2)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mdlnb.baselines.labelfree._inputs import _check_metric, _normalize_rows, _real, features_matrix
from mdlnb.baselines.labelfree._neighbours import _nearest
from mdlnb.core._checks import as_array, check_finite, check_probability

_DUPLICATES = ("unique", "drop")


def _precomputed_two_nearest(dist: Any, duplicates: str) -> np.ndarray:
    d = as_array(dist, "z", ndim=2, dtype=np.float64)
    if d.shape[0] != d.shape[1]:
        raise ValueError(
            f"z: metric='precomputed' needs a square distance matrix, got shape {d.shape}"
        )
    check_finite(d, "z")
    if np.any(d < 0) or not np.allclose(d, d.T):
        raise ValueError("z: distances must be non-negative and symmetric")
    if duplicates == "unique":
        dup = np.triu(d == 0, k=1).any(axis=0)  # j repeats an earlier point
        d = d[~dup][:, ~dup]
    if len(d) < 3:
        raise ValueError(f"z: needs at least 3 distinct points, got {len(d)}")
    d = d.copy()
    np.fill_diagonal(d, np.inf)
    return np.sort(np.partition(d, 1, axis=1)[:, :2], axis=1)


def _ratios(r: np.ndarray) -> np.ndarray:
    """Sorted μ = r2/r1 over the points with r1 > 0 (all of them after ``unique``)."""
    r = r[r[:, 0] > 0]
    if len(r) < 3:
        raise ValueError(
            f"z: needs at least 3 points with a non-zero nearest-neighbour distance, got {len(r)}"
        )
    return np.sort(r[:, 1] / r[:, 0])


def twonn_ratios(z: Any, *, metric: str = "euclidean", duplicates: str = "unique") -> np.ndarray:
    """μ_i = r_i2 / r_i1 ≥ 1, sorted ascending. Exact (float64) distances; see
    the module docstring for ``metric`` and ``duplicates`` (``"unique"``: one
    copy of each distinct row; ``"drop"``: all rows are neighbours, rows with
    r1 = 0 are left out, as scikit-dimension). ``metric="precomputed"``: ``z``
    is an (N, N) distance matrix (e.g. geodesic distances on a manifold)."""
    if duplicates not in _DUPLICATES:
        raise ValueError(f"duplicates: expected one of {_DUPLICATES}, got {duplicates!r}")
    if metric == "precomputed":
        return _ratios(_precomputed_two_nearest(z, duplicates))
    z = features_matrix(z, min_rows=3)
    if _check_metric(metric) == "cosine":
        z = _normalize_rows(z, "z")
    if duplicates == "unique":
        z = np.unique(z + np.float32(0.0), axis=0)  # + 0.0 maps −0.0 to 0.0 first
    if len(z) < 3:
        raise ValueError(f"z: needs at least 3 distinct rows, got {len(z)}")
    _, d = _nearest(z, z, 2, exclude_self=True)
    return _ratios(d)


def twonn_id(
    z: Any,
    *,
    discard_fraction: float = 0.1,
    metric: str = "euclidean",
    estimator: str = "fit",
    duplicates: str = "unique",
) -> float:
    """TwoNN intrinsic dimension (Facco et al. 2017; CLID Sec. 2.2). Higher =
    more expressive.

    ``estimator="fit"``: slope of the least-squares line through the origin of
    ``-log(1 - i/N)`` on ``log μ_(i)`` over the smallest ``1 - discard_fraction``
    of the N ratios (Facco's default discards 10%). ``estimator="mle"``: the
    Pareto maximum-likelihood form (N − 1) / Σ log μ_i over all ratios
    (``discard_fraction`` unused). Returns ``inf`` when every μ equals 1.
    ``duplicates``: see :func:`twonn_ratios` (scikit-dimension: ``"drop"``).
    """
    check_probability(_real(discard_fraction, "discard_fraction"), "discard_fraction")
    if discard_fraction >= 1.0:
        raise ValueError(f"discard_fraction: must be < 1, got {discard_fraction}")
    if estimator not in ("fit", "mle"):
        raise ValueError(f"estimator: expected 'fit' or 'mle', got {estimator!r}")
    mu = twonn_ratios(z, metric=metric, duplicates=duplicates)
    n = len(mu)
    x = np.log(mu)
    if estimator == "mle":
        s = x.sum()
        return float((n - 1) / s) if s > 0 else math.inf
    keep = min(n - 1, int(math.floor((1.0 - discard_fraction) * n)))
    if keep < 1:
        raise ValueError(f"discard_fraction: {discard_fraction} leaves no points of {n}")
    i = np.arange(1, keep + 1)
    y = -np.log1p(-i / n)
    sxx = np.dot(x[:keep], x[:keep])
    return float(np.dot(x[:keep], y) / sxx) if sxx > 0 else math.inf
