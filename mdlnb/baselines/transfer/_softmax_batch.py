"""Many L2-regularised softmax fits of one shape in one compiled JAX program.

The objective of :mod:`mdlnb.baselines.transfer._softmax` (LINEAR, LINEAR-VALID and
PACTran-Gaussian share it), per problem ``b``:

    J_b(θ) = Σ_i ω_bi CE(softmax(x_bi W + b), y_bi) + ‖θ‖²_F / (2β_b),   θ = (W, b),

for a stack of B problems of one shape — features (B, N, D), labels (B, N),
example weights ω (B, N) summing to 1 per problem (a 0 weight drops a row, so
the two folds of LINEAR-VALID and the full subsample share one shape), and
β (B,). All B are minimised together by L-BFGS (``memory`` curvature pairs;
along each direction the best of a fixed set of step sizes, all evaluated at
once, under Armijo's condition) in float64 (``jax.enable_x64`` for the call
only), in compiled segments of iterations over the whole stack: a problem stops
when the largest entry of its gradient is below ``gtol`` (scipy L-BFGS-B's
``pgtol``, the criterion of :func:`mdlnb.baselines.transfer._softmax.fit`), when no step
lowers J (round-off), or at ``max_iter``;
a stopped problem's iterate is frozen while the others go on, and once at most
a quarter of the stack still runs, the finished ones leave it (so a few slow
problems do not keep the whole stack computing).

Where the scipy fit and this one both meet ``gtol``, their objective values
agree to within ``‖g‖² β / 2`` each (J is 1/β-strongly convex), their
parameters to within ``β ‖g‖`` each (``tests/test_transfer_batch.py`` checks
both on real features).
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import numpy as np

from mdlnb.infra import _xla_cache

# Imported inside the functions that use them, so that importing this module does not load
# them: JAX.


class BatchFit(NamedTuple):
    """Minimisers of a stack of ``J_b`` (NumPy, float64).

    Attributes:
      params: (B, D + bias, C); the last row is the bias if ``bias``.
      loss: (B,) weighted cross-entropy at ``params`` (nats).
      penalty: (B,) ``‖θ‖²/(2β)`` (nats).
      hessian_trace: (B,) ``Tr ∇²_θ`` of the weighted cross-entropy at ``params``
        (PACTran Eq. 20–21, the weights in place of 1/N).
      grad_max: (B,) largest gradient entry at the end.
      iterations: (B,) L-BFGS iterations; converged: (B,) ``grad_max <= gtol``.
    """

    params: np.ndarray
    loss: np.ndarray
    penalty: np.ndarray
    hessian_trace: np.ndarray
    grad_max: np.ndarray
    iterations: np.ndarray
    converged: np.ndarray


def _augment(x, bias: bool):
    import jax.numpy as jnp

    if not bias:
        return x
    return jnp.concatenate([x, jnp.ones(x.shape[:-1] + (1,), x.dtype)], axis=-1)


def _objective(theta, x, target, beta):
    """J of one problem: ``x`` (N, D') augmented, ``target`` (N, C) = ω one-hot."""
    import jax

    lp = jax.nn.log_softmax(x @ theta, axis=-1)
    return -(lp * target).sum() + 0.5 * (theta * theta).sum() / beta


#: Step sizes tried at once along each search direction (the best is taken).
_STEPS = (2.0, 1.0, 0.5, 0.25, 0.1, 0.03, 1e-2, 1e-3, 1e-4, 1e-6)
#: Iterations per compiled call; between calls the finished problems leave the stack.
SEGMENT = 32


def _value_grad(theta, x, target, beta):
    """J (B,), its gradient (B, D', C) and the logits (B, N, C) of a stack of problems."""
    import jax
    import jax.numpy as jnp

    z = jnp.einsum("bnd,bdc->bnc", x, theta)
    lp = jax.nn.log_softmax(z, axis=-1)
    w = target.sum(-1, keepdims=True)
    sq = (theta * theta).sum((1, 2))
    f = -(lp * target).sum((1, 2)) + 0.5 * sq / beta
    g = jnp.einsum("bnd,bnc->bdc", x, jnp.exp(lp) * w - target) + theta / beta[:, None, None]
    return f, g, z


def _direction(g, S, Y, rho, gamma, it, memory: int):
    """L-BFGS two-loop recursion over the ``memory`` newest pairs (slot ``(it-1-j) % m``)."""
    dot = lambda a, b: (a * b).sum((1, 2))  # noqa: E731
    q, alphas = g, []
    for j in range(memory):
        k = (it - 1 - j) % memory
        a = rho[:, k] * dot(S[:, k], q)
        q = q - a[:, None, None] * Y[:, k]
        alphas.append(a)
    r = gamma[:, None, None] * q
    for j in reversed(range(memory)):
        k = (it - 1 - j) % memory
        bb = rho[:, k] * dot(Y[:, k], r)
        r = r + (alphas[j] - bb)[:, None, None] * S[:, k]
    return -r


class _Carry(NamedTuple):
    """The batched L-BFGS state (problem axis first, except the shared iteration ``it``)."""

    theta: Any
    f: Any
    g: Any
    z: Any
    S: Any
    Y: Any
    rho: Any
    gamma: Any
    done: Any
    its: Any
    it: Any


def _step(c: _Carry, x, target, beta, steps, memory: int) -> _Carry:
    """One L-BFGS iteration of every problem not done: the two-loop direction, the best of
    ``steps`` along it (a problem with no step meeting Armijo's condition stops: J cannot
    go lower than round-off), the curvature pair (kept when sᵀy > 0)."""
    import jax
    import jax.numpy as jnp

    bsz, w = x.shape[0], target.sum(-1)
    p = _direction(c.g, c.S, c.Y, c.rho, c.gamma, c.it, memory)
    gp = (c.g * p).sum((1, 2))
    p = jnp.where((gp < 0)[:, None, None], p, -c.g)  # not a descent direction
    gp = (c.g * p).sum((1, 2))
    zp = jnp.einsum("bnd,bdc->bnc", x, p)
    tp, pp, sq = (c.theta * p).sum((1, 2)), (p * p).sum((1, 2)), (c.theta**2).sum((1, 2))
    zs = c.z[:, None] + steps[None, :, None, None] * zp[:, None]  # (B, L, N, C)
    ce = (w[:, None] * jax.nn.logsumexp(zs, axis=-1)).sum(-1) - (zs * target[:, None]).sum((2, 3))
    fs = ce + 0.5 * (sq[:, None] + 2 * steps * tp[:, None] + steps**2 * pp[:, None]) / beta[:, None]
    best = jnp.argmin(fs, axis=1)
    a = steps[best]
    armijo = jnp.take_along_axis(fs, best[:, None], 1)[:, 0] <= c.f + 1e-4 * a * gp
    moved = armijo & ~c.done
    theta_n = c.theta + a[:, None, None] * p
    f_n, g_n, z_n = _value_grad(theta_n, x, target, beta)
    s, y = theta_n - c.theta, g_n - c.g
    sy, yy = (s * y).sum((1, 2)), (y * y).sum((1, 2))
    good = moved & (sy > 1e-12 * jnp.sqrt(yy) * jnp.sqrt((s * s).sum((1, 2))))
    k = c.it % memory
    sel = lambda new, old: jnp.where(  # noqa: E731
        moved.reshape((bsz,) + (1,) * (new.ndim - 1)), new, old
    )
    g = sel(g_n, c.g)
    return _Carry(
        sel(theta_n, c.theta),
        sel(f_n, c.f),
        g,
        sel(z_n, c.z),
        c.S.at[:, k].set(jnp.where(good[:, None, None], s, 0.0)),
        c.Y.at[:, k].set(jnp.where(good[:, None, None], y, 0.0)),
        c.rho.at[:, k].set(jnp.where(good, 1.0 / jnp.where(good, sy, 1.0), 0.0)),
        jnp.where(good, sy / jnp.where(good, yy, 1.0), c.gamma),
        c.done | ~armijo,
        c.its + (~c.done).astype(jnp.int32),
        c.it + 1,
    )


@functools.lru_cache(maxsize=16)
def _programs(memory: int):
    """Jitted ``init(x, target, beta, theta0, gtol) -> _Carry`` and ``segment(carry, x,
    target, beta, gtol, stop) -> _Carry`` (iterations until every problem is done or the
    shared count reaches ``stop``)."""
    import jax
    import jax.numpy as jnp

    _xla_cache.ensure()
    steps = jnp.asarray(_STEPS)

    @jax.jit
    def init(x, target, beta, theta0, gtol):
        bsz = x.shape[0]
        f0, g0, z0 = _value_grad(theta0, x, target, beta)
        zeros = jnp.zeros((bsz, memory) + theta0.shape[1:], theta0.dtype)
        return _Carry(
            theta0,
            f0,
            g0,
            z0,
            zeros,
            zeros,
            jnp.zeros((bsz, memory), theta0.dtype),
            jnp.ones(bsz, theta0.dtype),
            jnp.max(jnp.abs(g0), (1, 2)) <= gtol,
            jnp.zeros(bsz, jnp.int32),
            jnp.int32(0),
        )

    @jax.jit
    def segment(carry, x, target, beta, gtol, stop):
        def body(c):
            c = _step(c, x, target, beta, steps, memory)
            return c._replace(done=c.done | (jnp.max(jnp.abs(c.g), (1, 2)) <= gtol))

        return jax.lax.while_loop(lambda c: jnp.any(~c.done) & (c.it < stop), body, carry)

    return init, segment


def _solve(x, target, beta, theta0, gtol: float, max_iter: int, memory: int):
    """``(theta, iterations)`` of every problem: compiled segments of :data:`SEGMENT`
    iterations; after a segment that leaves at most a quarter of the stack running, the
    finished problems leave it (the rest padded to a power of two, so few shapes compile)."""
    import jax.numpy as jnp

    init, segment = _programs(memory)
    b = x.shape[0]
    theta_out, its_out = np.zeros(theta0.shape), np.zeros(b, np.int64)
    active = np.arange(b)
    carry = init(x, target, beta, theta0, gtol)
    data = (x, target, beta)
    while True:
        stop = min(int(carry.it) + SEGMENT, max_iter)
        carry = segment(carry, *data, gtol, jnp.int32(stop))
        done = np.asarray(carry.done)[: len(active)]
        finished = done | (stop >= max_iter)
        theta = np.asarray(carry.theta)[: len(active)]
        its = np.asarray(carry.its)[: len(active)]
        theta_out[active[finished]] = theta[finished]
        its_out[active[finished]] = its[finished]
        if finished.all():
            return theta_out, its_out
        if (~done).sum() * 4 <= len(done):  # compact the stack
            keep = np.flatnonzero(~done)
            size = 1 << int(np.ceil(np.log2(len(keep))))
            pick = np.concatenate([keep, np.full(size - len(keep), keep[0])])
            carry = _Carry(*[a if np.ndim(a) == 0 else a[pick] for a in carry])
            carry = carry._replace(done=carry.done.at[len(keep) :].set(True))
            data = tuple(a[pick] for a in data)
            active = active[keep]


def fit_batch(
    x: Any,
    y: Any,
    num_classes: int,
    beta: Any,
    *,
    weight: Any = None,
    bias: bool = True,
    init: Any = None,
    gtol: float = 1e-8,
    max_iter: int = 5000,
    memory: int = 10,
) -> BatchFit:
    """Minimise ``J_b`` for every problem of a stack (module docstring).

    Args:
      x: features (B, N, D), finite.
      y: labels (B, N) in ``[0, num_classes)``.
      num_classes: C.
      beta: (B,) or a scalar, > 0.
      weight: (B, N) ≥ 0, each row with a positive sum (normalised to 1); default 1/N.
      bias: a regularised intercept, counted in θ.
      init: (B, D + bias, C) starting points (default zeros).
      gtol, max_iter: as :func:`mdlnb.baselines.transfer._softmax.fit`.
      memory: curvature pairs (scipy's fit keeps 20; fewer pairs cost less memory
        traffic per iteration and reach the same optimum).
    """
    import jax
    import jax.numpy as jnp

    x = np.asarray(x, np.float64)
    if x.ndim != 3 or x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(f"x: expected a (B, N, D) stack of features, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("x: contains NaN or inf")
    b, n, d = x.shape
    y = np.asarray(y)
    if y.shape != (b, n) or not np.issubdtype(y.dtype, np.integer):
        raise ValueError(f"y: expected integer labels of shape {(b, n)}, got {y.dtype} {y.shape}")
    c = int(num_classes)
    if c < 2 or y.min() < 0 or y.max() >= c:
        raise ValueError(f"y: labels must lie in [0, num_classes={c}) with num_classes >= 2")
    beta = np.broadcast_to(np.asarray(beta, np.float64), (b,)).copy()
    if not np.all(np.isfinite(beta) & (beta > 0)):
        raise ValueError(f"beta: must be finite and > 0, got {beta}")
    w = np.full((b, n), 1.0 / n) if weight is None else np.asarray(weight, np.float64)
    if w.shape != (b, n) or np.any(w < 0) or np.any(w.sum(1) <= 0) or not np.all(np.isfinite(w)):
        raise ValueError(
            f"weight: expected (B, N) = {(b, n)} non-negative rows with positive "
            f"sums, got shape {w.shape}"
        )
    w = w / w.sum(1, keepdims=True)
    target = np.zeros((b, n, c))
    np.put_along_axis(target, y[..., None], w[..., None], axis=2)
    dp = d + int(bias)
    theta0 = np.zeros((b, dp, c)) if init is None else np.asarray(init, np.float64)
    if theta0.shape != (b, dp, c):
        raise ValueError(f"init: expected shape {(b, dp, c)}, got {theta0.shape}")
    with jax.enable_x64(True):
        xa = _augment(jnp.asarray(x), bias)
        theta, it = _solve(
            xa,
            jnp.asarray(target),
            jnp.asarray(beta),
            jnp.asarray(theta0),
            jnp.float64(gtol),
            int(max_iter),
            int(memory),
        )
        loss, penalty, tr, gmax = _summaries(xa, jnp.asarray(target), jnp.asarray(beta), theta)
        out = BatchFit(
            np.asarray(theta),
            np.asarray(loss),
            np.asarray(penalty),
            np.asarray(tr),
            np.asarray(gmax),
            np.asarray(it),
            np.asarray(gmax) <= gtol,
        )
    return out


@functools.lru_cache(maxsize=1)
def _summaries_fn():
    import jax
    import jax.numpy as jnp

    def one(x, target, beta, theta):
        lp = jax.nn.log_softmax(x @ theta, axis=-1)
        p = jnp.exp(lp)
        w = target.sum(-1)
        loss = -(lp * target).sum()
        penalty = 0.5 * (theta * theta).sum() / beta
        tr = (w * (x * x).sum(-1) * (p * (1 - p)).sum(-1)).sum()
        g = jax.grad(_objective)(theta, x, target, beta)
        return loss, penalty, tr, jnp.max(jnp.abs(g))

    return jax.jit(jax.vmap(one))


def _summaries(x, target, beta, theta):
    """Loss, penalty, Hessian trace (Eq. 20–21 with weights) and largest gradient entry."""
    return _summaries_fn()(x, target, beta, theta)
