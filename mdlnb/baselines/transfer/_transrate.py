"""TransRate (Huang et al., ICML 2022): mutual information as coding rates.

"Frustratingly Easy Transferability Estimation". With the features
centred (``Z = F − mean``, (N, D)) and the coding rate

    R(Z, ε) = ½ log det(I_D + ZᵀZ / (N ε)),

    TrR = R(Z, ε) − (1/K) Σ_{k} R(Z_k, ε),

``Z_k`` the rows of class k (not re-centred; its own row count ``n_k`` in
``R``) and K the number of classes, ``max(labels) + 1`` as in the authors'
listing (classes without examples add ``R = 0``). ε = 1e-4 is the listing's
default; note it plays the role of ε² in MCR² (:mod:`mdlnb.baselines.labelfree`'s
``eps_sq``). Nats; higher is better transfer.

mdlnb follows the code listing printed with the paper (copied into most
benchmark code bases; the paper's text was not available here to compare
its equations): the class term is a plain average over the K classes, where
MCR²'s ``R_c`` weights classes by ``n_k/N`` (equal for balanced classes). The authors' repository (Long-Kai/TransRate) instead
computes the rates from stored eigenvalues of normalised or projected
features (``generate_transrate/transrate.py``), which is not the formula
above; it is not reproduced here. Determinants come from the smaller Gram
matrix (``det(I_D + ZᵀZ/a) = det(I_n + ZZᵀ/a)``), float64.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from mdlnb.baselines.transfer import _validate as v


def coding_rate(z: np.ndarray, eps: float) -> float:
    """``½ log det(I + ZᵀZ/(n ε))`` for ``z`` (n, D), via the smaller Gram matrix."""
    n = z.shape[0]
    if n == 0:
        return 0.0

    g = z.T @ z if z.shape[1] <= n else z @ z.T
    with threadpool_limits(limits=1, user_api="blas"):  # see _hscore._thin_svd
        ev = np.clip(np.linalg.eigvalsh(g), 0.0, None)
    return float(0.5 * np.sum(np.log1p(ev / (n * eps))))


def transrate(
    features: Any, labels: Any, *, num_classes: int | None = None, eps: float = 1e-4
) -> float:
    """TransRate (Huang et al. 2022), ``R(Z, ε) − (1/K) Σ_k R(Z_k, ε)`` in nats,
    higher is better (module doc). K is ``num_classes`` (default
    ``max(labels) + 1``)."""
    x = v.features(features)
    y, c = v.labels(labels, x.shape[0], num_classes)
    eps = v.positive(eps, "eps")
    z = x - x.mean(axis=0)
    rc = sum(coding_rate(z[y == k], eps) for k in range(c))
    return coding_rate(z, eps) - rc / c
