"""The Bayesian mixture over contiguous parts of the rows, one thread each.

XLA:CPU runs a while loop on one core. The Bayesian pass is two loops
(``_mixtures._bayes``: segment totals, then one log-sum per row), while a
``logsumexp`` over the same matrix is one fusion XLA spreads over all cores:
on this project's 2-core CI machine the pass was 2.6× a ``logsumexp`` on two
cores and 1.5× on one. The pass parallelizes over rows without changing what
it computes, because the mixture's state after t rows is a sum,

    S_t = S_0 + Σ_{u ≤ t} L[u]    (−log of the unnormalized posterior, nats),

so a part needs the column sums of the parts before it, not their passes:

1. each part's segment totals (one jitted call per part, each in its own
   thread; XLA:CPU runs separate executions concurrently; every program is
   compiled in the calling thread first, so the threads only execute);
2. part j starts at S_0 + Σ_{i<j} (column sums of part i), in double-float;
3. each part's pass from its start, reusing its totals (again one per thread);

about (totals + pass) / T on T ≥ parts cores, and the telescoped codelength
of the parts adds up to the whole (each part's G_{start} equals the previous
part's G_{end} up to the rounding of S). The parts are a power of two fixed
by N alone (at least ``MIN_ROWS`` rows each, at most ``MAX_PARTS``), never
by the machine's core count, so a result is the same on every machine.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from mdlnb.switching import _mixtures, forward
from mdlnb.switching.strategies import BayesianMixture

MIN_ROWS = 1 << 15  # rows per part at least
MAX_PARTS = 4


_POOL: list = []
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    """One pool of ``MAX_PARTS`` threads for the process, started on first use
    (a forked child starts its own: threads do not survive ``fork``)."""
    with _POOL_LOCK:
        if not _POOL:
            _POOL.append(ThreadPoolExecutor(MAX_PARTS, thread_name_prefix="mdlnb-rows"))
        return _POOL[0]


def _forget_pool() -> None:
    global _POOL_LOCK
    _POOL.clear()
    _POOL_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def num_parts(n: int) -> int:
    """Parts of an n-row pass: 1, 2 or 4, by n only."""
    t = 1
    while t < MAX_PARTS and n >= 2 * t * MIN_ROWS:
        t *= 2
    return t


def applies(strategy, n: int) -> bool:
    """Whether ``run_all`` splits this pass (the Bayesian mixture, n large
    enough, a CPU backend: on an accelerator one pass already fills the device)."""
    return (
        isinstance(strategy, BayesianMixture)
        and num_parts(n) > 1
        and jax.default_backend() == "cpu"
    )


@jax.jit
def _totals(L):
    ok = jnp.ones(L.shape[0], bool)
    tot = _mixtures.segment_totals(L, ok)
    return tot, _mixtures.column_sums(L, ok, tot)


@partial(jax.jit, static_argnames=("posterior",))
def _part(params, state, before, L, totals, posterior: bool):
    hi, lo = -state.log_weights[0], -state.log_weights_lo[0]
    for pair in before:  # S_0 + Σ_{i<j} sums_i, double-float
        hi, lo = _mixtures._df_add((hi, lo), pair)
    start = state._replace(log_weights=-hi[None], log_weights_lo=-lo[None])
    return _mixtures._bayes(params, start, L, jnp.ones(L.shape[0], bool), posterior, totals)


def run_all(params, state, L, *, posterior: bool):
    """``forward.run_all`` for the Bayesian mixture over a device array L
    (N, K) on a CPU backend in ``num_parts(N)`` threads; same outputs (state,
    per_step, log_posterior or None, flags).

    The parts are views of L's buffer, not copies: ``np.asarray`` of a CPU
    array is a view, and ``jax.device_put`` aliases a view whose start is
    64-byte aligned. Each part has P·M rows exactly (``_mixtures._layout``:
    no remainder, so its lock-step view is a reshape, not a copy); the last
    n − T·P·M < T·P rows are one more, short part.
    """
    n, K = L.shape
    T = num_parts(n)
    P, _, _ = _mixtures._layout(n // T, K)
    size = P * (n // T // P)
    host = np.asarray(L)  # a view of L's buffer on a CPU backend
    parts = [jax.device_put(host[j * size : (j + 1) * size]) for j in range(T)]

    def ready(f, *args):
        return jax.block_until_ready(f(*args))

    pool = _pool()
    # Every program the threads run is compiled (or read from the compilation cache)
    # here, in the calling thread, before they start: the threads only execute, so no
    # two threads of the process compile or write a cache entry at the same time.
    _totals.lower(parts[0]).compile()  # the T parts have one shape: one program
    tots = list(pool.map(lambda x: ready(_totals, x), parts))
    sums = tuple(t[1] for t in tots)
    jobs = [(sums[:j], parts[j], tots[j][0]) for j in range(T)]
    for job in jobs:  # one program per part (j carried sums before it)
        _part.lower(params, state, *job, posterior).compile()  # called so below
    outs = list(pool.map(lambda job: ready(_part, params, state, *job, posterior), jobs))
    if T * size < n:  # the short last part (< T·P rows), after the others: no thread competes
        outs.append(_part(params, state, sums, jax.device_put(host[T * size :]), None, posterior))
    return _combine(state, tuple(outs), posterior)


@partial(jax.jit, static_argnames=("posterior",))
def _combine(state, outs, posterior: bool):
    total, comp = state.total, state.comp
    for (_, _, inc), *_ in outs:
        total, comp = forward._kahan(total, comp, inc)
    (hi, lo, _), *_ = outs[-1]
    n = sum(o[1].shape[0] for o in outs)
    ps = jnp.concatenate([o[1] for o in outs])
    flags = jnp.concatenate([o[3] for o in outs])
    lp = jnp.concatenate([o[2] for o in outs]) if posterior else None
    return forward.SwitchState(hi, lo, state.t + n, total, comp), ps, lp, flags
