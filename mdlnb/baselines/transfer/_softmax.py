"""L2-regularised linear softmax classifier, fitted by L-BFGS (scipy).

Objective (nats per example), shared by LINEAR, LINEAR-VALID and
PACTran-Gaussian (PACTran Eq. 14, first two terms):

    J(θ) = Σ_i ω_i CE(softmax(x_i W + b), y_i) + ‖θ‖²_F / (2β),   θ = (W, b),

with example weights ``ω_i = 1/N`` unless given. With ``bias=True`` the
bias is part of θ: regularised like the weights and counted as a parameter
(a constant-1 feature column). This matches
``sklearn.linear_model.LogisticRegression(C=β/N, fit_intercept=False)`` on
``[x, 1]``. ``params`` is (D + bias, C), the bias in the last row. Reported
loss, penalty and Hessian trace are evaluated in float64.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy.special import log_softmax
from threadpoolctl import threadpool_limits

# Imported inside the functions that use them, so that importing this module does not load
# them: scipy.optimize.

# Above this many feature entries the two matrix products per evaluation run
# in float32 (they are memory-bound: half the bytes); the loss and gradient
# are accumulated in float64 either way.
_F64_MAX_ENTRIES = 4_000_000


@dataclasses.dataclass(frozen=True)
class SoftmaxFit:
    """Minimiser of ``J`` and its parts.

    Attributes:
      params: (D + bias, C) float64; the last row is the bias if ``bias``.
      loss: weighted cross-entropy on the training data at ``params`` (nats).
      penalty: ``‖θ‖²/(2β)`` (nats).
      iterations: L-BFGS iterations; converged: scipy's success flag (a
        tolerance met before ``max_iter``).
    """

    params: np.ndarray
    loss: float
    penalty: float
    iterations: int
    converged: bool


def logits(x: np.ndarray, params: np.ndarray, bias: bool) -> np.ndarray:
    """``x W + b`` (N, C) float64."""
    if bias:
        return (x @ params[:-1].astype(x.dtype)).astype(np.float64) + params[-1]
    return (x @ params.astype(x.dtype)).astype(np.float64)


def mean_ce(x: np.ndarray, y: np.ndarray, params: np.ndarray, bias: bool) -> float:
    """Mean cross-entropy of ``softmax(logits)`` at labels ``y`` (nats)."""
    lp = log_softmax(logits(x, params, bias), axis=1)
    return float(-np.mean(lp[np.arange(len(y)), y]))


def fit(
    x: np.ndarray,
    y: np.ndarray,
    c: int,
    beta: float,
    *,
    bias: bool = True,
    init: np.ndarray | None = None,
    weight: np.ndarray | None = None,
    gtol: float = 1e-8,
    max_iter: int = 5000,
    memory: int = 20,
) -> SoftmaxFit:
    """Minimise ``J`` over ``params`` for features ``x`` (N, D), labels ``y`` in [0, c).

    scipy L-BFGS-B (``memory`` pairs) from ``init`` (zeros by default),
    stopping when the largest gradient entry is below ``gtol``, when the
    relative decrease of ``J`` reaches machine precision, or after
    ``max_iter`` iterations. ``weight`` (N,) ≥ 0 replaces the uniform ``1/N``
    example weights (normalised to sum to 1). BLAS runs single-threaded
    inside the solver: L-BFGS-B's many tiny BLAS calls are ~50× slower with
    a contended thread pool.
    """
    from scipy.optimize import minimize

    n, d = x.shape
    dp = d + int(bias)
    wt = np.full(n, 1.0 / n) if weight is None else np.asarray(weight, np.float64) / np.sum(weight)
    target = np.zeros((n, c))
    target[np.arange(n), y] = wt
    dt = np.float64 if x.size <= _F64_MAX_ENTRIES else np.float32
    xm = np.ascontiguousarray(x, dtype=dt)

    def fun(flat: np.ndarray) -> tuple[float, np.ndarray]:
        w = flat.reshape(dp, c)
        lp = log_softmax(logits(xm, w, bias), axis=1)
        g = np.exp(lp) * wt[:, None] - target
        grad = w / beta
        grad[:d] += (xm.T @ g.astype(dt)).astype(np.float64)
        if bias:
            grad[d] += g.sum(axis=0)
        return -np.sum(lp * target) + 0.5 * np.sum(w * w) / beta, grad.ravel()

    w0 = np.zeros(dp * c) if init is None else np.asarray(init, np.float64).ravel()
    with threadpool_limits(limits=1, user_api="blas"):
        res = minimize(
            fun,
            w0,
            jac=True,
            method="L-BFGS-B",
            options=dict(maxiter=max_iter, gtol=gtol, ftol=1e-14, maxcor=memory),
        )
    w = res.x.reshape(dp, c)
    lp = log_softmax(logits(x.astype(np.float64, copy=False), w, bias), axis=1)
    loss = float(-np.sum(lp * target))
    return SoftmaxFit(w, loss, float(0.5 * np.sum(w * w) / beta), int(res.nit), bool(res.success))


def hessian_trace(x: np.ndarray, params: np.ndarray, bias: bool) -> float:
    """``Tr ∇²_θ L̂`` of the mean cross-entropy (PACTran Eq. 20–21), float64.

    ``(1/N) Σ_i (‖x_i‖² + bias) Σ_k p_ik (1 − p_ik)``: Eq. 20 for W, Eq. 21
    for the bias.
    """
    p = np.exp(log_softmax(logits(x, params, bias), axis=1))
    sq = np.einsum("nd,nd->n", x, x, dtype=np.float64) + float(bias)
    return float(np.mean(sq * np.sum(p * (1 - p), axis=1)))
