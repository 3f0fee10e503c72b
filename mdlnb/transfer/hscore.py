"""H-score (Bao et al. 2019) and its Ledoit–Wolf-shrunk variant (Ibrahim et al. 2022).

``H = tr(cov(f)⁺ cov(E[f|y]))`` (PACTran Eq. 5): the between-class variance
of the features in the metric of their total covariance. Dimensionless,
``0 <= H <= min(rank(cov f), C - 1)``; higher is better transfer.
Covariances use the 1/N normalisation (it cancels in the ratio).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mdlnb.transfer import _gram
from mdlnb.transfer import _validate as v


def _class_indicator(y: np.ndarray, c: int) -> tuple[np.ndarray, np.ndarray]:
    ind = np.zeros((len(y), c))
    ind[np.arange(len(y)), y] = 1.0
    counts = ind.sum(axis=0)
    present = counts > 0
    return ind[:, present], counts[present]


def hscore(features: Any, labels: Any, *, num_classes: int | None = None,
           rcond: float = 1e-10) -> float:
    """H-score ``tr(cov(f)⁺ cov(E[f|y]))`` (PACTran Eq. 5), higher is better.

    The pseudo-inverse keeps eigenvalues of ``cov(f)`` above
    ``rcond · λ_max``. Computed as ``Σ_c ‖U_rᵀ 1_c‖² / n_c`` with ``U_r`` the
    left singular vectors of the centred features (the same quantity, valid
    for N < D and rank-deficient features, at the cost of the smaller Gram).
    """
    f = v.features(features)
    y, c = v.labels(labels, f.shape[0], num_classes)
    rc = v.positive(rcond, "rcond")
    f = f - f.mean(axis=0)
    ind, counts = _class_indicator(y, c)
    sp = _gram.spectrum(f)
    k = _gram.keep(sp.evals, rc)
    u1 = sp.coords(f, ind)[k] / np.sqrt(sp.evals[k])[:, None]     # U_rᵀ 1_c
    return float(np.sum(u1 ** 2 / counts))


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
    s_eig = evals / n                       # non-zero eigenvalues of S
    mu = s_eig.sum() / d
    s_fro2 = np.sum(s_eig ** 2)             # ‖S‖²_F
    d2 = (s_fro2 - 2 * mu * s_eig.sum() + d * mu ** 2) / d
    row4 = np.sum(np.sum(f ** 2, axis=1) ** 2)          # Σ_i ‖x_i‖⁴
    b2 = (row4 / n - s_fro2) / (n * d)                  # Σ_i ‖x_i x_iᵀ - S‖² / (N² D)
    b2 = min(b2, d2)
    return 0.0 if b2 <= 0 else float(b2 / d2)


def regularized_hscore(features: Any, labels: Any, *, num_classes: int | None = None,
                       shrinkage: float | None = None, rcond: float = 1e-10) -> float:
    """Shrinkage H-score ``(1-α) tr(Σ_α⁻¹ cov(E[f|y]))`` (Ibrahim et al. 2022), higher is better.

    ``Σ_α = (1-α) cov(f) + α (tr cov(f)/D) I`` with Ledoit–Wolf ``α``
    (:func:`ledoit_wolf_shrinkage`) unless ``shrinkage`` is given. Equals
    :func:`hscore` at ``α = 0`` (where ``rcond`` applies).
    """
    f = v.features(features)
    y, c = v.labels(labels, f.shape[0], num_classes)
    n, d = f.shape
    f = f - f.mean(axis=0)
    sp = _gram.spectrum(f)
    a = _lw_alpha(f, sp.evals) if shrinkage is None else float(shrinkage)
    if not 0.0 <= a <= 1.0:
        raise ValueError(f"shrinkage: must lie in [0, 1], got {shrinkage}")
    ind, counts = _class_indicator(y, c)
    mu = sp.evals.sum() / (n * d)
    denom = (1 - a) * sp.evals / n + a * mu
    k = _gram.keep(sp.evals, v.positive(rcond, "rcond")) if a == 0 else denom > 0
    proj = sp.coords(f, ind)[k]             # Vᵀ Fᵀ 1_c; class means lie in span(V)
    return float((1 - a) * np.sum(proj ** 2 / (denom[k][:, None] * n * counts)))
