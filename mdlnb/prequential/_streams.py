"""Stage 1 over a batch of streams: :func:`run_streams`.

A study runs many streams — encoder × task × data order — each of them
:func:`mdlnb.prequential.run` on its own. :func:`run_streams` takes them all at
once under one protocol (board, B, standardisation; each stream its own task
and seed) and returns one :class:`~mdlnb.prequential.LossMatrix` per stream, in
the order given. Each stream keeps everything a solo run has: its order,
initialisation and replay draws (from its seed), its prefix standardisation
statistics, its cache entry and checkpoints.

**Buckets.** Streams whose compiled program has the same shapes — the same N,
feature dimension (padded, with ``pad_features``), number of classes (or
targets), input dtypes and chunk length — form a shape bucket; a bucket runs
one compiled chunk program, whatever the number of its streams.

**Layouts** (``layout=``):

* ``"sequential"`` (the default on a CPU): the streams of a bucket run one
  after another through the one-stream chunk program, compiled once per bucket
  and reused by every stream of it. A stream's losses are its solo run's, bit
  for bit, under the same cache key (it *is* its solo run; the batch only
  orders the work by bucket). On XLA:CPU the stream axis is not stacked:
  vmapping streams together was not faster there (NOTES.md: one 192-expert
  scan was slower than 12 scans of 16; benchmarks/RESULTS.md for streams), and
  it rounds otherwise (below).
* ``"stacked"`` (the default on a GPU or TPU): W streams of a bucket in one
  compiled call (:func:`mdlnb.prequential._program._run_stacked`): their states
  stacked in front of the expert axis, ``vmap`` over streams around the chunk's
  ``lax.scan`` over batches, so each of a block's matmuls covers W streams ×
  the block's experts (the few, wide kernels an accelerator needs). W is the
  memory plan's (:func:`mdlnb.prequential._memory.streams_per_call`: the
  streams whose boards fit a safe fraction of the device memory, a power of
  two), at most the next power of two of the bucket's streams; a last, partial
  call is padded with copies of its first stream, whose results are dropped.
  The whole stream is one call where its inputs fit
  (:data:`STACKED_INPUT_BYTES`), so the host prepares the chunk inputs once
  and reads the losses back once.

**Exactness.** ``"sequential"``: bit-identical to :func:`~mdlnb.prequential.run`,
same cache key (``tests/test_streams.py``). ``"stacked"``: the same
arithmetic per stream, but XLA compiles a stream's ops with an extra batch
axis, and XLA:CPU rounds some of them otherwise (measured, jax 0.10: the
output-layer bias gradient, a reduction over the batch of a (W, K, B, C)
array, differs in the last bit from the (K, B, C) one for C = 8–16; every
matmul tested was bit-identical); training amplifies such round-off into
differences of the order of the seed-to-seed spread of single examples. So a
stacked stream is cached under its solo key plus ``{"streams": W}`` (also
``meta["streams"]``), as block widths are (:func:`mdlnb.prequential._groups.layout_key`):
a cached number never changes meaning, and a stacked result is never read
as a solo one.

Not stacked (each such stream runs as :func:`~mdlnb.prequential.run` would,
under its own key): a protocol with ``prune`` (pruning decides per stream), a
board that the memory plan slices, several devices (the solo path shards the
expert axis), streams of N ≤ B (nothing is trained) and buckets of one stream.

Checkpoints: a stacked call checkpoints all its streams in one file, keyed
by its streams' keys and W, on the solo schedule (``checkpoint_every_s``), and
a rerun of the same call resumes from it; each finished stream is written to
the cache as soon as its call ends, so a killed batch loses at most the calls
in flight.
"""

from __future__ import annotations

import contextlib
import math
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from mdlnb import _progress, _xla_cache
from mdlnb._io import cache_dir, content_hash, load_entry, locked
from mdlnb._task import Task
from mdlnb.prequential import _memory, _program, _sharding
from mdlnb.prequential._checkpointer import Checkpointer
from mdlnb.prequential._inputs import _chunk_inputs
from mdlnb.prequential._loss_matrix import LossMatrix
from mdlnb.prequential._onepass import (CHUNK_FLOPS, _from_entry, _job,
                                        _make_progress, _setup, _validate, auto_chunk_batches,
                                        chunk_bucket, resolve_protocol)
