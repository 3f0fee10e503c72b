"""Linear-space forward pass for the switch distribution and the run-length model.

The log-space kernel (``forward._log_rows``) spends one ``exp``/``log`` per
state per step (and, for the switch distribution, a double-float
compensation); at K = 64 that is 40–160× one ``logsumexp`` over the matrix.
Here, as in the fixed-share linear kernel, each block of rows first gets
p_t = exp(c_t − L_t) with c_t = min_k L_t[k] in one vectorized pass, and the
scan over rows carries the normalized weights w over the (R, K) expanded
state in linear space::

    q = w · p_t (each row r),  z_t = Σ_{r,k} q,  f = q / z_t,  w ← T(f, t + 1)

with the strategy's transition T written in linear space (below, exactly the
HMMs of ``strategies.py``). The per-step loss is c_t − log z_t (nats).

Float32 range: a state below e^-87 of the step's total (an expert 87 nats
worse than the best on one example, say) drops to 0, as in the run-length
log kernel, whose docstring bounds the effect: both strategies give every
(row, expert) state fresh mass every step (switch distribution: θ·h_t·U_t·w_k
into the stable row and (1 − θ)·h_t·U_t·w_k into the unstable one, with the
unstable mass U_t ≥ Π(1 − 1/s) ≈ t^-1 never underflowing), and a dropped
state predicts like that fresh mass from then on, so no probability changes
by more than e^-87·N relative. Rounding: w is renormalized every step and
every update is a product or a sum of non-negative terms, so relative errors
grow like a random walk (float32 ε·√N), not with the magnitude of the log
weights as in log space; ``tests/test_switching_speed.py`` checks totals and
posteriors against float64 NumPy references and brute force.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax import lax

from mdlnb.switching._primitives import SwitchState, _kahan, _row_flags
from mdlnb.switching.strategies import RunLength, SwitchDistribution

_BLOCK = 256  # rows per vectorized exp block
# Rows per scan iteration (without, with the posterior), measured on XLA:CPU
# (jax 0.10, 2 cores, N = 10⁵, K = 64): the switch distribution's (2, K) step
# runs fastest rolled when no posterior row is stored (unroll 1: 2.8× a
# logsumexp, 8: 4.1×, 2: 5.6×) and unrolled when one is (1: 9–10×, 8: 5–6.5×);
# run-length's (R − 1 + J, K) step unrolled (8: 2.0× per state row, 1: 2.5×).
_UNROLL = {SwitchDistribution: (1, 8), RunLength: (8, 8)}


_MIN_INFLOW = 1e-20  # as forward._MIN_WEIGHT: fresh mass every state gets each step


def supports(strategy) -> bool:
    """Whether this kernel can compute ``strategy``'s type (switch distribution, run-length)."""
    return isinstance(strategy, (SwitchDistribution, RunLength))


def exact_for(strategy, num_experts: int) -> bool:
    """Whether the float32 linear kernel is exact for these numbers: every expert
    gets fresh mass every step (w_k ≥ 1e-20; the switch distribution with
    θ < 1, else its stable chain is a Bayesian mixture whose underflowed
    weights could never recover — that one runs in the compensated log kernel)."""
    if not supports(strategy):
        return False
    if isinstance(strategy, SwitchDistribution) and not strategy.stable < 1.0:
        return False
    return bool(np.exp(strategy.log_weights(num_experts).min()) >= _MIN_INFLOW)


