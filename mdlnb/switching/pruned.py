"""Switching over a board whose experts are pruned as the stream goes.

A *pruning schedule* gives each expert k a step ``pruned_at[k]`` (0-indexed
row of the loss matrix; ``N`` = never): expert k takes part in the code for
rows ``t < pruned_at[k]`` only, and its losses from then on are not needed
(stage 1 stops training it, :mod:`mdlnb.prequential._prune`). The code is the strategy's
HMM restricted to the *survivors* S_t = {k : pruned_at[k] > t}:

* at a pruning step t_p the predictive distribution over experts is
  conditioned on the survivors,
  π'(k) = π(k)·1[k ∈ S] / Σ_{j ∈ S} π(j)   (the pruned mass goes to the
  survivors in proportion to their mass);
* from then on the strategy runs over S with its switching weights
  renormalised over S, w^S(k) = w(k) / Σ_{j ∈ S} w(j) (fixed share's α_t mass
  is shared among the survivors only); α_t, θ, the run-length chain and the
  step count t are the global ones.

It is a valid code: at every step the label distribution is a convex
combination of the survivors' predictions with weights that depend on
D_<t only (and on a schedule chosen from D_<t), so it sums to 1 over labels.
Regret (fixed share; the switch distribution and run-length alike): for a
survivor path ξ (ξ_t ∈ S_t for every t) both π' ≥ π and T^S(j → k) ≥ T(j → k)
on S, so p_pruned(y_{1:N}) ≥ p_full(y_{1:N}, ξ) and the strategy's regret
bound against any such ξ (e.g. :func:`never_switch_cost` against the best
surviving expert) holds unchanged; what pruning can lose is the posterior
mass of paths through the pruned experts.

The pass runs the ordinary compiled kernels (:func:`forward.run_chunk`) on
the survivors' columns, segment by segment (``segment_rows`` rows), and
compacts the state between segments: no Python loop per step. Units: nats.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from jax.nn import logsumexp

from mdlnb.infra import _xla_cache
from mdlnb.switching import forward
from mdlnb.switching._losses import check_losses, raise_for_flags
from mdlnb.switching._transport import bucket
from mdlnb.switching.batch import codelength
from mdlnb.switching.result import SwitchResult
from mdlnb.switching.strategies import FixedShare, get_strategy


def restrict(strategy, alive: np.ndarray, num_experts: int):
    """``strategy`` over the experts ``alive`` (indices into ``num_experts``): its
    switching weights w restricted to them and renormalised (``initial`` dropped:
    it only sets the first step)."""
    fields: dict[str, Any] = {"initial": None}
    if hasattr(strategy, "weights"):
        w = np.exp(strategy.log_weights(num_experts))[np.asarray(alive)]
        if not w.sum() > 0:
            raise ValueError("strategy: its weights give the surviving experts no mass")
        fields["weights"] = tuple(w / w.sum())
    return dataclasses.replace(strategy, **fields)


class PrunedStream:
    """Online forward pass over a shrinking set of experts (module docstring).

    ``update(rows)`` takes the losses (m, |S|) of the current survivors
    (``alive``, increasing expert indices) and returns the per-step mixture
    losses (float64 nats) and the predictive log posterior (m, |S|);
    ``prune(experts)`` removes experts before the next row.
    """

    def __init__(self, strategy, num_experts: int, *, horizon: int):
        self.strategy = get_strategy(strategy)
        self.num_experts = int(num_experts)
        self.horizon = int(horizon)
        self.alive = np.arange(self.num_experts)
        self.state = forward.init_state(self.strategy, self.num_experts)
        self.total_nats = 0.0
        self._set(self.strategy)

    def _set(self, sub) -> None:
        k = len(self.alive)
        self._skeleton, self._params = sub.skeleton(), sub.params(k)
        self._linear = forward.uses_linear_kernel(sub, k, self.horizon)

    @property
    def t(self) -> int:
        return int(self.state.t)

    def update(self, rows, *, posterior: bool = True):
        L = np.asarray(rows, np.float32)
        m, k = L.shape
        if k != len(self.alive):
            raise ValueError(f"rows: has {k} experts, {len(self.alive)} survive")
        size = bucket(m, 1 << 16, smallest=64)
        if size != m:
            L = np.concatenate([L, np.zeros((size - m, k), np.float32)])
        offset = self.t
        state, ps, lp, flags = forward.run_chunk(
            self._skeleton, self._params, self.state, L, m, posterior=posterior, linear=self._linear
        )
        ps = np.asarray(ps[:m], np.float64)
        raise_for_flags(np.asarray(flags[:m]), ps, offset)
        self.state = state
        self.total_nats += float(ps.sum())
        return ps, (np.asarray(lp[:m]) if posterior else None)

    def log_next(self) -> np.ndarray:
        """(|S|,) log p(ξ_{t+1} | D_≤t) over the survivors."""
        return np.asarray(self.state.log_posterior)

    def prune(self, experts) -> None:
        """Drop ``experts`` (indices into the full board) from the next step on:
        the predictive state is conditioned on the survivors, the switching
        weights renormalised over them."""
        out = np.asarray(experts, np.int64)
        if out.size == 0:
            return
        keep = ~np.isin(self.alive, out)
        if not keep.any():
            raise ValueError("experts: pruning them would leave no expert")
        s = self.state
        hi, lo = s.log_weights[:, keep], s.log_weights_lo[:, keep]
        z = logsumexp(hi + lo)
        self.state = forward.SwitchState(hi - z, lo, s.t, s.total, s.comp)
        self.alive = self.alive[keep]
        self._set(restrict(self.strategy, self.alive, self.num_experts))


def check_schedule(pruned_at, n: int, k: int, segment_rows: int) -> np.ndarray:
    """``pruned_at`` as int64 (K,): each entry a multiple of ``segment_rows`` in
    (0, n), or n (never pruned)."""
    a = np.asarray(pruned_at)
    if a.shape != (k,) or a.dtype.kind not in "iu":
        raise ValueError(f"pruned_at: expected {k} integers, got shape {a.shape} dtype {a.dtype}")
    a = a.astype(np.int64)
    if isinstance(segment_rows, bool) or int(segment_rows) != segment_rows or segment_rows < 1:
        raise ValueError(f"segment_rows: must be an int >= 1, got {segment_rows!r}")
    early = (a < n) & ((a <= 0) | (a % int(segment_rows) != 0))
    if (a > n).any() or early.any():
        raise ValueError(
            f"pruned_at: entries must be n = {n} (never) or multiples of "
            f"segment_rows = {segment_rows} in (0, {n})"
        )
    if (a == n).sum() == 0:
        raise ValueError("pruned_at: prunes every expert")
    return a


def codelength_pruned(
    losses, strategy=None, pruned_at=None, *, segment_rows: int, posterior: bool = True
) -> SwitchResult:
    """Codelength (nats) of ``strategy`` on the board pruned by ``pruned_at``.

    ``losses`` (N, K): entries of an expert at rows ≥ ``pruned_at[k]`` are
    ignored (stage 1 stores +inf there). ``pruned_at`` (K,): the row from
    which each expert is pruned, a multiple of ``segment_rows`` (the segment
    length the schedule was decided on), or N for never. When no expert is
    pruned this is :func:`mdlnb.switching.codelength` (bit for bit). The log
    posterior of a pruned expert is −inf from its pruning step on.
    """
    _xla_cache.ensure()  # compiled programs are cached on disk
    strategy = FixedShare() if strategy is None else get_strategy(strategy)
    L = check_losses(losses)
    n, k = L.shape
    at = check_schedule(np.full(k, n) if pruned_at is None else pruned_at, n, k, segment_rows)
    if (at == n).all():
        return codelength(L, strategy, posterior=posterior)
    seg = int(segment_rows)
    stream = PrunedStream(strategy, k, horizon=n)
    per_step = np.empty(n, np.float64)
    log_post = np.full((n, k), -np.inf, np.float32) if posterior else None
    for start in range(0, n, seg):
        stream.prune(np.flatnonzero(at == start))
        with np.errstate(over="ignore"):
            rows = np.asarray(L[start : start + seg], np.float32)[:, stream.alive]
        ps, lp = stream.update(rows, posterior=posterior)
        per_step[start : start + len(ps)] = ps
        if log_post is not None:
            log_post[start : start + len(ps), stream.alive] = lp
    return SwitchResult(float(np.sum(per_step)), per_step, log_post, strategy)
