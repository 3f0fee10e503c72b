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
ever used; the zero-variance rule and the clip are :mod:`mdlnb._standardize`'s.
With ``standardize="none"`` (the paper's protocols) the readouts see the
features as given, neither shifted, scaled nor clipped. A readout whose
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

Pruning (protocol ``prune=mdlnb.Prune(...)``, :mod:`mdlnb._prune`): the chunks
are the pruning segments; after each, stage 2 runs on the survivors' new
losses, experts whose posterior stayed below the threshold for the window
are dropped, and the groups are compacted to their survivors (each group
then runs its own compiled program, :func:`_run_groups`). A pruned expert's
losses from its pruning step on are +inf, ``meta["prune"]`` records the
schedule and the expert-updates; no checkpoints are written (one device, one
memory slice).

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
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from mdlnb import _checkpoint, _fit, _prune, _sharding, _standardize
from mdlnb._checks import check_finite
from mdlnb._io import atomic_savez, cache_dir, content_hash, load_entry, locked, read_npz
from mdlnb._protocol import Protocol
from mdlnb._protocol import protocol as _protocol
from mdlnb._standardize import CLIP_Z  # noqa: F401  (re-exported)
from mdlnb._task import Task
from mdlnb.experts import Expert
from mdlnb.readouts import Readout, ReadoutLike, with_matmul_dtype

# v2: standardised inputs clipped to ±CLIP_Z. v3: one AdamW step (mdlnb._fit.step) and
# state NamedTuple, the protocol in the cache key, raw features no longer clipped under
# standardize="none", the shared checkpoint format (mdlnb._checkpoint). v4: experts grouped
# by (architecture, replay count) in whole blocks (losses may move in the last float bit).
CODE_VERSION = "prequential-v4"
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
        on stream position ``t``, i.e. on task example ``order[t]``. A NaN
        (a diverged expert, see :meth:`diverged`) is stored as +inf.
      experts: the K experts, column order.
      order: ``(N,)`` int64, task index of each stream position.
      task_name, num_classes, seed, batch_size: provenance.
      meta: free-form (cache key, code version, standardisation, timing).
      protocol: the :class:`mdlnb.Protocol` that produced it (its stage-1 part
        decides the losses; the strategy is the one ``evaluate`` was given).
    """

    losses: np.ndarray
    experts: tuple[Expert, ...]
    order: np.ndarray
    task_name: str
    num_classes: int
    seed: int
    batch_size: int
    meta: dict = dataclasses.field(default_factory=dict)
    protocol: Protocol | None = None

    def __post_init__(self) -> None:
        losses = np.asarray(self.losses, np.float32)
        if losses.ndim != 2 or losses.shape[1] != len(self.experts):
            raise ValueError(f"losses: expected shape (N, {len(self.experts)}), got {losses.shape}")
        order = np.asarray(self.order, np.int64)
        if order.shape != (losses.shape[0],):
            raise ValueError(f"order: expected shape ({losses.shape[0]},), got {order.shape}")
        if np.isnan(losses).any():  # a diverged expert gives the label probability 0
            losses = np.where(np.isnan(losses), np.float32(np.inf), losses)
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

    @property
    def pruned_at(self) -> np.ndarray:
        """(K,) int64: the stream position from which each expert was pruned (N: never;
        ``meta["prune"]``, :mod:`mdlnb._prune`); its losses there are +inf, not coded."""
        at = self.meta.get("prune", {}).get("pruned_at")
        return np.full(self.k, self.n, np.int64) if at is None else np.asarray(at, np.int64)

    def diverged(self) -> list[tuple[str, int]]:
        """``[(expert name, t), ...]``: experts whose loss became non-finite, with the
        first such stream step t (1-indexed); see :func:`mdlnb.switching.diverged`.
        A pruned expert's +inf after its pruning step is not a divergence."""
        from mdlnb.switching import diverged

        at = self.pruned_at
        return [(self.experts[k].name, t) for k, t in diverged(self.losses) if t <= at[k]]

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
            meta=np.array(json.dumps(self.meta, default=str)),
            protocol=np.array(json.dumps(None if self.protocol is None
                                         else self.protocol.to_dict(), default=str)))

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
        return cls._from_arrays(read_npz(path, require_checksum=False), experts, path.name)

    @classmethod
    def _from_arrays(cls, z: dict, experts: Sequence[Expert] | None, source: str) -> "LossMatrix":
        configs = json.loads(str(z["experts"]))
        if experts is None:
            experts = tuple(Expert.from_config(c) for c in configs)
        elif [json.loads(json.dumps(e.config(), default=str)) for e in experts] != configs:
            raise ValueError(f"experts: do not match the experts stored in {source}")
        proto = json.loads(str(z["protocol"])) if "protocol" in z else None
        if proto is not None:
            proto = Protocol.from_dict(proto, experts=experts)
        return cls(losses=z["losses"], order=z["order"], experts=tuple(experts),
                   task_name=str(z["task_name"]), num_classes=int(z["num_classes"]),
                   seed=int(z["seed"]), batch_size=int(z["batch_size"]),
                   meta=json.loads(str(z["meta"])), protocol=proto)


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
    clip: float | None                # the "prefix" clip; None for standardize="none"


