"""LINEAR and LINEAR-VALID (PACTran Sec. 4.1.4): linear softmax probes as metrics.

LINEAR is the regularised training objective ``L̂(θ*) + ‖θ*‖²/(2β)`` of the
probe of :mod:`mdlnb.baselines.transfer._softmax`; LINEAR-VALID the 2-fold validation
cross-entropy, minimised over a β grid. Both in nats per example, lower is
better transfer. ``β = beta_factor · N`` with N the training-set size.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mdlnb.baselines.transfer import _softmax
from mdlnb.baselines.transfer import _validate as v

BETA_FACTORS = (0.1, 1.0, 10.0)


def linear(
    features: Any,
    labels: Any,
    *,
    num_classes: int | None = None,
    beta_factor: float = 1.0,
    bias: bool = True,
) -> float:
    """LINEAR: ``min_θ (1/N)Σ CE + ‖θ‖²/(2β)``, ``β = beta_factor·N``; nats/example, lower is better.

    ``bias`` adds a regularised intercept (counted in θ). The paper picks
    ``beta_factor`` from {0.1, 1, 10} per study; the default here is 1.
    """
    f = v.features(features, keep_float32=True)
    y, c = v.labels(labels, f.shape[0], num_classes)
    beta = v.positive(beta_factor, "beta_factor") * f.shape[0]
    fit = _softmax.fit(f, y, c, beta, bias=bias)
    return fit.loss + fit.penalty


def two_folds(labels: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Stratified halves of ``range(N)``.

    Examples are listed class by class, each class in a seeded random order,
    and dealt alternately to the two folds: fold sizes differ by at most 1
    and each class's counts by at most 1.
    """
    rng = np.random.default_rng(seed)
    order = np.concatenate(
        [rng.permutation(np.flatnonzero(labels == k)) for k in np.unique(labels)]
    )
    return np.sort(order[0::2]), np.sort(order[1::2])


def linear_valid_losses(
    features: Any,
    labels: Any,
    *,
    num_classes: int | None = None,
    beta_factors: Sequence[float] = BETA_FACTORS,
    bias: bool = True,
    seed: int = 0,
) -> dict[float, float]:
    """2-fold validation cross-entropy (nats/example) for each ``beta_factor``.

    Each fold trains on one half (``β = beta_factor · N_train``) and is
    scored on the other; the two validation losses are averaged weighted by
    fold size.
    """
    f = v.features(features, keep_float32=True)
    y, c = v.labels(labels, f.shape[0], num_classes)
    if f.shape[0] < 2:
        raise ValueError(f"features: LINEAR-VALID needs at least 2 examples, got {f.shape[0]}")
    factors = [v.positive(b, "beta_factors") for b in beta_factors]
    if not factors:
        raise ValueError("beta_factors: is empty")
    fa, fb = two_folds(y, seed)
    folds = ((fa, fb), (fb, fa))
    out = {}
    warm = [None, None]
    # Strongest regularisation first; each fit starts from the previous β's
    # optimum on the same fold (the objective is strictly convex, so only the
    # iteration count changes).
    for bf in sorted(factors):
        total = 0.0
        for j, (tr, va) in enumerate(folds):
            fit = _softmax.fit(f[tr], y[tr], c, bf * len(tr), bias=bias, init=warm[j])
            warm[j] = fit.params
            total += _softmax.mean_ce(f[va], y[va], fit.params, bias) * len(va)
        out[bf] = total / len(y)
    return {bf: out[bf] for bf in factors}


def linear_valid(
    features: Any,
    labels: Any,
    *,
    num_classes: int | None = None,
    beta_factors: Sequence[float] = BETA_FACTORS,
    bias: bool = True,
    seed: int = 0,
) -> float:
    """LINEAR-VALID: the lowest 2-fold validation cross-entropy over ``beta_factors``; lower is better.

    Folds from :func:`two_folds` (stratified, seeded); see
    :func:`linear_valid_losses`.
    """
    return min(
        linear_valid_losses(
            features,
            labels,
            num_classes=num_classes,
            beta_factors=beta_factors,
            bias=bias,
            seed=seed,
        ).values()
    )