from mdlnb.prequential._run import run, untrained_losses

LAYOUTS = ("auto", "sequential", "stacked")
#: a stacked call's chunk inputs (features, labels, statistics of W streams) may take
#: this many bytes; the whole stream is one call when they fit
STACKED_INPUT_BYTES = 256 * 2 ** 20

OnResult = Callable[[int, LossMatrix], None]


def default_layout(platform: str | None = None) -> str:
    """``"sequential"`` on a CPU, ``"stacked"`` on an accelerator (``platform``:
    default JAX's default backend)."""
    platform = jax.default_backend() if platform is None else platform
    return "sequential" if platform == "cpu" else "stacked"


def _check_streams(streams: Any) -> list[tuple[Task, int]]:
    """``streams`` as a list of ``(task, seed)`` pairs, checked."""
    if isinstance(streams, (str, bytes, Task)) or not hasattr(streams, "__iter__"):
        raise TypeError(f"streams: expected a sequence of (task, seed) pairs, got "
                        f"{type(streams).__name__}")
    out = []
    for item in streams:
        if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], Task)):
            raise TypeError(f"streams: each stream is a (task, seed) pair with an mdlnb.Task, "
                            f"got {type(item).__name__}")
        seed = item[1]
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"streams: a seed must be an int >= 0, got {seed!r}")
        out.append((item[0], int(seed)))
    if not out:
        raise ValueError("streams: is empty")
    return out


def _bucket(job) -> tuple:
    """The shape bucket of a stream: what its compiled program's shapes depend on
    besides the protocol's board."""
    return (job.feats.shape, str(job.feats.dtype), job.dp, job.out_dim, job.targets,
            str(job.labels.dtype), job.labels.shape[1:], job.chunk_batches)


def run_streams(streams: Sequence[tuple[Task, int]], experts: Any = None,
                batch_size: int | None = None, *, protocol: Any = None,
                replay_streams: int | None = None, standardize: str | bool | None = None,
                layout: str = "auto", progress: Any = None, cache: bool = True,
                checkpoint_dir: Any = None, checkpoint_every_s: float = 120.0,
                chunk_batches: int | str = "auto", memory_budget: int | str | None = "auto",
                pad_features: bool = False,
                on_result: OnResult | None = None) -> list[LossMatrix]:
    """Stage 1 of many streams under one protocol: one :class:`LossMatrix` per stream.

    Args:
      streams: ``(task, seed)`` pairs; the seed sets the stream's order,
        initialisation and replay draws, as :func:`mdlnb.prequential.run`'s.
      experts, batch_size, protocol, replay_streams, standardize: the protocol,
        as for :func:`mdlnb.prequential.run` (its seed is each stream's).
      layout: ``"sequential"``, ``"stacked"`` or ``"auto"`` (:func:`default_layout`);
        see the module docstring for what each guarantees.
      progress: ``None`` (a bar over all streams' examples where someone
        watches), ``True``/``False``, or a callable ``f(done, total, best)``
        (``best``: the mean best-expert nats per example of the streams so far).
      cache, checkpoint_dir, checkpoint_every_s, chunk_batches, memory_budget,
      pad_features: as for :func:`mdlnb.prequential.run`, per stream;
        ``memory_budget`` also sizes the stacked calls
        (:func:`mdlnb.prequential._memory.streams_per_call`).
      on_result: called as ``on_result(i, loss_matrix)`` as soon as stream ``i``
        (its index in ``streams``) is done, in the order they finish.

    Returns:
      the streams' loss matrices, in the order of ``streams``.
    """
    pairs = _check_streams(streams)
    if layout not in LAYOUTS:
        raise ValueError(f"layout: must be one of {LAYOUTS}, got {layout!r}")
    if layout == "auto":
        layout = default_layout()
    _validate(pairs[0][0], checkpoint_every_s)
    base = resolve_protocol(protocol, experts, batch_size=batch_size,
                            replay_streams=replay_streams, standardize=standardize)
    protos = [resolve_protocol(base, None, seed=s) for _, s in pairs]
    results: list[LossMatrix | None] = [None] * len(pairs)

    def done(i: int, lm: LossMatrix) -> None:
        results[i] = lm
        if on_result is not None:
            on_result(i, lm)

    opts = dict(cache=cache, checkpoint_dir=checkpoint_dir, checkpoint_every_s=checkpoint_every_s,
                chunk_batches=chunk_batches, memory_budget=memory_budget,
                pad_features=pad_features)
    solo = list(range(len(pairs)))
    if layout == "stacked" and base.prune is None and jax.device_count() == 1:
        solo = _run_stacked_buckets(pairs, protos, done, progress, **opts)
    _run_solo([(i, pairs[i][0], protos[i]) for i in solo], done, progress, **opts)
    return results  # type: ignore[return-value]


