"""Shared pieces of the Fisher/LDA-based metrics (SFDA, ETran, NCTI).

Classes are the labels that occur (an empty class in ``[0, C)`` has no
mean); ``priors`` are their frequencies. Covariances use 1/N (``bias=1``).
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy.special import log_softmax


@dataclasses.dataclass(frozen=True)
class ClassStats:
    """``classes`` (K,) labels that occur; ``index`` (N,) position of each
    example's class in ``classes``; ``priors`` (K,); ``means`` (K, D);
    ``within`` (D, D) ``Σ_k π_k cov_k`` (1/n_k each)."""

    classes: np.ndarray
    index: np.ndarray
    priors: np.ndarray
    means: np.ndarray
    within: np.ndarray


def class_stats(x: np.ndarray, y: np.ndarray) -> ClassStats:
    classes, idx = np.unique(y, return_inverse=True)
    counts = np.bincount(idx).astype(np.float64)
    means = np.zeros((classes.size, x.shape[1]))
    np.add.at(means, idx, x)
    means /= counts[:, None]
    r = x - means[idx]
    within = r.T @ r / x.shape[0]            # Σ_k (n_k/N) · (1/n_k) Σ_{i∈k} r_i r_iᵀ
    return ClassStats(classes, idx, counts / x.shape[0], means, within)


def shrink(s: np.ndarray, lam: float) -> np.ndarray:
    """``(1 − λ) S + λ (tr S / D) I`` (scikit-learn's ``shrunk_covariance``)."""
    d = s.shape[0]
    out = (1.0 - lam) * s
    out.flat[:: d + 1] += lam * np.trace(s) / d
    return out


def gaussian_log_posteriors(x: np.ndarray, st: ClassStats, cov: np.ndarray) -> np.ndarray:
    """``log p(k|x)`` (N, K) of the shared-covariance Gaussian classifier:
    softmax over k of ``xᵀΣ⁻¹μ_k − ½ μ_kᵀΣ⁻¹μ_k + log π_k``."""
    coef = np.linalg.solve(cov, st.means.T).T              # μ_k Σ⁻¹
    logits = x @ coef.T - 0.5 * np.einsum("kd,kd->k", st.means, coef) + np.log(st.priors)
    return log_softmax(logits, axis=1)


def require_two_classes(st: ClassStats, name: str = "labels") -> None:
    if st.classes.size < 2:
        raise ValueError(f"{name}: needs at least 2 classes with examples, got {st.classes.size}")
