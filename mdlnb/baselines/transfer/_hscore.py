"""H-score (Bao et al. 2019) and its Ledoit–Wolf-shrunk variant (Ibrahim et al. 2022).

``H = tr(cov(f)⁺ cov(E[f|y]))`` (PACTran Eq. 5): the between-class variance
of the features in the metric of their total covariance. Dimensionless,
``0 <= H <= min(rank(cov f), C - 1)``; higher is better transfer.
Covariances use the 1/N normalisation (it cancels in the ratio).

H is invariant to every invertible linear map ``f → f A`` of the features:
with ``F`` the centred features, ``cov(f)⁺ cov(E[f|y])`` only sees the column
space of ``F``, and ``H = Σ_c ‖Qᵀ 1_c‖² / n_c`` for any orthonormal basis
``Q`` of it (``1_c`` the indicator of class c, ``n_c`` its size). We scale
every column of ``F`` to unit norm and take ``Q`` from its Gram
eigenbasis when that is well conditioned, else from its thin SVD, so
neither feature units nor the squared condition number of a Gram matrix
can decide the rank: a direction is dropped only when its singular value is
below ``rcond`` times the largest (default ``max(N, D)·eps``, NumPy's
``matrix_rank`` rule), i.e. when it is numerically a linear combination of
the others. (A cut-off on the eigenvalues of ``cov(f)`` instead discarded
three genuine directions of scikit-learn's raw breast-cancer features,
condition number 6e11: 0.76590 instead of 0.77432.)
"""

from __future__ import annotations

from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from mdlnb.baselines.transfer import _gram
from mdlnb.baselines.transfer import _validate as v

# Imported inside the functions that use them, so that importing this module does not load
# them: scipy.linalg.


def _class_indicator(y: np.ndarray, c: int) -> tuple[np.ndarray, np.ndarray]:
    ind = np.zeros((len(y), c))
    ind[np.arange(len(y)), y] = 1.0
    counts = ind.sum(axis=0)
    present = counts > 0
    return ind[:, present], counts[present]


