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
public implementations omit). Two limits are taken in closed form: a
class orthogonal to the features (all-zero features included) has its
supremum at α → ∞, ``N/2 log β − β/2 ‖y‖² − N/2 log 2π`` at
``β = N/‖y‖²``; a class the features fit exactly while rank(F) < N has
unbounded evidence (+inf). Everything runs in the eigenbasis of the
smaller Gram matrix, float64.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from mdlnb.baselines.transfer import _gram
from mdlnb.baselines.transfer import _validate as v
from mdlnb.core._checks import check_same_length, check_targets

_LOG_2PI = float(np.log(2 * np.pi))


@dataclasses.dataclass(frozen=True)
class LogMEResult:
    """Per-class evidences and hyperparameters.

    Attributes:
      value: LogME, mean over classes of ``L_k / N`` (nats per example),
        over the classes that have an example.
      evidence: (C,) ``L_k`` in nats (total, not per example); NaN for a
        class in ``[0, C)`` with no example (its all-zero column is fit
        exactly as β → ∞: the evidence is unbounded), +inf for a class
        whose one-hot column the features fit exactly while rank(F) < N
        (unbounded too; ``value`` is then +inf).
      alpha, beta: (C,) maximising prior and noise precisions (NaN where the
        evidence is NaN; α NaN and β +inf where it is +inf; α +inf for a
        class orthogonal to the features).
      iterations: fixed-point iterations until every class met ``tol``.
      converged: whether that happened within ``max_iter``.
    """

    value: float
    evidence: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray
    iterations: int
    converged: bool


def log_evidence(
    sigma: np.ndarray,
    z: np.ndarray,
    rest: np.ndarray,
    n: int,
    d: int,
    alpha: np.ndarray,
    beta: np.ndarray,
) -> np.ndarray:
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
    lam = a / b  # α/β; all terms in λ so β → ∞ cannot overflow
    den = lam + sigma
    beta_res = a[:, 0] * np.sum(lam * z**2 / den**2, axis=1) + beta * rest  # β‖Fm − y‖²
    alpha_mm = a[:, 0] * np.sum(sigma * z**2 / den**2, axis=1)  # α‖m‖²
    return (
        -0.5 * np.sum(np.log(den), axis=1)
        + 0.5 * (n - r) * np.log(beta)
        + 0.5 * r * np.log(alpha)
        - 0.5 * n * _LOG_2PI
        - 0.5 * beta_res
        - 0.5 * alpha_mm
    )


# Fixed-point starts (α, β): the reference method's (1, 1), plus a strong
# prior with noisy labels and a weak prior with clean labels. Each is run
# twice: as written, and with α times the features' scale s = ‖F‖²_F / D
# (the mean eigenvalue of FᵀF). LogME is invariant to F → cF (α absorbs
# c²), and the fixed point from α·s is exactly the fixed point for F/√s
# from α; from the fixed α alone, features of scale 1e-8 stopped after two
# iterations on a flat stretch of the evidence, far from its maximum.
STARTS = ((1.0, 1.0), (1e4, 1.0), (1.0, 1e4))


def fixed_point(
    sigma: np.ndarray,
    z: np.ndarray,
    rest: np.ndarray,
    n: int,
    d: int,
    alpha: np.ndarray,
    beta: np.ndarray,
    tol: float,
    max_iter: int,
):
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
        n_minus_gamma = (n - sigma.size) + np.sum(lam / den, axis=1)  # N − γ, term by term
        mm = np.sum(sigma * z**2 / den**2, axis=1)  # ‖m‖²
        res = np.sum((lam * z / den) ** 2, axis=1) + rest  # ‖Fm − y‖²
        alpha = gamma / np.maximum(mm, 1e-300)
        beta = np.minimum(n_minus_gamma / np.maximum(res, 1e-300), 1e300)
        new_ev = log_evidence(sigma, z, rest, n, d, alpha, beta)
        done = np.all(np.abs(new_ev - ev) <= tol * n)
        ev = new_ev
        if done:
            converged = True
            break
    return ev, alpha, beta, it, converged


def logme_result(
    features: Any,
    labels: Any,
    *,
    num_classes: int | None = None,
    tol: float = 1e-10,
    max_iter: int = 10_000,
) -> LogMEResult:
    """LogME with the fixed point iterated until every ``|ΔL_k|/N < tol`` nats; see module doc."""
    f = v.features(features)
    y, c = v.labels(labels, f.shape[0], num_classes)
    tol = v.positive(tol, "tol")
    n = f.shape[0]
    counts = np.bincount(y, minlength=c)
    seen = np.flatnonzero(counts)  # classes with an example
    onehot = np.zeros((n, seen.size))
    onehot[np.arange(n), np.searchsorted(seen, y)] = 1.0
    ev, al, be, it, converged = _column_evidence(f, onehot, tol, max_iter)
    # a class with no example: its all-zero column is fit exactly as β → ∞, so
    # its evidence is unbounded too; it is NaN here and left out of the mean
    evidence, alphas, betas = (np.full(c, np.nan) for _ in range(3))
    evidence[seen], alphas[seen], betas[seen] = ev, al, be
    return LogMEResult(float(np.mean(evidence[seen]) / n), evidence, alphas, betas, it, converged)


