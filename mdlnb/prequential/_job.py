"""One pass's checked inputs and its cache key.

:func:`make_job` checks a task against a protocol (finite features, labels in
range, the readouts' ``check_task``; a regression task's targets as float32
(N, P), with no label smoothing or calibration), resolves
``chunk_batches="auto"`` (:mod:`mdlnb.prequential._chunking`) and hashes the
entry's key: :data:`CODE_VERSION`, the features and labels, the protocol's
stage-1 part (:meth:`mdlnb.Protocol.stage1`), C, and where they apply the padded
feature dimension, the Gaussian target code, this machine's block widths where
they are not 2 cores' (:func:`mdlnb.prequential._groups.layout_key`) and the
number of stacked streams. The task's name is not in it: the same features under
another name are the same entry (:func:`from_entry` keeps the name an entry was
computed under as ``meta["computed_as"]``).
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np

from mdlnb.board._protocol import Protocol
from mdlnb.core import _targets
from mdlnb.core._checks import check_finite, check_int
from mdlnb.core._task import Task
from mdlnb.infra._io import content_hash
from mdlnb.prequential._chunking import auto_chunk_batches, progress_chunk_batches
from mdlnb.prequential._groups import board_dim, layout_key
from mdlnb.prequential._loss_matrix import LossMatrix
from mdlnb.prequential._stream import stream_order

#: The version of stage 1's arithmetic, in every cache key: raised whenever a change
#: may move a loss, even in its last float bit, so that no entry of other code is read.
#: Its losses are those of inputs standardised by the prefix and clipped to ±CLIP_Z
#: (raw, unclipped features under ``standardize="none"``); one AdamW step per replay
#: batch (:func:`mdlnb.core._fit.step`, Adam's bias correction as a product, so a sharded
#: run equals one device's); experts grouped by (architecture, replay count) in whole
#: blocks of at most ``BLOCK_BYTES`` (32 MB on a CPU), their losses evaluated block by
#: block; checkpoints in the shared format of :mod:`mdlnb.infra._checkpoint`.
CODE_VERSION = "prequential-v7"


def validate(task, checkpoint_every_s) -> None:
    """A run's own arguments checked: a non-empty Task, ``checkpoint_every_s >= 0``."""
    if not isinstance(task, Task):
        raise ValueError(f"task: must be an mdlnb.Task, got {type(task).__name__}")
    if task.n == 0:
        raise ValueError("task: is empty")
    if not checkpoint_every_s >= 0:
        raise ValueError(f"checkpoint_every_s: must be >= 0, got {checkpoint_every_s}")


def check_readouts(task, experts) -> None:
    """Each readout's ``check_task(task)``, if it has one, called once."""
    for ro in dict.fromkeys(e.readout for e in experts):
        if hasattr(ro, "check_task"):
            ro.check_task(task)


def task_arrays(task, experts):
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
        check_readouts(task, experts)
        return feats, _targets.as_targets(task.y).astype(np.float32)
    labels = np.asarray(task.y)
    if labels.min() < 0 or labels.max() >= task.num_classes:
        raise ValueError(f"task.y: labels must lie in [0, {task.num_classes})")
    check_readouts(task, experts)
    return feats, labels


class Job(NamedTuple):
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


def make_job(
    task, proto, chunk_batches, pad_features, progress, streams: dict | None = None
) -> Job:
    """Check the inputs, resolve ``chunk_batches="auto"`` and hash the cache key (with
    ``streams``, ``{"streams": W}`` of a stacked call, :mod:`._streams`, in it and ``meta``)."""
    experts = proto.experts()
    if chunk_batches != "auto":
        check_int("chunk_batches", chunk_batches, minimum=1, what="an int >= 1 or 'auto'")
    b = proto.batch_size
    feats, labels = task_arrays(task, experts)
    n, d = feats.shape
    # the feature dimension compiled for (zero features appended; pad_features)
    dp = board_dim(experts, d) if pad_features else d
    c = task.out_dim  # C logits, or 2P Gaussian outputs (regression)
    if chunk_batches == "auto":
        chunk_batches = progress_chunk_batches(
            auto_chunk_batches(experts, dp, c, b), n, b, progress
        )
    key, meta = _key(task, proto, experts, feats, labels, c, dp, streams)
    return Job(proto, experts, feats, labels, c, task.target_dims, dp, chunk_batches, key, meta)


def _key(
    task, proto, experts, feats, labels, c: int, dp: int, streams: dict | None
) -> tuple[str, dict]:
    """The cache key and the result's ``meta`` so far: the padded feature dimension
    where padded, a regression target's code, this machine's block widths where they
    are not 2 cores' and a stacked call's ``streams`` go into both (each only where it
    applies, so the keys of runs without them are unchanged)."""
    (n, d), b = feats.shape, proto.batch_size
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
    return key, meta


def from_entry(hit, task, job: Job, file_name: str) -> LossMatrix:
    """A cached entry as this call's result (a name it was computed under kept as
    ``meta["computed_as"]``)."""
    lm = LossMatrix._from_arrays(hit, job.experts, file_name)
    meta = dict(lm.meta)
    if lm.task_name != task.name:  # computed under another name: keep it as provenance
        meta["computed_as"] = lm.task_name
    return dataclasses.replace(lm, protocol=job.proto, task_name=task.name, meta=meta)
