"""Fine-tuning ground truth (PACTran Sec. 4.1.3, App. B.3): every checkpoint of one
architecture × every learning rate, trained in one compiled program per task.

:func:`finetune` stacks the parameters of M encoders of one architecture (one
pytree structure, one ``apply``) and repeats them over the L learning rates of
the grid, so the M·L models are one ``vmap`` axis; ``lax.scan`` runs the
optimizer steps in chunks (the state is checkpointed between chunks, so an
interrupted run resumes bit for bit). Each model is the whole encoder plus a
linear head (zero-initialised) on its pooled features, trained with AdamW
behind global-norm clipping on the mean cross-entropy of mini-batches; every
model sees the same seeded batches (one permutation of the training set per
epoch), so differences between checkpoints are not differences of data order.
Afterwards every model is scored on the validation images; per checkpoint
the learning rate with the lowest validation cross-entropy is chosen and
only that model is scored on the test images (PACTran picks the lowest *test* error over its runs; a validation
split keeps the test set out of the choice), and its test accuracy is the
ground truth. Per-example test correctness of the chosen models is returned
too, for paired comparisons of checkpoints (:func:`pairs_beyond_noise`).
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from mdlnb.core._checks import check_int
from mdlnb.infra import _checkpoint, _xla_cache

# Imported inside the functions that use them, so that importing this module does not load
# them: JAX, optax; scipy.stats.


@dataclasses.dataclass(frozen=True)
class FinetuneSpec:
    """The fine-tuning protocol (part of every ground-truth artifact's key).

    Attributes:
      learning_rates: the AdamW grid (the whole network, one rate per model).
      steps: optimizer steps; batch_size: examples per step.
      weight_decay: AdamW's decoupled weight decay; clip: global-norm clipping.
      chunk: steps per compiled ``lax.scan`` call (the checkpoint interval).
      eval_batch: images per forward pass when scoring.
      seed: the batch order.
    """

    learning_rates: tuple[float, ...] = (3e-4, 1e-3, 3e-3)
    steps: int = 150
    batch_size: int = 32
    weight_decay: float = 1e-4
    clip: float = 1.0
    chunk: int = 25
    eval_batch: int = 250
    seed: int = 0

    def __post_init__(self) -> None:
        lrs = tuple(float(v) for v in self.learning_rates)
        if not lrs or any(not np.isfinite(v) or v <= 0 for v in lrs):
            raise ValueError(
                f"learning_rates: must be positive and finite, got {self.learning_rates}"
            )
        object.__setattr__(self, "learning_rates", lrs)
        for name in ("steps", "batch_size", "chunk", "eval_batch"):
            check_int(name, getattr(self, name), minimum=1)
        check_int("seed", self.seed, minimum=0)
        if self.steps % self.chunk:
            raise ValueError(f"chunk: must divide steps ({self.steps}), got {self.chunk}")
        if not (self.weight_decay >= 0 and self.clip > 0):
            raise ValueError(
                f"weight_decay/clip: must be >= 0 / > 0, got {self.weight_decay}, {self.clip}"
            )


class FinetuneRun(NamedTuple):
    """What :func:`finetune` returns (M checkpoints, L learning rates).

    Attributes:
      val_loss, val_accuracy: (M, L) per model.
      test_accuracy: (M,) of the chosen model of each checkpoint.
      chosen: (M,) index of the learning rate with the lowest validation loss.
      test_correct: (M, n_test) bool, the chosen models' per-example correctness.
      train_loss: (M, L) mean training cross-entropy over the last chunk.
      seconds: wall seconds of training and scoring (this process's share).
    """

    val_loss: np.ndarray
    val_accuracy: np.ndarray
    test_accuracy: np.ndarray
    chosen: np.ndarray
    test_correct: np.ndarray
    train_loss: np.ndarray
    seconds: float


def batch_order(n: int, steps: int, batch_size: int, seed: int) -> np.ndarray:
    """(steps, batch_size) training indices: seeded permutations of ``range(n)``, one per
    epoch, concatenated (every example once per epoch; no batch repeats an example when
    ``batch_size <= n``)."""
    check_int("batch_size", batch_size, minimum=1, maximum=n)
    rng = np.random.default_rng(seed)
    need = steps * batch_size
    order = np.concatenate([rng.permutation(n) for _ in range(-(-need // n))])
    return order[:need].reshape(steps, batch_size).astype(np.int32)


@functools.lru_cache(maxsize=8)
def _programs(apply: Any, spec: FinetuneSpec):
    """Jitted ``(chunk, score)`` for encoders of ``apply`` under ``spec``."""
    import jax
    import jax.numpy as jnp
    import optax

    _xla_cache.ensure()
    tx = optax.chain(optax.clip_by_global_norm(spec.clip), optax.scale_by_adam())

    def logits(p, x):
        return apply(p["encoder"], x) @ p["head"]["w"] + p["head"]["b"]

    def loss_fn(p, x, y):
        lp = jax.nn.log_softmax(logits(p, x), -1)
        return -jnp.take_along_axis(lp, y[:, None], 1).mean()

    def one_step(p, opt, lr, x, y):
        loss, g = jax.value_and_grad(loss_fn)(p, x, y)
        upd, opt = tx.update(g, opt, p)
        p = jax.tree_util.tree_map(lambda w, u: w - lr * (u + spec.weight_decay * w), p, upd)
        return p, opt, loss

    @jax.jit
    def chunk(params, opt, lrs, images, labels, order):
        def step(carry, idx):
            p, o = carry
            p, o, loss = jax.vmap(one_step, in_axes=(0, 0, 0, None, None))(
                p, o, lrs, images[idx], labels[idx]
            )
            return (p, o), loss

        (params, opt), losses = jax.lax.scan(step, (params, opt), order)
        return params, opt, losses.mean(0)

    @jax.jit
    def score(params, x):
        return jax.vmap(logits, in_axes=(0, None))(params, x)

    return chunk, score, tx


def _stack(encoders: Sequence[Any], repeats: int, num_classes: int) -> Any:
    """Encoder parameters stacked (M·L, ...) checkpoint-major, with zero linear heads."""
    import jax
    import jax.numpy as jnp

    def shape(e):
        leaves, tree = jax.tree_util.tree_flatten(e.params)
        return tree, [np.shape(v) for v in leaves]

    first = shape(encoders[0])
    for e in encoders[1:]:
        if shape(e) != first:
            raise ValueError(
                f"encoders: {e.name} has another parameter structure or shapes "
                f"than {encoders[0].name}; fine-tune one architecture at a time"
            )
    enc = jax.tree_util.tree_map(
        lambda *ls: jnp.repeat(jnp.stack(ls), repeats, axis=0), *[e.params for e in encoders]
    )
    m, d = len(encoders) * repeats, int(encoders[0].feature_dim)
    return {
        "encoder": enc,
        "head": {
            "w": jnp.zeros((m, d, num_classes), jnp.float32),
            "b": jnp.zeros((m, num_classes), jnp.float32),
        },
    }


def _score(score_fn, params, x, y, batch: int) -> tuple[np.ndarray, np.ndarray]:
    """Per model: mean cross-entropy (nats) and per-example correctness (M·L, n)."""
    from scipy.special import log_softmax

    ce, correct = [], []
    for i in range(0, len(y), batch):
        xb = x[i : i + batch]
        pad = batch - len(xb)
        if pad and len(y) > batch:  # one compiled shape
            xb = np.concatenate([xb, np.zeros((pad, *xb.shape[1:]), xb.dtype)])
        z = np.asarray(score_fn(params, xb), np.float64)[:, : len(y[i : i + batch])]
        lp = log_softmax(z, axis=-1)
        yb = y[i : i + batch]
        ce.append(
            -np.take_along_axis(lp, np.broadcast_to(yb[None, :, None], lp.shape[:2] + (1,)), 2)[
                ..., 0
            ]
        )
        correct.append(lp.argmax(-1) == yb[None])
    return np.concatenate(ce, 1).mean(1), np.concatenate(correct, 1)


def finetune(
    encoders: Sequence[Any],
    train: tuple[Any, Any],
    val: tuple[Any, Any],
    test: tuple[Any, Any],
    *,
    num_classes: int,
    spec: FinetuneSpec = FinetuneSpec(),
    state_path: str | Path | None = None,
    state_key: str = "",
    progress: bool = False,
) -> FinetuneRun:
    """Fine-tune every encoder (one architecture) at every rate of ``spec``; module docstring.

    ``train``, ``val``, ``test``: ``(images, labels)`` with images float32 already at
    the encoders' input size and channels in [0, 1]. ``state_path``: where the
    training state is checkpointed after every chunk (with ``state_key``; None: not
    checkpointed).
    """
    import jax
    import jax.numpy as jnp

    if not encoders:
        raise ValueError("encoders: none given")
    (xt, yt), (xv, yv), (xs, ys) = train, val, test
    for name, (x, y) in (("train", train), ("val", val), ("test", test)):
        if len(x) != len(y) or len(y) == 0:
            raise ValueError(f"{name}: images and labels must be non-empty and of one length")
        if np.min(y) < 0 or np.max(y) >= num_classes:
            raise ValueError(f"{name}: labels outside [0, num_classes={num_classes})")
    apply, lrs = encoders[0].apply, spec.learning_rates
    chunk_fn, score_fn, tx = _programs(apply, spec)
    m, L = len(encoders), len(lrs)
    params = _stack(encoders, L, num_classes)
    opt = jax.vmap(tx.init)(params)
    lr_vec = jnp.asarray(np.tile(np.asarray(lrs, np.float32), m))
    order = batch_order(len(yt), spec.steps, spec.batch_size, spec.seed)
    done, seconds, last = 0, 0.0, np.full(m * L, np.nan)
    if state_path is not None:
        ck = _checkpoint.load(
            state_path, (params, opt, np.int64(0), np.float64(0.0), last), key=state_key
        )
        if ck is not None:
            params, opt, done, seconds, last = ck.tree
            done, seconds, last = int(done), float(seconds), np.asarray(last)
    images, labels = jnp.asarray(xt, jnp.float32), jnp.asarray(yt, jnp.int32)
    while done < spec.steps:
        t0 = time.perf_counter()
        params, opt, loss = chunk_fn(
            params, opt, lr_vec, images, labels, jnp.asarray(order[done : done + spec.chunk])
        )
        last = np.asarray(loss, np.float64)
        if not np.all(np.isfinite(last)):
            bad = int(np.argmin(np.isfinite(last)))
            last = np.where(np.isfinite(last), last, np.inf)  # a diverged rate loses
            if progress:
                print(f"  non-finite training loss for model {bad} (rate {lr_vec[bad]:g})")
        done += spec.chunk
        seconds += time.perf_counter() - t0
        if state_path is not None:
            _checkpoint.save(
                state_path, (params, opt, np.int64(done), np.float64(seconds), last), key=state_key
            )
        if progress:
            print(f"  step {done}/{spec.steps}: {seconds:.0f} s", flush=True)
    t0 = time.perf_counter()
    vl, vc = _score(score_fn, params, np.asarray(xv, np.float32), np.asarray(yv), spec.eval_batch)
    vl = np.where(np.isfinite(vl) & np.isfinite(last), vl, np.inf).reshape(m, L)
    chosen = np.argmin(vl, axis=1)
    pick = jnp.asarray(np.arange(m) * L + chosen)  # only the chosen models are tested
    best = jax.tree_util.tree_map(lambda a: a[pick], params)
    _, tc = _score(score_fn, best, np.asarray(xs, np.float32), np.asarray(ys), spec.eval_batch)
    seconds += time.perf_counter() - t0
    return FinetuneRun(
        vl, vc.mean(1).reshape(m, L), tc.mean(1), chosen, tc, last.reshape(m, L), seconds
    )


def pairs_beyond_noise(correct: np.ndarray, *, alpha: float = 0.05) -> tuple[int, int]:
    """``(separated, pairs)``: of the M(M−1)/2 checkpoint pairs, how many differ in test
    accuracy beyond binomial noise — McNemar's exact test on the paired per-example
    correctness (``correct`` (M, n) bool; the discordant examples are Binomial(b + c,
    ½) under equal accuracy), two-sided at level ``alpha``."""
    from scipy.stats import binomtest

    c = np.asarray(correct, bool)
    m, sep, pairs = c.shape[0], 0, 0
    for i in range(m):
        for j in range(i + 1, m):
            b = int(np.sum(c[i] & ~c[j]))
            k = int(np.sum(~c[i] & c[j]))
            pairs += 1
            if b + k and binomtest(b, b + k, 0.5).pvalue < alpha:
                sep += 1
    return sep, pairs
