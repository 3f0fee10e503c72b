"""Exact HMM forward pass over a loss matrix (paper Alg. 1–2), as pure JAX.

State (a pytree, so stage 1 can carry it through ``lax.scan``):
``SwitchState(log_weights, log_weights_lo, t, total, comp)`` — the normalized
log predictive distribution log p(state_{t+1} | D_{≤t}) over the strategy's
(R, K) expanded state (a double-float hi + lo pair in the log kernel), the number t of rows consumed, and their codelength in nats as a
Kahan-compensated float32 pair (the sum is ``total − comp``, see
``SwitchState.total_nats``).

The Bayesian and elementwise mixtures need no recursion over a chain and have
their own passes (``_mixtures.py``); the switch distribution and run-length
their linear-space kernel (``_linear_hmm.py``). Two kernels compute the
generic recursion:

* ``_log_rows``: the generic log-space recursion, one row per scan step:
  joint = log w − L_t, per-step loss = −logsumexp(joint), filter, transition.
* ``_linear_rows``: fixed share in linear space. Per block of rows, p = exp(c_t − L_t) with c_t = min_k L_t[k] is one
  vectorized pass; the scan carries only the normalized weights,
  w_{t+1} = (1 − α_{t+1})·w_t p_t / z_t + α_{t+1}·w, z_t = Σ_k w_t p_t; after
  the scan the per-step losses c_t − log z_t are one vectorized pass. Used when
  every weight stays ≥ 1e-20 (α_t·w_k and p(ξ_1)), so float32 underflow of
  exp(c_t − L_t) cannot change a result.

A NaN loss (what a diverged expert produces once its parameters overflow) is
read as +inf: the expert gives the label probability 0, so its filtered
weight p(ξ_t = k | D_≤t) is 0 and the mixture stays finite as long as some
expert with positive weight has a finite loss. (Under fixed share the
diverged expert still receives its α_t·w_k share of the prediction each step;
that share is lost, exactly as the HMM prescribes.)

Per-row flags (fused into the same pass) report negative and all-+inf rows so
the caller can raise a ValueError naming the step.
"""

from __future__ import annotations

import functools
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.nn import logsumexp

from mdlnb.infra import _xla_cache
from mdlnb.switching import _linear_hmm, _mixtures

# SwitchState and the flags are this module's public face (re-exported); the rest is used here.
from mdlnb.switching._primitives import (  # noqa: F401
    FLAG_ALL_INF,
    FLAG_NEGATIVE,
    SwitchState,
    _kahan,
    _row_flags,
    _two_sum,
)
from mdlnb.switching.strategies import ElementwiseMixture, FixedShare

# Linear kernel: rows per block whose exp(c − L) is one vectorized op (about 2^20
# entries, so that XLA:CPU splits it over its threads: 4,096 rows at K ≤ 256
# instead of the former 256 took fixed share with the posterior from 4.0× to
# 3.5× a logsumexp at N = 4·10⁵, K = 256), and rows per loop step when the
# posterior is stored (each step stores its G posterior rows at once; storing
# them row by row cost ~0.5 µs a row: 3.5× → 2.4×). Measured on XLA:CPU,
# jax 0.10, 2 cores (benchmarks/RESULTS.md).
_BLOCK_ENTRIES, _BLOCK_MIN, _BLOCK_MAX = 1 << 20, 256, 4096
_GROUP = 8
_MIN_WEIGHT = 1e-20  # linear kernel only when all weights stay above this


def init_state(strategy, num_experts: int) -> SwitchState:
    """Initial state: p(state_1) of ``strategy`` over ``num_experts`` experts."""
    if int(num_experts) < 1:
        raise ValueError(f"num_experts: must be >= 1, got {num_experts}")
    lw = jnp.asarray(strategy.log_initial(int(num_experts)), jnp.float32)
    zero = jnp.zeros((), jnp.float32)
    return SwitchState(lw, jnp.zeros_like(lw), jnp.zeros((), jnp.int32), zero, zero)


