"""Stage 1's checkpoints of one run: resume from the last, save on a schedule, remove.

The run's state (the stacked expert states), its losses so far, the running
sums of the prefix statistics and the next batch are written in the shared
format (:mod:`mdlnb.infra._checkpoint`), keyed by the run's cache key, so a killed
run resumes bit-identically at its next batch, under any chunk size. A
checkpoint that took s seconds to write is not followed by another within
s / :data:`CHECKPOINT_SHARE` seconds. The :class:`Checkpointer` sits beside the
pruner (:class:`mdlnb.prequential._prune.Pruner`) in the chunk loop
(:mod:`mdlnb.prequential._onepass`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, NamedTuple

import jax
import numpy as np

from mdlnb.infra import _checkpoint
from mdlnb.prequential import _sharding

#: a checkpoint that took s seconds to write is not followed by another within
#: s / CHECKPOINT_SHARE seconds (the ``vtab`` board's state is ~10 GB: ~1 minute
#: to write), so at most about this share of the run goes to checkpoints
CHECKPOINT_SHARE = 0.1


class Resumed(NamedTuple):
    """Where a checkpoint leaves a run: its state, losses (N, K) so far, running
    prefix sums ``(s1, s2, count)`` and the first batch still to run."""

    state: Any
    losses: np.ndarray
    running: tuple
    next_batch: int


class Checkpointer:
    """The checkpoints of one stage-1 run (``path``: ``None`` for none)."""

    def __init__(self, path: Path | None, key: str, every_s: float):
        self.path, self.key, self.every_s = path, key, every_s
        self.last, self.cost = time.perf_counter(), 0.0  # last write's end, its seconds

    @property
    def exists(self) -> bool:
        """Whether a checkpoint of this run is on disk (the run resumes from it if it fits)."""
        return self.path is not None and self.path.exists()

    def resume(self, like) -> Resumed | None:
        """The checkpoint in the structure of ``like`` (the state's ShapeDtypeStructs),
        or ``None``: none, or one that does not fit."""
        return _load_checkpoint(self.path, self.key, like) if self.exists else None  # type: ignore[arg-type]

    def start(self) -> None:
        """Start the clock: the first checkpoint comes ``every_s`` seconds of work from now."""
        self.last = time.perf_counter()

    def due(self) -> bool:
        """``every_s`` seconds since the last (0: every chunk), and at least the last
        write's cost / :data:`CHECKPOINT_SHARE`."""
        return self.path is not None and time.perf_counter() - self.last >= (
            self.every_s and max(self.every_s, self.cost / CHECKPOINT_SHARE)
        )

    def save(self, state, losses, running, next_batch: int) -> None:
        t_save = time.perf_counter()
        _save_checkpoint(self.path, self.key, state, losses, running, next_batch)  # type: ignore[arg-type]
        self.last = time.perf_counter()
        self.cost = self.last - t_save

    def finish(self) -> None:
        """The run is complete: its checkpoint is no longer needed."""
        if self.path is not None:
            self.path.unlink(missing_ok=True)


def _save_checkpoint(path: Path, key: str, state, losses, running, next_batch) -> None:
    _checkpoint.save(
        path,
        jax.tree_util.tree_map(_sharding.to_host, state),
        key=key,
        next_batch=np.int64(next_batch),
        losses=losses,
        s1=running[0],
        s2=running[1],
        count=np.float64(running[2]),
    )


def _load_checkpoint(path: Path, key: str, like) -> Resumed | None:
    """Restore a checkpoint of this run (``None``: none, or one that does not fit)."""
    ck = _checkpoint.load(path, like, key=key)
    if ck is None or "next_batch" not in ck.arrays:  # (an older format counted chunks)
        return None
    a = ck.arrays
    return Resumed(
        ck.tree, a["losses"], (a["s1"], a["s2"], float(a["count"])), int(a["next_batch"])
    )