def _expert_update(readout, num_classes, masked, r, x, y, state, hp, replay):
    """One AdamW + EMA step of a single expert (:func:`mdlnb._fit.step`, vmapped over
    the group); with ``masked``, a no-op for experts past their replay count."""
    new = _fit.step(readout.apply, state, hp, x, y, num_classes)
    if masked:
        take = r < replay
        new = jax.tree_util.tree_map(lambda a, b: jnp.where(take, a, b), new, state)
    return new


def _standardized(spec: _Spec, x, mean, inv_std):
    """The readouts' view of ``x``: prefix z-scores clipped to ``±spec.clip``, or ``x``."""
    if spec.clip is None:  # standardize="none": mean 0, scale 1, nothing clipped
        return x
    return _standardize.apply(x, _standardize.Moments(mean, inv_std), clip=spec.clip)


def _batch_step(spec: _Spec, hypers, x_all, y_all, seed_key, groups, xs):
    b, c = spec.batch_size, spec.num_classes
    xn = _standardized(spec, xs["x"], xs["mean_prev"], xs["inv_std_prev"])
    coded = []
    for j, (ro, g) in enumerate(zip(spec.readouts, groups)):
        xj = xn if spec.standardize[j] else xs["x"]
        logp = jax.nn.log_softmax(jax.vmap(ro.apply, in_axes=(0, None))(g.ema_params, xj))
        coded.append(-jnp.take_along_axis(logp, xs["y"][None, :, None], axis=2)[..., 0])
    losses = jnp.concatenate(coded, axis=0).T  # (B, K)
    losses = jnp.where(xs["batch"] == 0, jnp.float32(math.log(c)), losses)

    def train(groups):
        out = []
        for j, (ro, g) in enumerate(zip(spec.readouts, groups)):
            def block_steps(g, h, ro=ro, j=j):
                def step(r, g):
                    pos = replay_positions(seed_key, xs["batch"], r, xs["t_end"], b)
                    x = _standardized(spec, x_all[pos], xs["mean"], xs["inv_std"]) \
                        if spec.standardize[j] else x_all[pos]
                    upd = partial(_expert_update, ro, c, spec.masked[j], r, x, y_all[pos])
                    return jax.vmap(upd)(g, *h)
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


def _run_groups(spec: _Spec, groups, hypers, x_all, y_all, seed_key, xs):
    """:func:`_run_chunk` one group at a time: each group's program is compiled (and
    cached) on its own, so compacting one group of a pruned board
    (:mod:`mdlnb._prune`) recompiles that group only. Same outputs."""
    states, outs = [], []
    for j in range(len(spec.readouts)):
        one = dataclasses.replace(spec, **{f: (getattr(spec, f)[j],) for f in (
            "readouts", "max_replay", "masked", "block", "standardize")})
        g, out = _run_chunk(one, (groups[j],), (hypers[j],), x_all, y_all, seed_key, xs)
        states.append(g[0])
        outs.append(out)
    return tuple(states), jnp.concatenate(outs, axis=2)


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


def _members_spec(groups, experts, ndev, d, c, b, clip, matmul_dtype="float32"):
    """Each group's experts (padding -1 → a copy of its first) and the static :class:`_Spec`
    (readouts wrapped by :func:`~mdlnb.readouts.with_matmul_dtype`)."""
    members = [[experts[i if i >= 0 else idx[0]] for i in idx] for _, idx in groups]
    spec = _Spec(readouts=tuple(with_matmul_dtype(ro, matmul_dtype) for ro, _ in groups),
                 max_replay=tuple(max(e.replay_streams for e in m) for m in members),
                 masked=tuple(len({e.replay_streams for e in m}) > 1 for m in members),
                 block=tuple(_block_size(len(m) // ndev, ro.num_params(d, c),
                                         getattr(ro, "max_block", None))
                             for (ro, _), m in zip(groups, members)),
                 standardize=tuple(bool(getattr(ro, "standardize_inputs", True))
                                   for ro, _ in groups),
                 num_classes=c, batch_size=b, clip=clip)
    return members, spec


