"""Block-wise (online) MDL code of Voita & Titov (2020).

The examples, in a fixed seeded order, are cut into blocks at the boundaries
``0 < b_1 < b_2 < … < b_S = N``. The first block is sent with the uniform code
(``b_1 · log C`` nats); block ``s`` (examples ``[b_{s-1}, b_s)``) is sent with a
model trained from scratch on all previous blocks ``[0, b_{s-1})``:

    L_block = b_1 log C − Σ_{s≥2} Σ_{t ∈ [b_{s-1}, b_s)} log p_{θ_s}(y_t | x_t)   (nats)

Voita & Titov use the boundaries 0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.25, 12.5, 25,
50, 100 % of N (:data:`VOITA_FRACTIONS`). As the SDL paper notes, this is the
left-endpoint Riemann sum of the loss-data curve, i.e. a prequential code that
updates only at block ends. Every quantity here is in nats unless its name
says bits; the uniform first block is ``log C`` *nats* per example (one
public implementation mixes in bits there).

Training of each block's model ("to convergence", made precise): AdamW
(optax) on the readout's ``init``/``apply``, ``epochs`` epochs of
``max(⌈n_train / batch_size⌉, ⌈min_steps / epochs⌉)`` steps, each step on
``batch_size`` examples drawn uniformly with replacement from the training
part (``batch_size=None``: full-batch steps). With ``holdout > 0`` the last
``max(1, ⌊holdout · b_{s-1}⌋)`` examples of the previous blocks are held out
and the epoch with the lowest held-out loss is kept (early stopping by
checkpoint selection); with ``holdout=0`` (or a one-example prefix) the
parameters after the last epoch are used. Predictions use the EMA parameters
if the expert has ``ema < 1``. Features are standardized with the mean/std of
the previous blocks (data the receiver already has), clipped to ±10 as in
stage 1's ``"prefix"`` standardisation (:mod:`mdlnb.core._standardize`).

All epochs of one block run in one compiled ``lax.scan`` (steps in a
``fori_loop``); the program is compiled once per (readout, N, D, C, epochs,
batch size) and reused by every block and every hyperparameter setting, since
arrays are padded to N and block limits and hyperparameters are traced.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from mdlnb.core import _fit
from mdlnb.core._checks import as_array, check_int
from mdlnb.core._standardize import CLIP_Z
from mdlnb.core._task import Task, require_classification
from mdlnb.core._units import LN2, Codelength
from mdlnb.infra import _xla_cache

# Imported inside the functions that use them, so that importing this module does not load
# them: pandas.


#: Block ends as fractions of N used by Voita & Titov (2020).
VOITA_FRACTIONS = (0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.0625, 0.125, 0.25, 0.5, 1.0)


def default_boundaries(n: int, fractions: Sequence[float] = VOITA_FRACTIONS) -> np.ndarray:
    """Block ends ``⌊f · n⌋`` (at least 1, duplicates dropped, last = n), int64."""
    if int(n) < 1:
        raise ValueError(f"n: must be >= 1, got {n}")
    b = np.maximum(1, np.floor(np.asarray(fractions, np.float64) * n).astype(np.int64))
    b = np.unique(np.append(b[b < n], n))
    return b


def _check_boundaries(boundaries: Any, n: int) -> np.ndarray:
    b = as_array(boundaries, "boundaries", ndim=1)
    if b.size == 0:
        raise ValueError("boundaries: is empty")
    if b.dtype.kind == "f":
        if not np.all(np.isfinite(b)) or not np.all(b == np.round(b)):
            raise ValueError("boundaries: must be integer example counts (block ends)")
    elif b.dtype.kind not in "iu":
        raise ValueError(f"boundaries: must be integers, got dtype {b.dtype}")
    b = b.astype(np.int64)
    if b[0] < 1 or b[-1] > n:
        raise ValueError(f"boundaries: block ends must lie in [1, {n}], got {b[0]}..{b[-1]}")
    if np.any(np.diff(b) <= 0):
        raise ValueError("boundaries: must be strictly increasing")
    if b[-1] != n:
        b = np.append(b, n)
    return b


@dataclasses.dataclass(frozen=True)
class BlockwiseResult(Codelength):
    """Codelength of the block-wise code.

    Attributes:
      boundaries: (S,) block ends; block s holds examples ``[boundaries[s-1], boundaries[s])``
        of ``order`` (block 0 starts at 0); ``boundaries[-1] = N``.
      block_nats: (S,) codelength of each block, nats (float64); ``block_nats[0] = b_1 log C``.
      best_epoch: (S,) 1-based epoch whose parameters coded the block (0 for the uniform block).
      order: (N,) example order (indices into the task).
      num_classes: C.
      expert: name of the expert (readout + hyperparameters).
      meta: training settings (epochs, batch size, holdout, seed, ...).
    """

    boundaries: np.ndarray
    block_nats: np.ndarray
    best_epoch: np.ndarray
    order: np.ndarray
    num_classes: int
    expert: str
    meta: dict = dataclasses.field(default_factory=dict)

    @property
    def n(self) -> int:
        return int(self.boundaries[-1])

    @property
    def block_sizes(self) -> np.ndarray:
        return np.diff(np.concatenate([[0], self.boundaries]))

    @property
    def total_nats(self) -> float:
        return float(np.sum(self.block_nats, dtype=np.float64))

    @property
    def uniform_nats(self) -> float:
        """``N log C``: the codelength of the uniform code, nats."""
        return self.n * math.log(self.num_classes)

    def to_frame(self):
        """Tidy per-block table (units in column names)."""
        import pandas as pd

        sizes = self.block_sizes
        return pd.DataFrame(
            {
                "block": np.arange(len(sizes)),
                "start": self.boundaries - sizes,
                "end": self.boundaries,
                "size": sizes,
                "codelength [nats]": self.block_nats,
                "per example [nats]": self.block_nats / sizes,
                "per example [bits]": self.block_nats / sizes / LN2,
                "best epoch": self.best_epoch,
            }
        )

    def notes(self, task: Task | None = None) -> str:
        """How to read :meth:`to_frame`, from its numbers (Markdown): the blocks that
        cost more per example than the uniform code and why — with ``task``, how many
        of their examples are of a class the block's model never saw — and what the
        ``best epoch`` column is."""
        sizes, logc = self.block_sizes, math.log(self.num_classes)
        per = self.block_nats / sizes
        worse = [s for s in range(1, len(sizes)) if per[s] > logc]
        epochs = self.meta.get("epochs", "E")
        lines = []
        if worse:
            s0, s1 = worse[0], worse[-1]
            ex = int(sizes[worse].sum())
            seen = f"{self.boundaries[s0 - 1]:,}–{self.boundaries[s1 - 1]:,}"
            unseen = ""
            if task is not None:
                y = np.asarray(task.y)[self.order]
                new = sum(
                    int(
                        np.sum(
                            ~np.isin(
                                y[self.boundaries[s - 1] : self.boundaries[s]],
                                y[: self.boundaries[s - 1]],
                            )
                        )
                    )
                    for s in worse
                )
                unseen = (
                    f" {new} of their {ex} examples are of a class that none of the "
                    "block's training examples has, and such an example costs far "
                    "more than log C."
                )
            lines.append(
                f"**Blocks {s0}–{s1} cost more than the uniform code.** Coded by models "
                f"trained on the first {seen} examples, they cost {per[worse].min():.1f}–"
                f"{per[worse].max():.1f} nats per example, above log C = {logc:.3f}: a model "
                f"trained for {epochs} epochs on a handful of examples puts nearly all its "
                f"probability on the few classes it has seen.{unseen} Voita & Titov's "
                f"doubling starts at 0.1 % of N — here {self.boundaries[0]:,} "
                f"example{'s' if self.boundaries[0] != 1 else ''} sent uniformly — and no "
                f"later block falls back to the uniform code: up to n = "
                f"{self.boundaries[s1]:,} the block-wise code spent "
                f"{self.block_nats[: s1 + 1].sum():,.1f} nats where the uniform code spends "
                f"{self.boundaries[s1] * logc:,.1f}. (The online code of stage 1 sends its "
                "whole first batch uniformly and trains from there a few steps at a time.)"
            )
        lines.append(
            f"**best epoch**: the epoch (of {epochs}) whose parameters coded the block — the "
            f"one with the lowest loss on the last {self.meta.get('holdout', 0):.0%} of the "
            "previous blocks (early stopping); with a single previous example nothing can "
            "be held out and the last epoch is used; 0 marks the uniform first block."
        )
        return "\n\n".join(lines)

    def __str__(self) -> str:
        return (
            f"BlockwiseResult({self.expert}, N={self.n}, blocks={len(self.boundaries)}): "
            f"{self.total_nats:.1f} nats = {self.total_bits:.1f} bits "
            f"({self.bits_per_example:.4f} bits/example; uniform {self.uniform_nats:.1f} nats)"
        )


def _as_expert(expert: Any) -> tuple[Any, _fit.Hyper, str]:
    """(readout, hyper, name) from an ``Expert`` or a bare ``Readout`` (lr 1e-3)."""
    if getattr(expert, "calibrate", False):
        raise ValueError(
            f"expert: {expert.name} is calibrated; forward calibration "
            "(calibrate=True) applies to the prequential code of stage 1 only"
        )
    if hasattr(expert, "readout") and hasattr(expert, "learning_rate"):
        return expert.readout, _fit.hyper_of(expert), str(expert.name)
    if hasattr(expert, "init") and hasattr(expert, "apply"):
        return expert, _fit.hyper(1e-3), f"{getattr(expert, 'name', 'readout')}-lr1e-3"
    raise ValueError(f"expert: expected an mdlnb Expert or Readout, got {type(expert).__name__}")


@functools.lru_cache(maxsize=32)
def _block_program(
    readout: Any,
    n: int,
    in_dim: int,
    num_classes: int,
    epochs: int,
    batch_size: int | None,
    standardize: bool,
):
    """Jitted ``(h, key, x, y, n_train, n_prev, n_next, steps) -> (losses (N,), best_epoch)``.

    Hyperparameters are traced, so one compilation serves every block and every
    expert of the same readout and shapes."""
    _xla_cache.ensure()  # compiled programs are cached on disk
    apply, init = readout.apply, readout.init

    def program(h, key, x, y, n_train, n_prev, n_next, steps_per_epoch):
        pos = jnp.arange(n)
        if standardize:
            x = _fit.masked_standardize(x, pos < n_prev, clip=CLIP_Z)
        train_w = (pos < n_train).astype(jnp.float32)
        hold_w = ((pos >= n_train) & (pos < n_prev)).astype(jnp.float32)
        n_hold = jnp.sum(hold_w)
        k_init, k_data = jax.random.split(key)
        state = _fit.init_state(init, k_init, in_dim, num_classes, h)

        def one_step(ekey, i, st):
            if batch_size is None:
                return _fit.step(apply, st, h, x, y, num_classes, train_w)
            idx = jax.random.randint(jax.random.fold_in(ekey, i), (batch_size,), 0, n_train)
            return _fit.step(apply, st, h, x[idx], y[idx], num_classes)

        def epoch(carry, inp):
            st, best_loss, best_params, best_epoch = carry
            ekey, e = inp
            st = jax.lax.fori_loop(0, steps_per_epoch, lambda i, s: one_step(ekey, i, s), st)
            held = jnp.sum(hold_w * _fit.example_losses(apply(st.ema_params, x), y))
            held = held / jnp.maximum(n_hold, 1.0)
            better = (n_hold == 0) | (held < best_loss)
            best_params = jax.tree.map(
                lambda a, b: jnp.where(better, a, b), st.ema_params, best_params
            )
            best_loss = jnp.where(better, held, best_loss)
            best_epoch = jnp.where(better, e, best_epoch)
            return (st, best_loss, best_params, best_epoch), held

        keys = jax.random.split(k_data, epochs)
        carry0 = (state, jnp.asarray(jnp.inf, jnp.float32), state.ema_params, jnp.int32(0))
        (_, _, params, best_epoch), _ = jax.lax.scan(
            epoch, carry0, (keys, jnp.arange(1, epochs + 1, dtype=jnp.int32))
        )
        losses = _fit.example_losses(apply(params, x), y)
        coded = (pos >= n_prev) & (pos < n_next)
        return jnp.where(coded, losses, 0.0), best_epoch

    return jax.jit(program)


def blockwise(
    task: Task,
    expert: Any,
    boundaries: Sequence[int] | None = None,
    *,
    seed: int = 0,
    epochs: int = 100,
    batch_size: int | None = 64,
    min_steps: int = 1000,
    holdout: float = 0.1,
    order: Sequence[int] | None = None,
    standardize: bool = True,
) -> BlockwiseResult:
    """Block-wise MDL codelength (nats) of ``task``'s labels under ``expert``.

    Args:
      task: the :class:`mdlnb.Task` (its ``features`` are used).
      expert: an ``mdlnb.board.experts.Expert`` (readout + AdamW hyperparameters, EMA,
        label smoothing; ``replay_streams`` is not used) or a bare ``Readout``
        (then AdamW with learning rate 1e-3).
      boundaries: increasing block ends (example counts); ``N`` is appended if
        missing. Default :func:`default_boundaries` (Voita & Titov's doubling).
      seed: seeds the example order (unless ``order`` is given), the
        initialization and the minibatches.
      epochs: training epochs per block (early stopping picks among them).
      batch_size: minibatch size; ``None`` for full-batch steps.
      min_steps: lower bound on the number of steps per block, so that tiny
        blocks are still trained.
      holdout: fraction of the previous blocks held out for early stopping
        (0 disables early stopping).
      order: explicit example order (a permutation of ``range(N)``), e.g. a
        ``LossMatrix.order`` to code the same sequence as the prequential run.
      standardize: standardize features with the statistics of the previous blocks
        (clipped to ±``CLIP_Z``).

    Returns:
      :class:`BlockwiseResult` with per-block and total codelengths in nats.
    """
    if not isinstance(task, Task):
        raise ValueError(f"task: expected an mdlnb.Task, got {type(task).__name__}")
    require_classification(task, "blockwise")
    readout, h, name = _as_expert(expert)
    n, c = task.n, task.num_classes
    b = default_boundaries(n) if boundaries is None else _check_boundaries(boundaries, n)
    check_int("epochs", epochs, minimum=1)
    check_int("batch_size", batch_size, minimum=1, allow_none=True)
    check_int("min_steps", min_steps, minimum=0)
    if not 0.0 <= float(holdout) < 1.0:
        raise ValueError(f"holdout: must lie in [0, 1), got {holdout}")
    if order is None:
        order = np.random.default_rng(seed).permutation(n)
    else:
        order = as_array(order, "order", ndim=1).astype(np.int64)
        if order.shape != (n,) or not np.array_equal(np.sort(order), np.arange(n)):
            raise ValueError(f"order: must be a permutation of range({n})")

    block_nats = np.zeros(len(b), np.float64)
    best_epoch = np.zeros(len(b), np.int64)
    block_nats[0] = b[0] * math.log(c)
    if len(b) > 1:
        x = jnp.asarray(task.features[order])
        y = jnp.asarray(task.y[order], jnp.int32)
        program = _block_program(
            readout,
            n,
            x.shape[1],
            c,
            int(epochs),
            None if batch_size is None else int(batch_size),
            bool(standardize),
        )
        base = jax.random.PRNGKey(seed)
        for s in range(1, len(b)):
            n_prev, n_next = int(b[s - 1]), int(b[s])
            n_hold = int(math.floor(float(holdout) * n_prev))
            if holdout > 0 and n_prev >= 2:
                n_hold = max(n_hold, 1)
            n_train = n_prev - n_hold
            per_epoch = math.ceil(n_train / batch_size) if batch_size is not None else 1
            steps = max(per_epoch, math.ceil(min_steps / epochs), 1)
            losses, be = program(
                h, jax.random.fold_in(base, s), x, y, n_train, n_prev, n_next, steps
            )
            block_nats[s] = float(np.sum(np.asarray(losses, np.float64)))
            best_epoch[s] = int(be)
    meta = dict(
        seed=seed,
        epochs=int(epochs),
        batch_size=batch_size,
        min_steps=int(min_steps),
        holdout=float(holdout),
        standardize=bool(standardize),
        task=task.name,
        units="nats",
    )
    return BlockwiseResult(
        boundaries=b,
        block_nats=block_nats,
        best_epoch=best_epoch,
        order=np.asarray(order),
        num_classes=c,
        expert=name,
        meta=meta,
    )
