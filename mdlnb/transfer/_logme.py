"""LogME (You et al. 2021): log marginal evidence of Bayesian linear regression.

For each class ``k`` the one-hot column ``y_k`` is regressed on the raw
features ``F`` (N, D) (no centring, no bias, as in the reference method)
under ``w ~ N(0, α⁻¹ I_D)``, ``y | w ~ N(Fw, β⁻¹ I_N)``. The evidence

    L(α, β) = N/2 log β + D/2 log α − N/2 log 2π − β/2 ‖Fm − y‖² − α/2 ‖m‖²
              − 1/2 log det(α I_D + β FᵀF),     m = β (αI + βFᵀF)⁻¹ Fᵀ y,

is maximised by MacKay's fixed point ``γ = Σ_j βσ_j/(α + βσ_j)``,
``α ← γ/‖m‖²``, ``β ← (N − γ)/‖Fm − y‖²``. ``σ_j`` are the D eigenvalues
of ``FᵀF``: when N < D only N are non-zero and the remaining D − N zeros
still contribute ``log α`` each to the determinant (the padding several
public implementations omit). Everything runs in the eigenbasis of the
smaller Gram matrix, float64.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from mdlnb.transfer import _gram
from mdlnb.transfer import _validate as v

_LOG_2PI = float(np.log(2 * np.pi))


@dataclasses.dataclass(frozen=True)
class LogMEResult:
    """Per-class evidences and hyperparameters.

    Attributes:
      value: LogME, mean over classes of ``L_k / N`` (nats per example).
      evidence: (C,) ``L_k`` in nats (total, not per example).
      alpha, beta: (C,) maximising prior and noise precisions.
      iterations: fixed-point iterations until every class met ``tol``.
      converged: whether that happened within ``max_iter``.
    """

    value: float
    evidence: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray
    iterations: int
    converged: bool


def log_evidence(sigma: np.ndarray, z: np.ndarray, rest: np.ndarray, n: int, d: int,
                 alpha: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """``L(α, β)`` per class (nats), from the spectrum.

    Args:
      sigma: (r,) eigenvalues of ``FᵀF`` whose eigenvectors span the column
        space basis ``U`` (r ≤ D; the other D − r eigenvalues are zero).
      z: (C, r) coordinates ``Uᵀ y_k``.
      rest: (C,) ``‖y_k‖² − ‖Uᵀ y_k‖²``, the part of ``y_k`` outside
        ``span(U)`` (exactly 0 when N ≤ D).
      alpha, beta: (C,) precisions.

    Written as ``−½ Σ_j log(α/β + σ_j) + (N−r)/2 log β + r/2 log α`` so that
    it stays exact as β → ∞ (the interpolating limit reached when N < D).
    """
    a, b = alpha[:, None], beta[:, None]
    r = sigma.size
    lam = a / b                                  # α/β; all terms in λ so β → ∞ cannot overflow
    den = lam + sigma
    beta_res = a[:, 0] * np.sum(lam * z ** 2 / den ** 2, axis=1) + beta * rest  # β‖Fm − y‖²
    alpha_mm = a[:, 0] * np.sum(sigma * z ** 2 / den ** 2, axis=1)             # α‖m‖²
    return (-0.5 * np.sum(np.log(den), axis=1) + 0.5 * (n - r) * np.log(beta)
            + 0.5 * r * np.log(alpha) - 0.5 * n * _LOG_2PI - 0.5 * beta_res - 0.5 * alpha_mm)


# Fixed-point starts (α, β): the reference method's (1, 1), plus a strong
# prior with noisy labels and a weak prior with clean labels.
STARTS = ((1.0, 1.0), (1e4, 1.0), (1.0, 1e4))


def fixed_point(sigma: np.ndarray, z: np.ndarray, rest: np.ndarray, n: int, d: int,
                alpha: np.ndarray, beta: np.ndarray, tol: float, max_iter: int):
    """MacKay's fixed point from ``(alpha, beta)`` for every row of ``z``;
    returns ``(evidence, alpha, beta, iterations, converged)``."""
    ev = log_evidence(sigma, z, rest, n, d, alpha, beta)
    it, converged = 0, False
    while it < max_iter:
        it += 1
        # Everything in λ = α/β: when N ≤ D a class can be interpolated, the
        # evidence is maximal as β → ∞, and β² or N − γ taken as a difference
        # (γ → N) overflow or cancel, sending the evidence to NaN.
        lam = (alpha / beta)[:, None]
        den = lam + sigma
        gamma = np.sum(sigma / den, axis=1)
        n_minus_gamma = (n - sigma.size) + np.sum(lam / den, axis=1)   # N − γ, term by term
        mm = np.sum(sigma * z ** 2 / den ** 2, axis=1)                  # ‖m‖²
        res = np.sum((lam * z / den) ** 2, axis=1) + rest               # ‖Fm − y‖²
        alpha = gamma / np.maximum(mm, 1e-300)
        beta = np.minimum(n_minus_gamma / np.maximum(res, 1e-300), 1e300)
        new_ev = log_evidence(sigma, z, rest, n, d, alpha, beta)
        done = np.all(np.abs(new_ev - ev) <= tol * n)
        ev = new_ev
        if done:
            converged = True
            break
    return ev, alpha, beta, it, converged


def logme_result(features: Any, labels: Any, *, num_classes: int | None = None,
                 tol: float = 1e-10, max_iter: int = 10_000) -> LogMEResult:
    """LogME with the fixed point iterated until every ``|ΔL_k|/N < tol`` nats; see module doc."""
    f = v.features(features)
    y, c = v.labels(labels, f.shape[0], num_classes)
    tol = v.positive(tol, "tol")
    n, d = f.shape
    onehot = np.zeros((n, c))
    onehot[np.arange(n), y] = 1.0
    sp = _gram.spectrum(f)
    sigma = sp.evals
    z = sp.left_coords(f, onehot).T                    # (C, r)
    if sp.left is not None:                            # U spans R^N: nothing outside
        rest = np.zeros(c)
    else:
        rest = np.maximum(onehot.sum(axis=0) - np.sum(z ** 2, axis=1), 0.0)
    # The evidence can have several local maxima in (α, β) (e.g. an
    # interpolating β → ∞ branch next to a finite-noise one when N ≤ D): run
    # the fixed point from each start in STARTS and keep each class's best.
    s_count = len(STARTS)
    a0 = np.repeat([a for a, _ in STARTS], c)
    b0 = np.repeat([b for _, b in STARTS], c)
    ev, alpha, beta, it, converged = fixed_point(sigma, np.tile(z, (s_count, 1)),
                                                 np.tile(rest, s_count), n, d, a0, b0,
                                                 tol, max_iter)
    best = np.nanargmax(np.where(np.isfinite(ev), ev, -np.inf).reshape(s_count, c), axis=0)
    pick = best * c + np.arange(c)
    ev, alpha, beta = ev[pick], alpha[pick], beta[pick]
    return LogMEResult(float(np.mean(ev) / n), ev, alpha, beta, it, converged)


def logme(features: Any, labels: Any, *, num_classes: int | None = None,
          tol: float = 1e-10, max_iter: int = 10_000) -> float:
    """LogME, nats per example (mean over classes of ``L_k/N``), higher is better.

    Knobs: fixed-point starts :data:`STARTS` (the reference method's
    ``α = β = 1`` and two more; each class keeps its highest evidence), stop when no class's evidence
    moves by more than ``tol`` nats per example, at most ``max_iter``
    iterations. See :func:`logme_result`.
    """
    return logme_result(features, labels, num_classes=num_classes, tol=tol,
                        max_iter=max_iter).value
