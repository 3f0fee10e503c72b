"""The stacked layout of :func:`mdlnb.prequential.run_streams`: W streams of one shape
bucket in one compiled call (:func:`mdlnb.prequential._program._run_stacked`).

:func:`run_buckets` groups the streams into buckets and calls of W streams
(:func:`_width`, the memory plan), compiles every bucket's program before the
first call runs — in a pool of threads, one per core (XLA compiles in C++ without
the interpreter lock, so on a 16-core host 27 buckets compile in the time of
two) — and runs the calls through the cache (:func:`_cached_call`: the streams'
keys locked, hits read back, the rest computed together and written). A call
prepares every stream's chunk inputs on the host (:func:`_one_chunk`), runs the
program once per chunk — the whole stream in one chunk where its inputs fit —
and checkpoints all its streams in one file. See :mod:`mdlnb.prequential._streams`
for the exactness contract.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import math
import os
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from mdlnb.infra import _xla_cache
from mdlnb.infra._io import cache_dir, content_hash, load_entry, locked
from mdlnb.prequential import _memory, _program, _sharding
from mdlnb.prequential._checkpointer import Checkpointer
from mdlnb.prequential._chunking import auto_chunk_batches, chunk_bucket
from mdlnb.prequential._inputs import _chunk_inputs
from mdlnb.prequential._job import from_entry, make_job, validate
from mdlnb.prequential._loss_matrix import LossMatrix
from mdlnb.prequential._progressbar import make_progress
from mdlnb.prequential._setup import setup

#: a stacked call's chunk inputs (features, labels, statistics of W streams) may take
#: this many bytes; the whole stream is one call when they fit
STACKED_INPUT_BYTES = 256 * 2**20


def _bucket(job) -> tuple:
    """The shape bucket of a stream: what its compiled program's shapes depend on
    besides the protocol's board."""
    return (
        job.feats.shape,
        str(job.feats.dtype),
        job.dp,
        job.out_dim,
        job.targets,
        str(job.labels.dtype),
        job.labels.shape[1:],
        job.chunk_batches,
    )


def run_buckets(
    pairs, protos, done, progress, *, memory_budget, pad_features, chunk_batches, **opts
) -> list[int]:
    """Run every bucket of two or more streams in stacked calls of W streams, calling
    ``done(i, loss_matrix)`` for each; return the indices of the streams left to run
    on their own (N ≤ B, buckets of one, boards the memory plan slices)."""
    _xla_cache.ensure()
    solo: list[int] = []
    buckets: dict[tuple, list[int]] = {}
    for i, (task, _) in enumerate(pairs):
        validate(task, opts["checkpoint_every_s"])
        if task.n <= protos[i].batch_size:
            solo.append(i)  # one batch, coded uniformly: nothing to stack
            continue
        job = make_job(task, protos[i], chunk_batches, pad_features, False)
        buckets.setdefault(_bucket(job), []).append(i)
    plans = []  # (members, width, jobs of the first call, chunk)
    for members in buckets.values():
        job = make_job(pairs[members[0]][0], protos[members[0]], chunk_batches, pad_features, False)
        width = _width(job, len(members), memory_budget)
        if width < 2:
            solo += members
            continue
        plans.append((members, width, _stacked_chunk(job, width, chunk_batches)))
    if not plans:
        return solo
    total = sum(pairs[i][0].n for members, _, _ in plans for i in members)
    report, close = make_progress(progress, total, len(protos[0].experts()))
    tally = _Tally(total, report)
    with concurrent.futures.ThreadPoolExecutor(max(1, min(len(plans), os.cpu_count() or 1))) as ex:
        programs = [
            ex.submit(
                _compile,
                _first_job(pairs, protos, members, width, chunk_batches, pad_features),
                width,
                chunk,
            )
            for members, width, chunk in plans
        ]
        try:
            for (members, width, chunk), program in zip(plans, programs):
                for lo in range(0, len(members), width):
                    call = members[lo : lo + width]
                    jobs = [
                        make_job(
                            pairs[i][0],
                            protos[i],
                            chunk_batches,
                            pad_features,
                            False,
                            streams={"streams": width},
                        )
                        for i in call
                    ]
                    for i, lm in sorted(
                        _cached_call(call, jobs, pairs, width, chunk, tally, program, **opts),
                        key=lambda r: r[0],
                    ):
                        done(i, lm)
        finally:
            for f in programs:
                f.cancel()
            close()
    return solo


def _first_job(pairs, protos, members, width, chunk_batches, pad_features):
    i = members[0]
    return make_job(
        pairs[i][0], protos[i], chunk_batches, pad_features, False, streams={"streams": width}
    )


