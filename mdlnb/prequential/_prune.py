"""Pruning the board: stop training experts the switching posterior has given up on.

``Protocol(prune=Prune(threshold=τ, window=W))``. Stage 1 runs in
segments of ``segment_batches`` batches; after each segment, stage 2 (the
protocol's switching strategy, :class:`mdlnb.switching.pruned.PrunedStream`)
consumes the segment's losses of the surviving experts, and an expert is
pruned at the segment boundary b (examples seen) when its predictive
posterior p(ξ_t = k | D_<t) stayed below τ on every step t of the last W
examples (t ∈ [b − W, b)). The expert with the largest posterior for the
next step is never pruned. From b on the expert is not trained and not
coded (its losses are +inf in the ``LossMatrix``), and the switching prior
gives it zero mass: the code is the strategy restricted to the survivors
(:mod:`mdlnb.switching.pruned`: a valid code whose regret bound against every
surviving expert is the unpruned one). The schedule is recorded in
``LossMatrix.meta["prune"]``, which :class:`mdlnb.Report` reads.

Between segments stage 1 compacts each (architecture, replay count) group to
its survivors (:func:`compact`); group sizes are rounded up to a few bucket
sizes (powers of two below a block, whole blocks above) to limit recompiles,
the padding rows being copies of a survivor whose columns are dropped. The
saved work is reported in expert-updates (one AdamW step of one expert on one
replay batch): ``expert_updates`` (real), ``expert_updates_unpruned``,
``expert_updates_computed`` (with the padding rows).

Trade-off: τ = 0 never prunes (bit-identical to the unpruned run); a larger
τ or a shorter W saves more updates but may prune an expert that would have
won later (large readouts are slow starters), lengthening the code by at
most the posterior mass of the paths through it.

The option itself, :class:`mdlnb.Prune`, is a protocol field and lives with
the protocol (:mod:`mdlnb.board._protocol`); this module carries it out.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import numpy as np

from mdlnb.board._protocol import Prune
from mdlnb.switching import codelength, codelength_pruned
from mdlnb.switching.pruned import PrunedStream


class Pruner:
    """Stage 2 alongside stage 1: the posterior of the survivors and the pruning decisions."""

    def __init__(
        self, prune: Prune, strategy, num_experts: int, n: int, batch_size: int, readout_of=None
    ):
        # readout architecture of each expert (an int label), for keep_per_readout
        self.readout_of = (
            np.zeros(num_experts, np.int64)
            if readout_of is None
            else np.unique(np.asarray(readout_of), return_inverse=True)[1].reshape(-1)
        )
        self.prune = prune
        self.n = int(n)
        self.segment_rows = prune.segment_batches * int(batch_size)
        self.stream = PrunedStream(strategy, num_experts, horizon=n)
        self.last_above = np.zeros(num_experts, np.int64)  # 1 + last row with posterior >= τ
        self.pruned_at = np.full(num_experts, self.n, np.int64)

    @property
    def alive(self) -> np.ndarray:
        return self.stream.alive

    def observe(self, rows: np.ndarray) -> None:
        """Stage 2 over the next rows (m, |S|) of the survivors' losses."""
        start = self.stream.t
        _, lp = self.stream.update(rows)
        above = (
            lp >= np.float32(np.log(self.prune.threshold))
            if self.prune.threshold > 0
            else np.ones(lp.shape, bool)
        )
        hit = above.any(axis=0)
        last = start + lp.shape[0] - np.argmax(above[::-1], axis=0)
        self.last_above[self.alive[hit]] = last[hit]

    def decide(self) -> np.ndarray:
        """Experts to prune now (at the current step), which are then pruned."""
        b = self.stream.t
        if self.prune.threshold <= 0 or b >= self.n:
            return np.zeros(0, np.int64)
        stale = b - self.last_above[self.alive] >= self.prune.window
        post = self.stream.log_next()
        stale[np.argmax(post)] = False
        if self.prune.keep_per_readout:
            arch = self.readout_of[self.alive]
            for a in np.unique(arch):
                mine = np.flatnonzero(arch == a)
                stale[mine[np.argsort(-post[mine])[: self.prune.keep_per_readout]]] = False
        out = self.alive[stale]
        if out.size:
            self.stream.prune(out)
            self.pruned_at[out] = b
        return out


def readout_labels(experts) -> list[str]:
    """The readout architecture of each expert (its readout's name)."""
    return [getattr(e.readout, "name", repr(e.readout)) for e in experts]


