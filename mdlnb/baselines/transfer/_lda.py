"""Shared pieces of the Fisher/LDA-based metrics (SFDA, ETran, NCTI).

Classes are the labels that occur (an empty class in ``[0, C)`` has no
mean); ``priors`` are their frequencies. Covariances use 1/N (``bias=1``).

The within-class covariance ``S_w = RᵀR/N`` (R: the N×D residuals from the
class means) is never formed: its spectrum comes from the thin SVD of R
(``O(N·D·min(N, D))``), and the shrunk ``S̃_w = (1 − λ)S_w + c I`` is inverted
in that eigenbasis, ``S̃_w⁻¹ m = V diag(1/((1 − λ)s² + c)) Vᵀm + (m − VVᵀm)/c``
(the last term only when r < D).
For few-shot wide features (N = 20, D = 1280) this replaced a D×D
eigendecomposition and solve (seconds) by an N×D SVD.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy.special import log_softmax
from threadpoolctl import threadpool_limits


@dataclasses.dataclass(frozen=True)
class ClassStats:
    """``classes`` (K,) labels that occur; ``index`` (N,) position of each
    example's class in ``classes``; ``priors`` (K,); ``means`` (K, D);
    ``within_evals`` (r,) the eigenvalues of ``S_w = Σ_k π_k cov_k`` (1/n_k
    each) on ``within_basis`` (D, r), descending, r = min(N, D); the other
    D − r eigenvalues are 0."""

    classes: np.ndarray
    index: np.ndarray
    priors: np.ndarray
    means: np.ndarray
    within_evals: np.ndarray
    within_basis: np.ndarray

    @property
    def sigma_max(self) -> float:
        """Largest eigenvalue of ``S_w``."""
        return float(self.within_evals[0]) if self.within_evals.size else 0.0

    @property
    def within_mean(self) -> float:
        """``tr(S_w)/D``, the mean eigenvalue."""
        return float(np.sum(self.within_evals) / self.means.shape[1])

    def within(self) -> np.ndarray:
        """``S_w`` (D, D), formed explicitly (for checks and small D)."""
        v = self.within_basis
        return (v * self.within_evals) @ v.T


def class_stats(x: np.ndarray, y: np.ndarray) -> ClassStats:
    classes, idx = np.unique(y, return_inverse=True)
    counts = np.bincount(idx).astype(np.float64)
    means = np.zeros((classes.size, x.shape[1]))
    np.add.at(means, idx, x)
    means /= counts[:, None]
    r = x - means[idx]  # S_w = RᵀR/N = Σ_k (n_k/N)(1/n_k) Σ_{i∈k} r_i r_iᵀ

    # one BLAS thread: on the shared 2-core machine threaded LAPACK measured
    # up to 100x slower on these small problems (as in _hscore)
    with threadpool_limits(limits=1, user_api="blas"):
        _, sv, vt = np.linalg.svd(r, full_matrices=False)
    return ClassStats(classes, idx, counts / x.shape[0], means, sv**2 / x.shape[0], vt.T)


def shrunk_inverse_times(st: ClassStats, lam: float, m: np.ndarray) -> np.ndarray:
    """``S̃_w⁻¹ mᵀ`` as rows (K, D) for ``m`` (K, D), ``S̃_w = (1 − λ)S_w + λ(tr S_w/D) I``
    (scikit-learn's ``shrunk_covariance``), in the eigenbasis of ``S_w``."""
    c = lam * st.within_mean
    if not c > 0:
        raise ValueError(
            "features: the within-class covariance is zero (every example "
            "equals its class mean); the shrunk covariance is singular"
        )
    v = st.within_basis
    coords = m @ v  # (K, r)
    out = (coords / ((1.0 - lam) * st.within_evals + c)) @ v.T
    if v.shape[1] < v.shape[0]:
        # the D − r directions outside span(V), where S̃_w = c I. (When V spans
        # R^D the residual m − VVᵀm is rounding noise only, which 1/c ≈ 1e10
        # would amplify: it is left out.)
        out += (m - coords @ v.T) / c
    return out


def log_posteriors(x: np.ndarray, st: ClassStats, coef: np.ndarray) -> np.ndarray:
    """``log p(k|x)`` (N, K) of the shared-covariance Gaussian classifier with
    ``coef`` = rows ``Σ⁻¹μ_k``: softmax over k of
    ``xᵀΣ⁻¹μ_k − ½ μ_kᵀΣ⁻¹μ_k + log π_k``."""
    logits = x @ coef.T - 0.5 * np.einsum("kd,kd->k", st.means, coef) + np.log(st.priors)
    return log_softmax(logits, axis=1)


def shrunk_log_posteriors(x: np.ndarray, st: ClassStats, lam: float) -> np.ndarray:
    """:func:`log_posteriors` with ``Σ = S̃_w`` (shrinkage λ)."""
    return log_posteriors(x, st, shrunk_inverse_times(st, lam, st.means))


def require_two_classes(st: ClassStats, name: str = "labels") -> None:
    if st.classes.size < 2:
        raise ValueError(f"{name}: needs at least 2 classes with examples, got {st.classes.size}")