def _init_group(readout: ReadoutLike, members: Sequence[Expert], seed: int, d: int, c: int):
    keys = jnp.stack([expert_key(seed, e) for e in members])
    if isinstance(readout, Readout):
        params = jax.vmap(lambda k: readout.init(k, d, c))(keys)
    else:  # its init may draw on the host; one call per expert, then stack
        inits = [readout.init(k, d, c) for k in keys]
        params = jax.tree_util.tree_map(lambda *a: jnp.stack([jnp.asarray(v) for v in a]), *inits)
    # ema is a copy, not the same buffers: the state is donated to the chunk program
    state = jax.vmap(_fit.state_of)(params)  # the state layout does not depend on hyperparameters
    return state._replace(ema_params=jax.tree_util.tree_map(jnp.copy, params))


def _hypers(members: Sequence[Expert]) -> tuple[_fit.Hyper, jax.Array]:
    """Stacked :class:`mdlnb._fit.Hyper` of a group and its replay counts."""
    h = _fit.stack_hypers([_fit.hyper_of(e) for e in members])
    return h, jnp.asarray([e.replay_streams for e in members], jnp.int32)


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
    mean, inv = _standardize.from_sums(c1, c2, counts)
    if not standardize:
        mean, inv = np.zeros_like(mean), np.ones_like(inv)
    xs = {"batch": batches.astype(np.int32), "t_end": t_end.astype(np.int32), "valid": valid,
          "x": x.reshape(nbatch, b, d), "y": y.reshape(nbatch, b),
          "mean": mean[1:].astype(np.float32), "inv_std": inv[1:].astype(np.float32),
          "mean_prev": mean[:-1].astype(np.float32), "inv_std_prev": inv[:-1].astype(np.float32)}
    last = int(valid.sum())  # row of c1/c2 after the last real batch
    return xs, (c1[last], c2[last], float(counts[last]))


def _validate(task, checkpoint_every_s) -> None:
    if not isinstance(task, Task):
        raise ValueError(f"task: must be an mdlnb.Task, got {type(task).__name__}")
    if task.n == 0:
        raise ValueError("task: is empty")
    if not checkpoint_every_s >= 0:
        raise ValueError(f"checkpoint_every_s: must be >= 0, got {checkpoint_every_s}")


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
    from mdlnb import _progress

    bar = _progress.bar(total=n, unit="ex", desc="prequential", leave=False)

    def update(done, total, best):
        bar.update(done - bar.n)
        bar.set_postfix_str(f"best {best / math.log(2):.3f} bits/ex")

    return update, bar.close