def _run_solo(items, done, progress, **opts) -> None:
    """Each stream through :func:`mdlnb.prequential.run`, bucket by bucket (a bucket's
    program is compiled by its first stream and reused by the rest)."""
    if not items:
        return
    items = sorted(items, key=lambda it: (np.shape(it[1].features), it[1].out_dim))
    total = sum(t.n for _, t, _ in items)
    report, close = _make_progress(progress, total, len(items[0][2].experts()))
    seen, best = 0, 0.0
    try:
        for i, task, proto in items:
            lm = run(task, protocol=proto, progress=False, **opts)
            seen += task.n
            best += float(lm.losses.sum(axis=0, dtype=np.float64).min())
            report(seen, total, best / seen)
            done(i, lm)
    finally:
        close()


def _run_stacked_buckets(pairs, protos, done, progress, *, memory_budget, pad_features,
                         chunk_batches, **opts) -> list[int]:
    """The stacked layout: run every bucket of two or more streams in calls of W
    streams; return the indices of the streams left to run on their own."""
    _xla_cache.ensure()
    solo, buckets = [], {}
    for i, (task, _) in enumerate(pairs):
        _validate(task, opts["checkpoint_every_s"])
        if task.n <= protos[i].batch_size:
            solo.append(i)    # one batch, coded uniformly: nothing to stack
            continue
        job = _job(task, protos[i], chunk_batches, pad_features, False)
        buckets.setdefault(_bucket(job), []).append(i)
    work = []
    for members in buckets.values():
        job = _job(pairs[members[0]][0], protos[members[0]], chunk_batches, pad_features, False)
        width = _width(job, len(members), memory_budget)
        if width < 2:
            solo += members
            continue
        for lo in range(0, len(members), width):
            work.append((members[lo:lo + width], width))
    if not work:
        return solo
    total = sum(pairs[i][0].n for call, _ in work for i in call)
    report, close = _make_progress(progress, total, len(protos[0].experts()))
    tally = _Tally(total, report)
    try:
        for call, width in work:
            jobs = [_job(pairs[i][0], protos[i], chunk_batches, pad_features, False,
                         streams={"streams": width}) for i in call]
            chunk = _stacked_chunk(jobs[0], width, chunk_batches)
            for i, lm in sorted(_cached_call(call, jobs, pairs, width, chunk, tally, **opts),
                                key=lambda r: r[0]):
                done(i, lm)
    finally:
        close()
    return solo


def _width(job, count: int, memory_budget) -> int:
    """Streams per stacked call of a bucket of ``count`` streams: the memory plan's
    width, at most the next power of two of ``count``; 1 when the board itself has to
    be sliced (then every stream runs on its own)."""
    n, d = job.feats.shape
    budget = None if memory_budget in ("auto", None) else memory_budget
    if memory_budget is not None:
        plan = _memory.plan(job.experts, n, d, job.out_dim, budget_bytes=budget)
        if len(plan.slices) > 1:
            return 1
    cap = _memory.streams_per_call(job.experts, n, job.dp, job.out_dim, budget_bytes=budget)
    return min(cap, 1 << (int(count) - 1).bit_length())


