"""Stage 1 in one pass over the whole board: a cache wrapper, a set-up and a chunk loop.

:func:`run_pass` is what :func:`mdlnb.prequential.run` runs when the board fits
in memory, and what each slice of :mod:`mdlnb.prequential._slicing` runs:

1. the cache wrapper (:func:`run_pass`): check the inputs, hash them into the
   cache key (:func:`_job`), and under the key's file lock read the entry back
   or compute and write it (one process computes a key; the others wait, then
   read it);
2. the set-up (:func:`_setup`): the stream in its seeded order, padded to the
   row bucket; the device mesh; the expert groups and their initial state, or
   the state of the checkpoint the run resumes from;
3. the chunk loop (:func:`_chunk_loop`): one compiled call per chunk of
   batches, its losses written into the (N, K) matrix; beside it the
   checkpointer (:mod:`mdlnb.prequential._checkpointer`), the pruner
   (:mod:`mdlnb.prequential._prune`: stage 2 alongside, the board compacted
   to the survivors between segments, :mod:`mdlnb.prequential._board`)
   and the progress callback.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from mdlnb import _aligned, _progress, _targets, _xla_cache
from mdlnb._checks import check_finite, check_int
from mdlnb._io import cache_dir, content_hash, load_entry, locked
from mdlnb._protocol import Protocol
from mdlnb._task import Task
from mdlnb.prequential import _board, _program, _prune, _sharding
from mdlnb.prequential._checkpointer import Checkpointer
from mdlnb.prequential._groups import _layout, board_dim, layout_key
from mdlnb.prequential._inputs import _chunk_inputs
from mdlnb.prequential._loss_matrix import LossMatrix
from mdlnb.prequential._stream import stream_order

# v2: standardised inputs clipped to ±CLIP_Z. v3: one AdamW step (mdlnb._fit.step) and
# state NamedTuple, the protocol in the cache key, raw features no longer clipped under
# standardize="none", the shared checkpoint format (mdlnb._checkpoint). v4: experts grouped
# by (architecture, replay count) in whole blocks (losses may move in the last float bit).
# v5: losses evaluated block by block (the last float bit again, in groups of several blocks).
# v6: Adam's bias correction as a product (_fit.scale_by_adam): sharded runs equal one device's.
# v7: BLOCK_BYTES 8 -> 32 MB, wider blocks (the last float bit of the experts whose blocks grew).
CODE_VERSION = "prequential-v7"
DEFAULT_CHUNK_BATCHES = 128
#: ``chunk_batches="auto"``: FLOPs one compiled call may take (about a minute on a
#: 2-core CPU, tens of milliseconds on a GPU), so that progress and checkpoints
#: come at least that often even when one batch of a large board costs seconds
CHUNK_FLOPS = 2e12

ProgressFn = Callable[[int, int, float], None]
#: ``chunk_batches="auto"`` under a drawn progress bar: at least this many compiled
#: calls, so the bar moves (the losses do not depend on the chunking)
PROGRESS_UPDATES = 20


# ------------------------------------------------------------------ checks and helpers


def _validate(task, checkpoint_every_s) -> None:
    if not isinstance(task, Task):
        raise ValueError(f"task: must be an mdlnb.Task, got {type(task).__name__}")
    if task.n == 0:
        raise ValueError("task: is empty")
    if not checkpoint_every_s >= 0:
        raise ValueError(f"checkpoint_every_s: must be >= 0, got {checkpoint_every_s}")


def _check_readouts(task, experts) -> None:
    """Each readout's ``check_task(task)``, if it has one, called once."""
    for ro in dict.fromkeys(e.readout for e in experts):
        if hasattr(ro, "check_task"):
            ro.check_task(task)


