"""Stage 1's driver: :func:`run` (memory plan, slices, cache), :func:`run_with_params`
and the chunk loop that drives the compiled program (devices, pruning segments,
progress, checkpoints); see :mod:`mdlnb.prequential`."""

from __future__ import annotations

import dataclasses
import math
import time
from functools import partial
from pathlib import Path
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from mdlnb import _aligned, _checkpoint, _targets, _xla_cache
from mdlnb._checks import check_finite
from mdlnb._io import cache_dir, content_hash, load_entry, locked
from mdlnb._protocol import Protocol
from mdlnb._protocol import protocol as _protocol
from mdlnb._task import Task
from mdlnb.experts import Expert
from mdlnb.prequential import _memory, _program, _prune, _sharding, _slicing
from mdlnb.prequential._groups import (_block_fit, _layout, _members_spec, board_dim,
                                       unpad_first_layer)
from mdlnb.prequential._inputs import _chunk_inputs
from mdlnb.prequential._loss_matrix import LossMatrix
from mdlnb.prequential._stream import stream_order

# v2: standardised inputs clipped to ±CLIP_Z. v3: one AdamW step (mdlnb._fit.step) and
# state NamedTuple, the protocol in the cache key, raw features no longer clipped under
# standardize="none", the shared checkpoint format (mdlnb._checkpoint). v4: experts grouped
# by (architecture, replay count) in whole blocks (losses may move in the last float bit).
# v5: losses evaluated block by block (the last float bit again, in groups of several blocks).
# v6: Adam's bias correction as a product (_fit.scale_by_adam): sharded runs equal one device's.
CODE_VERSION = "prequential-v6"
DEFAULT_CHUNK_BATCHES = 128
#: ``chunk_batches="auto"``: FLOPs one compiled call may take (about a minute on a
#: 2-core CPU, tens of milliseconds on a GPU), so that progress and checkpoints
#: come at least that often even when one batch of a large board costs seconds
CHUNK_FLOPS = 2e12
#: a checkpoint that took s seconds to write is not followed by another within
#: s / CHECKPOINT_SHARE seconds (the ``vtab`` board's state is ~10 GB: ~1 minute
#: to write), so at most about this share of the run goes to checkpoints
CHECKPOINT_SHARE = 0.1

ProgressFn = Callable[[int, int, float], None]
#: ``chunk_batches="auto"`` under a drawn progress bar: at least this many compiled
#: calls, so the bar moves (the losses do not depend on the chunking)
PROGRESS_UPDATES = 20


def _bar_shown(progress) -> bool:
    """Whether :func:`_make_progress` draws a bar (not a callback, not batch mode)."""
    from mdlnb import _progress

    return not callable(progress) and _progress.enabled() and _progress.wanted(progress,
                                                                                 long=True)


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
            raise ValueError(f"experts: label smoothing has no meaning for regression targets; "
                             f"experts {smoothed[:3]} set it")
        calibrated = sorted({e.name for e in experts if getattr(e, "calibrate", False)})
        if calibrated:
            raise ValueError(f"experts: calibration (a softmax temperature) has no meaning for "
                             f"regression targets; experts {calibrated[:3]} set it")
        _check_readouts(task, experts)
        return feats, _targets.as_targets(task.y).astype(np.float32)
    labels = np.asarray(task.y)
    if labels.min() < 0 or labels.max() >= task.num_classes:
        raise ValueError(f"task.y: labels must lie in [0, {task.num_classes})")
    _check_readouts(task, experts)
    return feats, labels


def _make_progress(progress, n, k):
    """A ``(done, total, best_nats_per_example)`` callback and a closer."""
    if callable(progress):
        return progress, lambda: None
    from mdlnb import _progress

    # None (auto) where a person watches: a bar once stage 1 has run AUTO_DELAY_S
    # (digits on the default board, N·K = 7e4, takes a minute on a CPU), at once
    # when it is known to be long (N·K ≥ 2e6) or asked for
    if not _progress.wanted(progress, long=True):
        return (lambda *a: None), lambda: None
    at_once = progress is not None or n * k >= 2_000_000
    bar = _progress.bar(total=n, unit="ex", desc="prequential", leave=False,
                        delay=0.0 if at_once else _progress.AUTO_DELAY_S)

    def update(done, total, best):
        bar.update(done - bar.n)
        bar.set_postfix_str(f"best {best / math.log(2):.3f} bits/ex", refresh=False)

    return update, bar.close