def run(task: Task, experts: Sequence[Expert] | str | None = None, batch_size: int | None = None,
        seed: int | None = None, *, protocol: Protocol | str | None = None,
        replay_streams: int | None = None, standardize: str | bool | None = None,
        progress: bool | ProgressFn | None = None, cache: bool = True,
        checkpoint_dir: str | Path | None = None, checkpoint_every_s: float = 120.0,
        chunk_batches: int = DEFAULT_CHUNK_BATCHES,
        memory_budget: int | str | None = "auto", devices: Sequence | None = None) -> LossMatrix:
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
      progress: ``True``/``False``, ``None`` (a bar, :mod:`mdlnb._progress`, when N·K ≥ 2e6 and
        stdout is a terminal), or a callable ``f(done, total, best_nats_per_example)``
        called after each chunk.
      cache: read/write the result under ``cache_dir("losses")``, keyed by a
        content hash of features, labels, the protocol's stage-1 part
        (:meth:`mdlnb.Protocol.stage1`: experts, B, seed, standardisation) and
        the code version.
      checkpoint_dir: where to checkpoint; ``None`` → ``cache_dir("checkpoints")``
        when ``cache`` is on, else no checkpoints.
      checkpoint_every_s: seconds of work between checkpoints (0 = every chunk).
        A killed run resumes from its last checkpoint and gives a bit-identical
        result on the same machine.
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
    if isinstance(memory_budget, str) and memory_budget != "auto":
        raise ValueError(f"memory_budget: must be 'auto', None or bytes, got {memory_budget!r}")
    if memory_budget is not None:  # memory plan: slice a board that does not fit (mdlnb/_memory.py)
        from mdlnb import _memory, _slicing  # noqa: PLC0415 (they import this module)

        _validate(task, checkpoint_every_s)
        protocol = resolve_protocol(protocol, experts, batch_size=batch_size, seed=seed,
                                    replay_streams=replay_streams, standardize=standardize)
        experts = batch_size = seed = replay_streams = standardize = None  # all in `protocol`
        board = protocol.experts()
        budget = None if memory_budget == "auto" else memory_budget
        for ro in dict.fromkeys(e.readout for e in board):  # before sizing them (num_params)
            if hasattr(ro, "check_task"):
                ro.check_task(task)
        ndev = len(devices) if devices is not None else jax.device_count()
        plan = _memory.plan(board, task.n, np.shape(task.features)[1], task.num_classes,
                            budget_bytes=budget, devices=ndev)
        if len(plan.slices) > 1:
            if protocol.prune is not None:
                raise ValueError("memory_budget: a pruned board must run in one slice (pruning "
                                 f"couples the experts); {plan.describe()}")
            return _slicing.run_sliced(
                task, protocol=protocol, memory_plan=plan, progress=progress, cache=cache,
                checkpoint_dir=checkpoint_dir, checkpoint_every_s=checkpoint_every_s,
                chunk_batches=chunk_batches, devices=devices)
        _slicing.announce(plan, progress, task.n)  # the plan line, with the progress output
    return _run(task, experts, batch_size, seed, protocol=protocol, replay_streams=replay_streams,
                standardize=standardize, progress=progress, cache=cache,
                checkpoint_dir=checkpoint_dir, checkpoint_every_s=checkpoint_every_s,
                chunk_batches=chunk_batches, keep_params=False, devices=devices)[0]


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
         checkpoint_every_s=120.0, chunk_batches=DEFAULT_CHUNK_BATCHES, keep_params=False,
         devices=None, _locked=False):
    _validate(task, checkpoint_every_s)
    proto = resolve_protocol(protocol, experts, batch_size=batch_size, seed=seed,
                             replay_streams=replay_streams, standardize=standardize)
    experts = proto.experts()
    if isinstance(chunk_batches, bool) or not isinstance(chunk_batches, (int, np.integer)) \
            or chunk_batches < 1:
        raise ValueError(f"chunk_batches: must be an int >= 1, got {chunk_batches!r}")
    b, seed = proto.batch_size, proto.seed
    prefix = proto.standardize == "prefix"
    feats = check_finite(task.features, "task.x")
    labels = np.asarray(task.y)
    if labels.min() < 0 or labels.max() >= task.num_classes:
        raise ValueError(f"task.y: labels must lie in [0, {task.num_classes})")
    n, d = feats.shape
    c = task.num_classes
    for ro in dict.fromkeys(e.readout for e in experts):
        if hasattr(ro, "check_task"):
            ro.check_task(task)
    key = content_hash(CODE_VERSION, feats, labels, proto.stage1(), c)
    meta = {"cache_key": key, "code_version": CODE_VERSION, "standardize": proto.standardize,
            "matmul_dtype": proto.matmul_dtype}
    cache_file = cache_dir("losses") / f"{_safe(task.name)}-{key}.npz" if cache else None
    if cache_file is not None and not _locked:
        with locked(cache_file):  # one process computes a key; the others wait, then read it
            return _run(task, None, protocol=proto, progress=progress, cache=cache,
                        checkpoint_dir=checkpoint_dir, checkpoint_every_s=checkpoint_every_s,
                        chunk_batches=chunk_batches, keep_params=keep_params, devices=devices,
                        _locked=True)
    hit = load_entry(cache_file) if cache_file is not None and not keep_params else None
    if hit is not None:  # None: absent, or damaged (warned and recomputed)
        return dataclasses.replace(LossMatrix._from_arrays(hit, experts, cache_file.name),
                                   protocol=proto), None
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
    members, spec = _members_spec(groups, experts, ndev, d, c, b, proto.clip if prefix else None,
                                  proto.matmul_dtype)
    # column of the chunk output -> expert index (-1: padding); device-major when sharded
    column = _sharding.columns(groups, ndev)
    keep = column >= 0
    state = tuple(_init_group(ro, m, seed, d, c) for (ro, _), m in zip(groups, members))
    hypers = tuple(_hypers(m) for m in members)
    x_dev, y_dev = jnp.asarray(x_ord), jnp.asarray(y_ord)
    seed_key = jax.random.PRNGKey(seed)

    total_batches = math.ceil(n / b)
    pruner = None
    if proto.prune is not None:  # stage 2 alongside, in segments (mdlnb/_prune.py)
        if ndev > 1:
            raise ValueError("prune: runs on one device; pass devices=[jax.devices()[0]]")
        pruner = _prune.Pruner(proto.prune, proto.strategy, len(experts), n, b,
                               readout_of=_prune.readout_labels(experts))
        chunk_batches, ckpt_file = proto.prune.segment_batches, None  # no checkpoints: see README
        computed = 0
    chunk = min(int(chunk_batches), total_batches)
    num_chunks = math.ceil(total_batches / chunk)
    losses = np.full((n, len(experts)), np.inf if pruner else 0.0, np.float32)
    running = (np.zeros(d), np.zeros(d), 0.0)
    next_chunk = 0
    if ckpt_file is not None:
        resumed = _load_checkpoint(ckpt_file, key, state)
        if resumed is not None:
            state, losses, running, next_chunk = resumed
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
            xs, running = _chunk_inputs(x_ord, y_ord, ci * chunk, chunk, b, running, prefix)
            if ndev > 1:
                xs = _sharding.replicate(mesh, xs)
            state, out = chunk_program(state, hypers, x_dev, y_dev, seed_key, xs)
            lo, hi = ci * chunk * b, min((ci + 1) * chunk * b, n)
            block = _sharding.to_host(out).reshape(-1, len(column))[: hi - lo, keep]
            losses[lo:hi, column[keep]] = block
            totals[column[keep]] += block.sum(axis=0, dtype=np.float64)
            done = ci + 1 == num_chunks
            if pruner is not None:
                computed += sum(len(idx) * mr for (_, idx), mr in zip(groups, spec.max_replay)) \
                    * int(xs["valid"].sum())
                pruner.observe(losses[lo:hi][:, pruner.alive])
                if not done and pruner.decide().size:
                    totals[pruner.pruned_at < n] = np.inf
                    alive = np.zeros(len(experts), bool)
                    alive[pruner.alive] = True
                    groups, state, hypers = _prune.compact(
                        groups, state, hypers, alive,
                        lambda ro: _block_fit(ro.num_params(d, c), getattr(ro, "max_block", None)))
                    members, spec = _members_spec(groups, experts, 1, d, c, b,
                                                  proto.clip if prefix else None,
                                                  proto.matmul_dtype)
                    column = _sharding.columns(groups, 1)
                    keep = column >= 0
                    chunk_program = partial(_run_groups, spec)
            if ckpt_file is not None and not done and \
                    time.perf_counter() - last_ckpt >= checkpoint_every_s:
                _save_checkpoint(ckpt_file, key, state, losses, running, ci + 1)
                last_ckpt = time.perf_counter()
            report(hi, n, float(totals.min()) / hi)
    finally:
        close()

    meta["seconds"] = round(time.perf_counter() - t0, 3)
    if pruner is not None:
        meta["prune"] = {**proto.prune.to_dict(), "segment_rows": pruner.segment_rows,
                         "pruned_at": pruner.pruned_at.tolist(),
                         "num_pruned": int((pruner.pruned_at < n).sum()),
                         **_prune.expert_updates([e.replay_streams for e in experts],
                                                 pruner.pruned_at, n, b),
                         "expert_updates_computed": int(computed)}
    result = LossMatrix(losses=losses, experts=tuple(experts), order=order, task_name=task.name,
                        num_classes=c, seed=seed, batch_size=b, meta=meta, protocol=proto)
    if cache_file is not None:
        result.save(cache_file)
    if ckpt_file is not None:
        ckpt_file.unlink(missing_ok=True)
    if not keep_params:
        return result, None
    params: list = [None] * len(experts)
    for (_, idx), g in zip(groups, state):
        g = jax.tree_util.tree_map(_sharding.to_host, {"params": g.params, "ema": g.ema_params})
        for row, k in enumerate(idx):
            if k >= 0:
                params[k] = jax.tree_util.tree_map(lambda a, row=row: jnp.asarray(a[row]), g)
    return result, params


def _save_checkpoint(path: Path, key: str, state, losses, running, next_chunk) -> None:
    _checkpoint.save(path, jax.tree_util.tree_map(_sharding.to_host, state), key=key,
                     next_chunk=np.int64(next_chunk), losses=losses,
                     s1=running[0], s2=running[1], count=np.float64(running[2]))


def _load_checkpoint(path: Path, key: str, like):
    """Restore a checkpoint of this run (``None``: none, or one that does not fit)."""
    ck = _checkpoint.load(path, like, key=key)
    if ck is None:
        return None
    a = ck.arrays
    return ck.tree, a["losses"], (a["s1"], a["s2"], float(a["count"])), int(a["next_chunk"])


# The block-wise code (Voita & Titov 2020) is a comparison estimator for the
# prequential code above; it lives in its own module and is re-exported here.
from mdlnb.blockwise import BlockwiseResult, blockwise  # noqa: E402
