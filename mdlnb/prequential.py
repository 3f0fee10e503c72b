"""Stage 1: online training with replay → the next-step loss matrix ``L[t, k]``.

Protocol (paper Sec. 3 "Computing MDL with Online Learning", App. A.3;
DESIGN.md "The two stages"). With ``B = batch_size``:

1. The examples are put in a seeded order ``order`` (a permutation of the
   task). Position ``t`` of the stream is example ``order[t]``. The stream is
   cut into ``ceil(N / B)`` batches; batch ``i`` covers positions
   ``[i·B, t_end)`` with ``t_end = min((i + 1)·B, N)`` (the last batch may be
   partial).
2. For each batch ``i``, first *code*: every expert's loss on each new
   example is ``-log p(y | x)`` in nats under its current *prediction*
   parameters (the EMA/Polyak average, equal to the raw parameters when
   ``ema = 1``). Batch 0 is coded with the uniform distribution,
   ``log C`` nats per example.
3. Then *train*: expert ``k`` takes ``replay_streams[k]`` AdamW steps, each on
   ``B`` positions drawn uniformly with replacement from ``[0, t_end)``
   (everything seen so far, the new batch included). Label smoothing applies
   to the training loss only. After every step the prediction parameters move
   as ``ema ← (1 − ema_k)·ema + ema_k·params``.

Standardisation (``standardize=True``): the readouts see
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
invariance per feature and changes nothing for well-estimated features. Statistics are accumulated in float64 in
NumPy; no example after ``t_end`` is ever used. A readout whose
``standardize_inputs`` attribute is False (an encoder trained end to end on
raw pixels, :class:`mdlnb.finetune.FinetuneReadout`) always sees the raw
features, whatever ``standardize`` says; the others on the same board are
unaffected.

Randomness, all from ``seed``: ``key = PRNGKey(seed)``; the order is
``jax.random.permutation(fold_in(key, 0), N)``; expert ``e`` is initialised
with ``fold_in(fold_in(key, 1), crc32(e.name))`` (so an expert's losses do not
depend on which other experts share the board); replay step ``r`` after batch
``i`` samples ``randint(fold_in(fold_in(fold_in(key, 2), i), r), (B,), 0,
t_end)`` — the same positions for every expert that takes that step
(:func:`replay_positions`).

Implementation: experts are grouped by (architecture, replay count); each
group's parameters, AdamW state and EMA parameters are stacked and
``vmap``-ped, hyperparameters are arrays (one compilation serves a grid), and
one jitted ``lax.scan`` over a chunk of batches runs every group. Within a
group, experts are trained in blocks of a fixed width (a ``fori_loop`` over
blocks, updated in place; ``vmap`` within one) sized so that a block's
parameters and AdamW/EMA state stay in cache across its replay steps
(``BLOCK_BYTES``); groups are cut into whole blocks, so an expert's losses are
bit-identical whichever other experts share the board (see :func:`_group`).
The state is donated to the chunk program, so it is updated in place. Python
drives the chunks, which is where progress is shown and checkpoints are written.

A readout here is anything with ``init(key, in_dim, C)`` and
``apply(params, x)`` (:class:`mdlnb.readouts.ReadoutLike`); an encoder plus
head trained end to end (:mod:`mdlnb.finetune`) fits the same slot, its
params including the encoder's. Readouts other than
:class:`~mdlnb.readouts.Readout` are initialised one expert at a time on the
host (their ``init`` may draw with NumPy) and stacked; if a readout has
``check_task(task)``, it is called once before anything runs; if it has
``max_block``, no more than that many of its experts train in one ``vmap``
block (convolutional encoders on CPU, where vmapped convolutions are slow).
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import sys
import time
import zlib
from functools import partial
from pathlib import Path
from typing import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import optax

from mdlnb import _sharding
from mdlnb._checks import check_finite
from mdlnb._io import atomic_savez, cache_dir, content_hash
from mdlnb._task import Task
from mdlnb.experts import Expert
from mdlnb.readouts import Readout, ReadoutLike

CODE_VERSION = "prequential-v2"  # v2: standardised inputs clipped to ±CLIP_Z
DEFAULT_CHUNK_BATCHES = 128
BLOCK_BYTES = 8 * 2 ** 20  # cache budget for the state of one block of experts (see _block_size)

ProgressFn = Callable[[int, int, float], None]

_TRACE_COUNT = 0  # incremented each time the chunk program is traced (i.e. compiled)


def trace_count() -> int:
    """How many times the jitted chunk program has been traced in this process."""
    return _TRACE_COUNT


# ----------------------------------------------------------------------------- result


@dataclasses.dataclass(frozen=True, eq=False)
class LossMatrix:
    """Next-step log-losses of K experts on an N-example stream.

    Attributes:
      losses: ``(N, K)`` float32, nats; ``losses[t, k]`` is expert ``k``'s loss
        on stream position ``t``, i.e. on task example ``order[t]``.
      experts: the K experts, column order.
      order: ``(N,)`` int64, task index of each stream position.
      task_name, num_classes, seed, batch_size: provenance.
      meta: free-form (cache key, code version, standardisation, timing).
    """

    losses: np.ndarray
    experts: tuple[Expert, ...]
    order: np.ndarray
    task_name: str
    num_classes: int
    seed: int
    batch_size: int
    meta: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        losses = np.asarray(self.losses, np.float32)
        if losses.ndim != 2 or losses.shape[1] != len(self.experts):
            raise ValueError(f"losses: expected shape (N, {len(self.experts)}), got {losses.shape}")
        order = np.asarray(self.order, np.int64)
        if order.shape != (losses.shape[0],):
            raise ValueError(f"order: expected shape ({losses.shape[0]},), got {order.shape}")
        object.__setattr__(self, "losses", losses)
        object.__setattr__(self, "order", order)
        object.__setattr__(self, "experts", tuple(self.experts))

    @property
    def n(self) -> int:
        return int(self.losses.shape[0])

    @property
    def k(self) -> int:
        return int(self.losses.shape[1])

    @property
    def names(self) -> list[str]:
        return [e.name for e in self.experts]

    def totals(self):
        """Per-expert prequential codelength in nats (pandas Series, float64 sums)."""
        import pandas as pd

        return pd.Series(self.losses.sum(axis=0, dtype=np.float64), index=self.names,
                         name="codelength_nats")

    def best_expert(self) -> tuple[int, float]:
        """``(index, total nats)`` of the expert with the shortest codelength."""
        tot = self.losses.sum(axis=0, dtype=np.float64)
        k = int(np.argmin(tot))
        return k, float(tot[k])

    def save(self, path: str | Path) -> Path:
        """Write an ``.npz`` atomically (no pickles)."""
        return atomic_savez(
            path, losses=self.losses, order=self.order,
            experts=np.array(json.dumps([e.config() for e in self.experts])),
            task_name=np.array(self.task_name), num_classes=np.int64(self.num_classes),
            seed=np.int64(self.seed), batch_size=np.int64(self.batch_size),
            meta=np.array(json.dumps(self.meta, default=str)))

    @classmethod
    def load(cls, path: str | Path, experts: Sequence[Expert] | None = None) -> "LossMatrix":
        """Read a file written by :meth:`save`.

        ``experts``: the board to attach, in column order, checked against the
        stored configs; needed for experts that cannot be rebuilt from their
        config (fine-tuned encoders hold parameters). ``None`` rebuilds them.
        """
        path = Path(path)
        if not path.is_file():
            raise ValueError(f"path: no such file {str(path)!r}")
        with np.load(path, allow_pickle=False) as z:
            configs = json.loads(str(z["experts"]))
            if experts is None:
                experts = tuple(Expert.from_config(c) for c in configs)
            elif [json.loads(json.dumps(e.config(), default=str)) for e in experts] != configs:
                raise ValueError(f"experts: do not match the experts stored in {path.name}")
            return cls(losses=z["losses"], order=z["order"], experts=tuple(experts),
                       task_name=str(z["task_name"]), num_classes=int(z["num_classes"]),
                       seed=int(z["seed"]), batch_size=int(z["batch_size"]),
                       meta=json.loads(str(z["meta"])))


# ----------------------------------------------------------------------------- randomness


def stream_order(seed: int, n: int) -> np.ndarray:
    """The seeded example order: ``permutation(fold_in(PRNGKey(seed), 0), n)``."""
    return np.asarray(jax.random.permutation(jax.random.fold_in(jax.random.PRNGKey(seed), 0), n),
                      np.int64)


def expert_key(seed: int, expert: Expert) -> jax.Array:
    """Initialisation key of ``expert``: depends on its name, not its board position."""
    salt = np.uint32(zlib.crc32(expert.name.encode()))
    return jax.random.fold_in(jax.random.fold_in(jax.random.PRNGKey(seed), 1), salt)


def replay_positions(seed_key: jax.Array, batch_index, step, t_end, batch_size: int) -> jax.Array:
    """Stream positions of replay step ``step`` after batch ``batch_index``: uniform on ``[0, t_end)``.

    ``seed_key`` is ``PRNGKey(seed)``.
    """
    k = jax.random.fold_in(jax.random.fold_in(jax.random.fold_in(seed_key, 2), batch_index), step)
    return jax.random.randint(k, (batch_size,), 0, t_end)


# ----------------------------------------------------------------------------- compiled core


@dataclasses.dataclass(frozen=True)
class _Spec:
    """Static structure of the compiled chunk program (hashable)."""

    readouts: tuple[ReadoutLike, ...]  # one per architecture group
    max_replay: tuple[int, ...]       # per group
    masked: tuple[bool, ...]          # per group: do replay counts differ within the group
    block: tuple[int, ...]            # per group: experts trained together (divides group size)
    standardize: tuple[bool, ...]     # per group: does the readout see standardised features
    num_classes: int
    batch_size: int


def _train_loss(readout: ReadoutLike, params, x, y, smoothing, num_classes):
    logits = readout.apply(params, x)
    targets = optax.smooth_labels(jax.nn.one_hot(y, num_classes), smoothing)
    return optax.softmax_cross_entropy(logits, targets).mean()


def _adamw(hp):
    return optax.adamw(learning_rate=hp["learning_rate"], b1=hp["b1"], b2=0.999, eps=1e-8,
                       weight_decay=hp["weight_decay"])


def _expert_update(readout, num_classes, masked, r, x, y, state, hp):
    """One AdamW + EMA step of a single expert (vmapped over the group)."""
    params, opt, ema = state["params"], state["opt"], state["ema"]
    grads = jax.grad(_train_loss, argnums=1)(readout, params, x, y, hp["label_smoothing"],
                                             num_classes)
    updates, opt = _adamw(hp).update(grads, opt, params)
    params = optax.apply_updates(params, updates)
    ema = optax.incremental_update(params, ema, hp["ema"])
    new = {"params": params, "opt": opt, "ema": ema}
    if masked:
        take = r < hp["replay_streams"]
        new = jax.tree_util.tree_map(lambda a, b: jnp.where(take, a, b), new, state)
    return new


CLIP_Z = 10.0  # standardised inputs are clipped to [-CLIP_Z, CLIP_Z]


def _standardize(x, mean, inv_std):
    """``clip((x − mean) · inv_std, ±CLIP_Z)``; see the module docstring."""
    return jnp.clip((x - mean) * inv_std, -CLIP_Z, CLIP_Z)


def _batch_step(spec: _Spec, hypers, x_all, y_all, seed_key, groups, xs):
    b, c = spec.batch_size, spec.num_classes
    xn = _standardize(xs["x"], xs["mean_prev"], xs["inv_std_prev"])
    coded = []
    for j, (ro, g) in enumerate(zip(spec.readouts, groups)):
        xj = xn if spec.standardize[j] else xs["x"]
        logp = jax.nn.log_softmax(jax.vmap(ro.apply, in_axes=(0, None))(g["ema"], xj))
        coded.append(-jnp.take_along_axis(logp, xs["y"][None, :, None], axis=2)[..., 0])
    losses = jnp.concatenate(coded, axis=0).T  # (B, K)
    losses = jnp.where(xs["batch"] == 0, jnp.float32(math.log(c)), losses)

    def train(groups):
        out = []
        for j, (ro, g) in enumerate(zip(spec.readouts, groups)):
            def block_steps(g, h, ro=ro, j=j):
                def step(r, g):
                    pos = replay_positions(seed_key, xs["batch"], r, xs["t_end"], b)
                    x = _standardize(x_all[pos], xs["mean"], xs["inv_std"]) \
                        if spec.standardize[j] else x_all[pos]
                    upd = partial(_expert_update, ro, c, spec.masked[j], r, x, y_all[pos])
                    return jax.vmap(upd)(g, h)
                # no replay steps on a padding batch (valid = False)
                steps = jnp.where(xs["valid"], spec.max_replay[j], 0)
                return jax.lax.fori_loop(0, steps, step, g)
            # Blocks of experts run all their replay steps back to back, so a
            # block's parameters and optimiser state stay in cache. Each block
            # is sliced out of the group's state and written back in place
            # (dynamic_update_slice in a loop): no second copy of the group's
            # state is ever live (a lax.map over blocks stacked a new one).
            blk = spec.block[j]

            def one_block(i, g, j=j, blk=blk, block_steps=block_steps):
                take = lambda a: jax.lax.dynamic_slice_in_dim(a, i * blk, blk)  # noqa: E731
                gb = block_steps(jax.tree_util.tree_map(take, g),
                                 jax.tree_util.tree_map(take, hypers[j]))
                put = lambda a, u: jax.lax.dynamic_update_slice_in_dim(a, u, i * blk, 0)  # noqa: E731
                return jax.tree_util.tree_map(put, g, gb)
            n_blocks = jax.tree_util.tree_leaves(g)[0].shape[0] // blk
            out.append(jax.lax.fori_loop(0, n_blocks, one_block, g))
        return tuple(out)

    groups = train(groups)
    return groups, losses


# donate_argnums=1: the experts' state is updated in place (its input buffers are reused).
@partial(jax.jit, static_argnums=0, donate_argnums=1)
def _run_chunk(spec: _Spec, groups, hypers, x_all, y_all, seed_key, xs):
    global _TRACE_COUNT
    _TRACE_COUNT += 1
    body = partial(_batch_step, spec, hypers, x_all, y_all, seed_key)
    return jax.lax.scan(body, groups, xs)


# ----------------------------------------------------------------------------- driver


def _group(experts: Sequence[Expert], d: int, c: int) -> list[tuple[ReadoutLike, list[int]]]:
    """Experts grouped by (architecture, replay count), each group then cut into
    whole blocks of :func:`_block_fit` experts plus a remainder group.

    One vmapped group per (architecture, replay count): no expert waits through
    masked replay steps of a longer-replay neighbour (the ``vtab`` grid, replay
    3–100, would run 400 steps where 143 are real). A block's members and
    width then depend only on its own group, so a board split into slices of
    whole blocks (:mod:`mdlnb._memory`) gives bit-identical losses (XLA's CPU
    matmuls round differently at different block widths, so an expert trained
    alone may differ from the same expert in a block in the last bit).
    """
    groups: dict[tuple[ReadoutLike, int], list[int]] = {}
    for i, e in enumerate(experts):
        groups.setdefault((e.readout, e.replay_streams), []).append(i)
    out = []
    for (ro, _), idx in groups.items():
        fit = _block_fit(ro.num_params(d, c), getattr(ro, "max_block", None))
        full = len(idx) // fit * fit
        out += [(ro, part) for part in (idx[:full], idx[full:]) if part]
    return out


def _block_fit(num_params: int, cap: int | None = None) -> int:
    """Experts per block: as many as keep their training state (params, Adam μ/ν,
    EMA, grads: 5 × 4 bytes per parameter) within ``BLOCK_BYTES``, at most
    ``cap`` (a readout's ``max_block``, if it has one); at least 1."""
    fit = max(1, BLOCK_BYTES // (20 * num_params))
    return max(1, min(fit, int(cap))) if cap is not None else fit


def _block_size(group_size: int, num_params: int, cap: int | None = None) -> int:
    """Block width of a group made by :func:`_group` (it divides the group size)."""
    return min(group_size, _block_fit(num_params, cap))


def _init_group(readout: ReadoutLike, members: Sequence[Expert], seed: int, d: int, c: int):
    keys = jnp.stack([expert_key(seed, e) for e in members])
    if isinstance(readout, Readout):
        params = jax.vmap(lambda k: readout.init(k, d, c))(keys)
    else:  # its init may draw on the host; one call per expert, then stack
        inits = [readout.init(k, d, c) for k in keys]
        params = jax.tree_util.tree_map(lambda *a: jnp.stack([jnp.asarray(v) for v in a]), *inits)
    opt = jax.vmap(optax.adamw(1e-3).init)(params)  # state layout does not depend on hyperparameters
    # ema is a copy, not the same buffers: the state is donated to the chunk program
    return {"params": params, "opt": opt, "ema": jax.tree_util.tree_map(jnp.copy, params)}


def _hypers(members: Sequence[Expert]) -> dict[str, jax.Array]:
    f = lambda name: jnp.asarray([getattr(e, name) for e in members], jnp.float32)  # noqa: E731
    return {"learning_rate": f("learning_rate"), "b1": f("b1"), "weight_decay": f("weight_decay"),
            "ema": f("ema"), "label_smoothing": f("label_smoothing"),
            "replay_streams": jnp.asarray([e.replay_streams for e in members], jnp.int32)}


def _prefix_stats(s1, s2, count):
    """Mean and 1/std from float64 running sums; round-off-zero variance → 1/std = 1."""
    count = np.maximum(np.asarray(count, np.float64), 1.0)[..., None]
    mean = s1 / count
    var = np.maximum(s2 / count - mean ** 2, 0.0)
    ok = var > 1e-12 * mean ** 2 + 1e-30
    return mean, np.where(ok, 1.0 / np.sqrt(np.where(ok, var, 1.0)), 1.0)


def _chunk_inputs(x_ord, y_ord, first_batch, nbatch, b, running, standardize):
    """Host-side arrays for batches ``first_batch .. first_batch + nbatch - 1``.

    Batches past the end of the stream are padding (``valid = False``, no
    update). ``running = (sum x, sum x², count)`` in float64 over the positions
    before ``first_batch``; returns the inputs and the updated running sums.
    """
    n, d = x_ord.shape
    lo, hi = first_batch * b, min((first_batch + nbatch) * b, n)
    x = np.zeros((nbatch * b, d), np.float32)
    y = np.zeros((nbatch * b,), np.int32)
    x[: hi - lo], y[: hi - lo] = x_ord[lo:hi], y_ord[lo:hi]
    batches = first_batch + np.arange(nbatch)
    valid = batches < math.ceil(n / b)
    t_end = np.minimum((batches + 1) * b, n)
    s1, s2, count = running
    xb = x.reshape(nbatch, b, d).astype(np.float64)
    c1 = np.concatenate([s1[None], s1 + np.cumsum(xb.sum(axis=1), axis=0)])
    c2 = np.concatenate([s2[None], s2 + np.cumsum((xb * xb).sum(axis=1), axis=0)])
    counts = np.concatenate([[count], t_end]).astype(np.float64)
    mean, inv = _prefix_stats(c1, c2, counts)
    if not standardize:
        mean, inv = np.zeros_like(mean), np.ones_like(inv)
    xs = {"batch": batches.astype(np.int32), "t_end": t_end.astype(np.int32), "valid": valid,
          "x": x.reshape(nbatch, b, d), "y": y.reshape(nbatch, b),
          "mean": mean[1:].astype(np.float32), "inv_std": inv[1:].astype(np.float32),
          "mean_prev": mean[:-1].astype(np.float32), "inv_std_prev": inv[:-1].astype(np.float32)}
    last = int(valid.sum())  # row of c1/c2 after the last real batch
    return xs, (c1[last], c2[last], float(counts[last]))


def _validate(task, experts, batch_size, seed, replay_streams, checkpoint_every_s):
    if not isinstance(task, Task):
        raise ValueError(f"task: must be an mdlnb.Task, got {type(task).__name__}")
    if task.n == 0:
        raise ValueError("task: is empty")
    if isinstance(experts, Expert):
        experts = [experts]
    experts = list(experts) if experts is not None else []
    if not experts:
        raise ValueError("experts: must contain at least one Expert")
    for e in experts:
        if not isinstance(e, Expert):
            raise ValueError(f"experts: expected Expert objects, got {type(e).__name__}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ValueError(f"batch_size: must be an int >= 1, got {batch_size!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2 ** 32:
        raise ValueError(f"seed: must be an int in [0, 2**32), got {seed!r}")
    if replay_streams is not None:
        if isinstance(replay_streams, bool) or not isinstance(replay_streams, (int, np.integer)) \
                or replay_streams < 0:
            raise ValueError(f"replay_streams: must be None or an int >= 0, got {replay_streams!r}")
        experts = [e.replace(replay_streams=int(replay_streams)) for e in experts]
    if not checkpoint_every_s >= 0:
        raise ValueError(f"checkpoint_every_s: must be >= 0, got {checkpoint_every_s}")
    return experts


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:64]


def _make_progress(progress, n, k):
    """A ``(done, total, best_nats_per_example)`` callback and a closer."""
    if callable(progress):
        return progress, lambda: None
    if progress is None:
        progress = n * k >= 2_000_000 and sys.stdout.isatty()
    if not progress:
        return (lambda *a: None), lambda: None
    from tqdm.auto import tqdm

    bar = tqdm(total=n, unit="ex", desc="prequential", leave=False)

    def update(done, total, best):
        bar.update(done - bar.n)
        bar.set_postfix_str(f"best {best / math.log(2):.3f} bits/ex")

    return update, bar.close


def run(task: Task, experts: Sequence[Expert], batch_size: int = 32, seed: int = 0, *,
        replay_streams: int | None = None, progress: bool | ProgressFn | None = None,
        cache: bool = True, checkpoint_dir: str | Path | None = None,
        checkpoint_every_s: float = 120.0, standardize: bool = True,
        chunk_batches: int = DEFAULT_CHUNK_BATCHES,
        memory_budget: int | str | None = "auto", devices: Sequence | None = None) -> LossMatrix:
    """Train every expert online on ``task`` and record its next-step log-losses (nats).

    See the module docstring for the exact protocol.

    Args:
      task: the labelled task; ``task.features`` (N, D) are the inputs.
      experts: the board (e.g. :func:`mdlnb.experts.preset` or :func:`mdlnb.expert_grid`).
      batch_size: B, examples per incoming batch and per replay step.
      seed: drives the order, the initialisations and the replay samples.
      replay_streams: if given, overrides every expert's replay count.
      progress: ``True``/``False``, ``None`` (a tqdm bar when N·K ≥ 2e6 and
        stdout is a terminal), or a callable ``f(done, total, best_nats_per_example)``
        called after each chunk.
      cache: read/write the result under ``cache_dir("losses")``, keyed by a
        content hash of features, labels, experts, B, seed, standardisation and
        the code version.
      checkpoint_dir: where to checkpoint; ``None`` → ``cache_dir("checkpoints")``
        when ``cache`` is on, else no checkpoints.
      checkpoint_every_s: seconds of work between checkpoints (0 = every chunk).
        A killed run resumes from its last checkpoint and gives a bit-identical
        result on the same machine.
      standardize: standardise features online from the prefix (module docstring).
      chunk_batches: batches per jitted call (progress/checkpoint granularity).
      memory_budget: bytes the experts in flight may use. ``"auto"``: a safe
        fraction of the available memory (:mod:`mdlnb._memory`); ``None``: one
        pass whatever the size. A board over budget runs in slices of whole
        blocks, one after another (:func:`mdlnb._slicing.run_sliced`), with a
        bit-identical result; ``meta["memory_plan"]`` records the plan.
      devices: the devices the expert axis is sharded over (``None``: every
        device, of every process under ``jax.distributed``; one device runs
        unsharded). Same losses as on one device (:mod:`mdlnb._sharding`);
        ``meta["devices"]`` records count and kind.

    Returns:
      A :class:`LossMatrix` with ``losses`` (N, K) float32 nats in stream order.
    """
    if memory_budget is not None:  # memory plan: slice a board that does not fit (mdlnb/_memory.py)
        from mdlnb import _memory, _slicing  # noqa: PLC0415 (they import this module)

        experts = _validate(task, experts, batch_size, seed, replay_streams, checkpoint_every_s)
        if isinstance(memory_budget, str) and memory_budget != "auto":
            raise ValueError(f"memory_budget: must be 'auto', None or bytes, got {memory_budget!r}")
        budget = None if memory_budget == "auto" else memory_budget
        for ro in dict.fromkeys(e.readout for e in experts):  # before sizing them (num_params)
            if hasattr(ro, "check_task"):
                ro.check_task(task)
        ndev = len(devices) if devices is not None else jax.device_count()
        plan = _memory.plan(experts, task.n, np.shape(task.features)[1], task.num_classes,
                            budget_bytes=budget, devices=ndev)
        if len(plan.slices) > 1:
            return _slicing.run_sliced(
                task, experts, batch_size, seed, memory_plan=plan, progress=progress, cache=cache,
                checkpoint_dir=checkpoint_dir, checkpoint_every_s=checkpoint_every_s,
                standardize=standardize, chunk_batches=chunk_batches, devices=devices)
        _slicing.announce(plan, progress, task.n)  # the plan line, with the progress output
    return _run(task, experts, batch_size, seed, replay_streams=replay_streams,
              progress=progress, cache=cache, checkpoint_dir=checkpoint_dir,
              checkpoint_every_s=checkpoint_every_s, standardize=standardize,
              chunk_batches=chunk_batches, keep_params=False, devices=devices)[0]


def run_with_params(task: Task, experts: Sequence[Expert], batch_size: int = 32, seed: int = 0,
                    **kwargs) -> tuple[LossMatrix, list[dict]]:
    """:func:`run`, also returning each expert's parameters at the end of the stream.

    Same arguments and losses as :func:`run` (a cached result is not read,
    since it holds no parameters). Returns ``(loss_matrix, params)`` with
    ``params[k] = {"params": raw, "ema": prediction}`` pytrees of expert ``k``
    after training on the whole stream.
    """
    return _run(task, experts, batch_size, seed, keep_params=True, **kwargs)


def _run(task, experts, batch_size=32, seed=0, *, replay_streams=None, progress=None, cache=True,
         checkpoint_dir=None, checkpoint_every_s=120.0, standardize=True,
         chunk_batches=DEFAULT_CHUNK_BATCHES, keep_params=False, devices=None):
    experts = _validate(task, experts, batch_size, seed, replay_streams, checkpoint_every_s)
    if isinstance(chunk_batches, bool) or not isinstance(chunk_batches, (int, np.integer)) \
            or chunk_batches < 1:
        raise ValueError(f"chunk_batches: must be an int >= 1, got {chunk_batches!r}")
    b, seed = int(batch_size), int(seed)
    feats = check_finite(task.features, "task.x")
    labels = np.asarray(task.y)
    if labels.min() < 0 or labels.max() >= task.num_classes:
        raise ValueError(f"task.y: labels must lie in [0, {task.num_classes})")
    n, d = feats.shape
    c = task.num_classes
    for ro in dict.fromkeys(e.readout for e in experts):
        if hasattr(ro, "check_task"):
            ro.check_task(task)
    key = content_hash(CODE_VERSION, feats, labels, [e.config() for e in experts], b, seed,
                       bool(standardize), c)
    meta = {"cache_key": key, "code_version": CODE_VERSION, "standardize": bool(standardize)}
    cache_file = cache_dir("losses") / f"{_safe(task.name)}-{key}.npz" if cache else None
    if cache_file is not None and cache_file.is_file() and not keep_params:
        return LossMatrix.load(cache_file, experts=experts), None
    if checkpoint_dir is None and cache:
        checkpoint_dir = cache_dir("checkpoints")
    ckpt_file = Path(checkpoint_dir) / f"{key}.ckpt.npz" if checkpoint_dir is not None else None

    t0 = time.perf_counter()
    order = stream_order(seed, n)
    x_ord, y_ord = feats[order], labels[order].astype(np.int32)
    groups = _group(experts, d, c)
    # Devices (mdlnb/_sharding.py): with several, each group is padded to whole
    # blocks per device (index -1: a copy of its first expert, column dropped).
    mesh = _sharding.expert_mesh(devices) if devices is not None or jax.device_count() > 1 else None
    ndev = 1 if mesh is None else mesh.size
    if ndev > 1:
        groups = _sharding.pad_groups(groups, ndev, lambda ro, size: _block_size(
            size, ro.num_params(d, c), getattr(ro, "max_block", None)))
    members = [[experts[i if i >= 0 else idx[0]] for i in idx] for _, idx in groups]
    spec = _Spec(readouts=tuple(ro for ro, _ in groups),
                 max_replay=tuple(max(e.replay_streams for e in m) for m in members),
                 masked=tuple(len({e.replay_streams for e in m}) > 1 for m in members),
                 block=tuple(_block_size(len(m) // ndev, ro.num_params(d, c),
                                         getattr(ro, "max_block", None))
                             for (ro, _), m in zip(groups, members)),
                 standardize=tuple(bool(getattr(ro, "standardize_inputs", True))
                                   for ro, _ in groups),
                 num_classes=c, batch_size=b)
    # column of the chunk output -> expert index (-1: padding); device-major when sharded
    column = _sharding.columns(groups, ndev)
    keep = column >= 0
    state = tuple(_init_group(ro, m, seed, d, c) for (ro, _), m in zip(groups, members))
    hypers = tuple(_hypers(m) for m in members)
    x_dev, y_dev = jnp.asarray(x_ord), jnp.asarray(y_ord)
    seed_key = jax.random.PRNGKey(seed)

    total_batches = math.ceil(n / b)
    chunk = min(int(chunk_batches), total_batches)
    num_chunks = math.ceil(total_batches / chunk)
    losses = np.zeros((n, len(experts)), np.float32)
    running = (np.zeros(d), np.zeros(d), 0.0)
    next_chunk = 0
    if ckpt_file is not None and ckpt_file.is_file():
        state, losses, running, next_chunk = _load_checkpoint(ckpt_file, key, state)
    if ndev > 1:  # the expert axis over the mesh, the rest replicated
        state, hypers = _sharding.shard(mesh, state), _sharding.shard(mesh, hypers)
        x_dev, y_dev, seed_key = _sharding.replicate(mesh, (x_ord, y_ord, seed_key))
        chunk_program = partial(_sharding.run_chunk, spec, mesh)
    else:
        chunk_program = partial(_run_chunk, spec)
    meta["devices"] = _sharding.describe(mesh or _sharding.expert_mesh(jax.local_devices()[:1]))

    report, close = _make_progress(progress, n, len(experts))
    totals = losses[: next_chunk * chunk * b].sum(axis=0, dtype=np.float64)  # for progress only
    last_ckpt = time.perf_counter()
    try:
        for ci in range(next_chunk, num_chunks):
            xs, running = _chunk_inputs(x_ord, y_ord, ci * chunk, chunk, b, running, standardize)
            if ndev > 1:
                xs = _sharding.replicate(mesh, xs)
            state, out = chunk_program(state, hypers, x_dev, y_dev, seed_key, xs)
            lo, hi = ci * chunk * b, min((ci + 1) * chunk * b, n)
            block = _sharding.to_host(out).reshape(-1, len(column))[: hi - lo, keep]
            losses[lo:hi, column[keep]] = block
            done = ci + 1 == num_chunks
            if ckpt_file is not None and not done and \
                    time.perf_counter() - last_ckpt >= checkpoint_every_s:
                _save_checkpoint(ckpt_file, key, state, losses, running, ci + 1)
                last_ckpt = time.perf_counter()
            totals += block.sum(axis=0, dtype=np.float64)
            report(hi, n, float(totals.min()) / hi)
    finally:
        close()

    meta["seconds"] = round(time.perf_counter() - t0, 3)
    result = LossMatrix(losses=losses, experts=tuple(experts), order=order, task_name=task.name,
                        num_classes=c, seed=seed, batch_size=b, meta=meta)
    if cache_file is not None:
        result.save(cache_file)
    if ckpt_file is not None:
        ckpt_file.unlink(missing_ok=True)
    if not keep_params:
        return result, None
    params: list = [None] * len(experts)
    for (_, idx), g in zip(groups, state):
        g = jax.tree_util.tree_map(_sharding.to_host, {"params": g["params"], "ema": g["ema"]})
        for row, k in enumerate(idx):
            if k >= 0:
                params[k] = jax.tree_util.tree_map(lambda a, row=row: jnp.asarray(a[row]), g)
    return result, params


def _save_checkpoint(path: Path, key: str, state, losses, running, next_chunk) -> None:
    leaves = jax.tree_util.tree_leaves(state)
    atomic_savez(path, key=np.array(key), next_chunk=np.int64(next_chunk), losses=losses,
                 s1=running[0], s2=running[1], count=np.float64(running[2]),
                 **{f"leaf{i}": _sharding.to_host(v) for i, v in enumerate(leaves)})


def _load_checkpoint(path: Path, key: str, like):
    """Restore a checkpoint written for the same inputs; the layout comes from ``like``."""
    with np.load(path, allow_pickle=False) as z:
        leaves, treedef = jax.tree_util.tree_flatten(like)
        if str(z["key"]) != key or sum(f.startswith("leaf") for f in z.files) != len(leaves):
            raise ValueError(f"checkpoint_dir: {path.name} does not match this run; delete it")
        state = jax.tree_util.tree_unflatten(
            treedef, [jnp.asarray(z[f"leaf{i}"]) for i in range(len(leaves))])
        return (state, np.array(z["losses"]), (z["s1"], z["s2"], float(z["count"])),
                int(z["next_chunk"]))


# The block-wise code (Voita & Titov 2020) is a comparison estimator for the
# prequential code above; it lives in its own module and is re-exported here.
from mdlnb.blockwise import BlockwiseResult, blockwise  # noqa: E402
