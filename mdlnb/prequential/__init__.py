"""Stage 1: online training with replay → the next-step loss matrix ``L[t, k]``.

Protocol (paper Sec. 3 "Computing MDL with Online Learning", App. A.3;
the README's "How it works"). With ``B = batch_size``:

1. The examples are put in a seeded order ``order`` (a permutation of the
   task). Position ``t`` of the stream is example ``order[t]``. The stream is
   cut into ``ceil(N / B)`` batches; batch ``i`` covers positions
   ``[i·B, t_end)`` with ``t_end = min((i + 1)·B, N)`` (the last batch may be
   partial).
2. For each batch ``i``, first *code*: every expert's loss on each new
   example is ``-log p(y | x)`` in nats under its current *prediction*
   parameters (the EMA/Polyak average, equal to the raw parameters when
   ``ema = 1``). Batch 0 is coded with the uniform distribution,
   ``log C`` nats per example. A regression task (``Task(kind="regression")``)
   is coded by Gaussian readouts as ``−log p(y | x)``, a *density* in nats of
   the targets in their own units (prefix-standardised targets, Jacobian
   added; batch 0 coded by its own maximum-likelihood Gaussian; defined up to
   the targets' quantisation): :mod:`mdlnb.core._targets`; the loss matrix's
   ``meta["target"]`` records the code.
   A calibrated expert (``Expert(calibrate=True)``, classification only) codes
   with ``softmax(β_t · logits)`` instead, β_t fitted to the examples it coded
   before this batch, under the logits it coded them with
   (:mod:`mdlnb.prequential._calibration`: β = 1 for batch 1, fitted from
   batch 2 on); its training is the same.
3. Then *train*: expert ``k`` takes ``replay_streams[k]`` AdamW steps, each on
   ``B`` positions drawn uniformly with replacement from ``[0, t_end)``
   (everything seen so far, the new batch included). Label smoothing applies
   to the training loss only. After every step the prediction parameters move
   as ``ema ← (1 − ema_k)·ema + ema_k·params``.

The batch size, board, seed and standardisation come from a
:class:`mdlnb.Protocol` (``protocol=``, default ``"default"``); keyword
arguments override its fields, and the result records the protocol it ran.

Standardisation (protocol ``standardize="prefix"``): the readouts see
``(x − m) / s`` with ``m`` and ``s²`` the per-feature mean and (biased)
variance of the positions *trained on so far*: the replay steps after batch
``i`` use the statistics of ``[0, t_end)`` of batch ``i``, and coding batch
``i + 1`` uses those same statistics (its own features are not in them).
Batch 0 is coded uniformly, so it needs none. Features whose variance is zero
up to round-off are only centred. Standardised values are clipped to
``±CLIP_Z`` (10): with few examples seen, a feature that was nearly constant
so far (a dead ReLU unit of a wide encoder, say) has a tiny variance
estimate, and its next value would otherwise reach the readout as a z-score
of 10⁴–10⁶ and cost tens of nats per example. Clipping keeps the affine
invariance per feature and changes nothing for well-estimated features.
Statistics are accumulated in float64 in NumPy; no example after ``t_end`` is
ever used; the zero-variance rule and the clip are :mod:`mdlnb.core._standardize`'s.
With ``standardize="none"`` (the paper's protocols) the readouts see the
features as given, neither shifted, scaled nor clipped. A readout whose
``standardize_inputs`` attribute is False (an encoder trained end to end on
raw pixels, :class:`mdlnb.baselines.finetune.FinetuneReadout`) always sees the raw
features, whatever ``standardize`` says; the others on the same board are
unaffected.

Randomness, all from ``seed``: ``key = PRNGKey(seed)``; the order is
``jax.random.permutation(fold_in(key, 0), N)``; expert ``e`` is initialised
with ``fold_in(fold_in(key, 1), crc32(e.name))`` (so an expert's losses do not
depend on which other experts share the board; a calibrated expert uses its
name without ``-cal``, so it trains exactly like its uncalibrated twin); replay step ``r`` after batch
``i`` samples ``randint(fold_in(fold_in(fold_in(key, 2), i), r), (B,), 0,
t_end)`` — the same positions for every expert that takes that step
(:func:`replay_positions`).

Implementation: experts are grouped by (architecture, replay count,
calibration); each
group's parameters, AdamW state and EMA parameters are stacked and
``vmap``-ped, hyperparameters are arrays (one compilation serves a grid), and
one jitted ``lax.scan`` over a chunk of batches runs every group. Within a
group, experts are trained in blocks of a fixed width (a ``fori_loop`` over
blocks, updated in place; ``vmap`` within one) sized so that a block's
parameters and AdamW/EMA state stay in the last-level cache across its replay
steps while its matmuls stay wide (:func:`block_bytes`: ``BLOCK_BYTES`` per two
CPU cores, ``ACCELERATOR_BLOCK_BYTES`` on a GPU or TPU);
groups are cut into whole blocks, so an expert's losses are bit-identical
whichever other experts share the board (see :func:`mdlnb.prequential._groups._group`). The state is donated to the
chunk program, so it is updated in place. Python drives the chunks, which is
where progress is shown and checkpoints are written.

Which shapes compile. The chunk program (``_program._run_chunk``) is
compiled once per (board structure: readouts, replay counts, block widths,
experts per group; C; B; clip or not) and per shape of its inputs: the
stream ``x_all`` (rows, D) is padded with zero rows to a row bucket
(:func:`~mdlnb.prequential._chunking.row_bucket`: 1,024, then eight steps per
octave) and a chunk is ``chunk_batches`` batches, or the next power of two
≥ the number of batches when the stream is shorter (padding batches code
nothing and train nothing); so the program does not follow N, and a second
task of a similar size reuses it (in the process, and in other processes
through the compilation cache, :mod:`mdlnb.infra._xla_cache`). Both paddings are
bit-identical (no arithmetic touches the padding). The feature dimension D
is compiled as is, unless ``run(..., pad_features=True)``: then zero
features are appended up to the bucket
:func:`~mdlnb.prequential._groups.padded_dim` (16, 32, 48, …, 256, 288, …,
< 12.5 % above 256) — exact in real arithmetic, but XLA:CPU chooses its GEMM
tiles by shape, so some D give losses that differ in the last float bits
(see ``run``), hence off by default and in the cache key when on. The
number of experts per group is not bucketed: a group padded with extra
experts would change its block width, which moves losses in the last bit
(see ``_groups._group``). Small programs (the stream order, the
initialisation of a group) follow N or D and are cached like the rest.

Pruning (protocol ``prune=mdlnb.Prune(...)``, :mod:`mdlnb.prequential._prune`):
the chunks are the pruning segments; after each, stage 2 runs on the
survivors' new losses, experts whose posterior stayed below the threshold for
the window are dropped, and the groups are compacted to their survivors (each
group then runs its own compiled program,
:func:`mdlnb.prequential._program._run_groups`). A pruned expert's losses from
its pruning step on are +inf, ``meta["prune"]`` records the schedule and the
expert-updates; no checkpoints are written (one device, one memory slice).

A readout here is anything with ``init(key, in_dim, C)`` and
``apply(params, x)`` (:class:`mdlnb.board.readouts.ReadoutLike`); an encoder plus
head trained end to end (:mod:`mdlnb.baselines.finetune`) fits the same slot, its
params including the encoder's. Readouts other than
:class:`~mdlnb.board.readouts.Readout` are initialised one expert at a time on the
host (their ``init`` may draw with NumPy) and stacked; if a readout has
``check_task(task)``, it is called once before anything runs; if it has
``max_block``, no more than that many of its experts train in one ``vmap``
block (convolutional encoders on CPU, where vmapped convolutions are slow).

Many streams (:func:`run_streams`, :mod:`mdlnb.prequential._streams`): the
streams of a study — (task, seed) pairs under one protocol — grouped into
shape buckets, one compiled program per bucket whatever the number of
streams. On a CPU a bucket's streams run one after another, each
bit-identical to its :func:`run` under the same key; on an accelerator W of
them run in one program, the stream axis vmapped in front of the expert axis
(:func:`mdlnb.prequential._program._run_stacked`), equal to their solo runs to
round-off and cached under a key naming W.

Modules (private, one concept each): ``_streams`` (:func:`run_streams`: layouts,
buckets, the exactness contract), ``_stacked`` (the stacked calls), ``_run``
(:func:`run`, :func:`run_with_params`: the N ≤ B short-circuit, the memory plan,
one pass or slices), ``_onepass`` (one pass: the cache wrapper and the chunk
loop), ``_job`` (a pass's checked inputs and its cache key, ``CODE_VERSION``),
``_setup`` (the padded stream, the mesh, the board's layout, the start or the
resumed checkpoint), ``_chunking`` (chunk sizes and the row and chunk buckets),
``_progressbar`` (the progress callback or bar), ``_checkpointer`` (checkpoints
of a run: resume, save on a schedule), ``_board`` (the experts in flight and
their compaction after a pruning decision), ``_loss_matrix``
(:class:`LossMatrix`), ``_stream`` (the seeded order, expert keys, replay
positions), ``_program`` (the compiled chunk program), ``_groups`` (grouping
into blocks, initial state, hyperparameters), ``_inputs`` (host-side chunk
inputs, prefix statistics), ``_calibration`` (forward calibration's β and its
summary), ``_memory`` (the memory plan), ``_slicing`` (slices run one after
another), ``_sharding`` (the expert axis over devices), ``_prune`` (pruning the
board as the protocol's ``mdlnb.Prune`` asks; ``mdlnb.simulate_pruning``). The
block-wise code (Voita & Titov 2020), a comparison estimator, is its own
module, :mod:`mdlnb.baselines.blockwise`.
"""

from mdlnb.core._standardize import CLIP_Z
from mdlnb.prequential._groups import ACCELERATOR_BLOCK_BYTES, BLOCK_BYTES, block_bytes
from mdlnb.prequential._loss_matrix import LossMatrix
from mdlnb.prequential._program import trace_count
from mdlnb.prequential._run import (
    CODE_VERSION,
    DEFAULT_CHUNK_BATCHES,
    ProgressFn,
    resolve_protocol,
    run,
    run_with_params,
)
from mdlnb.prequential._stream import expert_key, replay_positions, stream_order
from mdlnb.prequential._streams import default_layout, run_streams

__all__ = [
    "ACCELERATOR_BLOCK_BYTES",
    "BLOCK_BYTES",
    "CLIP_Z",
    "CODE_VERSION",
    "DEFAULT_CHUNK_BATCHES",
    "LossMatrix",
    "ProgressFn",
    "block_bytes",
    "default_layout",
    "expert_key",
    "replay_positions",
    "resolve_protocol",
    "run",
    "run_streams",
    "run_with_params",
    "stream_order",
    "trace_count",
]
