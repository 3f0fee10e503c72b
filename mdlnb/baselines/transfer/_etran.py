"""ETran: energy-based transferability (Gholami et al., ICCV 2023).

"ETran: Energy-Based Transferability Estimation"; code mgholamikn/ETran
(``metrics.py``: ``Energy_Score``, ``LDA_Score``; ``tw.py``: the
combination; commit d4551ed). For classification ETran adds two scores of
the target features ``x`` (N, D):

* **energy** ``S_en``: the features are read as logits of an energy-based
  model, ``−E(x) = log Σ_d exp(x_d)`` (temperature 1); a high ``−E`` means
  the target data look in-distribution to the source model. The code
  averages ``−E`` over the ``fraction`` of examples with the *lowest* ``−E``
  (``Energy_Score(X, 0.5, 'bot')``: 0.5 %, i.e. ``⌊5N/1000⌋`` examples —
  none, a NaN, when N < 200; mdlnb takes at least one).
  ``fraction=1`` averages every example. Nats.
* **classification** ``S_cls``: the mean true-class probability
  ``(1/N) Σ_i p(y_i|x_i)`` of LDA (shared covariance
  ``S̃_w = (1 − λ) S_w + λ (tr S_w/D) I``, ``λ = max(exp(−5 σ_max(S_w)), 1e-10)``,
  the regularised FDA of SFDA, :mod:`mdlnb.baselines.transfer._sfda`). In ``[0, 1]``.

The paper's overall score ``T_m`` combines an energy, an LDA-based
classification and an SVD-based regression score; for classification mdlnb
returns ``ETran = S_en + S_cls`` per model (``S_reg`` is not computed; the
paper's full text, and with it the exact weighting of ``T_m``, was not
available here). Higher is better.

Code vs paper: the code's ``LDA._solve_eigen`` calls the *symmetric*
solver ``np.linalg.eigh`` on the non-symmetric ``S̃_w⁻¹ S_b`` and keeps all D
eigenvectors; eigh returns an orthonormal basis ``U`` of whatever it
decomposes, so ``coef = μ U Uᵀ = μ`` and the "LDA" is a nearest-mean rule
with identity covariance, ``softmax_k(xᵀμ_k − ½‖μ_k‖² + log π_k)``. mdlnb
follows the paper (LDA); ``covariance="identity"`` gives the code's rule.
The code ranks models by ``0.15·minmax(S_en) + 0.85·minmax(S_cls)``
across the candidate models (``tw.py``), not by a per-model sum: use
:func:`etran_combine` for that ranking. The energy fraction (0.5 %, lowest
tail) is the code's; ``fraction=1`` gives the mean over all examples.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.special import logsumexp

from mdlnb.baselines.transfer import _lda
from mdlnb.baselines.transfer import _validate as v

COVARIANCES = ("lda", "identity")


@dataclasses.dataclass(frozen=True)
class ETranResult:
    """``value = energy + classification``; ``shrinkage`` the λ of the LDA
    (None for ``covariance="identity"``); ``n_energy`` examples averaged."""

    value: float
    energy: float
    classification: float
    shrinkage: float | None
    n_energy: int


def etran_energy(features: Any, *, fraction: float = 0.005) -> tuple[float, int]:
    """``S_en``: mean of ``log Σ_d exp(x_d)`` over the ``⌊fraction·N⌋`` (≥ 1)
    examples where it is lowest; returns ``(S_en, count)``."""
    x = v.features(features)
    frac = v.fraction(fraction, "fraction")
    lse = np.sort(logsumexp(x, axis=1))
    m = max(int(np.floor(frac * len(lse) + 1e-9)), 1)
    return float(lse[:m].mean()), m


def etran_classification(
    features: Any,
    labels: Any,
    *,
    num_classes: int | None = None,
    covariance: str = "lda",
    a: float = 5.0,
) -> tuple[float, float | None]:
    """``S_cls`` and the shrinkage used: mean true-class probability of the
    shared-covariance Gaussian rule (module doc)."""
    x = v.features(features)
    y, _ = v.labels(labels, x.shape[0], num_classes)
    if covariance not in COVARIANCES:
        raise ValueError(f"covariance: expected one of {COVARIANCES}, got {covariance!r}")
    a = v.positive(a, "a")
    st = _lda.class_stats(x, y)
    _lda.require_two_classes(st)
    if covariance == "identity":
        lam = None
        logp = _lda.log_posteriors(x, st, st.means)
    else:
        lam = max(float(np.exp(-a * st.sigma_max)), 1e-10)
        logp = _lda.shrunk_log_posteriors(x, st, lam)
    return float(np.mean(np.exp(logp[np.arange(x.shape[0]), st.index]))), lam


def etran_result(
    features: Any,
    labels: Any,
    *,
    num_classes: int | None = None,
    fraction: float = 0.005,
    covariance: str = "lda",
) -> ETranResult:
    """ETran and its two scores; see the module doc."""
    en, m = etran_energy(features, fraction=fraction)
    cls, lam = etran_classification(
        features, labels, num_classes=num_classes, covariance=covariance
    )
    return ETranResult(en + cls, en, cls, lam, m)


def etran(
    features: Any,
    labels: Any,
    *,
    num_classes: int | None = None,
    fraction: float = 0.005,
    covariance: str = "lda",
) -> float:
    """ETran (Gholami et al. 2023) for classification, ``S_en + S_cls``, higher is
    better (module doc)."""
    return etran_result(
        features, labels, num_classes=num_classes, fraction=fraction, covariance=covariance
    ).value


def minmax(values: Sequence[float], name: str) -> np.ndarray:
    """``(v − min v)/(max v − min v)`` across models; all-equal values give zeros."""
    a = v.features(np.asarray(values, dtype=np.float64)[None, :], name)[0]
    span = a.max() - a.min()
    return np.zeros_like(a) if span == 0 else (a - a.min()) / span


def etran_combine(
    energy: Sequence[float],
    classification: Sequence[float],
    *,
    weights: tuple[float, float] = (0.15, 0.85),
) -> np.ndarray:
    """The authors' ranking score across candidate models (``tw.py``):
    ``w_en·minmax(S_en) + w_cls·minmax(S_cls)``, one value per model."""
    e, c = minmax(energy, "energy"), minmax(classification, "classification")
    if e.shape != c.shape:
        raise ValueError(
            f"classification: expected {e.shape[0]} values to match energy, got {c.shape[0]}"
        )
    return weights[0] * e + weights[1] * c
