"""Forward passes without a hidden chain: the Bayesian and elementwise mixtures.

Neither needs the generic HMM recursion (``forward._log_rows``, one
``logsumexp`` and a double-float compensation per row).

Bayesian mixture (no switching). With S_{t,k} = −log p(ξ_1 = k) + Σ_{u≤t} L[u, k]
(nats; S_0 = −log w from the carried state), the predictive posterior and
the per-step loss are

    log p(ξ_t = k | D_<t) = −S_{t−1,k} − G_t,   G_t = logsumexp_k(−S_{t−1,k}),
    loss_t = G_t − G_{t+1}                       (telescoping: Σ_t loss_t = G_1 − G_{N+1}),

so the whole pass is one cumulative sum per expert and one ``logsumexp``
per row — one ``exp`` per entry. The cumulative sums reach 10⁵–10⁶ nats,
where float32 keeps only ~10⁻² nats; the posterior needs differences
S_{t,j} − S_{t,k} to 10⁻⁶, so S is carried as a double-float pair
(hi, lo) with Knuth's two-sum (every rounding error of hi lands in lo). Each
row is shifted by m_t = min_k hi_{t,k} before the exponential (exact: the
relevant hi lie within a factor 2 of m_t, Sterbenz), and
loss_t = (m_{t+1} − m_t) + G'_t − G'_{t+1} with G' the shifted log-sums, so
no two large numbers are ever subtracted inexactly.

The rows are cut into P contiguous segments of M rows that are walked in
lock-step, one row of every segment per loop iteration (a (P, K) slab: the
loop's fixed cost is shared by P·K entries instead of K). A first pass
sums each segment (double-float), an exclusive prefix over the P segment
totals gives every segment its starting S, a second pass writes G, m and
the posterior; the last n mod P rows follow as one more segment, row by row.
Slabs are read with ``dynamic_index`` from L reshaped (P, M, K), not gathered
(a gather of P rows cost 2× more). On a CPU backend ``batch.codelength`` runs
this pass over up to 4 contiguous row parts in threads (``_rowsplit.py``,
with ``segment_totals`` and ``column_sums`` below as its first phase).

Elementwise mixture (independent draws): loss_t = −logsumexp_k(log w_t,k − L[t, k])
with w_1 the carried state's weights and w_t = w for t ≥ 2 — one vectorized
pass; where every weight is ≥ 1e-20 (``linear``) as c_t − log Σ_k w_k e^{c_t − L[t, k]},
c_t = min_k L[t, k], a matrix-vector product (as the fixed-share linear kernel).

NaN reads as +inf (a diverged expert: probability 0), as in ``forward``.
"""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax
from jax.nn import logsumexp

from mdlnb.switching._primitives import SwitchState, _flags_from_min, _kahan, _two_sum
from mdlnb.switching.strategies import BayesianMixture, ElementwiseMixture

_SLAB = 1 << 14  # entries per loop iteration of the Bayesian pass (P·K)
_MIN_M = 16  # rows per segment at least (short inputs: fewer segments)


def supports(strategy) -> bool:
    """Whether ``rows`` computes ``strategy`` (the Bayesian and elementwise mixtures)."""
    return isinstance(strategy, (BayesianMixture, ElementwiseMixture))


def _df_add(a, b):
    """(hi, lo) + (hi, lo), double-float: the two-sum of the high parts, its
    rounding error added to the low parts."""
    s, e = _two_sum(a[0], b[0])
    return s, a[1] + b[1] + e


def _finite_min(x, axis=None):
    m = jnp.min(x, axis=axis)
    return jnp.where(jnp.isfinite(m), m, 0.0)


def _row_flags_from_min(c):
    """:func:`._primitives._flags_from_min`: the row flags from the row minima."""
    return _flags_from_min(c)


def _flags(x):
    """``forward._row_flags``: the row flags of x (NaN already read as +inf)."""
    return _row_flags_from_min(jnp.min(x, axis=-1))