def _compile(job, width: int, chunk: int):
    """The bucket's stacked program, lowered for W streams (shapes from one stream's
    set-up, on the host) and compiled; run in a worker thread."""
    stream, board, _ = setup(job, _one_device(), Checkpointer(None, job.key, 0))
    b, dp = job.proto.batch_size, job.dp
    xs, _ = _chunk_inputs(
        stream.x_ord,
        stream.y_ord,
        0,
        chunk_bucket(math.ceil(job.feats.shape[0] / b), chunk),
        b,
        (np.zeros(dp), np.zeros(dp), 0.0),
        job.prefix,
        stream.target_moments,
    )
    wide = lambda a: jax.ShapeDtypeStruct((width,) + tuple(np.shape(a)), a.dtype)  # noqa: E731
    shared = {k: xs[k] for k in _program.SHARED_INPUTS}
    per = {k: wide(v) for k, v in xs.items() if k not in _program.SHARED_INPUTS}
    args = (
        jax.tree_util.tree_map(wide, board.state),
        board.hypers,
        wide(stream.x_dev),
        wide(stream.y_dev),
        wide(stream.seed_key),
        shared,
        per,
    )
    return _program._run_stacked.lower(board.spec, *args).compile()


def _one_device():
    """The devices a stacked call's set-up sees: one (the expert axis is not sharded)."""
    return [jax.local_devices()[0]] if jax.device_count() > 1 else None


def _width(job, count: int, memory_budget) -> int:
    """Streams per stacked call of a bucket of ``count`` streams: ``count`` where the
    memory plan's width allows, else that width (calls of W, the last padded); 1 when
    the board itself has to be sliced (then every stream runs on its own). Each bucket
    has its own shapes, so W = ``count`` compiles nothing more, and pads nothing."""
    n, d = job.feats.shape
    budget = None if memory_budget in ("auto", None) else memory_budget
    if memory_budget is not None:
        plan = _memory.plan(job.experts, n, d, job.out_dim, budget_bytes=budget)
        if len(plan.slices) > 1:
            return 1
    cap = _memory.streams_per_call(job.experts, n, job.dp, job.out_dim, budget_bytes=budget)
    return min(cap, int(count))


