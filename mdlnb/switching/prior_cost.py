"""What a switching prior pays for the option to switch: the regret bound vs one expert.

For any strategy, the switching code of Eq. 1 sums over all expert sequences,
so it is at most the term of one sequence (paper App. A.1, Eq. 4, second
line). Taking that sequence to be one expert k throughout, and comparing with
expert k's *own* prequential code (so the plug-in term of Eq. 3 cancels):

    L_switch − L_k ≤ −log p(ξ_1 = … = ξ_N = k)          (nats, for every k)

a data-independent guarantee; with k the best single expert it bounds the
regret a :class:`mdlnb.Report` prints. For fixed share (Eq. 2, new block
expert drawn from w, first expert from p(ξ_1)):

    −log p(ξ_{1:N} = k) = −log p(ξ_1 = k) − Σ_{t=2}^N log(1 − α_t + α_t w_k)

and with w and p(ξ_1) uniform over K experts and α_t = min(1, (m − 1)/t):
log K + Σ_{t=2}^N −log(1 − α_t (K − 1)/K) ≈ log K + (m − 1) log N for
N ≫ m. The first term is the price of choosing among K experts, the second
the price of keeping the option to switch. (The paper's
m log K + (m − 1) log(N/(m − 1)) bounds the prior's cost of a comparator with
m − 1 switches instead.) Bayesian mixture: −log p(ξ_1 = k) (log K);
elementwise mixture: −log p(ξ_1 = k) − (N − 1) log w_k. Other strategies
(switch distribution, run-length) are computed exactly by their forward pass
on a two-column loss matrix: expert k with zero loss and "every other expert"
(prior weight 1 − w_k) with a loss no sequence can afford.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from mdlnb.core._checks import check_int
from mdlnb.switching.batch import codelength
from mdlnb.switching.strategies import BayesianMixture, ElementwiseMixture, FixedShare

_NEVER = 1.0e4  # nats per step: exp(−1e4) underflows to 0 in float32 and float64


def _check(n: int, num_experts: int, expert: int) -> None:
    check_int("n", n, minimum=1)
    check_int("num_experts", num_experts, minimum=1)
    check_int(
        "expert",
        expert,
        minimum=0,
        maximum=num_experts - 1,
        what=f"an integer in [0, {num_experts})",
    )


def never_switch_cost(strategy, n: int, num_experts: int, expert: int = 0) -> float:
    """``−log p(ξ_1 = … = ξ_n = expert)`` under ``strategy``'s prior, in nats.

    The switching code of any loss matrix with ``n`` rows and ``num_experts``
    columns is at most expert ``expert``'s own codelength plus this (module
    docstring): the guaranteed bound on the regret vs that single expert.
    """
    _check(n, num_experts, expert)
    log_first = float(strategy.log_first(num_experts)[expert])
    if isinstance(strategy, BayesianMixture):
        return -log_first
    log_w = float(strategy.log_weights(num_experts)[expert])
    if isinstance(strategy, ElementwiseMixture):
        return -log_first - (n - 1) * log_w
    if isinstance(strategy, FixedShare):
        alpha = _fixed_share_alpha(strategy, np.arange(2, n + 1, dtype=np.float64))
        stay = (1.0 - alpha) + alpha * math.exp(log_w)
        with np.errstate(divide="ignore"):
            return float(-log_first - np.sum(np.log(stay)))
    return _by_forward_pass(strategy, n, num_experts, expert)


def never_switch_curve(strategy, n: int, num_experts: int) -> np.ndarray:
    """(n,) −log p(ξ_1 = … = ξ_t = k) for t = 1..n, nats, under uniform weights: the
    running version of :func:`never_switch_cost` (its value at t = n, up to the order
    of summation), for the uniform prior of the closed-form strategies.

    * fixed share: log K − Σ_{s=2}^{t} log(1 − α_s + α_s/K), α_s = α or
      min(1, (m − 1)/s) (paper Eq. 2);
    * Bayesian mixture: log K;  elementwise mixture: t log K.

    The codelength of the first t examples under ``strategy`` exceeds the
    best single expert's by at most this (the mixture contains that path).
    """
    K, n = check_int("num_experts", num_experts, minimum=1), check_int("n", n, minimum=1)
    if (
        getattr(strategy, "weights", None) is not None
        or getattr(strategy, "initial", None) is not None
    ):
        raise ValueError("strategy: never_switch_curve assumes uniform weights and initial")
    t = np.arange(1, n + 1, dtype=np.float64)
    if isinstance(strategy, BayesianMixture):
        return np.full(n, math.log(K))
    if isinstance(strategy, ElementwiseMixture):
        return t * math.log(K)
    if isinstance(strategy, FixedShare):
        # the per-step term in log1p form (uniform w = 1/K), not never_switch_cost's
        # log(1 − α_t + α_t w_k): the two differ in the last float bit (≤ 9e-16 nats a
        # step), and both feed outputs that must stay bit-identical, so both forms stay
        step = -np.log1p(-_fixed_share_alpha(strategy, t) * (K - 1) / K)
        step[0] = 0.0
        return math.log(K) + np.cumsum(step)
    raise ValueError(f"strategy: no closed form for {type(strategy).__name__}")


def _fixed_share_alpha(strategy: FixedShare, t: np.ndarray) -> np.ndarray:
    """Fixed share's switching rate α_t into step t (float64): α, or min(1, (m − 1)/t)
    (paper Eq. 2); the one schedule of :func:`never_switch_cost` and
    :func:`never_switch_curve` (:meth:`FixedShare.alpha_at` is its float32 JAX twin)."""
    if strategy.alpha is not None:
        return np.full_like(t, strategy.alpha)
    return np.minimum(1.0, (strategy.m - 1.0) / t)  # type: ignore[operator]


def _by_forward_pass(strategy, n: int, num_experts: int, expert: int) -> float:
    def two(logp: np.ndarray) -> tuple[float, float]:
        p = math.exp(float(logp[expert]))
        return (p, max(0.0, 1.0 - p))

    changes = {}
    for f in ("weights", "initial"):
        if hasattr(strategy, f):
            src = strategy.log_weights if f == "weights" else strategy.log_first
            changes[f] = two(src(num_experts))
    two_column = dataclasses.replace(strategy, **changes)
    losses = np.zeros((n, 2), np.float32)
    losses[:, 1] = _NEVER
    return float(codelength(losses, two_column, posterior=False).total_nats)