def _stacked_chunk(job, width: int, chunk_batches) -> int:
    """Batches per stacked call. ``"auto"``: on an accelerator the whole stream when
    its inputs fit :data:`STACKED_INPUT_BYTES`, else as many batches as do; on a CPU
    one call's FLOPs within :data:`~mdlnb.prequential._onepass.CHUNK_FLOPS` over the
    W streams. The losses do not depend on it."""
    if chunk_batches != "auto":
        return int(chunk_batches)
    b = job.proto.batch_size
    if jax.default_backend() == "cpu":
        return max(1, auto_chunk_batches(job.experts, job.dp, job.out_dim, b) // width)
    per_batch = width * b * 4 * (job.dp + 1 + 4 * job.dp)   # features, label, 4 statistics rows
    return int(max(1, STACKED_INPUT_BYTES // per_batch))


class _Tally:
    """Progress over the streams of all stacked calls: examples done and the sum of
    each stream's best-expert nats so far."""

    def __init__(self, total: int, report):
        self.total, self.report, self.done, self.best = total, report, 0, 0.0

    def add(self, examples: int, best_nats: float) -> None:
        self.done += examples
        self.best += best_nats
        self.report(self.done, self.total, self.best / max(self.done, 1))


def _cached_call(call, jobs, pairs, width, chunk, tally, *, cache, checkpoint_dir,
                 checkpoint_every_s) -> list[tuple[int, LossMatrix]]:
    """One stacked call through the cache: the streams' keys locked (in sorted order,
    so concurrent batches cannot deadlock), the entries that exist read back, the
    rest computed together and written. Returns ``(stream index, loss_matrix)`` pairs."""
    tasks = [pairs[i][0] for i in call]
    if not cache:
        return list(zip(call, _compute_call(jobs, tasks, width, chunk, tally, None,
                                            checkpoint_every_s)))
    files = [cache_dir("losses") / f"{job.key}.npz" for job in jobs]
    out, todo = [], []
    with contextlib.ExitStack() as stack:
        for f in sorted(set(files)):
            stack.enter_context(locked(f))
        for k, (job, f) in enumerate(zip(jobs, files)):
            hit = load_entry(f)   # None: absent, or damaged (warned and recomputed)
            if hit is None:
                todo.append(k)
                continue
            lm = _from_entry(hit, tasks[k], job, f.name)
            tally.add(tasks[k].n, _best(lm))
            out.append((call[k], lm))
        if todo:
            ckdir = checkpoint_dir if checkpoint_dir is not None else cache_dir("checkpoints")
            lms = _compute_call([jobs[k] for k in todo], [tasks[k] for k in todo], width,
                                chunk, tally, ckdir, checkpoint_every_s)
            for k, lm in zip(todo, lms):
                lm.save(files[k])
                out.append((call[k], lm))
    return out


def _best(lm: LossMatrix) -> float:
    """The best single expert's nats on ``lm``'s stream (for progress)."""
    return float(lm.losses.sum(axis=0, dtype=np.float64).min())


def _compute_call(jobs, tasks, width, chunk, tally, checkpoint_dir,
                  checkpoint_every_s) -> list[LossMatrix]:
    """Up to ``width`` streams of one bucket in stacked calls (padded to ``width``
    with copies of the first, whose results are dropped); their loss matrices."""
    t0 = time.perf_counter()
    count = len(jobs)
    one = [jax.local_devices()[0]] if jax.device_count() > 1 else None
    setups = [_setup(job, one, Checkpointer(None, job.key, 0)) for job in jobs]
    streams = [s for s, _, _ in setups] + [setups[0][0]] * (width - count)
    board = setups[0][1]
    n, b = jobs[0].feats.shape[0], jobs[0].proto.batch_size
    state = jax.tree_util.tree_map(lambda *a: jnp.stack(a),
                                   *([bd.state for _, bd, _ in setups]
                                     + [board.state] * (width - count)))
    inputs = (jnp.stack([s.x_dev for s in streams]), jnp.stack([s.y_dev for s in streams]),
              jnp.stack([s.seed_key for s in streams]))
    call_key = content_hash("prequential-streams", [job.key for job in jobs], width)
    ckpt = Checkpointer(None if checkpoint_dir is None else
                        Path(checkpoint_dir) / f"{call_key}.ckpt.npz", call_key,
                        checkpoint_every_s)
    losses = np.zeros((width, n, len(jobs[0].experts)), np.float32)
    running = (np.zeros((width, jobs[0].dp)), np.zeros((width, jobs[0].dp)), 0.0)
    start = 0
    if ckpt.exists:   # the same call, killed: resume it (else start afresh)
        resumed = ckpt.resume(jax.tree_util.tree_map(
            lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), state))
        if resumed is not None and resumed.losses.shape == losses.shape:
            state = jax.tree_util.tree_map(jnp.asarray, resumed.state)
            losses, running, start = resumed.losses, resumed.running, resumed.next_batch
            tally.done += count * min(start * b, n)   # progress counts on from there
    total_batches = math.ceil(n / b)
    chunk = chunk_bucket(total_batches, chunk)
    ckpt.start()
    for first in range(start, total_batches, chunk):
        state, running = _one_chunk(jobs[0], board, streams, state, inputs, losses, running,
                                    first, chunk)
        if first + chunk < total_batches and ckpt.due():
            ckpt.save(state, losses, running, first + chunk)
        tally.add(count * (min((first + chunk) * b, n) - first * b), 0.0)
    meta = {"seconds": round((time.perf_counter() - t0) / count, 3),
            "devices": _sharding.describe(_sharding.expert_mesh(jax.local_devices()[:1]))}
    out = [LossMatrix(losses=losses[k], experts=tuple(job.experts), order=stream.order,
                      task_name=task.name, num_classes=0 if job.targets else job.out_dim,
                      seed=job.proto.seed, batch_size=b, meta={**job.meta, **meta},
                      protocol=job.proto)
           for k, (job, task, stream) in enumerate(zip(jobs, tasks, streams))]
    tally.add(0, sum(_best(lm) for lm in out))
    ckpt.finish()
    return out


def _one_chunk(job, board, streams, state, inputs, losses, running, first, chunk):
    """One stacked call of ``chunk`` batches from batch ``first``: every stream's
    host-side inputs (:func:`mdlnb.prequential._inputs._chunk_inputs`), the program,
    its losses written into ``losses`` (W, N, K). Returns the new state and the
    running prefix sums ``(s1 (W, D), s2 (W, D), count)``."""
    b, n = job.proto.batch_size, job.feats.shape[0]
    per, s1, s2, count = [], [], [], running[2]
    for k, stream in enumerate(streams):
        xs, (a, a2, count) = _chunk_inputs(stream.x_ord, stream.y_ord, first, chunk, b,
                                           (running[0][k], running[1][k], running[2]),
                                           job.prefix, stream.target_moments)
        per.append(xs)
        s1.append(a)
        s2.append(a2)
    shared = {key: per[0][key] for key in _program.SHARED_INPUTS}
    stacked = {key: np.stack([xs[key] for xs in per]) for key in per[0]
               if key not in _program.SHARED_INPUTS}
    state, out = _program._run_stacked(board.spec, state, board.hypers, *inputs, shared,
                                       stacked)
    out = np.asarray(out)
    lo, hi = first * b, min((first + chunk) * b, n)
    keep = board.column >= 0
    cols = board.column[keep]
    for k, stream in enumerate(streams):
        block = out[k].reshape(-1, len(board.column))[: hi - lo, keep]
        if first == 0 and stream.first_code is not None:
            block[: len(stream.first_code)] = stream.first_code[:, None]
        losses[k][lo:hi, cols] = block   # (a view: losses[k, lo:hi, cols] would transpose)
    return state, (np.stack(s1), np.stack(s2), count)
