"""LiDAR (Thilak et al. 2024): effective rank of the surrogate-task LDA matrix."""

from __future__ import annotations

from typing import Any

import numpy as np

from mdlnb.baselines.labelfree._inputs import _real
from mdlnb.core._checks import as_array, check_finite, check_nonempty, check_positive


def _views(views: Any) -> np.ndarray:
    a = as_array(views, "views", ndim=3)
    if a.dtype.kind not in "fiub":
        raise ValueError(f"views: expected a numeric array, got dtype {a.dtype}")
    check_nonempty(a, "views")
    n, q, d = a.shape
    if n < 2:
        raise ValueError(f"views: needs at least 2 surrogate classes (samples), got {n}")
    if q < 2:
        raise ValueError(f"views: needs at least 2 views per sample, got {q}")
    if d < 1:
        raise ValueError(f"views: has no features (shape {a.shape})")
    check_finite(a, "views")
    return a.astype(np.float64)


def lidar_matrix(views: Any, *, delta: float = 1e-4) -> np.ndarray:
    """``Σ_w^{−1/2} Σ_b Σ_w^{−1/2}`` (D, D) of LiDAR for ``views`` (n, q, D):
    n surrogate classes (source samples), q views (augmentations) of each.

    ``Σ_b = 1/(n−1) Σ_x (μ_x − μ)(μ_x − μ)ᵀ``, ``Σ_w = 1/(n(q−1)) Σ_x Σ_i
    (e_xi − μ_x)(e_xi − μ_x)ᵀ + δ I``; the inverse square root from the
    eigendecomposition of the symmetric positive definite Σ_w.
    """
    e = _views(views)
    dlt = check_positive(_real(delta, "delta"), "delta")
    n, q, d = e.shape
    mu_x = e.mean(axis=1)
    cb = mu_x - mu_x.mean(axis=0)
    sb = cb.T @ cb / (n - 1)
    r = (e - mu_x[:, None, :]).reshape(n * q, d)
    sw = r.T @ r / (n * (q - 1)) + dlt * np.eye(d)
    w, v = np.linalg.eigh(sw)
    isq = (v / np.sqrt(w)) @ v.T
    out = isq @ sb @ isq
    return 0.5 * (out + out.T)


def effective_rank(values: Any, *, eps: float = 1e-7) -> float:
    """``exp(−Σ p_k log p_k)``, ``p_k = |v_k| / Σ|v| + ε`` (RankMe's smoothed
    entropy) of non-negative spectral values ``v``."""
    v = np.abs(np.asarray(values, dtype=np.float64))
    check_positive(_real(eps, "eps"), "eps", strict=False)
    total = v.sum()
    if not total > 0:
        raise ValueError("values: all zero, no effective rank")
    p = v / total + eps
    return float(np.exp(-np.sum(p * np.log(p))))


def lidar(views: Any, *, delta: float = 1e-4, eps: float = 1e-7) -> float:
    """LiDAR (Thilak et al. 2024): the smoothed effective rank of the LDA
    matrix of the surrogate task, higher is better.

    ``views`` (n, q, D): q augmented views of each of n source samples, each
    sample its own (surrogate) class. LiDAR = :func:`effective_rank` (ε) of the
    eigenvalues of :func:`lidar_matrix` (δ); in ``[1, min(D, n − 1)]`` up to
    O(ε) terms. No unit.
    """
    lam = np.clip(np.linalg.eigvalsh(lidar_matrix(views, delta=delta)), 0.0, None)
    return effective_rank(lam, eps=eps)
