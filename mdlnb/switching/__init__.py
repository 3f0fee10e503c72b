"""Stage 2: switching between readout models (paper Sec. 3, Eq. 1–2, Alg. 1–2).

Given a loss matrix L (N, K), L[t, k] = −log p_k(y_t | x_t; θ_k(D_<t)) in
nats, a switching strategy is an HMM prior over which expert ξ_t predicts
example t; the codelength −log Σ_ξ Π_t p_{ξ_t}(y_t) p(ξ_t | ξ_{t−1}) is
computed exactly by the forward algorithm.

    codelength(losses, strategy) -> SwitchResult      # whole matrix
    streaming(strategy, K).update(chunk)               # chunks as they come
    init_state(strategy, K); step(strategy, state, rows)   # pure, for lax.scan

Strategies (priors documented on each class): BayesianMixture,
ElementwiseMixture, FixedShare (constant α or α_t = (m−1)/t, paper Eq. 2),
SwitchDistribution (switch times π_T(t) = 1/(t(t−1)), geometric number of
blocks), RunLength (power-law run lengths with doubling tail phases);
``get_strategy(name, **kw)`` by name. Units: nats; results also give bits.

Modules: ``strategies`` (priors and transitions), ``forward`` (the compiled
forward pass and its pytree state), ``batch`` (``codelength``), ``stream``
(``Stream``), ``result`` (``SwitchResult``), ``prior_cost``
(``never_switch_cost``: the guaranteed regret bound vs one expert), ``divergence``
(``diverged``: experts whose losses became NaN/inf, read as +inf by the forward pass).
"""

from mdlnb.switching.batch import codelength
from mdlnb.switching.divergence import DivergenceWarning, diverged
from mdlnb.switching.forward import SwitchState, init_state, step, uses_linear_kernel
from mdlnb.switching.prior_cost import never_switch_cost, never_switch_curve
from mdlnb.switching.pruned import codelength_pruned
from mdlnb.switching.result import SwitchResult
from mdlnb.switching.strategies import (
    DEFAULT_M,
    BayesianMixture,
    ElementwiseMixture,
    FixedShare,
    RunLength,
    SwitchDistribution,
    get_strategy,
    names,
)
from mdlnb.switching.stream import Stream, codelength_chunked, streaming

__all__ = [
    "DEFAULT_M",
    "BayesianMixture",
    "DivergenceWarning",
    "ElementwiseMixture",
    "FixedShare",
    "RunLength",
    "Stream",
    "SwitchDistribution",
    "SwitchResult",
    "SwitchState",
    "codelength",
    "codelength_chunked",
    "codelength_pruned",
    "diverged",
    "get_strategy",
    "init_state",
    "names",
    "never_switch_cost",
    "never_switch_curve",
    "step",
    "streaming",
    "uses_linear_kernel",
]
