"""Stage 1 in one pass over the whole board: the cache wrapper and the chunk loop.

:func:`run_pass` is what :func:`mdlnb.prequential.run` runs when the board fits
in memory, and what each slice of :mod:`mdlnb.prequential._slicing` runs:

1. the cache wrapper (:func:`run_pass`): check the inputs, hash them into the
   cache key (:func:`mdlnb.prequential._job.make_job`), and under the key's file
   lock read the entry back or compute and write it (one process computes a key;
   the others wait, then read it);
2. the set-up (:func:`mdlnb.prequential._setup.setup`): the stream in its seeded
   order, padded to the row bucket; the device mesh; the expert groups and their
   initial state, or the state of the checkpoint the run resumes from;
3. the chunk loop (:func:`_chunk_loop`): one compiled call per chunk of batches,
   its losses written into the (N, K) matrix (:func:`_write_chunk`); beside it the
   checkpointer (:mod:`mdlnb.prequential._checkpointer`; none on a pruned board),
   the pruner (:mod:`mdlnb.prequential._prune`: stage 2 alongside, the board
   compacted to the survivors between segments, :func:`_prune_step`) and the
   progress callback (:mod:`mdlnb.prequential._progressbar`);
4. the result (:func:`_loss_matrix`): the :class:`LossMatrix`, written to the cache
   before the checkpoint is removed.
"""

from __future__ import annotations

import time
from functools import partial
from pathlib import Path

import jax
import numpy as np

from mdlnb.board._protocol import Protocol
from mdlnb.core import _targets
from mdlnb.core._task import Task
from mdlnb.infra import _xla_cache
from mdlnb.infra._io import cache_dir, load_entry, locked
from mdlnb.prequential import _board, _prune, _sharding
from mdlnb.prequential._checkpointer import Checkpointer
from mdlnb.prequential._inputs import _chunk_inputs
from mdlnb.prequential._job import Job, from_entry, make_job, validate
from mdlnb.prequential._loss_matrix import LossMatrix
from mdlnb.prequential._progressbar import make_progress
from mdlnb.prequential._setup import Start, Stream, setup


def run_pass(
    task: Task,
    proto: Protocol,
    *,
    progress=None,
    cache: bool = True,
    checkpoint_dir=None,
    checkpoint_every_s: float = 120.0,
    chunk_batches="auto",
    keep_params: bool = False,
    devices=None,
    pad_features: bool = False,
) -> tuple[LossMatrix, list | None]:
    """Stage 1 of ``proto`` on ``task`` in one pass, through the cache: ``(loss_matrix,
    params)`` (``params``: each expert's pytrees with ``keep_params``, else ``None``).

    Arguments as for :func:`mdlnb.prequential.run`. The entry is named by the key
    alone: the task's name is a label (kept in the entry), not an input, so the
    same features under another name are the same entry."""
    _xla_cache.ensure()  # compiled programs are cached on disk
    validate(task, checkpoint_every_s)
    job = make_job(task, proto, chunk_batches, pad_features, progress)
    compute = partial(
        _compute,
        task,
        job,
        progress=progress,
        checkpoint_every_s=checkpoint_every_s,
        keep_params=keep_params,
        devices=devices,
    )
    if not cache:
        return compute(checkpoint_dir=checkpoint_dir, cache_file=None)
    cache_file = cache_dir("losses") / f"{job.key}.npz"
    with locked(cache_file):  # one process computes a key; the others wait, then read it
        hit = None if keep_params else load_entry(cache_file)
        if hit is not None:  # None: absent, or damaged (warned and recomputed)
            return from_entry(hit, task, job, cache_file.name), None
        return compute(
            cache_file=cache_file,
            checkpoint_dir=checkpoint_dir
            if checkpoint_dir is not None
            else cache_dir("checkpoints"),
        )


def _compute(
    task,
    job: Job,
    *,
    progress,
    checkpoint_dir,
    checkpoint_every_s,
    keep_params,
    devices,
    cache_file,
) -> tuple[LossMatrix, list | None]:
    """Set up, run the chunk loop, assemble the :class:`LossMatrix` (written to
    ``cache_file`` unless ``None``, before the checkpoint is removed)."""
    t0 = time.perf_counter()
    n, d = job.feats.shape
    ckpt = Checkpointer(_checkpoint_file(job, checkpoint_dir), job.key, checkpoint_every_s)
    stream, board, start = setup(job, devices, ckpt)
    pruner = _pruner(job, n)
    report, close = make_progress(progress, n, len(job.experts))
    try:
        board, losses, computed = _chunk_loop(job, stream, board, start, ckpt, pruner, report)
    finally:
        close()
    result = _loss_matrix(task, job, stream, losses, pruner, computed, time.perf_counter() - t0)
    if cache_file is not None:
        result.save(cache_file)
    ckpt.finish()
    if not keep_params:
        return result, None
    return result, _board.expert_params(board.groups, board.state, len(job.experts), d, job.dp)