def _thin_svd(f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``U, s`` of the thin SVD of ``f`` (float64, LAPACK gesdd, one BLAS thread).

    Single-threaded: on a contended 2-core machine threaded LAPACK measured
    up to 10× slower on these sizes.
    """
    from scipy.linalg import svd

    with threadpool_limits(limits=1, user_api="blas"):
        u, s, _ = svd(f, full_matrices=False, check_finite=False, lapack_driver="gesdd")
    return u, s


def _rank_tol(s: np.ndarray, shape: tuple[int, int], rcond: float | None) -> float:
    top = float(s.max()) if s.size else 0.0
    rel = max(shape) * np.finfo(np.float64).eps if rcond is None else rcond
    return rel * top


# Above this condition number of the unit-norm columns the Gram route would
# lose more than ~eps·κ² ≈ 1e-8 relative accuracy: take the SVD instead.
_GRAM_MAX_COND_SQ = 1e8


def _class_coordinates(f: np.ndarray, ind: np.ndarray, rcond: float | None) -> np.ndarray:
    """``Qᵀ 1_c`` (r, C) for an orthonormal basis ``Q`` of the column space of ``f``.

    Columns are scaled to unit norm first (a zero column, i.e. a constant
    feature, is dropped), which makes the rank decision independent of the
    units of each feature. When the scaled matrix is well conditioned
    (``κ² < 1e8``: every direction is genuine and the Gram eigenbasis is
    accurate to ~1e-8) the smaller Gram matrix is used, ``O(N·min(N,D)²)``
    like :mod:`mdlnb.baselines.transfer._gram`; otherwise the thin SVD decides the rank
    at ``rcond`` (default ``max(N, D)·eps``) on singular values, not their
    squares.
    """
    norms = np.sqrt(np.einsum("ij,ij->j", f, f))
    keep = norms > 0
    if not np.any(keep):
        return np.zeros((0, ind.shape[1]))
    g = f / norms if keep.all() else f[:, keep] / norms[keep]
    if rcond is None:
        sp = _gram.spectrum(g)
        if sp.evals[-1] > sp.evals[0] / _GRAM_MAX_COND_SQ:
            return sp.left_coords(g, ind)
    u, s = _thin_svd(g)
    return u[:, s > _rank_tol(s, g.shape, rcond)].T @ ind


def _rcond(rcond: Any) -> float | None:
    return None if rcond is None else v.positive(rcond, "rcond")


def hscore(
    features: Any, labels: Any, *, num_classes: int | None = None, rcond: float | None = None
) -> float:
    """H-score ``tr(cov(f)⁺ cov(E[f|y]))`` (PACTran Eq. 5), higher is better.

    Computed as ``Σ_c ‖Qᵀ 1_c‖² / n_c`` with ``Q`` an orthonormal basis of
    the centred, column-normalised features (module doc): invariant to any
    invertible linear map of the features, valid for N < D and
    rank-deficient features. ``rcond``: singular values of the
    column-normalised matrix below ``rcond · s_max`` count as zero (default
    ``max(N, D)·eps``).
    """
    f = v.features(features)
    y, c = v.labels(labels, f.shape[0], num_classes)
    rc = _rcond(rcond)
    ind, counts = _class_indicator(y, c)
    return float(np.sum(_class_coordinates(f - f.mean(axis=0), ind, rc) ** 2 / counts))


def ledoit_wolf_shrinkage(features: Any) -> float:
    """Ledoit–Wolf (2004) optimal shrinkage ``α ∈ [0, 1]`` of the 1/N sample covariance.

    ``Σ_α = (1-α) S + α μ I``, ``μ = tr(S)/D``; ``α = min(b², d²)/d²`` with
    ``d² = ‖S - μI‖²_F / D`` and ``b² = (1/(N² D)) Σ_i ‖x_i x_iᵀ - S‖²_F``
    (centred ``x_i``). Same convention as ``sklearn.covariance.ledoit_wolf``.
    """
    f = v.features(features)
    f = f - f.mean(axis=0)
    return _lw_alpha(f, _gram.spectrum(f).evals)


def _lw_alpha(f: np.ndarray, evals: np.ndarray) -> float:
    n, d = f.shape
    s_eig = evals / n  # non-zero eigenvalues of S
    mu = s_eig.sum() / d
    s_fro2 = np.sum(s_eig**2)  # ‖S‖²_F
    d2 = (s_fro2 - 2 * mu * s_eig.sum() + d * mu**2) / d
    row4 = np.sum(np.sum(f**2, axis=1) ** 2)  # Σ_i ‖x_i‖⁴
    b2 = (row4 / n - s_fro2) / (n * d)  # Σ_i ‖x_i x_iᵀ - S‖² / (N² D)
    b2 = min(b2, d2)
    return 0.0 if b2 <= 0 else float(b2 / d2)


def regularized_hscore(
    features: Any,
    labels: Any,
    *,
    num_classes: int | None = None,
    shrinkage: float | None = None,
    rcond: float | None = None,
) -> float:
    """Shrinkage H-score ``(1-α) tr(Σ_α⁻¹ cov(E[f|y]))`` (Ibrahim et al. 2022), higher is better.

    ``Σ_α = (1-α) cov(f) + α (tr cov(f)/D) I`` with Ledoit–Wolf ``α``
    (:func:`ledoit_wolf_shrinkage`) unless ``shrinkage`` is given. For
    ``α > 0`` the shrunk covariance is positive definite (eigenvalues
    ≥ αμ) and the trace is taken in the eigenbasis of the smaller Gram matrix
    of the centred features (class means lie in the span of its right
    singular vectors). At ``α = 0`` it is
    :func:`hscore` (scale-free, ``rcond`` applies); shrinkage towards ``μI``
    is not invariant to rescaling features, by construction.
    """
    f = v.features(features)
    y, c = v.labels(labels, f.shape[0], num_classes)
    rc = _rcond(rcond)
    n, d = f.shape
    f = f - f.mean(axis=0)
    sp = _gram.spectrum(f)
    evals = sp.evals
    a = _lw_alpha(f, evals) if shrinkage is None else float(shrinkage)
    if not 0.0 <= a <= 1.0:
        raise ValueError(f"shrinkage: must lie in [0, 1], got {shrinkage}")
    ind, counts = _class_indicator(y, c)
    if a == 0.0:
        return float(np.sum(_class_coordinates(f, ind, rc) ** 2 / counts))
    mu = evals.sum() / (n * d)
    if mu == 0.0:  # every feature constant
        return 0.0
    denom = (1 - a) * evals / n + a * mu  # ≥ αμ > 0: eigenvalues of Σ_α on span(V)
    proj = sp.coords(f, ind)  # Vᵀ Fᵀ 1_c; class means lie in span(V)
    return float((1 - a) * np.sum(proj**2 / (denom[:, None] * n * counts)))
