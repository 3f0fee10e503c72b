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
  vmapping streams together was not faster there (on a 2-core CPU one 192-expert
  scan was slower than 12 scans of 16; benchmarks/RESULTS.md for streams), and
  it rounds otherwise (below).
* ``"stacked"`` (the default on a GPU or TPU): W streams of a bucket in one
  compiled call (:func:`mdlnb.prequential._program._run_stacked`): their states
  stacked in front of the expert axis, ``vmap`` over streams around the chunk's
  ``lax.scan`` over batches, so each of a block's matmuls covers W streams ×
  the block's experts (the few, wide kernels an accelerator needs). W is the
  bucket's number of streams, or, where they do not fit, the memory plan's
  width (:func:`mdlnb.prequential._memory.streams_per_call`: the streams whose
  boards fit a safe fraction of the device memory, a power of two) with the
  last, partial call padded with copies of its first stream, whose results are
  dropped.
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

from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np

from mdlnb.board._arguments import resolve_protocol
from mdlnb.core._checks import check_int
from mdlnb.core._task import Task
from mdlnb.prequential import _stacked
from mdlnb.prequential._job import validate
from mdlnb.prequential._loss_matrix import LossMatrix
from mdlnb.prequential._progressbar import make_progress
from mdlnb.prequential._run import run
from mdlnb.prequential._stacked import STACKED_INPUT_BYTES  # noqa: F401  (documented here)

LAYOUTS = ("auto", "sequential", "stacked")

OnResult = Callable[[int, LossMatrix], None]


def default_layout(platform: str | None = None) -> str:
    """``"sequential"`` on a CPU, ``"stacked"`` on an accelerator (``platform``:
    default JAX's default backend)."""
    platform = jax.default_backend() if platform is None else platform
    return "sequential" if platform == "cpu" else "stacked"


def _check_streams(streams: Any) -> list[tuple[Task, int]]:
    """``streams`` as a list of ``(task, seed)`` pairs, checked."""
    if isinstance(streams, (str, bytes, Task)) or not hasattr(streams, "__iter__"):
        raise TypeError(
            f"streams: expected a sequence of (task, seed) pairs, got {type(streams).__name__}"
        )
    out = []
    for item in streams:
        if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], Task)):
            raise TypeError(
                f"streams: each stream is a (task, seed) pair with an mdlnb.Task, "
                f"got {type(item).__name__}"
            )
        out.append(
            (
                item[0],
                check_int(
                    "streams", item[1], minimum=0, what="(task, seed) pairs, a seed an int >= 0"
                ),
            )
        )
    if not out:
        raise ValueError("streams: is empty")
    return out


def run_streams(
    streams: Sequence[tuple[Task, int]],
    experts: Any = None,
    batch_size: int | None = None,
    *,
    protocol: Any = None,
    replay_streams: int | None = None,
    standardize: str | bool | None = None,
    layout: str = "auto",
    progress: Any = None,
    cache: bool = True,
    checkpoint_dir: Any = None,
    checkpoint_every_s: float = 120.0,
    chunk_batches: int | str = "auto",
    memory_budget: int | str | None = "auto",
    pad_features: bool = False,
    on_result: OnResult | None = None,
) -> list[LossMatrix]:
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
    validate(pairs[0][0], checkpoint_every_s)
    base = resolve_protocol(
        protocol,
        experts,
        batch_size=batch_size,
        replay_streams=replay_streams,
        standardize=standardize,
    )
    protos = [resolve_protocol(base, None, seed=s) for _, s in pairs]
    results: list[LossMatrix | None] = [None] * len(pairs)

    def done(i: int, lm: LossMatrix) -> None:
        results[i] = lm
        if on_result is not None:
            on_result(i, lm)

    opts = dict(
        cache=cache,
        checkpoint_dir=checkpoint_dir,
        checkpoint_every_s=checkpoint_every_s,
        chunk_batches=chunk_batches,
        memory_budget=memory_budget,
        pad_features=pad_features,
    )
    solo = list(range(len(pairs)))
    if layout == "stacked" and base.prune is None and jax.device_count() == 1:
        solo = _stacked.run_buckets(pairs, protos, done, progress, **opts)
    _run_solo([(i, pairs[i][0], protos[i]) for i in solo], done, progress, **opts)
    return results  # type: ignore[return-value]


def _run_solo(items, done, progress, **opts) -> None:
    """Each stream through :func:`mdlnb.prequential.run`, bucket by bucket (a bucket's
    program is compiled by its first stream and reused by the rest)."""
    if not items:
        return
    items = sorted(items, key=lambda it: (np.shape(it[1].features), it[1].out_dim))
    total = sum(t.n for _, t, _ in items)
    report, close = make_progress(progress, total, len(items[0][2].experts()))
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