def _task_arrays(task, experts):
    """``(features, labels)`` of ``task``, checked (finite features, labels in range,
    the readouts' ``check_task``); a regression task's labels are its targets as
    float32 ``(N, P)`` (no label smoothing: a ValueError names it)."""
    feats = check_finite(task.features, "task.x")
    if task.is_regression:
        smoothed = sorted({e.name for e in experts if e.label_smoothing})
        if smoothed:
            raise ValueError(
                f"experts: label smoothing has no meaning for regression targets; "
                f"experts {smoothed[:3]} set it"
            )
        calibrated = sorted({e.name for e in experts if e.calibrate})
        if calibrated:
            raise ValueError(
                f"experts: calibration (a softmax temperature) has no meaning for "
                f"regression targets; experts {calibrated[:3]} set it"
            )
        _check_readouts(task, experts)
        return feats, _targets.as_targets(task.y).astype(np.float32)
    labels = np.asarray(task.y)
    if labels.min() < 0 or labels.max() >= task.num_classes:
        raise ValueError(f"task.y: labels must lie in [0, {task.num_classes})")
    _check_readouts(task, experts)
    return feats, labels


def auto_chunk_batches(experts, in_dim: int, num_classes: int, batch_size: int) -> int:
    """Batches per compiled call for ``chunk_batches="auto"``: one batch costs
    B · Σ_k flops_k · (1 + 3 · replay_k) FLOPs (the prediction, then each replay
    step's forward and backward passes); as many batches as fit in
    :data:`CHUNK_FLOPS`, between 1 and :data:`DEFAULT_CHUNK_BATCHES`."""
    per_batch = batch_size * sum(
        e.readout.flops(in_dim, num_classes) * (1 + 3 * e.replay_streams) for e in experts
    )
    return int(max(1, min(DEFAULT_CHUNK_BATCHES, CHUNK_FLOPS // max(per_batch, 1))))


def chunk_bucket(total_batches: int, chunk_batches: int) -> int:
    """Batches per compiled call: ``chunk_batches``, or the next power of two ≥
    ``total_batches`` when the stream is shorter, so that the program's shape does
    not follow N (the padding batches code and train nothing)."""
    return min(int(chunk_batches), 1 << (int(total_batches) - 1).bit_length())


def row_bucket(n: int) -> int:
    """Rows the stream is padded to in the compiled program: 1,024 up to 1,024, then a
    multiple of 2^(bitlength(n − 1) − 4) (eight steps per octave, < 12.5 % more)."""
    if n <= 1024:
        return 1024
    step = 1 << ((n - 1).bit_length() - 4)
    return -(-n // step) * step


def _bar_shown(progress) -> bool:
    """Whether :func:`_make_progress` draws a bar (not a callback, not batch mode)."""
    return not callable(progress) and _progress.enabled() and _progress.wanted(progress, long=True)


def _make_progress(progress, n, k):
    """A ``(done, total, best_nats_per_example)`` callback and a closer."""
    if callable(progress):
        return progress, lambda: None
    # None (auto) where a person watches: a bar once stage 1 has run AUTO_DELAY_S
    # (digits on the default board, N·K = 7e4, takes a minute on a CPU), at once
    # when it is known to be long (N·K ≥ 2e6) or asked for
    if not _progress.wanted(progress, long=True):
        return (lambda *a: None), lambda: None
    at_once = progress is not None or n * k >= 2_000_000
    bar = _progress.bar(
        total=n,
        unit="ex",
        desc="prequential",
        leave=False,
        delay=0.0 if at_once else _progress.AUTO_DELAY_S,
    )

    def update(done, total, best):
        bar.update(done - bar.n)
        bar.set_postfix_str(f"best {best / math.log(2):.3f} bits/ex", refresh=False)

    return update, bar.close


# ------------------------------------------------------------------ the cache wrapper


class _Job(NamedTuple):
    """One pass's checked inputs and its cache key: the protocol and its board, the
    features (N, D) and labels (a regression task's targets, float32 (N, P)), the
    readouts' outputs ``out_dim`` (C logits, or 2P Gaussian outputs), P (0:
    classification), the compiled feature dimension ``dp``, the batches per
    compiled call, the key and the result's ``meta`` so far."""

    proto: Protocol
    experts: list
    feats: np.ndarray
    labels: np.ndarray
    out_dim: int
    targets: int
    dp: int
    chunk_batches: int
    key: str
    meta: dict

    @property
    def prefix(self) -> bool:
        """Whether inputs (and regression targets) are standardised by the prefix."""
        return self.proto.standardize == "prefix"

    @property
    def clip(self):
        """The standardised inputs' clip (``None``: raw features, not standardised)."""
        return self.proto.clip if self.prefix else None


def _job(task, proto, chunk_batches, pad_features, progress, streams: dict | None = None) -> _Job:
    """Check the inputs, resolve ``chunk_batches="auto"`` and hash the cache key (with
    ``streams``, ``{"streams": W}`` of a stacked call, :mod:`._streams`, in it and ``meta``)."""
    experts = proto.experts()
    if chunk_batches != "auto":
        check_int("chunk_batches", chunk_batches, minimum=1, what="an int >= 1 or 'auto'")
    b = proto.batch_size
    feats, labels = _task_arrays(task, experts)
    n, d = feats.shape
    # the feature dimension compiled for (zero features appended; pad_features)
    dp = board_dim(experts, d) if pad_features else d
    c = task.out_dim  # C logits, or 2P Gaussian outputs (regression)
    if chunk_batches == "auto":
        chunk_batches = auto_chunk_batches(experts, dp, c, b)
        if _bar_shown(progress):  # a bar that moves: at least PROGRESS_UPDATES calls
            chunk_batches = min(
                chunk_batches, max(1, math.ceil(math.ceil(n / b) / PROGRESS_UPDATES))
            )
    padded = {"padded_dim": dp} if dp != d else {}  # (the last float bit may differ)
    # regression: the target's code in the key and the result (classification keys unchanged)
    target = (
        _targets.loss_meta(
            _targets.as_targets(task.y)[stream_order(proto.seed, n)],
            b,
            proto.standardize == "prefix",
        )
        if task.is_regression
        else None
    )
    # this machine's block widths where they are not 2 cores' (the last float bit)
    blocks = layout_key(experts, d, c)
    key = content_hash(
        CODE_VERSION,
        feats,
        labels,
        proto.stage1(),
        c,
        *([padded] if padded else []),
        *([{"target": _targets.GAUSSIAN_CODE}] if target else []),
        *([blocks] if blocks else []),
        *([streams] if streams else []),
    )
    meta = {
        "cache_key": key,
        "code_version": CODE_VERSION,
        "standardize": proto.standardize,
        "matmul_dtype": proto.matmul_dtype,
        **padded,
        **blocks,
        **(streams or {}),
        **({"target": target} if target else {}),
    }
    return _Job(proto, experts, feats, labels, c, task.target_dims, dp, chunk_batches, key, meta)


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
    _validate(task, checkpoint_every_s)
    job = _job(task, proto, chunk_batches, pad_features, progress)
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
            return _from_entry(hit, task, job, cache_file.name), None
        return compute(
            cache_file=cache_file,
            checkpoint_dir=checkpoint_dir
            if checkpoint_dir is not None
            else cache_dir("checkpoints"),
        )


def _from_entry(hit, task, job: _Job, file_name: str) -> LossMatrix:
    """A cached entry as this call's result (a name it was computed under kept as
    ``meta["computed_as"]``)."""
    lm = LossMatrix._from_arrays(hit, job.experts, file_name)
    meta = dict(lm.meta)
    if lm.task_name != task.name:  # computed under another name: keep it as provenance
        meta["computed_as"] = lm.task_name
    return dataclasses.replace(lm, protocol=job.proto, task_name=task.name, meta=meta)


def _compute(
    task,
    job: _Job,
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
    proto, experts = job.proto, job.experts
    n, d = job.feats.shape
    # no checkpoints when pruning (docs/full-scale.md, "Pruning the board")
    ckpt_file = (
        Path(checkpoint_dir) / f"{job.key}.ckpt.npz"
        if checkpoint_dir is not None and proto.prune is None
        else None
    )
    ckpt = Checkpointer(ckpt_file, job.key, checkpoint_every_s)
    stream, board, start = _setup(job, devices, ckpt)
    pruner = None
    if proto.prune is not None:  # stage 2 alongside, in segments (_prune.py)
        pruner = _prune.Pruner(
            proto.prune,
            proto.strategy,
            len(experts),
            n,
            proto.batch_size,
            readout_of=_prune.readout_labels(experts),
        )
    meta = {
        **job.meta,
        "devices": _sharding.describe(
            stream.mesh or _sharding.expert_mesh(jax.local_devices()[:1])
        ),
    }
    report, close = _make_progress(progress, n, len(experts))
    try:
        board, losses, computed = _chunk_loop(job, stream, board, start, ckpt, pruner, report)
    finally:
        close()
    meta["seconds"] = round(time.perf_counter() - t0, 3)
    if pruner is not None:
        meta["prune"] = _board.prune_meta(
            proto.prune, pruner, experts, n, proto.batch_size, computed
        )
    result = LossMatrix(
        losses=losses,
        experts=tuple(experts),
        order=stream.order,
        task_name=task.name,
        num_classes=0 if job.targets else job.out_dim,
        seed=proto.seed,
        batch_size=proto.batch_size,
        meta=meta,
        protocol=proto,
    )
    if cache_file is not None:
        result.save(cache_file)
    ckpt.finish()
    params = (
        _board.expert_params(board.groups, board.state, len(experts), d, job.dp)
        if keep_params
        else None
    )
    return result, params


# ------------------------------------------------------------------ the set-up


class _Stream(NamedTuple):
    """The stream as the program reads it (fixed for the run): the seeded ``order``;
    ``x_ord``/``y_ord`` (N rows, on the host, for the chunk inputs); ``x_dev``/``y_dev``
    padded with zero features to ``dp`` and zero rows to the row bucket (rows past N
    are never drawn: positions < t_end <= N) and ``seed_key``, on the devices;
    the ``mesh`` (``None``: one device); batches per compiled call and in all;
    regression only (else ``None``): the targets' prefix moments after each number
    of batches (:func:`mdlnb._targets.prefix_moments`) and the first batch's code
    (:func:`mdlnb._targets.first_batch_nats`), set on the host."""

    order: np.ndarray
    x_ord: np.ndarray
    y_ord: np.ndarray
    x_dev: Any
    y_dev: Any
    seed_key: Any
    mesh: Any
    chunk: int
    total_batches: int
    target_moments: Any = None
    first_code: Any = None


class _Start(NamedTuple):
    """Where the loop starts: the losses (N, K) so far, the running prefix sums and
    the first batch (chunks start at any batch: a checkpoint resumes under another
    chunk size)."""

    losses: np.ndarray
    running: tuple
    next_batch: int


def _setup(job: _Job, devices, ckpt: Checkpointer):
    """The stream, the board (:class:`mdlnb.prequential._board.Board`) and the start
    (from ``ckpt`` when a checkpoint of this run fits)."""
    proto, experts = job.proto, job.experts
    (n, d), b, seed, c = job.feats.shape, proto.batch_size, proto.seed, job.out_dim
    order = stream_order(seed, n)
    rows = row_bucket(n)
    x_all = np.zeros((rows, job.dp), job.feats.dtype)
    x_all[:n, :d] = job.feats[order]
    y_all = np.zeros((rows,) + job.labels.shape[1:], job.labels.dtype)
    y_all[:n] = job.labels[order]
    # Devices (_sharding.py): with several, each group is padded to whole
    # blocks per device (index -1: a copy of its first expert, column dropped).
    mesh = _sharding.expert_mesh(devices) if devices is not None or jax.device_count() > 1 else None
    ndev = 1 if mesh is None else mesh.size
    layout = partial(_layout, experts, ndev, d, c, b, seed, job.clip, proto.matmul_dtype, dp=job.dp)
    # a run that resumes takes its state from the checkpoint: only its shapes here
    resuming = ckpt.exists
    groups, spec, column, state, hypers = layout(build=not resuming)
    target_moments = first_code = None
    if job.targets:  # prefix target moments; the first batch's code (mdlnb._targets)
        spec = dataclasses.replace(spec, targets=job.targets)
        target_moments = _targets.prefix_moments(job.labels[order], b, job.prefix)
        first_code = _targets.first_batch_nats(job.labels[order][:b]).astype(np.float32)
    x_dev, y_dev, seed_key = jnp.asarray(x_all), jnp.asarray(y_all), jax.random.PRNGKey(seed)
    if proto.prune is not None and ndev > 1:
        raise ValueError("prune: runs on one device; pass devices=[jax.devices()[0]]")
    chunk_batches = job.chunk_batches if proto.prune is None else proto.prune.segment_batches
    losses = _aligned.empty((n, len(experts)))  # stage 2 reads it in place (mdlnb._aligned)
    losses.fill(np.inf if proto.prune is not None else 0.0)
    start = _Start(losses, (np.zeros(job.dp), np.zeros(job.dp), 0.0), 0)
    if resuming:
        resumed = ckpt.resume(state)  # state: ShapeDtypeStructs
        if resumed is not None:
            state, start = resumed.state, _Start(*resumed[1:])
        else:  # none that fits: start afresh (the same deterministic initial state)
            state = layout()[3]
    if ndev > 1:  # the expert axis over the mesh, the rest replicated
        state, hypers = _sharding.shard(mesh, state), _sharding.shard(mesh, hypers)  # type: ignore[arg-type]
        x_dev, y_dev, seed_key = _sharding.replicate(mesh, (x_all, y_all, seed_key))  # type: ignore[arg-type]
        program = partial(_sharding.run_chunk, spec, mesh)
    else:
        program = partial(_program._run_chunk, spec)
    total_batches = math.ceil(n / b)
    stream = _Stream(
        order,
        x_all[:n],
        y_all[:n],
        x_dev,
        y_dev,
        seed_key,
        mesh,
        chunk_bucket(total_batches, chunk_batches),
        total_batches,
        target_moments,
        first_code,
    )
    return stream, _board.Board(groups, spec, column, state, hypers, program), start


# ------------------------------------------------------------------ the chunk loop


def _chunk_loop(
    job: _Job, stream: _Stream, board, start: _Start, ckpt: Checkpointer, pruner, report
):
    """Run the chunks from ``start``: ``(board, losses, expert-updates computed)``.

    After each chunk: its losses into the (N, K) matrix; the pruner's step and, on a
    decision, the board compacted; a checkpoint when due; the progress report."""
    proto = job.proto
    n, b, chunk, prefix = len(stream.order), proto.batch_size, stream.chunk, job.prefix
    losses, running = start.losses, start.running
    totals = losses[: start.next_batch * b].sum(axis=0, dtype=np.float64)  # for progress only
    computed = 0
    ckpt.start()
    for first in range(start.next_batch, stream.total_batches, chunk):
        xs, running = _chunk_inputs(
            stream.x_ord, stream.y_ord, first, chunk, b, running, prefix, stream.target_moments
        )
        if stream.mesh is not None:
            xs = _sharding.replicate(stream.mesh, xs)
        state, out = board.program(
            board.state, board.hypers, stream.x_dev, stream.y_dev, stream.seed_key, xs
        )
        board = board._replace(state=state)
        lo, hi = first * b, min((first + chunk) * b, n)
        keep = board.column >= 0
        block = _sharding.to_host(out).reshape(-1, len(board.column))[: hi - lo, keep]
        if first == 0 and stream.first_code is not None:
            block[: len(stream.first_code)] = stream.first_code[:, None]
        losses[lo:hi, board.column[keep]] = block
        totals[board.column[keep]] += block.sum(axis=0, dtype=np.float64)
        done = first + chunk >= stream.total_batches
        if pruner is not None:
            computed += board.updates_per_example() * int(xs["valid"].sum())
            rows = losses[lo:hi][:, pruner.alive]
            # density codes may be negative: the posterior is the same on shifted rows
            pruner.observe(_targets.shift_rows(rows)[0] if job.targets else rows)
            if not done and pruner.decide().size:
                totals[pruner.pruned_at < n] = np.inf
                board = _board.compact(
                    board,
                    pruner.alive,
                    job.experts,
                    job.feats.shape[1],
                    job.out_dim,
                    b,
                    job.clip,
                    proto.matmul_dtype,
                    targets=job.targets,
                )
        if not done and ckpt.due():
            ckpt.save(board.state, losses, running, first + chunk)
        report(hi, n, float(totals.min()) / hi)
    return board, losses, computed
