"""Stage 1's public driver: :func:`run` (a stream of one batch coded without training,
:func:`untrained_losses`; else the memory plan: one pass or slices) and
:func:`run_with_params`; the pass itself (cache, set-up, chunk loop) is
:mod:`mdlnb.prequential._onepass`; see :mod:`mdlnb.prequential`. The deprecated
:func:`resolve_protocol` is :func:`mdlnb.board._arguments.resolve_protocol`."""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

from mdlnb.board import _arguments
from mdlnb.board._protocol import Protocol
from mdlnb.board.experts import Expert
from mdlnb.core import _targets
from mdlnb.core._task import Task
from mdlnb.prequential import _memory, _slicing
from mdlnb.prequential._checkpointer import CHECKPOINT_SHARE
from mdlnb.prequential._chunking import (
    CHUNK_FLOPS,
    DEFAULT_CHUNK_BATCHES,
    PROGRESS_UPDATES,
    auto_chunk_batches,
    chunk_bucket,
    row_bucket,
)
from mdlnb.prequential._job import CODE_VERSION, check_readouts, task_arrays, validate
from mdlnb.prequential._loss_matrix import LossMatrix
from mdlnb.prequential._onepass import run_pass
from mdlnb.prequential._progressbar import ProgressFn
from mdlnb.prequential._stream import stream_order

__all__ = [
    "CHECKPOINT_SHARE",
    "CHUNK_FLOPS",
    "CODE_VERSION",
    "DEFAULT_CHUNK_BATCHES",
    "PROGRESS_UPDATES",
    "ProgressFn",
    "auto_chunk_batches",
    "chunk_bucket",
    "resolve_protocol",
    "row_bucket",
    "run",
    "run_with_params",
    "untrained_losses",
]


