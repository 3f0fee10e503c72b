"""What the forward kernels share, below both them and the dispatcher (:mod:`.forward`).

:class:`SwitchState` (the carried state), the per-row flags, the Kahan
update of the running total and the exact two-sum (Knuth) of a float pair.
:mod:`.forward` re-exports them; :mod:`._mixtures` and :mod:`._linear_hmm`
import them from here, so no kernel imports the dispatcher that calls it.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.nn import logsumexp

FLAG_NEGATIVE, FLAG_ALL_INF = 2, 4


class SwitchState(NamedTuple):
    """Carried state of the forward pass (see module docstring)."""

    log_weights: jax.Array  # (R, K) float32, normalized log p(state_{t+1} | D_≤t)
    log_weights_lo: jax.Array  # (R, K) float32, low part: log p = log_weights + lo
    t: jax.Array  # () int32, rows consumed
    total: jax.Array  # () float32, codelength so far (nats), Kahan sum
    comp: jax.Array  # () float32, Kahan compensation (subtract from total)

    @property
    def total_nats(self):
        return self.total - self.comp

    @property
    def log_posterior(self):
        """(K,) log p(ξ_{t+1} | D_≤t): the expanded state marginalized."""
        return logsumexp(self.log_weights, axis=0)


def _row_flags(L):
    """int32 flags per row (NaN already read as +inf): negative, every entry +inf."""
    return _flags_from_min(jnp.min(L, axis=-1))  # the reduction the kernels take (shared)


def _flags_from_min(c):
    """``_row_flags`` from the row minima c (NaN read as +inf before the minimum)."""
    neg, allinf = c < 0, c == jnp.inf
    return (neg * FLAG_NEGATIVE + allinf * FLAG_ALL_INF).astype(jnp.int32)


def _kahan(total, comp, x):
    y = x - comp
    s = total + y
    return s, (s - total) - y


def _two_sum(a, b):
    """s = fl(a + b) and its exact rounding error e (a + b = s + e); e = 0 off
    the finite values."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, jnp.where(jnp.isfinite(s), e, 0.0)
