"""Cluster learnability, CLID and W-CLID (CLID Sec. 2.2, 3.1)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax
import numpy as np

from mdlnb.baselines.labelfree._inputs import (
    _as_key,
    _check_metric,
    _default_clusters,
    _normalize_rows,
    _real,
    features_matrix,
)
from mdlnb.baselines.labelfree._kmeans import kmeans
from mdlnb.baselines.labelfree._neighbours import knn_accuracy
from mdlnb.core._checks import (
    as_array,
    check_finite,
    check_nonempty,
    check_probability,
    check_same_length,
)


def cluster_learnability(
    z: Any,
    key: Any,
    *,
    n_clusters: int | None = None,
    n_neighbors: int = 1,
    metric: str = "cosine",
    train_fraction: float = 0.5,
    max_iter: int = 100,
    n_init: int = 10,
) -> float:
    """Cluster learnability CL in [0, 1] (CLID Eq. 2). Higher = more learnable.

    k-means with ``n_clusters`` (default round(√N)) on all rows gives
    pseudo-labels; a random split (``train_fraction`` of the rows train a
    ``n_neighbors``-NN classifier) and CL is its accuracy on the other rows.
    ``key`` (jax key or int) seeds both k-means (:func:`kmeans`, best of
    ``n_init`` greedy k-means++ runs) and the split.
    """
    z = features_matrix(z, min_rows=2)
    if _check_metric(metric) == "cosine":
        z = _normalize_rows(z, "z")
    check_probability(_real(train_fraction, "train_fraction"), "train_fraction")
    n = len(z)
    n_train = int(math.floor(train_fraction * n))
    if not 1 <= n_train < n:
        raise ValueError(
            f"train_fraction: {train_fraction} leaves an empty train or test part of N={n}"
        )
    k_km, k_split = jax.random.split(_as_key(key))
    labels = kmeans(
        z, _default_clusters(n, n_clusters), k_km, max_iter=max_iter, n_init=n_init
    ).labels
    perm = np.asarray(jax.random.permutation(k_split, n))
    tr, te = perm[:n_train], perm[n_train:]
    return knn_accuracy(z[tr], labels[tr], z[te], labels[te], n_neighbors=n_neighbors)


def _minmax(v: Any, name: str) -> np.ndarray:
    a = check_finite(check_nonempty(as_array(v, name, ndim=1, dtype=np.float64), name), name)
    span = a.max() - a.min()
    return (a - a.min()) / span if span > 0 else np.zeros_like(a)


def clid(cl: Any, intrinsic_dim: Any) -> np.ndarray:
    """CLID score per model (CLID Sec. 2.2): min–max(CL) + min–max(ID), each
    rescaled to [0, 1] across the models given. Higher = predicted better;
    in [0, 2]. A component constant across models contributes 0."""
    a, b = _minmax(cl, "cl"), _minmax(intrinsic_dim, "intrinsic_dim")
    check_same_length(a, b, "cl", "intrinsic_dim")
    return a + b


@dataclasses.dataclass(frozen=True)
class WClid:
    """W-CLID: ``scores = weights @ [minmax(CL), minmax(ID)]`` per model."""

    scores: np.ndarray
    weights: np.ndarray  # (2,): weight on CL, weight on ID
    intercept: float


def wclid(cl: Any, intrinsic_dim: Any, performance: Any, *, fit_intercept: bool = True) -> WClid:
    """W-CLID (CLID Sec. 2.2): w ∈ R² by least squares of the in-domain
    ``performance`` on the min–max normalized [CL, ID]. The intercept (fitted
    by default, 0 otherwise) is reported but left out of ``scores``; it does
    not change the ranking. Higher = predicted better when w is fitted to a
    higher-is-better performance."""
    a, b = _minmax(cl, "cl"), _minmax(intrinsic_dim, "intrinsic_dim")
    p = check_finite(as_array(performance, "performance", ndim=1, dtype=np.float64), "performance")
    check_same_length(a, b, "cl", "intrinsic_dim")
    check_same_length(a, p, "cl", "performance")
    cols = [a, b] + ([np.ones_like(a)] if fit_intercept else [])
    if len(a) < len(cols):
        raise ValueError(f"performance: need at least {len(cols)} models to fit, got {len(a)}")
    coef, *_ = np.linalg.lstsq(np.stack(cols, 1), p, rcond=None)
    w = coef[:2]
    return WClid(
        scores=np.stack([a, b], 1) @ w,
        weights=w,
        intercept=float(coef[2]) if fit_intercept else 0.0,
    )