def _step(strategy, p):
    """``step(q, h) -> (w_next, z)``: from the joint q = w · p_t (R, K) at step t − 1,
    the normalizer z = Σ q and T(q / z, t), the weights for step t (t ≥ 2);
    h = 1/t (used by the switch distribution only).

    The 1/z of the normalization is folded into per-row scalars, so each step is
    one multiply-add over the (R, K) state, not a division and then the
    transition. Switch distribution (row 0 the unstable chain, row 1 the stable
    one, h = 1/t): a block starts at t with mass a = h · Σ q₀ / z, spread by the
    prior w into both chains::

        w₀ ← (1 − h) q₀ / z + (1 − θ) a w,   w₁ ← q₁ / z + θ a w.
    """
    w = jnp.exp(p["log_w"])
    if isinstance(strategy, SwitchDistribution):
        theta = jnp.stack([1.0 - p["stable"], p["stable"]])

        def step(q, h):
            zz = jnp.sum(q, axis=1)  # mass in each chain: one reduction
            z = zz[0] + zz[1]
            r = 1.0 / z
            keep = jnp.stack([(1.0 - h) * r, r])
            return q * keep[:, None] + (theta * (h * zz[0] * r))[:, None] * w, z

        return step
    h, a = strategy.chain()
    stay = jnp.asarray((1 - h) * (1 - a), jnp.float32)  # q stays
    move = jnp.asarray((1 - h) * a, jnp.float32)  # q → q + 1
    end = jnp.asarray(h, jnp.float32)  # a block ends → q = 0

    def step(q, h):
        z = jnp.sum(q)
        f = q * (1.0 / z)
        moved = jnp.concatenate([(jnp.sum(end[:, None] * f) * w)[None], move[:-1, None] * f[:-1]])
        return stay[:, None] * f + moved, z

    return step


def _block(strategy, p, w, t, L, valid, posterior: bool):
    """One block L (B, K) from normalized linear weights w (R, K) at step t + 1."""
    c = jnp.min(L, axis=1)
    c = jnp.where(jnp.isfinite(c), c, 0.0)
    P = jnp.exp(c[:, None] - L)
    steps = t + 2 + jnp.cumsum(valid.astype(jnp.int32)) - valid.astype(jnp.int32)
    step = _step(strategy, p)

    def row(w, inp):
        pt, h, ok = inp
        new, z = step(w * pt[None, :], h)
        return jnp.where(ok, new, w), (z, jnp.sum(w, axis=0) if posterior else None)

    h = 1.0 / steps.astype(jnp.float32)  # one division per row, outside the loop
    w, (z, ws) = lax.scan(row, w, (P, h, valid), unroll=_UNROLL[type(strategy)][posterior])
    return w, c - jnp.log(z), (jnp.log(ws) if posterior else None)


def rows(strategy, p, state, L, valid, posterior: bool):
    """Forward over L (n, K) from ``state`` (a ``forward.SwitchState``); same
    outputs as ``forward._log_rows``: (state, per_step, log_posterior, flags)."""
    n, K = L.shape
    B = min(_BLOCK, n)
    nb, rem = divmod(n, B)
    # The state holds log w as a double-float pair (hi, lo), log w = hi + lo to
    # first order: lo = w / exp(hi) − 1 keeps the linear weights exact across
    # chunks (the streaming and batch passes agree to float32 rounding).
    w0 = jnp.exp(state.log_weights) * (1.0 + state.log_weights_lo)

    def block(carry, Lk, vk):
        w, t, total, comp = carry
        Lk = jnp.where(jnp.isnan(Lk), jnp.inf, Lk)  # a diverged expert: probability 0
        w2, ps, ws = _block(strategy, p, w, t, Lk, vk, posterior)
        total2, comp2 = _kahan(total, comp, jnp.sum(jnp.where(vk, ps, 0.0)))
        return (w2, t + jnp.sum(vk.astype(jnp.int32)), total2, comp2), (ps, ws, _row_flags(Lk))

    def full(carry, i):
        return block(
            carry, lax.dynamic_slice_in_dim(L, i * B, B), lax.dynamic_slice_in_dim(valid, i * B, B)
        )

    carry = (w0, state.t, state.total, state.comp)
    carry, (ps, ws, fl) = lax.scan(full, carry, jnp.arange(nb))
    ps, fl = ps.reshape(-1), fl.reshape(-1)
    ws = ws.reshape(-1, K) if posterior else None
    if rem:
        pad = ((0, B - rem), (0, 0))
        carry, (ps2, ws2, fl2) = block(
            carry, jnp.pad(L[nb * B :], pad), jnp.pad(valid[nb * B :], pad[:1])
        )
        ps, fl = jnp.concatenate([ps, ps2[:rem]]), jnp.concatenate([fl, fl2[:rem]])
        ws = jnp.concatenate([ws, ws2[:rem]]) if ws is not None else None
    w, t, total, comp = carry
    hi = jnp.log(w)
    lo = jnp.where(w > 0, w / jnp.exp(hi) - 1.0, 0.0)
    return SwitchState(hi, lo, t, total, comp), ps, ws, fl