def start(strategy, num_experts: int) -> tuple:
    """``(strategy.params(K), init_state(strategy, K))``, built once per
    (strategy, K) and kept (strategies are frozen, JAX arrays immutable;
    an unhashable strategy object is built anew each time).

    Built in NumPy and moved in one ``jax.device_put``: the eager ``jnp``
    calls of ``params`` and ``init_state`` cost 1.1–1.7 ms per
    ``codelength`` call measured right after a large computation (each a
    small XLA execution), ~0.2× a ``logsumexp`` over a (10⁵, 64) matrix.
    The values are the same: float64 → float32 rounds to nearest either way.
    """
    k = int(num_experts)
    if k < 1:
        raise ValueError(f"num_experts: must be >= 1, got {num_experts}")
    try:
        hash(strategy)
    except TypeError:
        return _start.__wrapped__(strategy, k)
    return _start(strategy, k)


@functools.lru_cache(maxsize=64)
def _start(strategy, k: int) -> tuple:
    params = {name: np.asarray(v, np.float32) for name, v in strategy.params(k).items()}
    lw = np.asarray(strategy.log_initial(k), np.float32)
    zero = np.zeros((), np.float32)
    state = SwitchState(lw, np.zeros_like(lw), np.zeros((), np.int32), zero, zero)  # type: ignore[arg-type]
    return jax.device_put((params, state))


def uses_linear_kernel(strategy, num_experts: int, horizon: int = 2**31 - 1) -> bool:
    """Whether the linear-space kernel is exact in float32 for this strategy."""
    if isinstance(strategy, ElementwiseMixture):
        alpha = 1.0
    elif isinstance(strategy, FixedShare):
        alpha = strategy.min_alpha(horizon)
    else:  # the switch distribution and run-length have their own linear kernel
        return _linear_hmm.exact_for(strategy, num_experts)
    lw = strategy.log_weights(num_experts)
    l1 = strategy.log_first(num_experts)
    return bool(alpha * np.exp(lw.min()) >= _MIN_WEIGHT and np.exp(l1.min()) >= _MIN_WEIGHT)


def _alpha(strategy, t, p):
    if isinstance(strategy, ElementwiseMixture):
        return jnp.ones_like(jnp.asarray(t, jnp.float32))
    return strategy.alpha_at(t, p["rate"])


def _finite_max(joint):
    """max (of all entries; 0 if it is not finite): the shift that keeps the normalization
    exact when the losses are huge (|L| ≫ 1/ulp, e.g. 1e10 nats from a nearly
    diverged expert): joint − max is then computed exactly for the leading
    entries and the log-normalizer is a sum near 0, not a difference of two
    numbers near −1e10 (which lost the O(1) part and left the weights unnormalized)."""
    m = jnp.max(joint)
    return jnp.where(jnp.isfinite(m), m, 0.0)


