"""GBC: Gaussian Bhattacharyya Coefficient (Pándy et al., CVPR 2022).

"Transferability Estimation using Bhattacharyya Class Separability"
(arXiv 2111.12780); code google-research/google-research
``stable_transfer/transferability/gbc.py``. Each class c of the target
features is modelled as a Gaussian ``N(μ_c, Σ_c)`` with diagonal
``Σ_c = diag(σ²_c)`` (per-feature variances, 1/n_c) or spherical
``Σ_c = s²_c I`` (``s²_c`` = mean of the per-feature variances). Between two
classes the Bhattacharyya distance is, with ``Σ = (Σ_1 + Σ_2)/2``,

    D_B = ⅛ (μ_1 − μ_2)ᵀ Σ⁻¹ (μ_1 − μ_2) + ½ log( det Σ / √(det Σ_1 det Σ_2) ),

the coefficient ``BC = exp(−D_B)``, and

    GBC = − Σ_{c ≠ c'} BC(c, c')      (ordered pairs: each pair counts twice)

Dimensionless, ``≤ 0``; 0 when the classes are perfectly separated; higher
is better transfer. Variances are floored at ``min_variance = 1e-4`` (as the
authors' code does for constant features).

Defaults are those of the authors' experiments (``config_transferability_
target_selection.py``: ``gaussian_type = 'spherical'``, ``pca_reduction =
64``): features with D > ``n_dims`` are first reduced to their first
``min(n_dims, N)`` principal components (exact PCA, as their
``features_targets_utils.pca_reduction`` with ``svd_solver='full'``);
``n_dims=None`` keeps them as they are. (With D ≤ ``n_dims`` nothing is
reduced; a full-rank PCA would only rotate the features, which leaves the
spherical GBC unchanged but not the diagonal one.)

Code vs paper: for the spherical variant the authors' code sums
``log s̄²`` once instead of D times (``reduce_sum`` over a scalar), i.e. its
log-determinant term is the paper's divided by D. mdlnb follows the paper
(the determinant of ``s² I_D`` is ``s^{2D}``); :class:`GBCResult` keeps the
two parts so the code's value can be reconstructed.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from mdlnb.baselines.transfer import _gram
from mdlnb.baselines.transfer import _validate as v

GAUSSIANS = ("diagonal", "spherical")


@dataclasses.dataclass(frozen=True)
class GBCResult:
    """``value`` GBC; ``classes`` (K,) the labels that occur; ``quadratic``
    (K, K) ``⅛ Δμᵀ Σ⁻¹ Δμ``; ``log_det`` (K, K) ``½ log(det Σ / √(det Σ_1 det Σ_2))``;
    ``distance = quadratic + log_det`` (zero diagonal); ``dim`` D."""

    value: float
    classes: np.ndarray
    quadratic: np.ndarray
    log_det: np.ndarray
    distance: np.ndarray
    dim: int


def gbc_result(
    features: Any,
    labels: Any,
    *,
    num_classes: int | None = None,
    gaussian: str = "spherical",
    n_dims: int | None = 64,
    min_variance: float = 1e-4,
) -> GBCResult:
    """GBC with its pairwise parts (on the reduced features); see the module doc."""
    x = v.features(features)
    y, _ = v.labels(labels, x.shape[0], num_classes)
    if gaussian not in GAUSSIANS:
        raise ValueError(f"gaussian: expected one of {GAUSSIANS}, got {gaussian!r}")
    floor = v.positive(min_variance, "min_variance")
    if n_dims is not None:
        if isinstance(n_dims, bool) or int(n_dims) != n_dims or n_dims < 1:
            raise ValueError(f"n_dims: must be None or a positive int, got {n_dims!r}")
        if x.shape[1] > n_dims:
            x = _gram.pca_scores(x, min(int(n_dims), x.shape[0]))
    classes, idx = np.unique(y, return_inverse=True)
    counts = np.bincount(idx).astype(np.float64)
    d = x.shape[1]
    means = np.zeros((classes.size, d))
    np.add.at(means, idx, x)
    means /= counts[:, None]
    sq = np.zeros((classes.size, d))
    np.add.at(sq, idx, (x - means[idx]) ** 2)
    var = np.maximum(sq / counts[:, None], floor)  # (K, D)
    if gaussian == "spherical":
        var = np.repeat(var.mean(axis=1, keepdims=True), d, axis=1)
    avg = 0.5 * (var[:, None, :] + var[None, :, :])  # (K, K, D)
    diff = means[:, None, :] - means[None, :, :]
    quad = np.sum(diff**2 / avg, axis=2) / 8.0
    logv = np.log(var)
    log_det = 0.5 * (
        np.sum(np.log(avg), axis=2) - 0.5 * (logv.sum(axis=1)[:, None] + logv.sum(axis=1)[None, :])
    )
    dist = quad + log_det
    np.fill_diagonal(dist, np.inf)
    value = -float(np.sum(np.exp(-dist)))
    np.fill_diagonal(dist, 0.0)
    return GBCResult(value, classes, quad, log_det, dist, d)


def gbc(
    features: Any,
    labels: Any,
    *,
    num_classes: int | None = None,
    gaussian: str = "spherical",
    n_dims: int | None = 64,
    min_variance: float = 1e-4,
) -> float:
    """GBC (Pándy et al. 2022), ``−Σ_{c≠c'} exp(−D_B(c, c'))``, ``≤ 0``, higher is
    better. ``gaussian``: ``"spherical"`` (default) or ``"diagonal"``; ``n_dims``:
    PCA size when D exceeds it (default 64), None for none (module doc)."""
    return gbc_result(
        features,
        labels,
        num_classes=num_classes,
        gaussian=gaussian,
        n_dims=n_dims,
        min_variance=min_variance,
    ).value