def run(task: Task, experts: Sequence[Expert] | str | None = None, batch_size: int | None = None,
        seed: int | None = None, *, protocol: Protocol | str | None = None,
        replay_streams: int | None = None, standardize: str | bool | None = None,
        progress: bool | ProgressFn | None = None, cache: bool = True,
        checkpoint_dir: str | Path | None = None, checkpoint_every_s: float = 120.0,
        chunk_batches: int | str = "auto",
        memory_budget: int | str | None = "auto", devices: Sequence | None = None,
        pad_features: bool = False) -> LossMatrix:
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
        :func:`mdlnb._progress.interactive`, a bar — a widget in a kernel with
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
        readout other than :class:`~mdlnb.readouts.Readout` are never padded.

    With N ≤ B every example is in the first batch and coded uniformly: no
    readout is trained, nothing is compiled or cached, and the result is
    :func:`untrained_losses` (log C per example and expert).

    Returns:
      A :class:`LossMatrix` with ``losses`` (N, K) float32 nats in stream order.
    """
    if isinstance(memory_budget, str) and memory_budget != "auto":
        raise ValueError(f"memory_budget: must be 'auto', None or bytes, got {memory_budget!r}")
    _validate(task, checkpoint_every_s)
    protocol = resolve_protocol(protocol, experts, batch_size=batch_size, seed=seed,
                                replay_streams=replay_streams, standardize=standardize)
    experts = batch_size = seed = replay_streams = standardize = None  # all in `protocol`
    if task.n <= protocol.batch_size:  # one batch, coded uniformly: nothing to train or compile
        _task_arrays(task, protocol.experts())
        return untrained_losses(task, protocol)
    if memory_budget is not None:  # memory plan: slice a board that does not fit (_memory.py)
        board = protocol.experts()
        budget = None if memory_budget == "auto" else memory_budget
        _check_readouts(task, board)  # before sizing them (num_params)
        ndev = len(devices) if devices is not None else jax.device_count()
        plan = _memory.plan(board, task.n, np.shape(task.features)[1], task.out_dim,
                            budget_bytes=budget, devices=ndev)
        if len(plan.slices) > 1 and protocol.prune is not None:
            if budget is not None:  # pruning couples the experts: it cannot be sliced
                raise ValueError("memory_budget: a pruned board must run in one slice (pruning "
                                 f"couples the experts); {plan.describe()}")
            plan = dataclasses.replace(plan, slices=(tuple(range(len(board))),))  # "auto": one pass
        if len(plan.slices) > 1:
            return _slicing.run_sliced(
                task, protocol=protocol, memory_plan=plan, progress=progress, cache=cache,
                checkpoint_dir=checkpoint_dir, checkpoint_every_s=checkpoint_every_s,
                chunk_batches=chunk_batches, devices=devices, pad_features=pad_features)
        _slicing.announce(plan, progress, task.n)  # the plan line, with the progress output
    return _run(task, experts, batch_size, seed, protocol=protocol, replay_streams=replay_streams,
                standardize=standardize, progress=progress, cache=cache,
                checkpoint_dir=checkpoint_dir, checkpoint_every_s=checkpoint_every_s,
                chunk_batches=chunk_batches, keep_params=False, devices=devices,
                pad_features=pad_features)[0]


def untrained_losses(task: Task, protocol: Protocol) -> LossMatrix:
    """The ``LossMatrix`` of a stream of N ≤ B examples: one batch, coded uniformly
    (log C nats per example for every expert, float32, as the compiled program
    records a first batch; a regression batch by its own Gaussian,
    :func:`mdlnb._targets.first_batch_nats`), without compiling a program that
    would train nothing.
    ``meta["untrained"]`` is True; :func:`run` returns this for every caller
    (``evaluate``, ``compare``, the studies)."""
    experts = tuple(protocol.experts())
    order = stream_order(protocol.seed, task.n)
    meta = {"standardize": protocol.standardize, "untrained": True}
    if task.is_regression:  # one batch: coded by its own Gaussian (mdlnb._targets)
        from mdlnb import _targets

        first = _targets.first_batch_nats(_targets.as_targets(task.y)[order])
        losses = np.repeat(first.astype(np.float32)[:, None], len(experts), axis=1)
        meta["target"] = _target_meta(task, protocol.batch_size,
                                      protocol.standardize == "prefix", order)
    else:
        losses = np.full((task.n, len(experts)), np.float32(math.log(task.num_classes)),
                         np.float32)
    return LossMatrix(losses=losses, experts=experts, order=order, task_name=task.name,
                      num_classes=0 if task.is_regression else task.num_classes,
                      seed=protocol.seed, batch_size=protocol.batch_size, meta=meta,
                      protocol=protocol)


def run_with_params(task: Task, experts: Sequence[Expert] | str | None = None,
                    batch_size: int | None = None, seed: int | None = None,
                    **kwargs) -> tuple[LossMatrix, list[dict]]:
    """:func:`run`, also returning each expert's parameters at the end of the stream.

    Same arguments and losses as :func:`run` (a cached result is not read,
    since it holds no parameters). Returns ``(loss_matrix, params)`` with
    ``params[k] = {"params": raw, "ema": prediction}`` pytrees of expert ``k``
    after training on the whole stream (``None`` for an expert pruned by the
    protocol's ``prune``).
    """
    return _run(task, experts, batch_size, seed, keep_params=True, **kwargs)


def auto_chunk_batches(experts: Sequence[Expert], in_dim: int, num_classes: int,
                       batch_size: int) -> int:
    """Batches per compiled call for ``chunk_batches="auto"``: one batch costs
    B · Σ_k flops_k · (1 + 3 · replay_k) FLOPs (the prediction, then each replay
    step's forward and backward passes); as many batches as fit in
    :data:`CHUNK_FLOPS`, between 1 and :data:`DEFAULT_CHUNK_BATCHES`."""
    per_batch = batch_size * sum(e.readout.flops(in_dim, num_classes) * (1 + 3 * e.replay_streams)
                                 for e in experts)
    return int(max(1, min(DEFAULT_CHUNK_BATCHES, CHUNK_FLOPS // max(per_batch, 1))))


def resolve_protocol(protocol: Protocol | str | None = None, experts: Any = None,
                     **fields: Any) -> Protocol:
    """The protocol a call runs: ``protocol`` (default ``"default"``) with the board
    ``experts`` (a list of Experts or a preset name) and the other ``fields`` that
    are not None."""
    if experts is not None and not isinstance(experts, str):
        experts = [experts] if isinstance(experts, Expert) else list(experts)
        if not experts:
            raise ValueError("experts: must contain at least one Expert")
        for e in experts:
            if not isinstance(e, Expert):
                raise ValueError(f"experts: expected Expert objects, got {type(e).__name__}")
    return _protocol("default" if protocol is None else protocol, board=experts, **fields)


def _run(task, experts=None, batch_size=None, seed=None, *, protocol=None, replay_streams=None,
         standardize=None, progress=None, cache=True, checkpoint_dir=None,
         checkpoint_every_s=120.0, chunk_batches="auto", keep_params=False,
         devices=None, pad_features=False, _locked=False):
    _xla_cache.ensure()  # compiled programs are cached on disk
    _validate(task, checkpoint_every_s)
    proto = resolve_protocol(protocol, experts, batch_size=batch_size, seed=seed,
                             replay_streams=replay_streams, standardize=standardize)
    experts = proto.experts()
    if chunk_batches != "auto" and (isinstance(chunk_batches, bool) or not isinstance(
            chunk_batches, (int, np.integer)) or chunk_batches < 1):
        raise ValueError(f"chunk_batches: must be an int >= 1 or 'auto', got {chunk_batches!r}")
    b, seed = proto.batch_size, proto.seed
    prefix = proto.standardize == "prefix"
    feats, labels = _task_arrays(task, experts)
    n, d = feats.shape
    # the feature dimension compiled for (zero features appended; pad_features)
    dp = board_dim(experts, d) if pad_features else d
    c = task.out_dim  # C logits, or 2P Gaussian outputs (regression)
    if chunk_batches == "auto":
        chunk_batches = auto_chunk_batches(experts, dp, c, b)
        if _bar_shown(progress):  # a bar that moves: at least PROGRESS_UPDATES calls
            chunk_batches = min(chunk_batches, max(1, math.ceil(math.ceil(n / b) /
                                                                PROGRESS_UPDATES)))
    padded = {"padded_dim": dp} if dp != d else {}  # (the last float bit may differ)
    # regression: the target's code in the key and the result (classification keys unchanged)
    target = _target_meta(task, b, proto.standardize == "prefix", stream_order(seed, n)) \
        if task.is_regression else None
    extra = [padded] if padded else []
    key = content_hash(CODE_VERSION, feats, labels, proto.stage1(), c,
                       *extra, *([{"target": _targets.GAUSSIAN_CODE}] if target else []))
    meta = {"cache_key": key, "code_version": CODE_VERSION, "standardize": proto.standardize,
            "matmul_dtype": proto.matmul_dtype, **padded, **({"target": target} if target else {})}
    # the file is named by the key alone: the task's name is a label (kept in the entry),
    # not an input, so the same features under another name are the same entry
    cache_file = cache_dir("losses") / f"{key}.npz" if cache else None
    if cache_file is not None and not _locked:
        with locked(cache_file):  # one process computes a key; the others wait, then read it
            return _run(task, None, protocol=proto, progress=progress, cache=cache,
                        checkpoint_dir=checkpoint_dir, checkpoint_every_s=checkpoint_every_s,
                        chunk_batches=chunk_batches, keep_params=keep_params, devices=devices,
                        pad_features=pad_features, _locked=True)
    hit = load_entry(cache_file) if cache_file is not None and not keep_params else None
    if hit is not None:  # None: absent, or damaged (warned and recomputed)
        lm = LossMatrix._from_arrays(hit, experts, cache_file.name)
        meta = dict(lm.meta)
        if lm.task_name != task.name:  # computed under another name: keep it as provenance
            meta["computed_as"] = lm.task_name
        return dataclasses.replace(lm, protocol=proto, task_name=task.name, meta=meta), None
    if checkpoint_dir is None and cache:
        checkpoint_dir = cache_dir("checkpoints")
    ckpt_file = Path(checkpoint_dir) / f"{key}.ckpt.npz" if checkpoint_dir is not None else None

    t0 = time.perf_counter()
    order = stream_order(seed, n)
    # The program reads the stream as x_all/y_all, padded with zero features to the
    # dimension bucket and with zero rows to the row bucket, so its shapes follow
    # neither D nor N exactly (rows past N are never drawn: positions < t_end <= N).
    rows = row_bucket(n)
    x_all = np.zeros((rows, dp), feats.dtype)
    x_all[:n, :d] = feats[order]
    y_all = np.zeros((rows,) + labels.shape[1:], labels.dtype)
    y_all[:n] = labels[order]
    x_ord, y_ord = x_all[:n], y_all[:n]  # views
    # Devices (_sharding.py): with several, each group is padded to whole
    # blocks per device (index -1: a copy of its first expert, column dropped).
    mesh = _sharding.expert_mesh(devices) if devices is not None or jax.device_count() > 1 else None
    ndev = 1 if mesh is None else mesh.size
    if proto.prune is not None:
        ckpt_file = None  # no checkpoints when pruning: see README
    # a run that resumes takes its state from the checkpoint: only its shapes here
    resuming = ckpt_file is not None and ckpt_file.exists()
    groups, spec, column, state, hypers = _layout(experts, ndev, d, c, b, seed,
                                                  proto.clip if prefix else None,
                                                  proto.matmul_dtype, build=not resuming, dp=dp)
    target_moments = first_code = None
    if task.is_regression:  # prefix target moments; the first batch's code (mdlnb._targets)
        spec = dataclasses.replace(spec, targets=task.target_dims)
        target_moments = _targets.prefix_moments(labels[order], b, prefix)
        first_code = _targets.first_batch_nats(labels[order][:b]).astype(np.float32)
    keep = column >= 0
    x_dev, y_dev = jnp.asarray(x_all), jnp.asarray(y_all)
    seed_key = jax.random.PRNGKey(seed)

    total_batches = math.ceil(n / b)
    pruner = None
    if proto.prune is not None:  # stage 2 alongside, in segments (_prune.py)
        if ndev > 1:
            raise ValueError("prune: runs on one device; pass devices=[jax.devices()[0]]")
        pruner = _prune.Pruner(proto.prune, proto.strategy, len(experts), n, b,
                               readout_of=_prune.readout_labels(experts))
        chunk_batches = proto.prune.segment_batches
        computed = 0
    chunk = chunk_bucket(total_batches, chunk_batches)
    losses = _aligned.empty((n, len(experts)))  # stage 2 reads it in place (mdlnb._aligned)
    losses.fill(np.inf if pruner else 0.0)
    running = (np.zeros(dp), np.zeros(dp), 0.0)
    next_batch = 0  # chunks start at any batch: a checkpoint resumes under another chunk size
    if resuming:
        resumed = _load_checkpoint(ckpt_file, key, state)  # state: ShapeDtypeStructs
        if resumed is not None:
            state, losses, running, next_batch = resumed
        else:  # none that fits: start afresh (the same deterministic initial state)
            state = _layout(experts, ndev, d, c, b, seed, proto.clip if prefix else None,
                            proto.matmul_dtype, dp=dp)[3]
    if ndev > 1:  # the expert axis over the mesh, the rest replicated
        state, hypers = _sharding.shard(mesh, state), _sharding.shard(mesh, hypers)
        x_dev, y_dev, seed_key = _sharding.replicate(mesh, (x_all, y_all, seed_key))
        chunk_program = partial(_sharding.run_chunk, spec, mesh)
    else:
        chunk_program = partial(_program._run_chunk, spec)
    meta["devices"] = _sharding.describe(mesh or _sharding.expert_mesh(jax.local_devices()[:1]))

    report, close = _make_progress(progress, n, len(experts))
    totals = losses[: next_batch * b].sum(axis=0, dtype=np.float64)  # for progress only
    last_ckpt, ckpt_cost = time.perf_counter(), 0.0
    try:
        for first in range(next_batch, total_batches, chunk):
            xs, running = _chunk_inputs(x_ord, y_ord, first, chunk, b, running, prefix,
                                        target_moments)
            if ndev > 1:
                xs = _sharding.replicate(mesh, xs)
            state, out = chunk_program(state, hypers, x_dev, y_dev, seed_key, xs)
            lo, hi = first * b, min((first + chunk) * b, n)
            block = _sharding.to_host(out).reshape(-1, len(column))[: hi - lo, keep]
            if first == 0 and first_code is not None:
                block[: len(first_code)] = first_code[:, None]
            losses[lo:hi, column[keep]] = block
            totals[column[keep]] += block.sum(axis=0, dtype=np.float64)
            done = first + chunk >= total_batches
            if pruner is not None:
                computed += sum(len(idx) * mr for (_, idx), mr in zip(groups, spec.max_replay)) \
                    * int(xs["valid"].sum())
                rows = losses[lo:hi][:, pruner.alive]
                # density codes may be negative: the posterior is the same on shifted rows
                pruner.observe(_targets.shift_rows(rows)[0] if task.is_regression else rows)
                if not done and pruner.decide().size:
                    totals[pruner.pruned_at < n] = np.inf
                    groups, state, hypers, spec = _compact(
                        pruner, groups, state, hypers, experts, d, c, b,
                        proto.clip if prefix else None, proto.matmul_dtype)
                    spec = dataclasses.replace(spec, targets=task.target_dims)
                    column = _sharding.columns(groups, 1)
                    keep = column >= 0
                    chunk_program = partial(_program._run_groups, spec)
            if ckpt_file is not None and not done and \
                    time.perf_counter() - last_ckpt >= (checkpoint_every_s and max(
                        checkpoint_every_s, ckpt_cost / CHECKPOINT_SHARE)):
                t_save = time.perf_counter()
                _save_checkpoint(ckpt_file, key, state, losses, running, first + chunk)
                last_ckpt = time.perf_counter()
                ckpt_cost = last_ckpt - t_save
            report(hi, n, float(totals.min()) / hi)
    finally:
        close()

    meta["seconds"] = round(time.perf_counter() - t0, 3)
    if pruner is not None:
        meta["prune"] = _prune_meta(proto.prune, pruner, experts, n, b, computed)
    result = LossMatrix(losses=losses, experts=tuple(experts), order=order, task_name=task.name,
                        num_classes=0 if task.is_regression else c, seed=seed, batch_size=b, meta=meta, protocol=proto)
    if cache_file is not None:
        result.save(cache_file)
    if ckpt_file is not None:
        ckpt_file.unlink(missing_ok=True)
    return result, (_expert_params(groups, state, len(experts), d, dp) if keep_params else None)


def _target_meta(task, batch_size: int, standardize: bool, order) -> dict:
    """``meta["target"]`` of a regression loss matrix: the kind, P, the code and its
    first-batch convention, the untrained readout's codelength (the baseline,
    :func:`mdlnb._targets.untrained_nats`) and the quantisation caveat
    (:mod:`mdlnb._targets`)."""
    y = _targets.as_targets(task.y)[order]
    return {"kind": "regression", "dims": task.target_dims, "code": _targets.GAUSSIAN_CODE,
            "untrained_nats": float(_targets.untrained_nats(y, batch_size, standardize).sum()),
            "units": "nats of density (per example)",
            "first_batch": f"the maximum-likelihood Gaussian of the first {batch_size} targets "
                           "(not a proper code; the same for every expert)",
            "caveat": _targets.QUANTISATION_NOTE}


def _compact(pruner, groups, state, hypers, experts, d, c, b, clip, matmul_dtype):
    """After a pruning decision: the groups, state and hypers compacted to the survivors
    (:func:`mdlnb.prequential._prune.compact`, one device) and the new static spec."""
    alive = np.zeros(len(experts), bool)
    alive[pruner.alive] = True
    groups, state, hypers = _prune.compact(
        groups, state, hypers, alive,
        lambda ro: _block_fit(ro.num_params(d, c), getattr(ro, "max_block", None)))
    _, spec = _members_spec(groups, experts, 1, d, c, b, clip, matmul_dtype)
    return groups, state, hypers, spec


def _prune_meta(prune, pruner, experts, n, b, computed) -> dict:
    """``meta["prune"]``: the option, the schedule and the expert-updates."""
    return {**prune.to_dict(), "segment_rows": pruner.segment_rows,
            "pruned_at": pruner.pruned_at.tolist(),
            "num_pruned": int((pruner.pruned_at < n).sum()),
            **_prune.expert_updates([e.replay_streams for e in experts], pruner.pruned_at, n, b),
            "expert_updates_computed": int(computed)}


def _expert_params(groups, state, k: int, d: int, dp: int) -> list:
    """Each expert's ``{"params", "ema"}`` pytrees from the stacked group state (``None``
    for an expert no group holds: pruned), for the task's ``d`` features (the zero
    rows of a padded first layer dropped)."""
    params: list = [None] * k
    for (_, idx), g in zip(groups, state):
        g = jax.tree_util.tree_map(_sharding.to_host, {"params": g.params, "ema": g.ema_params})
        if dp != d:
            g = {name: unpad_first_layer(p, d) for name, p in g.items()}
        for row, j in enumerate(idx):
            if j >= 0:
                params[j] = jax.tree_util.tree_map(lambda a, row=row: jnp.asarray(a[row]), g)
    return params


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


def _save_checkpoint(path: Path, key: str, state, losses, running, next_batch) -> None:
    _checkpoint.save(path, jax.tree_util.tree_map(_sharding.to_host, state), key=key,
                     next_batch=np.int64(next_batch), losses=losses,
                     s1=running[0], s2=running[1], count=np.float64(running[2]))


def _load_checkpoint(path: Path, key: str, like):
    """Restore a checkpoint of this run: ``(state, losses, running sums, next batch)``
    (``None``: none, or one that does not fit)."""
    ck = _checkpoint.load(path, like, key=key)
    if ck is None or "next_batch" not in ck.arrays:  # (an older format counted chunks)
        return None
    a = ck.arrays
    return ck.tree, a["losses"], (a["s1"], a["s2"], float(a["count"])), int(a["next_batch"])