def bucket(size: int, fit: int) -> int:
    """Compacted group size: a power of two below a block of ``fit``, whole blocks above."""
    if size >= fit:
        return -(-size // fit) * fit
    return min(1 << (size - 1).bit_length(), fit)


def compact(groups, state, hypers, alive_mask: np.ndarray, fit_of):
    """Keep each group's surviving rows (padded to :func:`bucket` sizes with copies of a
    survivor, index -1); groups with no survivor are dropped. ``fit_of(readout)``:
    the readout's block width. Returns ``(groups, state, hypers)``."""
    out_g, out_s, out_h = [], [], []
    for (ro, idx), g, h in zip(groups, state, hypers):
        rows = [r for r, k in enumerate(idx) if k >= 0 and alive_mask[k]]
        if not rows:
            continue
        size = bucket(len(rows), fit_of(ro))
        take = np.asarray(rows + [rows[0]] * (size - len(rows)))
        if len(take) == len(idx) and (take == np.arange(len(idx))).all():
            out_g.append((ro, idx)), out_s.append(g), out_h.append(h)  # type: ignore[func-returns-value]
            continue
        sel = lambda a, take=take: a[take]  # noqa: E731
        out_g.append((ro, [idx[r] for r in rows] + [-1] * (size - len(rows))))
        out_s.append(jax.tree_util.tree_map(sel, g))
        out_h.append(jax.tree_util.tree_map(sel, h))
    return out_g, tuple(out_s), tuple(out_h)


def expert_updates(replay: Any, pruned_at: np.ndarray, n: int, batch_size: int) -> dict:
    """Expert-updates (AdamW steps × experts) with and without the schedule: expert k
    trains after each batch that starts before ``pruned_at[k]``, ``replay[k]`` steps."""
    replay = np.asarray(replay, np.int64)
    batches = -(-np.minimum(np.asarray(pruned_at, np.int64), n) // int(batch_size))
    done = int((replay * batches).sum())
    full = int(replay.sum() * -(-int(n) // int(batch_size)))
    return {
        "expert_updates": done,
        "expert_updates_unpruned": full,
        "updates_saved_fraction": 1.0 - done / full if full else 0.0,
        "updates_ratio": full / done if done else float("inf"),
    }


@dataclasses.dataclass(frozen=True, eq=False)
class PruningSimulation:
    """What :func:`simulate` (``mdlnb.simulate_pruning``) found: the pruning a run with
    ``prune`` would do, replayed on an unpruned ``LossMatrix``.

    Attributes:
      pruned_at: (K,) int64, the stream position from which each expert is pruned
        (N = never).
      total_nats: the pruned code on these losses (the strategy over the survivors).
      unpruned_nats: the same strategy over the whole board.
      num_pruned: experts pruned before the end of the stream.
      expert_updates, expert_updates_unpruned: AdamW steps × experts with and
        without the schedule; updates_saved_fraction, updates_ratio: their
        saving as a fraction and as a ratio (unpruned / pruned).
      prune, strategy: what was simulated.
    """

    pruned_at: np.ndarray
    total_nats: float
    unpruned_nats: float
    num_pruned: int
    expert_updates: int
    expert_updates_unpruned: int
    updates_saved_fraction: float
    updates_ratio: float
    prune: Prune
    strategy: Any

    @property
    def change_nats(self) -> float:
        """``total_nats − unpruned_nats``: negative when pruning shortens the code."""
        return self.total_nats - self.unpruned_nats

    def to_dict(self) -> dict:
        """The numbers as a plain dict (``pruned_at`` as a list), e.g. for a table row."""
        return {
            "pruned_at": self.pruned_at.tolist(),
            "total_nats": self.total_nats,
            "unpruned_nats": self.unpruned_nats,
            "change_nats": self.change_nats,
            "num_pruned": self.num_pruned,
            "expert_updates": self.expert_updates,
            "expert_updates_unpruned": self.expert_updates_unpruned,
            "updates_saved_fraction": self.updates_saved_fraction,
            "updates_ratio": self.updates_ratio,
        }

    def __str__(self) -> str:
        return (
            f"PruningSimulation({self.prune!r}: {self.num_pruned} of {len(self.pruned_at)} "
            f"experts pruned, {self.updates_ratio:.2f}x fewer expert-updates; code "
            f"{self.total_nats:,.1f} nats vs {self.unpruned_nats:,.1f} unpruned "
            f"({self.change_nats:+,.1f}))"
        )

    __repr__ = __str__


def simulate(
    losses, prune: Prune, strategy=None, *, batch_size: int | None = None
) -> PruningSimulation:
    """The pruning a run with ``prune`` would do, replayed on an unpruned ``LossMatrix``.

    Stage 1's losses do not depend on the rest of the board, so the decisions
    on an unpruned matrix are those of the pruned run (up to the last float
    bit of survivors trained in narrower blocks after a compaction). Returns a
    frozen :class:`PruningSimulation` (schedule ``pruned_at``, ``total_nats``
    of the pruned code on these losses, ``unpruned_nats``, expert-updates);
    cheap: one stage-2 pass. ``strategy`` and ``batch_size`` default to the
    matrix's protocol's.
    """
    proto = getattr(losses, "protocol", None)
    strategy = strategy if strategy is not None else (proto.strategy if proto else None)
    if strategy is None:
        raise ValueError("strategy: the loss matrix records no protocol; pass one")
    b = int(batch_size or losses.batch_size)
    L = losses.losses
    n = L.shape[0]
    pruner = Pruner(prune, strategy, L.shape[1], n, b, readout_of=readout_labels(losses.experts))
    for lo in range(0, n, pruner.segment_rows):
        pruner.observe(L[lo : lo + pruner.segment_rows][:, pruner.alive])
        pruner.decide()
    at = pruner.pruned_at
    stored = np.where(np.arange(n)[:, None] >= at[None, :], np.float32(np.inf), L)
    pruned = codelength_pruned(
        stored, strategy, at, segment_rows=pruner.segment_rows, posterior=False
    )
    full = codelength(L, strategy, posterior=False)
    replay = [e.replay_streams for e in losses.experts]
    return PruningSimulation(
        pruned_at=np.asarray(at, np.int64),
        total_nats=float(pruned.total_nats),
        unpruned_nats=float(full.total_nats),
        num_pruned=int((at < n).sum()),
        **expert_updates(replay, at, n, b),
        prune=prune,
        strategy=strategy,
    )


#: public name (``mdlnb.simulate_pruning``)
simulate_pruning = simulate