def _layout(n: int, K: int):
    """(P, M, rem): P segments of M rows walked in lock-step, rem rows after them."""
    P = max(1, min(_SLAB // K, n // _MIN_M))
    M, rem = divmod(n, P)
    return P, M, rem


def _reader(L, valid):
    n, K = L.shape
    P, M, _ = _layout(n, K)
    X = L[: P * M].reshape(P, M, K)  # segment p = rows p·M … p·M + M − 1
    V = valid[: P * M].reshape(P, M)

    def read(i):
        raw = lax.dynamic_index_in_dim(X, i, 1, False)
        raw = jnp.where(jnp.isnan(raw), jnp.inf, raw)
        ok = lax.dynamic_index_in_dim(V, i, 1, False)
        return jnp.where(ok[:, None], raw, 0.0), raw

    return read


def segment_totals(L, valid):
    """Double-float column sums (hi, lo), each (P, K), of the P lock-step
    segments of L (``_layout``; NaN read as +inf, rows not ``valid`` as 0)."""
    n, K = L.shape
    P, M, _ = _layout(n, K)
    read = _reader(L, valid)

    def total(i, c):
        hi, lo = c
        s, e = _two_sum(hi, read(i)[0])
        return s, lo + e

    zero = jnp.zeros((P, K), jnp.float32)
    return lax.fori_loop(0, M, total, (zero, zero))


def column_sums(L, valid, totals=None):
    """Double-float column sums (hi, lo), each (K,), of all rows of L (NaN read
    as +inf, rows not ``valid`` as 0): the ``segment_totals`` (computed unless
    given), then the rem rows after them."""
    n, K = L.shape
    P, M, _ = _layout(n, K)
    th, tl = segment_totals(L, valid) if totals is None else totals

    def add(c, t):
        return _df_add(c, t), None

    zero = jnp.zeros((K,), jnp.float32)
    rest = L[P * M :]
    rest = jnp.where(valid[P * M :, None], jnp.where(jnp.isnan(rest), jnp.inf, rest), 0.0)
    c, _ = lax.scan(add, (zero, zero), (th, tl))
    c, _ = lax.scan(add, c, (rest, jnp.zeros_like(rest)))
    return c


def _bayes(p, state, L, valid, posterior: bool, totals=None):
    """The Bayesian pass over L from ``state``; ``totals``: the
    ``segment_totals`` of (L, valid) when already computed (row-parallel runs)."""
    n, K = L.shape
    P, M, rem = _layout(n, K)
    read = _reader(L, valid)
    th, tl = segment_totals(L, valid) if totals is None else totals

    def prefix(c, t):
        return _df_add(c, t), c

    s0 = (-state.log_weights[0], -state.log_weights_lo[0])
    (fh, fl), (ph, pl) = lax.scan(prefix, s0, (th, tl))

    def shifted(hi, lo, axis):
        m = _finite_min(hi, axis)
        v = -(hi - (m if axis is None else jnp.expand_dims(m, axis))) - lo
        return m, v, logsumexp(v, axis=axis)

    seg = jnp.arange(P, dtype=jnp.int32) * M

    def body(c, i):
        hi, lo, lp = c
        x, raw = read(i)
        m, v, g = shifted(hi, lo, 1)
        if posterior:
            lp = lp.at[seg + i].set(v - g[:, None])
        s, e = _two_sum(hi, x)
        return (s, lo + e, lp), (g, m, _flags(raw))

    lp0 = jnp.zeros((n, K) if posterior else (0, K), jnp.float32)
    (_, _, lp), out = lax.scan(body, (ph, pl, lp0), jnp.arange(M))
    # (M, P) per-row outputs back to row order t = p·M + i
    G, mm, flags = (o.T.reshape(-1) for o in out)
    if rem:  # the last rem < P rows: one more segment, row by row, after all P

        def tail(c, inp):
            hi, lo = c
            raw, ok = inp
            raw = jnp.where(jnp.isnan(raw), jnp.inf, raw)
            m, v, g = shifted(hi, lo, None)
            s, e = _two_sum(hi, jnp.where(ok, raw, 0.0))
            return (s, lo + e), (g, m, _flags(raw), v - g)

        (fh, fl), (gt, mt, ft, lpt) = lax.scan(tail, (fh, fl), (L[P * M :], valid[P * M :]))
        G, mm, flags = (jnp.concatenate(a) for a in ((G, gt), (mm, mt), (flags, ft)))
        if posterior:
            lp = lax.dynamic_update_slice_in_dim(lp, lpt, P * M, 0)
    mf, vf, gf = shifted(fh, fl, None)
    G1 = jnp.concatenate([G, gf[None]])
    m1 = jnp.concatenate([mm, mf[None]])
    ps = (m1[1:] - m1[:-1]) + (G1[:-1] - G1[1:])
    # exact telescoped sum of this call's losses (rows that are not valid add 0)
    inc = (mf - m1[0]) + (G1[0] - gf)
    hi2, lo2 = _two_sum(-(fh - mf), -fl - gf)
    return (hi2[None], lo2[None], inc), ps, (lp if posterior else None), flags


def _elementwise(p, state, L, valid, posterior: bool, linear: bool):
    seen = jnp.cumsum(valid.astype(jnp.int32)) - valid.astype(jnp.int32) + state.t
    first = seen == 0  # the row coded with the carried weights
    lw0 = state.log_weights[0] + state.log_weights_lo[0]

    # Two passes over L, as a logsumexp: c_t = min_k L[t, k] (also the row flags),
    # then Σ_k w_k e^{c_t − L[t, k]} (the exp fused into the sum, no (N, K)
    # temporary). NaN (a diverged expert) reads as +inf; the where that does it
    # costs a quarter of a pass, so it runs only when a row minimum is NaN.
    def rowwise(L, c):
        c0 = jnp.where(jnp.isfinite(c), c, 0.0)
        if linear:  # every weight >= 1e-20: no underflow of w_k e^{c − L} that matters
            z = jnp.sum(jnp.exp(p["log_w"][None, :] + (c0[:, None] - L)), axis=1)
            return c0 - jnp.log(z), c
        return -logsumexp(p["log_w"][None, :] - L, axis=1), c

    def with_nan(L, c):
        L = jnp.where(jnp.isnan(L), jnp.inf, L)
        return rowwise(L, jnp.min(L, axis=1))

    c = jnp.min(L, axis=1)
    ps, c = lax.cond(jnp.any(jnp.isnan(c)), with_nan, rowwise, L, c)
    i0 = jnp.argmax(first)  # the row with the carried weights, if any: computed apart
    Li0 = jnp.where(jnp.isnan(L[i0]), jnp.inf, L[i0])
    ps = jnp.where(first, -logsumexp(lw0 - Li0), ps)
    inc = jnp.sum(jnp.where(valid, ps, 0.0))
    used = jnp.any(valid) | (state.t > 0)
    hi2 = jnp.where(used, p["log_w"], lw0)[None]
    lp = jnp.where(first[:, None], lw0[None, :], p["log_w"][None, :]) if posterior else None
    return (hi2, jnp.zeros_like(hi2), inc), ps, lp, _row_flags_from_min(c)


def rows(strategy, p, state, L, valid, posterior: bool, linear: bool = False):
    """Forward over L (n, K) (float32, NaN allowed) from ``state`` (a
    ``forward.SwitchState``); same outputs as ``forward._log_rows``:
    (state, per_step, log_posterior or None, flags)."""
    if isinstance(strategy, BayesianMixture):
        (hi, lo, inc), ps, lp, flags = _bayes(p, state, L, valid, posterior)
    else:
        (hi, lo, inc), ps, lp, flags = _elementwise(p, state, L, valid, posterior, linear)
    total, comp = _kahan(state.total, state.comp, inc)
    t = state.t + jnp.sum(valid.astype(jnp.int32))
    return SwitchState(hi, lo, t, total, comp), ps, lp, flags