def logme_regression_result(
    features: Any, targets: Any, *, tol: float = 1e-10, max_iter: int = 10_000
) -> LogMEResult:
    """LogME of real targets (You et al. 2021, the regression mode): the same evidence
    ``L(α, β)``, maximised per target column ``y_p`` of ``targets`` (N,) or (N, P),
    taken as given (no centring, no bias, like the features: append a constant
    feature or centre the targets to let the model have an intercept); ``value``
    is the mean of ``L_p / N`` over the P columns, nats per example (higher is
    better). ``evidence``/``alpha``/``beta`` are (P,). Its evidence is the log
    marginal density of the targets under Bayesian linear regression with the
    maximising (α, β): a density, defined like every regression codelength of
    this package only up to the targets' quantisation (:mod:`mdlnb.core._targets`)."""
    f = v.features(features)
    y = check_targets(targets, "targets")
    check_same_length(f, y, "features", "targets")
    tol = v.positive(tol, "tol")
    cols = y[:, None] if y.ndim == 1 else y
    ev, al, be, it, converged = _column_evidence(f, cols, tol, max_iter)
    return LogMEResult(float(np.mean(ev) / f.shape[0]), ev, al, be, it, converged)


def logme_regression(
    features: Any, targets: Any, *, tol: float = 1e-10, max_iter: int = 10_000
) -> float:
    """LogME of real targets, nats per example, higher is better
    (:func:`logme_regression_result`)."""
    return logme_regression_result(features, targets, tol=tol, max_iter=max_iter).value


def _column_evidence(f: np.ndarray, cols: np.ndarray, tol: float, max_iter: int):
    """The maximised evidence of each column of ``cols`` (N, C) regressed on ``f`` (N, D):
    ``(evidence, alpha, beta, iterations, converged)``, each (C,) but the last two
    (see the module docstring for the exact and orthogonal limits)."""
    n, d = f.shape
    counts = np.sum(cols * cols, axis=0)  # ‖y_k‖² (the class count when one-hot)
    seen = np.arange(cols.shape[1])
    onehot = cols
    sp = _gram.spectrum(f)
    sigma = sp.evals
    z = sp.left_coords(f, onehot).T  # (C, r)
    if sp.left is not None:  # U spans R^N: nothing outside
        rest = np.zeros(seen.size)
    else:
        rest = np.maximum(counts - np.sum(z**2, axis=1), 0.0)
    # A class fit exactly by rank(F) < N features has unbounded evidence (β → ∞:
    # the residual stays 0 while det(FFᵀ/α + I/β) → 0 along the N − rank
    # directions F misses): +inf, without the fixed point. "Exactly": the part
    # of y_k outside the eigenvectors with σ above eigh's resolution
    # (σ_max · max(N, D) · eps) is below 1e-12 ‖y_k‖².
    # A class orthogonal to the features (F = 0 included) is best coded
    # without them: the evidence rises to its α → ∞ limit
    # N/2 log β − β/2 ‖y_k‖² − N/2 log 2π, largest at β = N/‖y_k‖² (the fixed
    # point only creeps towards it, and from α = 0/0 when F = 0).
    null = sigma <= (sigma.max(initial=0.0) * max(n, d) * np.finfo(np.float64).eps)
    outside = rest + np.sum(z[:, null] ** 2, axis=1)
    tiny = 1e-12 * counts[seen]
    exact = (np.count_nonzero(~null) < n) & (outside <= tiny)
    orth = ~exact & (np.sum(z[:, ~null] ** 2, axis=1) <= tiny)
    fit, z, rest = seen[~exact & ~orth], z[~exact & ~orth], rest[~exact & ~orth]
    c_fit = fit.size
    # The evidence can have several local maxima in (α, β) (e.g. an
    # interpolating β → ∞ branch next to a finite-noise one when N ≤ D): run
    # the fixed point from each start in STARTS and keep each class's best.
    scale = float(np.sum(sigma)) / d
    starts = [(a * t, b) for t in ((1.0, scale) if scale > 0 else (1.0,)) for a, b in STARTS]
    s_count = len(starts)
    a0 = np.repeat([a for a, _ in starts], c_fit)
    b0 = np.repeat([b for _, b in starts], c_fit)
    ev, alpha, beta, it, converged = fixed_point(
        sigma, np.tile(z, (s_count, 1)), np.tile(rest, s_count), n, d, a0, b0, tol, max_iter
    )
    best = (
        np.nanargmax(np.where(np.isfinite(ev), ev, -np.inf).reshape(s_count, c_fit), axis=0)
        if c_fit
        else np.zeros(0, np.int64)
    )
    pick = best * c_fit + np.arange(c_fit)
    evidence, alphas, betas = (np.full(seen.size, np.nan) for _ in range(3))
    evidence[fit], alphas[fit], betas[fit] = ev[pick], alpha[pick], beta[pick]
    evidence[seen[exact]] = betas[seen[exact]] = np.inf
    b = n / counts[seen[orth]]
    evidence[seen[orth]] = 0.5 * n * (np.log(b) - 1.0 - _LOG_2PI)  # β‖y_k‖² = N
    alphas[seen[orth]], betas[seen[orth]] = np.inf, b
    return evidence, alphas, betas, it, converged


def logme(
    features: Any,
    labels: Any,
    *,
    num_classes: int | None = None,
    tol: float = 1e-10,
    max_iter: int = 10_000,
) -> float:
    """LogME, nats per example (mean of ``L_k/N`` over the classes that have an
    example), higher is better.

    Knobs: fixed-point starts :data:`STARTS` (the reference method's
    ``α = β = 1`` and two more, each also with α times the features' scale;
    each class keeps its highest evidence), stop when no class's evidence
    moves by more than ``tol`` nats per example, at most ``max_iter``
    iterations. See :func:`logme_result`.
    """
    return logme_result(features, labels, num_classes=num_classes, tol=tol, max_iter=max_iter).value
