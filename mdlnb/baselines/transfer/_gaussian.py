"""PACTran-Gaussian (PACTran Sec. 3.4, Eq. 13–14, App. A.3).

Prior ``θ ~ N(0, σ0² I_P)`` on the linear softmax head ``θ = (W, b)``,
posterior ``N(θ_q, σ_q² I_P)``, λ = β/σ0². Minimising the second-order
bound (Eq. 13) over ``σ_q²`` gives ``σ0²/σ*² = 1 + β Tr∇²L̂(θ*) / P``; putting
it back, the ``σ_q² Tr∇²L̂/2`` term cancels against part of the KL and

    PT-Gauss = L̂(θ*) + ‖θ*‖²/(2β)  +  P σ0²/(2β) · log(1 + β Tr∇²L̂(θ*)/P)
               ╰──── RER (= LINEAR) ───╯   ╰───────── FR (flatness) ─────────╯

with the factor ½ in FR that follows from Eq. 13 (App. A.3's Eq. 19 drops
it). θ* minimises RER only (the paper's convex approximation). The bias is
part of θ: regularised like W and counted, so ``P = C·(D+1)`` (``C·D``
with ``bias=False``). Values are nats per example; lower is better.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from mdlnb.baselines.transfer import _softmax
from mdlnb.baselines.transfer import _validate as v

# Imported inside the functions that use them, so that importing this module does not load
# them: scipy.stats.

BETA_FACTORS = (0.1, 1.0, 10.0)
SIGMA0_FACTORS = (1.0, 10.0, 100.0, 1000.0)


@dataclasses.dataclass(frozen=True)
class PactranGaussianResult:
    """PT-Gauss and its parts (nats per example).

    Attributes:
      value: ``rer + fr``.
      rer: ``L̂(θ*) + ‖θ*‖²/(2β)``; loss: ``L̂(θ*)``.
      fr: flatness regulariser ``P σ0²/(2β) log(σ0²/σ*²)``.
      hessian_trace: ``Tr ∇²L̂(θ*)``; num_params: P.
      beta, sigma0_sq: the hyperparameters used (absolute values).
      iterations, converged: of the L-BFGS fit of θ*.
    """

    value: float
    rer: float
    fr: float
    loss: float
    hessian_trace: float
    num_params: int
    beta: float
    sigma0_sq: float
    iterations: int
    converged: bool


def flatness(hessian_trace: float, num_params: int, beta: float, sigma0_sq: float) -> float:
    """FR term ``P σ0²/(2β) · log(1 + β·Tr/P)`` (nats)."""
    return float(num_params * sigma0_sq / (2 * beta) * np.log1p(beta * hessian_trace / num_params))


def _inputs(features: Any, labels: Any, num_classes: int | None):
    f = v.features(features, keep_float32=True)
    y, c = v.labels(labels, f.shape[0], num_classes)
    return f, y, c


def _result(f, c, fit, beta, s0, bias, tr=None) -> PactranGaussianResult:
    p = c * (f.shape[1] + int(bias))
    tr = _softmax.hessian_trace(f, fit.params, bias) if tr is None else tr
    fr = flatness(tr, p, beta, s0)
    rer = fit.loss + fit.penalty
    return PactranGaussianResult(
        rer + fr, rer, fr, fit.loss, tr, p, beta, s0, fit.iterations, fit.converged
    )


def pactran_gaussian_result(
    features: Any,
    labels: Any,
    *,
    num_classes: int | None = None,
    beta_factor: float = 10.0,
    sigma0_factor: float = 100.0,
    bias: bool = True,
) -> PactranGaussianResult:
    """PT-Gauss with ``β = beta_factor·N``, ``σ0² = sigma0_factor/D`` (PT-Gauss-fix: 10, 100)."""
    f, y, c = _inputs(features, labels, num_classes)
    n, d = f.shape
    beta = v.positive(beta_factor, "beta_factor") * n
    s0 = v.positive(sigma0_factor, "sigma0_factor") / d
    return _result(f, c, _softmax.fit(f, y, c, beta, bias=bias), beta, s0, bias)


def pactran_gaussian(
    features: Any,
    labels: Any,
    *,
    num_classes: int | None = None,
    beta_factor: float = 10.0,
    sigma0_factor: float = 100.0,
    bias: bool = True,
) -> float:
    """PACTran-Gaussian, nats per example, lower is better (see module doc).

    Defaults are the paper's PT-Gauss-fix: ``β = 10N``, ``σ0² = 100/D``.
    """
    return pactran_gaussian_result(
        features,
        labels,
        num_classes=num_classes,
        beta_factor=beta_factor,
        sigma0_factor=sigma0_factor,
        bias=bias,
    ).value


def pactran_gaussian_grid(
    features: Any,
    labels: Any,
    *,
    num_classes: int | None = None,
    beta_factors: Sequence[float] = BETA_FACTORS,
    sigma0_factors: Sequence[float] = SIGMA0_FACTORS,
    bias: bool = True,
) -> dict[tuple[float, float], float]:
    """PT-Gauss over the paper's grid ``β ∈ {0.1,1,10}·N``, ``σ0² ∈ {1,10,100,1000}/D``.

    Returns ``{(beta_factor, sigma0_factor): value}``. θ* depends on β only,
    so there is one fit per β (warm-started from the previous β). The paper
    picks the grid point per study with :func:`select_by_kendall`.
    """
    f, y, c = _inputs(features, labels, num_classes)
    n, d = f.shape
    bfs = sorted(v.positive(b, "beta_factors") for b in beta_factors)
    sfs = [v.positive(s, "sigma0_factors") for s in sigma0_factors]
    if not bfs or not sfs:
        raise ValueError("beta_factors/sigma0_factors: must be non-empty")
    out: dict[tuple[float, float], float] = {}
    init = None
    for bf in bfs:
        fit = _softmax.fit(f, y, c, bf * n, bias=bias, init=init)
        init = fit.params
        tr = _softmax.hessian_trace(f, fit.params, bias)
        for sf in sfs:
            out[(bf, sf)] = _result(f, c, fit, bf * n, sf / d, bias, tr).value
    return out


def select_by_kendall(
    scores: Mapping[Hashable, Mapping[Hashable, float]], reference: Mapping[Hashable, float]
) -> Hashable:
    """Grid key whose scores best agree with ``reference`` across checkpoints.

    ``scores[checkpoint][key]`` (e.g. from :func:`pactran_gaussian_grid`),
    ``reference[checkpoint]`` (e.g. LINEAR-VALID loss; both lower-is-better).
    Returns the key maximising Kendall's τ_b between the two over the
    checkpoints — the PT-Gauss-grid and LINEAR selection of PACTran Sec. 4.1.4.
    Ties go to the first key in order.
    """
    from scipy.stats import kendalltau

    ckpts = list(reference)
    if len(ckpts) < 2:
        raise ValueError("reference: needs at least 2 checkpoints")
    missing = [k for k in ckpts if k not in scores]
    if missing:
        raise ValueError(f"scores: missing checkpoints {missing}")
    keys = list(scores[ckpts[0]])
    ref = [reference[k] for k in ckpts]
    best, best_tau = None, -np.inf
    for key in keys:
        tau = kendalltau([scores[k][key] for k in ckpts], ref).statistic
        tau = -np.inf if np.isnan(tau) else tau
        if tau > best_tau:
            best, best_tau = key, tau
    return best
