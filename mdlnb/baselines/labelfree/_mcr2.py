"""MCR² coding rates and rate reduction (Yu et al. 2020, Eq. 6)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mdlnb.baselines.labelfree._inputs import (
    _default_clusters,
    _normalize_rows,
    _real,
    features_matrix,
)
from mdlnb.baselines.labelfree._kmeans import kmeans
from mdlnb.core._checks import check_labels, check_positive, check_same_length


def _logdet_i_plus(zj: np.ndarray, scale: float) -> float:
    """logdet(I_D + scale ZᵀZ) via the smaller Gram (Sylvester), float64."""
    g = zj.T @ zj if zj.shape[0] >= zj.shape[1] else zj @ zj.T
    g = np.eye(len(g)) + scale * g
    return float(np.linalg.slogdet(g)[1])  # g is SPD, the sign is +1


def _mcr_inputs(z: Any, eps_sq: float, normalize: bool) -> np.ndarray:
    z = features_matrix(z)
    check_positive(_real(eps_sq, "eps_sq"), "eps_sq")
    return (_normalize_rows(z, "z") if normalize else z).astype(np.float64)


def _rate(z: np.ndarray, eps_sq: float) -> float:
    n, d = z.shape
    return 0.5 * _logdet_i_plus(z, d / (n * eps_sq))


def _class_rate(z: np.ndarray, y: np.ndarray, eps_sq: float) -> float:
    n, d = z.shape
    order = np.argsort(y, kind="stable")
    ys, zs = y[order], z[order]
    starts = np.flatnonzero(np.r_[True, ys[1:] != ys[:-1]])
    ends = np.r_[starts[1:], n]
    return float(
        sum(
            (e - s) / (2.0 * n) * _logdet_i_plus(zs[s:e], d / ((e - s) * eps_sq))
            for s, e in zip(starts, ends)
        )
    )


def coding_rate(z: Any, *, eps_sq: float = 0.5, normalize: bool = True) -> float:
    """R(Z, ε) = ½ logdet(I + D/(N ε²) ZᵀZ), nats (Yu et al. 2020, with
    rows as samples). ``eps_sq`` is ε²; rows are L2-normalized if
    ``normalize``."""
    return _rate(_mcr_inputs(z, eps_sq, normalize), eps_sq)


def class_coding_rate(z: Any, labels: Any, *, eps_sq: float = 0.5, normalize: bool = True) -> float:
    """R_c(Z, ε | Π) = Σ_j (N_j / 2N) logdet(I + D/(N_j ε²) Z_jᵀZ_j), nats,
    for the hard partition ``labels`` (Yu et al. 2020)."""
    z = _mcr_inputs(z, eps_sq, normalize)
    y = check_labels(labels, None, "labels")
    check_same_length(z, y, "z", "labels")
    return _class_rate(z, y, eps_sq)


def coding_rate_reduction(
    z: Any,
    labels: Any = None,
    *,
    key: Any = None,
    n_clusters: int | None = None,
    eps_sq: float = 0.5,
    normalize: bool = True,
) -> float:
    """ΔR = R(Z, ε) − R_c(Z, ε | Π) in nats, ≥ 0 (Yu et al. 2020, Eq. 6).
    Higher = more diverse yet compressible per part.

    Π is ``labels`` if given, else a k-means partition (CLID Sec. 3.2) with
    ``n_clusters`` (default round(√N)) seeded by ``key`` (required then),
    computed on the (normalized if ``normalize``) rows.
    """
    zf = _mcr_inputs(z, eps_sq, normalize)
    if labels is None:
        if key is None:
            raise ValueError("key: required to seed k-means when labels is None")
        y = kmeans(zf.astype(np.float32), _default_clusters(len(zf), n_clusters), key).labels
    else:
        y = check_labels(labels, None, "labels")
        check_same_length(zf, y, "z", "labels")
    return _rate(zf, eps_sq) - _class_rate(zf, y, eps_sq)
