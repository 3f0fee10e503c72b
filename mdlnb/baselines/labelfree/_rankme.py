"""RankMe (Garrido et al. 2023)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mdlnb.baselines.labelfree._inputs import _real, features_matrix
from mdlnb.core._checks import check_positive


def singular_values(z: Any) -> np.ndarray:
    """Singular values of the (uncentred) N×D matrix, descending, float64,
    from the eigenvalues of the smaller float64 Gram matrix."""
    z = features_matrix(z).astype(np.float64)
    g = z.T @ z if z.shape[0] >= z.shape[1] else z @ z.T
    ev = np.linalg.eigvalsh(g)[::-1]
    return np.sqrt(np.clip(ev, 0.0, None))


def rankme(z: Any, *, eps: float = 1e-7) -> float:
    """RankMe = exp(−Σ_k p_k log p_k), p_k = σ_k / Σ_j σ_j + ε, over the
    min(N, D) singular values σ of Z (no centring). In [1, min(N, D)] up to
    O(ε) terms; higher = higher effective rank."""
    check_positive(_real(eps, "eps"), "eps", strict=False)
    s = singular_values(z)
    total = s.sum()
    if total == 0:
        raise ValueError("z: all-zero matrix has no effective rank")
    p = s / total + eps
    return float(np.exp(-np.sum(p * np.log(p))))