def _log_rows(strategy, p, state: SwitchState, L, valid, posterior: bool):
    """Generic log-space forward over rows of L (n, K); ``valid`` masks padding.

    The log weights are a double-float pair (hi, lo): the rounding errors of
    log w − L_t and of the normalization are kept exactly in lo (two-sum) and
    carried through the transition to first order by ``jax.jvp``. Without
    this, a strategy with no mixing (Bayes, the stable chain of the switch
    distribution) accumulates float32 rounding over N steps (measured: 0.8%
    relative posterior error after 2·10^5 steps; with it, 8e-7). Strategies
    whose every state mixes each step (``strategy.compensated = False``) skip it."""

    def transition(f, t):
        return strategy.transition(f, t, p)

    def row(carry, inp):
        lw, lo, t, total, comp = carry
        raw, ok = inp
        raw = jnp.where(jnp.isnan(raw), jnp.inf, raw)  # a diverged expert: probability 0
        # Shift the row by its smallest finite loss c (the posterior is invariant, the
        # step loss is c − lz): exact weights even for huge losses (1e10–1e30 nats).
        c = -_finite_max(-raw)
        l, e0 = _two_sum(raw, -c)
        if strategy.compensated:
            joint, e1 = _two_sum(lw, -l[None, :])
            e1 = e1 - e0[None, :]
            m = _finite_max(joint)
            shifted, e2 = _two_sum(joint, -m)
            s_lo = jnp.where(jnp.isfinite(shifted), lo + e1 + e2, 0.0)
            rel = logsumexp(shifted + s_lo)
            f, e3 = _two_sum(shifted, -rel)
            f, f_lo = _two_sum(f, jnp.where(jnp.isfinite(f), s_lo + e3, 0.0))  # |lo| ≤ ulp(hi)
            lz = m + rel
            new, new_lo = jax.jvp(lambda x: transition(x, t + 2), (f,), (f_lo,))
            new_lo = jnp.where(jnp.isfinite(new) & jnp.isfinite(new_lo), new_lo, 0.0)
            hi2, lo2 = _two_sum(new, new_lo)
        else:
            joint = lw - l[None, :]
            m = _finite_max(joint)
            rel = logsumexp(joint - m)
            lz = m + rel
            hi2, lo2 = transition(joint - m - rel, t + 2), lo
        ps = c - lz
        total2, comp2 = _kahan(total, comp, jnp.where(ok, ps, 0.0))
        carry2 = (
            jnp.where(ok, hi2, lw),
            jnp.where(ok, lo2, lo),
            t + ok.astype(jnp.int32),
            total2,
            comp2,
        )
        out = (ps, logsumexp(lw, axis=0) if posterior else None, _row_flags(raw))
        return carry2, out

    carry, (ps, lp, flags) = lax.scan(row, tuple(state), (L, valid), unroll=1)
    return SwitchState(*carry), ps, lp, flags