def run(
    task: Task,
    experts: Sequence[Expert] | str | None = None,
    batch_size: int | None = None,
    seed: int | None = None,
    *,
    protocol: Protocol | str | None = None,
    replay_streams: int | None = None,
    standardize: str | bool | None = None,
    progress: bool | ProgressFn | None = None,
    cache: bool = True,
    checkpoint_dir: str | Path | None = None,
    checkpoint_every_s: float = 120.0,
    chunk_batches: int | str = "auto",
    memory_budget: int | str | None = "auto",
    devices: Sequence | None = None,
    pad_features: bool = False,
) -> LossMatrix:
    """Train every expert online on ``task`` and record its next-step log-losses (nats).

    See the module docstring for the exact protocol.

    Args:
      task: the labelled task; ``task.features`` (N, D) are the inputs.
      experts: the board (a list of Experts or an expert preset name); default
        the protocol's.
      batch_size: B, examples per incoming batch and per replay step; default
        the protocol's.
      seed: drives the order, the initialisations and the replay samples;
        default the protocol's.
      protocol: a :class:`mdlnb.Protocol` or preset name (default
        ``"default"``); the arguments above and ``replay_streams``,
        ``standardize`` override its fields when given. The result records the
        protocol that ran.
      replay_streams: if given, overrides every expert's replay count.
      standardize: ``"prefix"`` (``True``) or ``"none"`` (``False``), see the
        module docstring; default the protocol's.
      progress: ``True``/``False``, ``None`` (auto: where a person watches,
        :func:`mdlnb.infra._progress.interactive`, a bar — a widget in a kernel with
        ipywidgets — once the run has taken 3 s, at once when N·K ≥ 2e6), or a callable ``f(done, total, best_nats_per_example)``
        called after each chunk.
      cache: read/write the result under ``cache_dir("losses")``, keyed by a
        content hash of features, labels, the protocol's stage-1 part
        (:meth:`mdlnb.Protocol.stage1`: experts, B, seed, standardisation) and
        the code version — not the task's name: the same features under
        another name are a cache hit (the result carries the new name;
        ``meta["computed_as"]`` the name it was first computed under).
      checkpoint_dir: where to checkpoint; ``None`` → ``cache_dir("checkpoints")``
        when ``cache`` is on, else no checkpoints.
      checkpoint_every_s: seconds of work between checkpoints (0 = every chunk);
        when > 0, also at least 1 / :data:`CHECKPOINT_SHARE` times as long as
        the last checkpoint took to write.
        A killed run resumes from its last checkpoint and gives a bit-identical
        result on the same machine.
      chunk_batches: batches per compiled call (progress and checkpoint
        granularity; the losses do not depend on it). ``"auto"``: as many as
        keep one call under :data:`CHUNK_FLOPS` (:func:`auto_chunk_batches`), at
        most :data:`DEFAULT_CHUNK_BATCHES`.
      memory_budget: bytes the experts in flight may use. ``"auto"``: a safe
        fraction of the available memory (:mod:`mdlnb.prequential._memory`); ``None``: one
        pass whatever the size. A board over budget runs in slices of whole
        blocks, one after another (:func:`mdlnb.prequential._slicing.run_sliced`), with a
        bit-identical result; ``meta["memory_plan"]`` records the plan. A
        pruned board (``protocol.prune``) cannot be sliced: it runs in one pass
        under ``"auto"``, and a byte budget it exceeds is a ValueError.
      devices: the devices the expert axis is sharded over (``None``: every
        device, of every process under ``jax.distributed``; one device runs
        unsharded). The same losses as on one device to float round-off, which
        training can amplify; bit-identical on some boards, not all
        (:mod:`mdlnb.prequential._sharding`, "What is guaranteed");
        ``meta["devices"]`` records count and kind (``Report.devices``).
      pad_features: compile for the feature-dimension bucket
        (:func:`mdlnb.prequential._groups.padded_dim`: 16, 32, 48, …, 256, 288, …)
        with zero features appended, so tasks whose D falls in one bucket share
        one compiled program. Exact in real arithmetic for linear and MLP
        readouts (a zero feature stays zero under ``"prefix"``
        standardisation: zero variance → only centred, at 0; its first-layer
        weights start at 0, get zero gradients and stay 0), but XLA:CPU picks
        its GEMM tiles by shape, so for some D the losses differ from the
        unpadded run in the last float bits (measured: D = 17–24 → 32,
        49–62 → 64, 300 → 320, 1000 → 1024 on jax 0.10, this CPU; D = 2–16,
        25–48, 100 → 112 were bit-identical). Off by default, so default
        results stay bit-identical to earlier versions; when on, the bucket
        is part of the cache key and ``meta["padded_dim"]``. Boards with a
        readout other than :class:`~mdlnb.board.readouts.Readout` are never padded.

    With N ≤ B every example is in the first batch and coded uniformly: no
    readout is trained, nothing is compiled or cached, and the result is
    :func:`untrained_losses` (log C per example and expert).

    Returns:
      A :class:`LossMatrix` with ``losses`` (N, K) float32 nats in stream order.
    """
    if isinstance(memory_budget, str) and memory_budget != "auto":
        raise ValueError(f"memory_budget: must be 'auto', None or bytes, got {memory_budget!r}")
    validate(task, checkpoint_every_s)
    protocol = _arguments.resolve_protocol(
        protocol,
        experts,
        batch_size=batch_size,
        seed=seed,
        replay_streams=replay_streams,
        standardize=standardize,
    )
    if task.n <= protocol.batch_size:  # one batch, coded uniformly: nothing to train or compile
        task_arrays(task, protocol.experts())
        return untrained_losses(task, protocol)
    opts: dict[str, Any] = dict(
        progress=progress,
        cache=cache,
        checkpoint_dir=checkpoint_dir,
        checkpoint_every_s=checkpoint_every_s,
        chunk_batches=chunk_batches,
        devices=devices,
        pad_features=pad_features,
    )
    if memory_budget is not None:  # memory plan: slice a board that does not fit (_memory.py)
        plan = _plan(task, protocol, memory_budget, devices)
        if len(plan.slices) > 1:
            return _slicing.run_sliced(task, protocol=protocol, memory_plan=plan, **opts)
        _slicing.announce(plan, progress, task.n)  # the plan line, with the progress output
    return run_pass(task, protocol, **opts)[0]


