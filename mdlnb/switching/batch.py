"""Codelength of a whole loss matrix (paper Eq. 1, Alg. 2 stage 2).

:func:`codelength` checks its arguments and sums the per-step losses of one
forward pass; how the rows reach the device (in place, whole, or in chunks)
is :mod:`._transport`'s, the recursion :mod:`.forward`'s.
"""

from __future__ import annotations

import numpy as np

from mdlnb.infra import _xla_cache
from mdlnb.switching import _transport

# check_losses and raise_for_flags are part of this module's public face (re-exported)
from mdlnb.switching._losses import check_losses, raise_for_flags  # noqa: F401
from mdlnb.switching.result import SwitchResult
from mdlnb.switching.strategies import FixedShare, get_strategy

DEFAULT_CHUNK_ROWS = 1 << 16


def codelength(
    losses, strategy=None, *, posterior: bool = True, chunk_rows: int = DEFAULT_CHUNK_ROWS
) -> SwitchResult:
    """Switching codelength of a loss matrix, in nats (Eq. 1):

        −log p(y_{1:N}) = Σ_t −log Σ_k p(ξ_t = k | D_<t) · exp(−L[t, k]),

    the posterior p(ξ_t | D_<t) over which expert predicts step t given by
    the exact forward pass of the strategy's HMM.

    losses:   (N, K) NumPy or JAX array, L[t, k] = −log p_k(y_t | x_t; θ_k(D_<t))
              in nats, ≥ 0; +inf or NaN marks a diverged expert (probability 0
              of the label, so filtered weight 0; see :func:`diverged`).
              Computed in float32, totals accumulated in float64. A
              ValueError names the step where a loss is negative or every
              expert with positive weight has an infinite loss.
    strategy: a strategy object, a name accepted by ``get_strategy``, or None
              (``FixedShare()``: decreasing rate α_t = 1/t,
              m = ``DEFAULT_M`` = 2, the default protocol's).
    posterior: also return log p(ξ_t | D_<t), (N, K) float32.

    A JAX array is read in place (one pass). A NumPy array is streamed over
    chunks of ``chunk_rows`` rows, each transferred once (memory beyond the
    input: O(chunk_rows · K)); with ``posterior`` on a CPU backend it is read
    whole instead, so that the (N, K) posterior needs no copy: in place for
    fixed share's linear kernel (the default; a C-contiguous float32 array,
    read from its first 64-byte-aligned entry, only the first block of rows
    copied), else transferred once (one more (N, K) float32 copy unless the
    array is aligned). The returned ``log_posterior`` may be a read-only
    view. (:mod:`mdlnb.switching._transport` has the details.)
    """
    _xla_cache.ensure()  # compiled programs are cached on disk
    strategy = FixedShare() if strategy is None else get_strategy(strategy)
    L = check_losses(losses)
    if int(chunk_rows) < 16:
        raise ValueError(f"chunk_rows: must be >= 16, got {chunk_rows}")
    per_step, log_post = _transport.forward_pass(
        strategy, L, posterior=posterior, chunk_rows=int(chunk_rows)
    )
    return SwitchResult(float(np.sum(per_step)), per_step, log_post, strategy)