def _block_rows(num_experts: int) -> int:
    """Rows per vectorized block: ~2^20 entries, a power of two in [256, 4096]."""
    b = 1 << max(0, (_BLOCK_ENTRIES // max(1, num_experts)).bit_length() - 1)
    return int(min(_BLOCK_MAX, max(_BLOCK_MIN, b)))


def head_rows(n: int, num_experts: int) -> int:
    """Rows in the linear kernel's first block of an n-row pass (``run_flat``'s ``head``)."""
    return min(_block_rows(num_experts), n)


def _linear_block(strategy, p, w, t, L, valid, posterior: bool):
    """Linear-space fixed share over one block L (B, K); w (K,) normalized."""
    L = jnp.where(jnp.isnan(L), jnp.inf, L)  # a diverged expert: probability 0
    c = jnp.min(L, axis=1)
    c = jnp.where(jnp.isfinite(c), c, 0.0)
    P = jnp.exp(c[:, None] - L)
    steps = t + 2 + jnp.cumsum(valid.astype(jnp.int32)) - valid.astype(jnp.int32)
    a = _alpha(strategy, steps, p)
    base = jnp.exp(p["log_w"])
    B, K = L.shape
    G = _GROUP if posterior and B % _GROUP == 0 else 1

    def rows(w, inp):  # G rows per loop step: the posterior rows are stored G at a time
        pg, ag, okg = inp
        zs, ws = [], []
        for g in range(G):
            q = w * pg[g]
            z = jnp.sum(q)
            new = q * ((1.0 - ag[g]) / z) + ag[g] * base
            ws.append(w)
            zs.append(z)
            w = jnp.where(okg[g], new, w)
        return w, (jnp.stack(zs), jnp.stack(ws) if posterior else None)

    w, (z, ws) = lax.scan(
        rows, w, (P.reshape(B // G, G, K), a.reshape(-1, G), valid.reshape(-1, G))
    )
    ps = c - jnp.log(z.reshape(B))
    return w, ps, (jnp.log(ws.reshape(B, K)) if posterior else None), _row_flags(L)


def _linear_rows(strategy, p, state: SwitchState, L, valid, posterior: bool):
    """Linear kernel over L (n, K): full blocks of ``_block_rows(K)`` rows are read
    in place with ``dynamic_slice`` (no copy of L), the last partial block is
    padded (a copy of fewer rows than a block)."""
    return _linear_flat(strategy, p, state, L.reshape(-1), None, 0, L.shape[1], valid, posterior)


def _linear_flat(
    strategy, p, state: SwitchState, flat, head, offset: int, K: int, valid, posterior: bool
):
    """``_linear_rows`` over losses given flat: entry (r, k) is
    ``flat[r·K + k − offset]`` (n = (flat.size + offset) / K rows). With
    ``offset`` > 0 the first ``offset`` entries are not in ``flat``: the
    first block, rows 0 … B − 1, is ``head`` (B, K) instead (a NumPy input
    read in place from its first 64-byte-aligned entry, see ``run_flat``)."""
    n = (flat.shape[0] + offset) // K
    B = head_rows(n, K)
    nb, rem = divmod(n, B)

    def rows_from(r, size):  # rows r … r + size − 1, read in place (r·K ≥ offset)
        return lax.dynamic_slice_in_dim(flat, r * K - offset, size * K).reshape(size, K)

    def block(carry, Lk, vk):
        w, t, total, comp = carry
        w2, ps, ws, fl = _linear_block(strategy, p, w, t, Lk, vk, posterior)
        total2, comp2 = _kahan(total, comp, jnp.sum(jnp.where(vk, ps, 0.0)))
        return (w2, t + jnp.sum(vk.astype(jnp.int32)), total2, comp2), (ps, ws, fl)

    # The (n, K) posterior is written block by block into one buffer carried
    # through the loop (updated in place): no stacked copy, no concatenation.
    def full(c, i):
        carry, lp = c
        vk = lax.dynamic_slice_in_dim(valid, i * B, B)
        carry, (ps, ws, fl) = block(carry, rows_from(i * B, B), vk)
        if posterior:
            lp = lax.dynamic_update_slice_in_dim(lp, ws, i * B, 0)
        return (carry, lp), (ps, fl)

    carry = (jnp.exp(state.log_weights[0]), state.t, state.total, state.comp)
    lp = jnp.zeros((n, K) if posterior else (0, K), jnp.float32)
    parts = []  # (per-step losses, flags) of the blocks, in row order
    if head is not None:  # block 0 from head, the loop from block 1
        carry, (ps0, ws0, fl0) = block(carry, head, valid[:B])
        parts.append((ps0, fl0))
        if posterior:
            lp = lax.dynamic_update_slice_in_dim(lp, ws0, 0, 0)
    loop_from = 0 if head is None else 1
    if nb > loop_from:
        (carry, lp), (ps, fl) = lax.scan(full, (carry, lp), jnp.arange(loop_from, nb))
        parts.append((ps.reshape(-1), fl.reshape(-1)))
    if rem:
        pad = ((0, B - rem), (0, 0))
        Lk = jnp.pad(
            lax.slice_in_dim(flat, nb * B * K - offset, n * K - offset).reshape(rem, K), pad
        )
        vk = jnp.pad(valid[nb * B :], pad[:1])
        carry, (ps2, ws2, fl2) = block(carry, Lk, vk)
        parts.append((ps2[:rem], fl2[:rem]))
        if posterior:
            lp = lax.dynamic_update_slice_in_dim(lp, ws2[:rem], nb * B, 0)
    ps, fl = (jnp.concatenate(a) if len(a) > 1 else a[0] for a in zip(*parts))
    w, t, total, comp = carry
    lw = jnp.log(w)[None, :]
    return SwitchState(lw, jnp.zeros_like(lw), t, total, comp), ps, (lp if posterior else None), fl


def _rows(strategy, p, state, L, valid, posterior, linear):
    # NaN (a diverged expert) is read as +inf inside each kernel, block by block:
    # no whole-matrix copy of L is made here.
    L = jnp.asarray(L, jnp.float32)
    if _mixtures.supports(strategy):  # Bayesian, elementwise: no chain (_mixtures.py)
        return _mixtures.rows(strategy, p, state, L, valid, posterior, linear)
    if linear and _linear_hmm.supports(
        strategy
    ):  # switch distribution, run-length (_linear_hmm.py)
        return _linear_hmm.rows(strategy, p, state, L, valid, posterior)
    kernel = _linear_rows if linear else _log_rows
    return kernel(strategy, p, state, L, valid, posterior)


@partial(jax.jit, static_argnames=("strategy", "posterior", "linear"))
def run_chunk(
    strategy, params, state: SwitchState, L, n_valid, n_skip=0, *, posterior: bool, linear: bool
):
    """Forward over a (padded) chunk L (C, K); rows ≥ ``n_valid`` and the first
    ``n_skip`` rows (already consumed: the last chunk of a longer input reuses
    rows of the one before instead of being padded) are ignored.

    ``strategy`` is static (pass ``s.skeleton()``), ``params = s.params(K)``
    traced. Returns (state, per_step (C,), log_posterior (C, K) or None, flags (C,)).
    """
    idx = jnp.arange(L.shape[0])
    valid = (idx < n_valid) & (idx >= n_skip)
    return _rows(strategy, params, state, L, valid, posterior, linear)


@partial(jax.jit, static_argnames=("strategy", "posterior", "linear"))
def run_all(strategy, params, state: SwitchState, L, *, posterior: bool, linear: bool):
    """Forward over all rows of a device array L (N, K) without copying it
    (compiles once per shape; for large inputs). Same outputs as ``run_chunk``."""
    return _rows(strategy, params, state, L, jnp.ones(L.shape[0], bool), posterior, linear)


def reads_flat(strategy, linear: bool) -> bool:
    """Whether ``run_flat`` computes this strategy (fixed share's linear kernel)."""
    return linear and isinstance(strategy, FixedShare)


@partial(jax.jit, static_argnames=("strategy", "offset", "posterior"))
def run_flat(strategy, params, state: SwitchState, flat, head, *, offset: int, posterior: bool):
    """``run_all`` of fixed share's linear kernel over losses (n, K) given as
    ``flat`` (n·K − offset,), their entries from the ``offset``-th on, and
    ``head`` (B, K), their first ``B = head_rows(n, K)`` rows.

    For a NumPy input that is not 64-byte aligned (NumPy allocates at 16):
    XLA's CPU client aliases an aligned float32 buffer but copies any other,
    so the flat view from the first aligned entry is read in place and only
    ``head`` is copied (B·K entries, about 2^20) instead of the whole matrix.
    Outputs are those of ``run_all`` (the same blocks, the same operations).
    """
    K = head.shape[1]
    return _linear_flat(
        strategy,
        params,
        state,
        flat,
        head if offset else None,
        offset,
        K,
        jnp.ones((flat.shape[0] + offset) // K, bool),
        posterior,
    )


def step(strategy, state: SwitchState, losses, *, linear: bool | None = None):
    """Pure forward step over one loss row (K,) or a chunk of rows (B, K).

    Jit- and scan-compatible (``strategy`` is static, close over it). Returns
    (new_state, per-step mixture losses in nats, shape () or (B,)). NaN is
    read as +inf (a diverged expert). No input validation happens here (it
    cannot raise under jit): negative input gives garbage, use
    :class:`~mdlnb.switching.Stream` for checked input.
    """
    _xla_cache.ensure()  # compiled programs are cached on disk
    L = jnp.asarray(losses, jnp.float32)
    single = L.ndim == 1
    L2 = L[None, :] if single else L
    if linear is None:
        linear = uses_linear_kernel(strategy, L2.shape[1])
    valid = jnp.ones(L2.shape[0], bool)
    state, ps, _, _ = _rows(strategy, strategy.params(L2.shape[1]), state, L2, valid, False, linear)
    return state, (ps[0] if single else ps)
