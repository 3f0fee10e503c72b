"""The set-up of one pass: the stream as the compiled program reads it, the board and
where the chunk loop starts.

:func:`setup` puts together, each from its own function: the stream in its seeded
order, padded with zero features to the compiled dimension and zero rows to the
row bucket (:func:`padded_stream`); the device mesh (:func:`device_mesh`: none on
one device); the expert groups, their program spec and initial state
(:func:`mdlnb.prequential._groups._layout`); a regression task's prefix target
moments and first-batch code (:func:`target_code`); the start — fresh, or the
state, losses and prefix sums of the checkpoint the run resumes from
(:func:`start`); and the placement on the devices with the chunk program
(:func:`place`).
"""

from __future__ import annotations

import dataclasses
import math
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from mdlnb.core import _targets
from mdlnb.infra import _aligned
from mdlnb.prequential import _board, _program, _sharding
from mdlnb.prequential._checkpointer import Checkpointer
from mdlnb.prequential._chunking import chunk_bucket, row_bucket
from mdlnb.prequential._groups import _layout
from mdlnb.prequential._job import Job
from mdlnb.prequential._stream import stream_order


class Stream(NamedTuple):
    """The stream as the program reads it (fixed for the run): the seeded ``order``;
    ``x_ord``/``y_ord`` (N rows, on the host, for the chunk inputs); ``x_dev``/``y_dev``
    padded with zero features to ``dp`` and zero rows to the row bucket (rows past N
    are never drawn: positions < t_end <= N) and ``seed_key``, on the devices;
    the ``mesh`` (``None``: one device); batches per compiled call and in all;
    regression only (else ``None``): the targets' prefix moments after each number
    of batches (:func:`mdlnb.core._targets.prefix_moments`) and the first batch's code
    (:func:`mdlnb.core._targets.first_batch_nats`), set on the host."""

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


class Start(NamedTuple):
    """Where the loop starts: the losses (N, K) so far, the running prefix sums and
    the first batch (chunks start at any batch: a checkpoint resumes under another
    chunk size)."""

    losses: np.ndarray
    running: tuple
    next_batch: int


def setup(job: Job, devices, ckpt: Checkpointer) -> tuple[Stream, _board.Board, Start]:
    """The stream, the board (:class:`mdlnb.prequential._board.Board`) and the start
    (from ``ckpt`` when a checkpoint of this run fits)."""
    proto = job.proto
    n, b = job.feats.shape[0], proto.batch_size
    order = stream_order(proto.seed, n)
    x_all, y_all = padded_stream(job, order)
    mesh = device_mesh(devices)
    ndev = 1 if mesh is None else mesh.size
    if proto.prune is not None and ndev > 1:
        raise ValueError("prune: runs on one device; pass devices=[jax.devices()[0]]")
    layout = partial(
        _layout,
        job.experts,
        ndev,
        job.feats.shape[1],
        job.out_dim,
        b,
        proto.seed,
        job.clip,
        proto.matmul_dtype,
        dp=job.dp,
    )
    # a run that resumes takes its state from the checkpoint: only its shapes here
    groups, spec, column, state, hypers = layout(build=not ckpt.exists)
    target_moments, first_code = target_code(job, order)
    if job.targets:
        spec = dataclasses.replace(spec, targets=job.targets)
    state, begin = start(job, ckpt, state, layout)
    x_dev, y_dev, seed_key, state, hypers, program = place(
        mesh, spec, x_all, y_all, jax.random.PRNGKey(proto.seed), state, hypers
    )
    total_batches = math.ceil(n / b)
    chunk = job.chunk_batches if proto.prune is None else proto.prune.segment_batches
    stream = Stream(
        order,
        x_all[:n],
        y_all[:n],
        x_dev,
        y_dev,
        seed_key,
        mesh,
        chunk_bucket(total_batches, chunk),
        total_batches,
        target_moments,
        first_code,
    )
    return stream, _board.Board(groups, spec, column, state, hypers, program), begin


def padded_stream(job: Job, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Features and labels in stream ``order``, padded with zero features to the
    compiled dimension ``dp`` and with zero rows to :func:`row_bucket` of N."""
    n, d = job.feats.shape
    rows = row_bucket(n)
    x_all = np.zeros((rows, job.dp), job.feats.dtype)
    x_all[:n, :d] = job.feats[order]
    y_all = np.zeros((rows,) + job.labels.shape[1:], job.labels.dtype)
    y_all[:n] = job.labels[order]
    return x_all, y_all


def device_mesh(devices):
    """The expert axis's mesh over ``devices`` (default: every device where there are
    several); ``None`` on one device (:mod:`mdlnb.prequential._sharding`)."""
    if devices is not None or jax.device_count() > 1:
        return _sharding.expert_mesh(devices)
    return None


def target_code(job: Job, order: np.ndarray) -> tuple[Any, Any]:
    """A regression task's prefix target moments and its first batch's code
    (:mod:`mdlnb.core._targets`); ``(None, None)`` for classification."""
    if not job.targets:
        return None, None
    b, y_ord = job.proto.batch_size, job.labels[order]
    moments = _targets.prefix_moments(y_ord, b, job.prefix)
    return moments, _targets.first_batch_nats(y_ord[:b]).astype(np.float32)


def start(job: Job, ckpt: Checkpointer, state, layout) -> tuple[Any, Start]:
    """The initial state and :class:`Start`: from the checkpoint when one of this run
    fits (``state`` then holds its shapes), else afresh — zero losses (``inf`` on a
    pruned board: a pruned expert's rest stays ``inf``), zero prefix sums, batch 0, and
    the deterministic initial state (``layout()``'s, when ``state`` was shapes only)."""
    n, k = job.feats.shape[0], len(job.experts)
    losses = _aligned.empty((n, k))  # stage 2 reads it in place (mdlnb.infra._aligned)
    losses.fill(np.inf if job.proto.prune is not None else 0.0)
    fresh = Start(losses, (np.zeros(job.dp), np.zeros(job.dp), 0.0), 0)
    if not ckpt.exists:
        return state, fresh
    resumed = ckpt.resume(state)  # state: ShapeDtypeStructs
    if resumed is not None:
        return resumed.state, Start(*resumed[1:])
    return layout()[3], fresh  # none that fits: start afresh (the same initial state)


def place(mesh, spec, x_all, y_all, seed_key, state, hypers):
    """The stream, state and hyperparameters on the devices, and the chunk program:
    on several, the expert axis over the mesh and the rest replicated
    (:func:`mdlnb.prequential._sharding.run_chunk`); on one, as they are
    (:func:`mdlnb.prequential._program._run_chunk`)."""
    if mesh is None or mesh.size == 1:
        x_dev, y_dev = jnp.asarray(x_all), jnp.asarray(y_all)
        return x_dev, y_dev, seed_key, state, hypers, partial(_program._run_chunk, spec)
    state, hypers = _sharding.shard(mesh, state), _sharding.shard(mesh, hypers)
    x_dev, y_dev, seed_key = _sharding.replicate(mesh, (x_all, y_all, seed_key))
    return x_dev, y_dev, seed_key, state, hypers, partial(_sharding.run_chunk, spec, mesh)