def _checkpoint_file(job: Job, checkpoint_dir) -> Path | None:
    """The run's checkpoint, named by its key; none without a directory, and none when
    pruning (docs/full-scale.md, "Pruning the board")."""
    if checkpoint_dir is None or job.proto.prune is not None:
        return None
    return Path(checkpoint_dir) / f"{job.key}.ckpt.npz"


def _pruner(job: Job, n: int) -> _prune.Pruner | None:
    """Stage 2 alongside stage 1, in segments, where the protocol prunes (``_prune.py``)."""
    proto = job.proto
    if proto.prune is None:
        return None
    return _prune.Pruner(
        proto.prune,
        proto.strategy,
        len(job.experts),
        n,
        proto.batch_size,
        readout_of=_prune.readout_labels(job.experts),
    )


def _loss_matrix(task, job: Job, stream: Stream, losses, pruner, computed, seconds) -> LossMatrix:
    """The result: the losses in stream order, with ``meta`` (the key's, the devices,
    the seconds, and a pruned board's schedule)."""
    proto = job.proto
    n = len(stream.order)
    meta = {
        **job.meta,
        "devices": _sharding.describe(
            stream.mesh or _sharding.expert_mesh(jax.local_devices()[:1])
        ),
        "seconds": round(seconds, 3),
    }
    if pruner is not None:
        meta["prune"] = _board.prune_meta(
            proto.prune, pruner, job.experts, n, proto.batch_size, computed
        )
    return LossMatrix(
        losses=losses,
        experts=tuple(job.experts),
        order=stream.order,
        task_name=task.name,
        num_classes=0 if job.targets else job.out_dim,
        seed=proto.seed,
        batch_size=proto.batch_size,
        meta=meta,
        protocol=proto,
    )


# ------------------------------------------------------------------ the chunk loop


def _chunk_loop(job: Job, stream: Stream, board, start: Start, ckpt: Checkpointer, pruner, report):
    """Run the chunks from ``start``: ``(board, losses, expert-updates computed)``.

    After each chunk: its losses into the (N, K) matrix; the pruner's step and, on a
    decision, the board compacted; a checkpoint when due; the progress report."""
    n, b, chunk = len(stream.order), job.proto.batch_size, stream.chunk
    losses, running = start.losses, start.running
    totals = losses[: start.next_batch * b].sum(axis=0, dtype=np.float64)  # for progress only
    computed = 0
    ckpt.start()
    for first in range(start.next_batch, stream.total_batches, chunk):
        xs, running = _chunk_inputs(
            stream.x_ord, stream.y_ord, first, chunk, b, running, job.prefix, stream.target_moments
        )
        if stream.mesh is not None:
            xs = _sharding.replicate(stream.mesh, xs)
        state, out = board.program(
            board.state, board.hypers, stream.x_dev, stream.y_dev, stream.seed_key, xs
        )
        board = board._replace(state=state)
        hi = _write_chunk(losses, totals, board, out, first, stream, b)
        done = first + chunk >= stream.total_batches
        if pruner is not None:
            computed += board.updates_per_example() * int(xs["valid"].sum())
            board = _prune_step(job, pruner, board, losses, totals, first * b, hi, done)
        if not done and ckpt.due():
            ckpt.save(board.state, losses, running, first + chunk)
        report(hi, n, float(totals.min()) / hi)
    return board, losses, computed


def _write_chunk(losses, totals, board, out, first: int, stream: Stream, b: int) -> int:
    """A chunk's losses (the program's output ``out``) into the (N, K) matrix and the
    column totals, the padding columns dropped (a regression stream's first batch
    coded by its first-batch code); returns the end row of the chunk."""
    n = len(stream.order)
    lo, hi = first * b, min((first + stream.chunk) * b, n)
    keep = board.column >= 0
    block = _sharding.to_host(out).reshape(-1, len(board.column))[: hi - lo, keep]
    if first == 0 and stream.first_code is not None:
        block[: len(stream.first_code)] = stream.first_code[:, None]
    losses[lo:hi, board.column[keep]] = block
    totals[board.column[keep]] += block.sum(axis=0, dtype=np.float64)
    return hi


def _prune_step(job: Job, pruner, board, losses, totals, lo: int, hi: int, done: bool):
    """The pruner sees rows ``lo:hi``; on a decision (not after the last chunk) the
    pruned experts' totals become ``inf`` and the board is compacted to the survivors."""
    rows = losses[lo:hi][:, pruner.alive]
    # density codes may be negative: the posterior is the same on shifted rows
    pruner.observe(_targets.shift_rows(rows)[0] if job.targets else rows)
    if done or not pruner.decide().size:
        return board
    totals[pruner.pruned_at < len(losses)] = np.inf
    return _board.compact(
        board,
        pruner.alive,
        job.experts,
        job.feats.shape[1],
        job.out_dim,
        job.proto.batch_size,
        job.clip,
        job.proto.matmul_dtype,
        targets=job.targets,
    )