def _plan(task: Task, protocol: Protocol, memory_budget, devices) -> _memory.SlicePlan:
    """The memory plan of ``protocol``'s board on ``task`` (one slice for a pruned board
    under ``"auto"``: pruning couples the experts)."""
    board = protocol.experts()
    budget = None if memory_budget == "auto" else memory_budget
    check_readouts(task, board)  # before sizing them (num_params)
    ndev = len(devices) if devices is not None else jax.device_count()
    plan = _memory.plan(
        board, task.n, np.shape(task.features)[1], task.out_dim, budget_bytes=budget, devices=ndev
    )
    if len(plan.slices) > 1 and protocol.prune is not None:
        if budget is not None:  # pruning couples the experts: it cannot be sliced
            raise ValueError(
                "memory_budget: a pruned board must run in one slice (pruning "
                f"couples the experts); {plan.describe()}"
            )
        plan = dataclasses.replace(plan, slices=(tuple(range(len(board))),))  # "auto": one pass
    return plan


def untrained_losses(task: Task, protocol: Protocol) -> LossMatrix:
    """The ``LossMatrix`` of a stream of N ≤ B examples: one batch, coded uniformly
    (log C nats per example for every expert, float32, as the compiled program
    records a first batch; a regression batch by its own Gaussian,
    :func:`mdlnb.core._targets.first_batch_nats`), without compiling a program that
    would train nothing.
    ``meta["untrained"]`` is True; :func:`run` returns this for every caller
    (``evaluate``, ``compare``, the studies)."""
    experts = tuple(protocol.experts())
    order = stream_order(protocol.seed, task.n)
    meta = {"standardize": protocol.standardize, "untrained": True}
    if task.is_regression:  # one batch: coded by its own Gaussian (mdlnb.core._targets)
        first = _targets.first_batch_nats(_targets.as_targets(task.y)[order])
        losses = np.repeat(first.astype(np.float32)[:, None], len(experts), axis=1)
        meta["target"] = _targets.loss_meta(
            _targets.as_targets(task.y)[order],
            protocol.batch_size,
            protocol.standardize == "prefix",
        )
    else:
        uniform = np.float32(math.log(task.num_classes))  # type: ignore[arg-type]
        losses = np.full((task.n, len(experts)), uniform, np.float32)
    return LossMatrix(
        losses=losses,
        experts=experts,
        order=order,
        task_name=task.name,
        num_classes=0 if task.is_regression else task.num_classes,  # type: ignore[arg-type]
        seed=protocol.seed,
        batch_size=protocol.batch_size,
        meta=meta,
        protocol=protocol,
    )


def run_with_params(
    task: Task,
    experts: Sequence[Expert] | str | None = None,
    batch_size: int | None = None,
    seed: int | None = None,
    *,
    protocol: Protocol | str | None = None,
    replay_streams: int | None = None,
    standardize: str | bool | None = None,
    checkpoint_every_s: float = 120.0,
    **kwargs,
) -> tuple[LossMatrix, list[dict]]:
    """:func:`run`, also returning each expert's parameters at the end of the stream.

    Same arguments and losses as :func:`run` (a cached result is not read,
    since it holds no parameters). Returns ``(loss_matrix, params)`` with
    ``params[k] = {"params": raw, "ema": prediction}`` pytrees of expert ``k``
    after training on the whole stream (``None`` for an expert pruned by the
    protocol's ``prune``).
    """
    validate(task, checkpoint_every_s)
    protocol = _arguments.resolve_protocol(
        protocol,
        experts,
        batch_size=batch_size,
        seed=seed,
        replay_streams=replay_streams,
        standardize=standardize,
    )
    return run_pass(
        task,
        protocol,
        keep_params=True,
        checkpoint_every_s=checkpoint_every_s,  # type: ignore[return-value]
        **kwargs,
    )


def resolve_protocol(
    protocol: Protocol | str | None = None, experts: Any = None, **fields: Any
) -> Protocol:
    """Deprecated: use ``mdlnb.protocol(protocol, board=experts, **fields)``.

    The protocol a call runs: ``protocol`` (default ``"default"``) with the board
    ``experts`` and the other ``fields`` that are not None
    (:func:`mdlnb.board._arguments.resolve_protocol`, the one resolution)."""
    warnings.warn(
        "mdlnb.prequential.resolve_protocol is deprecated; use "
        "mdlnb.protocol(protocol, board=experts, **fields)",
        DeprecationWarning,
        stacklevel=2,
    )
    return _arguments.resolve_protocol(protocol, experts, **fields)