def _stacked_chunk(job, width: int, chunk_batches) -> int:
    """Batches per stacked call. ``"auto"``: on an accelerator the whole stream when
    its inputs fit :data:`STACKED_INPUT_BYTES`, else as many batches as do; on a CPU
    one call's FLOPs within :data:`~mdlnb.prequential._chunking.CHUNK_FLOPS` over the
    W streams. The losses do not depend on it."""
    if chunk_batches != "auto":
        return int(chunk_batches)
    b = job.proto.batch_size
    if jax.default_backend() == "cpu":
        return max(1, auto_chunk_batches(job.experts, job.dp, job.out_dim, b) // width)
    per_batch = width * b * 4 * (job.dp + 1 + 4 * job.dp)  # features, label, 4 statistics rows
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


def _cached_call(
    call, jobs, pairs, width, chunk, tally, program, *, cache, checkpoint_dir, checkpoint_every_s
) -> list[tuple[int, LossMatrix]]:
    """One stacked call through the cache: the streams' keys locked (in sorted order,
    so concurrent batches cannot deadlock), the entries that exist read back, the
    rest computed together and written. Returns ``(stream index, loss_matrix)`` pairs."""
    tasks = [pairs[i][0] for i in call]
    if not cache:  # checkpoints only where a directory is given (as for one stream)
        lms = _compute_call(
            jobs, tasks, width, chunk, tally, program, checkpoint_dir, checkpoint_every_s
        )
        return list(zip(call, lms))
    files = [cache_dir("losses") / f"{job.key}.npz" for job in jobs]
    out, todo = [], []
    with contextlib.ExitStack() as stack:
        for f in sorted(set(files)):
            stack.enter_context(locked(f))
        for k, (job, f) in enumerate(zip(jobs, files)):
            hit = load_entry(f)  # None: absent, or damaged (warned and recomputed)
            if hit is None:
                todo.append(k)
                continue
            lm = from_entry(hit, tasks[k], job, f.name)
            tally.add(tasks[k].n, _best(lm))
            out.append((call[k], lm))
        if todo:
            ckdir = checkpoint_dir if checkpoint_dir is not None else cache_dir("checkpoints")
            lms = _compute_call(
                [jobs[k] for k in todo],
                [tasks[k] for k in todo],
                width,
                chunk,
                tally,
                program,
                ckdir,
                checkpoint_every_s,
            )
            for k, lm in zip(todo, lms):
                lm.save(files[k])
                out.append((call[k], lm))
    return out


def _best(lm: LossMatrix) -> float:
    """The best single expert's nats on ``lm``'s stream (for progress)."""
    return float(lm.losses.sum(axis=0, dtype=np.float64).min())


def _compute_call(
    jobs, tasks, width, chunk, tally, program, checkpoint_dir, checkpoint_every_s
) -> list[LossMatrix]:
    """Up to ``width`` streams of one bucket in stacked calls of ``program`` (a future
    of the compiled program), padded to ``width`` with copies of the first stream,
    whose results are dropped; their loss matrices."""
    t0 = time.perf_counter()
    count = len(jobs)
    setups = [setup(job, _one_device(), Checkpointer(None, job.key, 0)) for job in jobs]
    streams = [s for s, _, _ in setups] + [setups[0][0]] * (width - count)
    board = setups[0][1]
    n, b = jobs[0].feats.shape[0], jobs[0].proto.batch_size
    state = jax.tree_util.tree_map(
        lambda *a: jnp.stack(a),
        *([bd.state for _, bd, _ in setups] + [board.state] * (width - count)),
    )
    inputs = (
        jnp.stack([s.x_dev for s in streams]),
        jnp.stack([s.y_dev for s in streams]),
        jnp.stack([s.seed_key for s in streams]),
    )
    call_key = content_hash("prequential-streams", [job.key for job in jobs], width)
    ckpt = Checkpointer(
        None if checkpoint_dir is None else Path(checkpoint_dir) / f"{call_key}.ckpt.npz",
        call_key,
        checkpoint_every_s,
    )
    losses = np.zeros((width, n, len(jobs[0].experts)), np.float32)
    running = (np.zeros((width, jobs[0].dp)), np.zeros((width, jobs[0].dp)), 0.0)
    start = 0
    if ckpt.exists:  # the same call, killed: resume it (else start afresh)
        resumed = ckpt.resume(
            jax.tree_util.tree_map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), state)
        )
        if resumed is not None and resumed.losses.shape == losses.shape:
            state = jax.tree_util.tree_map(jnp.asarray, resumed.state)
            losses, running, start = resumed.losses, resumed.running, resumed.next_batch
            tally.done += count * min(start * b, n)  # progress counts on from there
    total_batches = math.ceil(n / b)
    chunk = chunk_bucket(total_batches, chunk)
    run = program.result()  # compiled in a worker thread (run_buckets)
    ckpt.start()
    for first in range(start, total_batches, chunk):
        state, running = _one_chunk(
            jobs[0], board, streams, run, state, inputs, losses, running, first, chunk
        )
        if first + chunk < total_batches and ckpt.due():
            ckpt.save(state, losses, running, first + chunk)
        tally.add(count * (min((first + chunk) * b, n) - first * b), 0.0)
    meta = {
        "seconds": round((time.perf_counter() - t0) / count, 3),
        "devices": _sharding.describe(_sharding.expert_mesh(jax.local_devices()[:1])),
    }
    out = [
        LossMatrix(
            losses=losses[k],
            experts=tuple(job.experts),
            order=stream.order,
            task_name=task.name,
            num_classes=0 if job.targets else job.out_dim,
            seed=job.proto.seed,
            batch_size=b,
            meta={**job.meta, **meta},
            protocol=job.proto,
        )
        for k, (job, task, stream) in enumerate(zip(jobs, tasks, streams))
    ]
    tally.add(0, sum(_best(lm) for lm in out))
    ckpt.finish()
    return out


def _one_chunk(job, board, streams, run, state, inputs, losses, running, first, chunk):
    """One stacked call of ``chunk`` batches from batch ``first``: every stream's
    host-side inputs (:func:`mdlnb.prequential._inputs._chunk_inputs`), the program ``run``,
    its losses written into ``losses`` (W, N, K). Returns the new state and the
    running prefix sums ``(s1 (W, D), s2 (W, D), count)``."""
    b, n = job.proto.batch_size, job.feats.shape[0]
    per, s1, s2, count = [], [], [], running[2]
    for k, stream in enumerate(streams):
        xs, (a, a2, count) = _chunk_inputs(
            stream.x_ord,
            stream.y_ord,
            first,
            chunk,
            b,
            (running[0][k], running[1][k], running[2]),
            job.prefix,
            stream.target_moments,
        )
        per.append(xs)
        s1.append(a)
        s2.append(a2)
    shared = {key: per[0][key] for key in _program.SHARED_INPUTS}
    stacked = {
        key: np.stack([xs[key] for xs in per])
        for key in per[0]
        if key not in _program.SHARED_INPUTS
    }
    state, out = run(state, board.hypers, *inputs, shared, stacked)
    out = np.asarray(out)
    lo, hi = first * b, min((first + chunk) * b, n)
    keep = board.column >= 0
    cols = board.column[keep]
    for k, stream in enumerate(streams):
        block = out[k].reshape(-1, len(board.column))[: hi - lo, keep]
        if first == 0 and stream.first_code is not None:
            block[: len(stream.first_code)] = stream.first_code[:, None]
        losses[k][lo:hi, cols] = block  # (a view: losses[k, lo:hi, cols] would transpose)
    return state, (np.stack(s1), np.stack(s2), count)
