"""How stage 1 cuts the stream into compiled calls and pads it to fixed shapes.

A compiled call (:func:`mdlnb.prequential._program._run_chunk`) takes a chunk of
batches of B examples. Its size is ``chunk_batches`` (``"auto"``: as many batches
as :data:`CHUNK_FLOPS` allows, :func:`auto_chunk_batches`), rounded down to a
power of two ≥ the stream's batches when the stream is shorter
(:func:`chunk_bucket`); the stream's rows are padded to a bucket of N
(:func:`row_bucket`). The buckets keep the program's shapes from following N, so
streams of nearby lengths share one program; padding rows and batches code and
train nothing, and the losses do not depend on the chunking.
"""

from __future__ import annotations

import math

from mdlnb.prequential._progressbar import bar_shown

DEFAULT_CHUNK_BATCHES = 128
#: ``chunk_batches="auto"``: FLOPs one compiled call may take (about a minute on a
#: 2-core CPU, tens of milliseconds on a GPU), so that progress and checkpoints
#: come at least that often even when one batch of a large board costs seconds
CHUNK_FLOPS = 2e12
#: ``chunk_batches="auto"`` under a drawn progress bar: at least this many compiled
#: calls, so the bar moves (the losses do not depend on the chunking)
PROGRESS_UPDATES = 20


def auto_chunk_batches(experts, in_dim: int, num_classes: int, batch_size: int) -> int:
    """Batches per compiled call for ``chunk_batches="auto"``: one batch costs
    B · Σ_k flops_k · (1 + 3 · replay_k) FLOPs (the prediction, then each replay
    step's forward and backward passes); as many batches as fit in
    :data:`CHUNK_FLOPS`, between 1 and :data:`DEFAULT_CHUNK_BATCHES`."""
    per_batch = batch_size * sum(
        e.readout.flops(in_dim, num_classes) * (1 + 3 * e.replay_streams) for e in experts
    )
    return int(max(1, min(DEFAULT_CHUNK_BATCHES, CHUNK_FLOPS // max(per_batch, 1))))


def progress_chunk_batches(chunk_batches: int, n: int, batch_size: int, progress) -> int:
    """``chunk_batches`` capped, under a drawn progress bar, so that the stream takes
    at least :data:`PROGRESS_UPDATES` compiled calls (the bar moves)."""
    if not bar_shown(progress):
        return chunk_batches
    return min(chunk_batches, max(1, math.ceil(math.ceil(n / batch_size) / PROGRESS_UPDATES)))


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
