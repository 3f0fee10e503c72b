"""NCTI: Neural Collapse Transferability Index (Wang et al., ICCV 2023).

"How Far Pre-trained Models Are from Neural Collapse on the Target Dataset
Informs their Transferability"; code BUserName/NCTI (``metrics.py``,
``NCTI_Score``; the combination in ``evaluate_metric_group1_cpu.py``;
commit b18d395). Three proxies of neural collapse (NC) on the target
features ``x`` (N, D), computed as the authors' code does:

0. PCA to ``p = min(64, r)`` components ``x̂`` (centred, exact SVD; ``r`` the
   numerical rank, singular values above ``s_max·max(N, D)·eps``);
   shrinkage ``λ = max(exp(−Σ_{j≤32} v_j), 1e-10)`` with ``v_j`` the PCA
   explained variances (1/(N−1)); LDA on ``x̂`` (scikit-learn
   ``LinearDiscriminantAnalysis``: ``solver="eigen", shrinkage=λ``, or
   ``solver="svd"`` when λ hits the floor), giving the projection
   ``h_i`` (C − 1 dims) and posteriors ``p(·|x_i)``.
1. **simplex ETF / SELI** ``S_seli = ‖H − mean H‖_*`` (nuclear norm of the
   centred projected features): larger = class means spread in more
   directions.
2. **nearest centre** ``S_ncc = (1/N) Σ_i p(y_i|x_i)``.
3. **within-class variability** ``S_vc = log Σ_c ‖P_c‖_*``, ``P_c`` the
   (n_c, C) posteriors of class c: smaller = more collapsed.

Across the candidate models the code min-max normalises each proxy and
scores ``NCTI = mm(S_seli) + mm(S_ncc) − mm(S_vc)`` (:func:`ncti_combine`).
The per-model value returned by :func:`ncti` is the unnormalised
``S_seli + S_ncc − S_vc``, whose terms have different scales: rank models
with :func:`ncti_combine`. Higher is better.

Components of zero variance (e.g. constant pixels) are dropped before the
LDA: kept, they are rounding noise that the ``svd`` LDA rescales to unit
variance. (The code keeps them, but on raw digits, with 3 constant pixels,
its value agrees with mdlnb's to 1e-13: scikit-learn's rank cut-off
removes them there.)

The paper's full text was not available to us when this was written: the
definitions follow the authors' code, which is what produced their tables.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from mdlnb.baselines.transfer import _validate as v
from mdlnb.baselines.transfer._etran import minmax

# Imported inside the functions that use them, so that importing this module does not load
# them: scikit-learn.


@dataclasses.dataclass(frozen=True)
class NCTIResult:
    """``value = seli + ncc − vc`` and the three proxies; ``shrinkage`` λ
    (None when the ``svd`` solver ran); ``n_components`` the PCA size."""

    value: float
    seli: float
    ncc: float
    vc: float
    shrinkage: float | None
    n_components: int


def ncti_result(
    features: Any,
    labels: Any,
    *,
    num_classes: int | None = None,
    n_components: int = 64,
    top: int = 32,
) -> NCTIResult:
    """NCTI's three proxies; see the module doc."""
    with threadpool_limits(limits=1, user_api="blas"):  # see _hscore._thin_svd
        return _ncti_result(features, labels, num_classes, n_components, top)


def _ncti_result(features, labels, num_classes, n_components, top) -> NCTIResult:
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

    x = v.features(features)
    y, _ = v.labels(labels, x.shape[0], num_classes)
    n = x.shape[0]
    classes, yi = np.unique(y, return_inverse=True)
    if classes.size < 2:
        raise ValueError(f"labels: needs at least 2 classes with examples, got {classes.size}")
    if n <= classes.size:
        raise ValueError(f"features: needs more examples ({n}) than classes ({classes.size})")
    xc = x - x.mean(axis=0)
    u, s, _ = np.linalg.svd(xc, full_matrices=False)
    rank = int(np.sum(s > s[0] * max(xc.shape) * np.finfo(np.float64).eps)) if s[0] > 0 else 0
    if rank == 0:
        raise ValueError("features: every feature is constant")
    p = min(int(n_components), rank)
    xh = u[:, :p] * s[:p]
    explained = s**2 / (n - 1)
    lam = max(float(np.exp(-explained[:top].sum())), 1e-10)
    if lam == 1e-10:
        clf, shrink = LinearDiscriminantAnalysis(solver="svd"), None
    else:
        clf, shrink = LinearDiscriminantAnalysis(solver="eigen", shrinkage=lam), lam
    h = clf.fit_transform(xh, yi)
    h = h - h.mean(axis=0)
    seli = float(np.linalg.norm(h, ord="nuc"))
    post = clf.predict_proba(xh)
    ncc = float(np.mean(post[np.arange(n), yi]))
    vc = float(np.log(sum(np.linalg.norm(post[yi == k], ord="nuc") for k in range(classes.size))))
    return NCTIResult(seli + ncc - vc, seli, ncc, vc, shrink, p)


def ncti(features: Any, labels: Any, *, num_classes: int | None = None) -> float:
    """Per-model NCTI terms summed, ``S_seli + S_ncc − S_vc`` (unnormalised; rank
    several models with :func:`ncti_combine`), higher is better."""
    return ncti_result(features, labels, num_classes=num_classes).value


def ncti_combine(seli: Sequence[float], ncc: Sequence[float], vc: Sequence[float]) -> np.ndarray:
    """The authors' score across candidate models:
    ``minmax(S_seli) + minmax(S_ncc) − minmax(S_vc)``, one value per model."""
    a, b, c = minmax(seli, "seli"), minmax(ncc, "ncc"), minmax(vc, "vc")
    if not a.shape == b.shape == c.shape:
        raise ValueError("ncc/vc: expected one value per model, as many as seli")
    return a + b - c
