"""Loss-data curves: held-out loss of a probe trained on the first n examples, against n.

SDL paper Sec. 2.1 (Fig. 1): at each evaluation-set size ``n`` a probe is trained
on ``n`` examples and its population loss ``L(A_φ, n)`` (nats per example) is
estimated on a held-out set. Conventions here (App. C.1, made precise):

* **Nested prefixes.** Seed ``r`` draws one permutation of the training pool
  (``numpy.random.default_rng(seed_r)``); the probe at size ``n`` trains on
  its first ``n`` examples, so a larger ``n``'s training set contains every
  smaller one's. Nothing is resampled with replacement.
* **Sizes.** Default: 20 sizes log-uniform on ``[10, N]`` (rounded, distinct).
* **Same number of updates per point.** Every probe makes ``steps`` AdamW
  updates (``mdlnb._fit.step``, the shared training step) on minibatches of
  ``batch_size`` drawn uniformly with replacement from its prefix (or from the
  training part of its prefix under early stopping).
* **Early stopping** (optional): the last ``⌈f·n⌉`` examples of the prefix
  (at most ``max_holdout``, none when ``n < 2``) are held out; the loss on them
  is read at the initial parameters and ``evals`` times during training, and
  the parameters with the lowest held-out loss are kept (checkpoint selection;
  a tie keeps the earlier). Without it a probe trained for many updates on a
  few examples becomes over-confident (held-out loss above ``log C``).
* **Seeds.** Seed ``r`` fixes the permutation, the initialisation and the
  minibatch stream; the same initialisation is shared by all sizes of a seed.
* **Standardisation.** Features are standardised with the mean/std of the
  whole training pool (App. C.1: each representation is normalised to zero
  mean, unit variance before probing); no label is used.

All ``sizes × seeds`` probes train in **one** ``jit``-compiled call: ``vmap``
over probes, ``lax.scan`` over steps; ``chunk`` caps how many probes share a
call when memory requires (chunks are padded to one shape: one compilation).
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

from mdlnb import _fit, _xla_cache
from mdlnb import readouts as _readouts
from mdlnb._checks import as_array, check_finite, check_int, check_integer_values
from mdlnb._grid import log_integers
from mdlnb._task import Task, require_classification
from mdlnb.probes import split

# Imported inside the functions that use them, so that importing this module does not load
# them: pandas.

TEST_CHUNK = 1024  # test examples per forward pass inside the compiled program
MEMORY_BUDGET = 4 * 2**30  # bytes of per-probe state one compiled call may hold (auto chunking)


def log_grid(n_max: int, num: int = 20, n_min: int = 10) -> np.ndarray:
    """``num`` sizes log-uniform on ``[n_min, n_max]``, rounded, distinct, int64."""
    check_int("n_max", n_max, minimum=1)
    check_int("num", num, minimum=1)
    lo = min(int(n_min), int(n_max))
    if lo < 1:
        raise ValueError(f"n_min: must be >= 1, got {n_min!r}")
    return log_integers(lo, n_max, num)


def permutations(n: int, seeds: Sequence[int]) -> np.ndarray:
    """``(R, n)`` int32: one permutation of ``range(n)`` per seed (the nested-prefix orders)."""
    return np.stack([np.random.default_rng(int(s)).permutation(n) for s in seeds]).astype(np.int32)


@dataclasses.dataclass(frozen=True, eq=False)
class LossDataCurve:
    """Held-out loss (nats per example) and accuracy of probes against training-set size.

    Attributes:
      representation: label of the representation (e.g. ``"raw pixels"``).
      sizes: ``(S,)`` increasing training-set sizes n.
      loss: ``(R, S)`` held-out mean log-loss, nats, one row per seed.
      accuracy: ``(R, S)`` held-out top-1 accuracy (NaN where not measured).
      seeds: the ``R`` seeds.
      num_classes: C (the uniform code costs ``log C`` nats), or None if unknown.
      meta: how the curve was made (algorithm, steps, test size, ...).
    """

    representation: str
    sizes: np.ndarray
    loss: np.ndarray
    accuracy: np.ndarray
    seeds: tuple
    num_classes: int | None = None
    meta: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        n = as_array(self.sizes, "sizes", ndim=1)
        loss = check_finite(as_array(self.loss, "loss", ndim=(1, 2)).astype(np.float64), "loss")
        loss = loss[None, :] if loss.ndim == 1 else loss
        acc = (
            np.full_like(loss, np.nan)
            if self.accuracy is None
            else as_array(self.accuracy, "accuracy", ndim=(1, 2))
            .astype(np.float64)
            .reshape(loss.shape)
        )
        if loss.shape[1] != n.shape[0]:
            raise ValueError(f"loss: has {loss.shape[1]} columns for {n.shape[0]} sizes")
        object.__setattr__(self, "sizes", _check_sizes(n))
        object.__setattr__(self, "loss", loss)
        object.__setattr__(self, "accuracy", acc)
        seeds = tuple(range(loss.shape[0])) if self.seeds is None else tuple(self.seeds)
        if len(seeds) != loss.shape[0]:
            raise ValueError(f"seeds: {len(seeds)} seeds for {loss.shape[0]} loss rows")
        object.__setattr__(self, "seeds", seeds)
        object.__setattr__(self, "meta", dict(self.meta))

    @classmethod
    def from_arrays(
        cls,
        n: Any,
        loss: Any,
        *,
        representation: str = "curve",
        num_classes: int | None = None,
        accuracy: Any = None,
    ) -> LossDataCurve:
        """A curve from plain arrays: ``n`` (S,), ``loss`` (S,) or (R, S) in nats."""
        return cls(representation, n, loss, accuracy, None, num_classes)

    @property
    def n(self) -> np.ndarray:
        return self.sizes

    @property
    def mean_loss(self) -> np.ndarray:
        """(S,) mean over seeds, nats."""
        return self.loss.mean(axis=0)

    @property
    def std_loss(self) -> np.ndarray:
        """(S,) standard deviation over seeds (ddof 1; 0 for one seed), nats."""
        r = self.loss.shape[0]
        return self.loss.std(axis=0, ddof=1) if r > 1 else np.zeros(self.loss.shape[1])

    def frame(self):
        """Tidy table: representation, seed, n, loss [nats], accuracy — one row per probe."""
        import pandas as pd

        r, s = self.loss.shape
        return pd.DataFrame(
            {
                "representation": self.representation,
                "seed": np.repeat(np.asarray(self.seeds), s),
                "n": np.tile(self.sizes, r),
                "loss [nats]": self.loss.ravel(),
                "accuracy": self.accuracy.ravel(),
            }
        )

    def summary(self):
        """Per n: mean and standard deviation over seeds of loss (nats) and accuracy."""
        import pandas as pd

        r = self.loss.shape[0]
        sd = (lambda a: a.std(axis=0, ddof=1)) if r > 1 else (lambda a: np.zeros(a.shape[1]))
        return pd.DataFrame(
            {
                "representation": self.representation,
                "n": self.sizes,
                "loss mean [nats]": self.mean_loss,
                "loss std [nats]": sd(self.loss),
                "accuracy mean": self.accuracy.mean(axis=0),
                "accuracy std": sd(self.accuracy),
                "seeds": r,
            }
        )

    def merge(self, other: LossDataCurve) -> LossDataCurve:
        """The union of two curves of the same seeds (sizes of ``other`` win on overlap)."""
        if not isinstance(other, LossDataCurve) or other.seeds != self.seeds:
            raise ValueError("other: must be a LossDataCurve with the same seeds")
        keep = ~np.isin(self.sizes, other.sizes)
        sizes = np.concatenate([self.sizes[keep], other.sizes])
        order = np.argsort(sizes)
        cat = lambda a, b: np.concatenate([a[:, keep], b], axis=1)[:, order]
        return dataclasses.replace(
            self,
            sizes=sizes[order],
            loss=cat(self.loss, other.loss),
            accuracy=cat(self.accuracy, other.accuracy),
        )

    def __repr__(self) -> str:
        return (
            f"LossDataCurve({self.representation!r}, sizes {self.sizes[0]}..{self.sizes[-1]} "
            f"({len(self.sizes)}), seeds={len(self.seeds)}, final loss "
            f"{self.mean_loss[-1]:.4f} ± {self.std_loss[-1]:.4f} nats)"
        )


def _check_sizes(n: np.ndarray, name: str = "sizes") -> np.ndarray:
    if n.size == 0:
        raise ValueError(f"{name}: is empty")
    if n.dtype.kind == "b":
        raise ValueError(f"{name}: example counts must be integers, got dtype {n.dtype}")
    n = check_integer_values(n, name, "example counts")
    if n[0] < 1:
        raise ValueError(f"{name}: must be >= 1, got {n[0]}")
    if np.any(np.diff(n) <= 0):
        raise ValueError(f"{name}: must be strictly increasing")
    return n


def _as_expert(readout: Any) -> tuple[Any, _fit.Hyper | None, str]:
    if getattr(readout, "calibrate", False):
        raise ValueError(
            f"readout: {readout.name} is calibrated; forward calibration "
            "(calibrate=True) applies to the prequential code of stage 1 only"
        )
    if hasattr(readout, "readout") and hasattr(readout, "learning_rate"):
        return readout.readout, _fit.hyper_of(readout), str(readout.name)
    if hasattr(readout, "init") and hasattr(readout, "apply"):
        return readout, None, str(getattr(readout, "name", "readout"))
    raise ValueError(f"readout: expected an mdlnb Readout or Expert, got {type(readout).__name__}")


@functools.lru_cache(maxsize=16)
def _program(
    readout: Any,
    num_classes: int,
    steps: int,
    batch_size: int,
    evals: int,
    holdout: float,
    max_holdout: int,
):
    """Jitted ``(h, init_keys, data_keys, seed_idx, n, perms, x, y, xte, yte, wte) -> (loss, acc)``
    vmapped over probes (``init_keys``, ``data_keys``, ``seed_idx``, ``n``)."""
    _xla_cache.ensure()  # compiled programs are cached on disk
    apply, init = readout.apply, readout.init
    per_eval = -(-steps // evals)

    def probe(h, k_init, k_data, r, n, perms, x, y, xte, yte, wte):
        state = _fit.init_state(init, k_init, x.shape[1], num_classes, h)
        if holdout > 0:
            n_hold = jnp.where(
                n >= 2, jnp.clip(jnp.ceil(holdout * n).astype(jnp.int32), 1, max_holdout), 0
            )
        else:
            n_hold = jnp.int32(0)
        n_train = n - n_hold
        ones = jnp.ones(batch_size, jnp.float32)

        def one(st, i):
            j = jax.random.randint(jax.random.fold_in(k_data, i), (batch_size,), 0, n_train)
            idx = perms[r, j]
            return _fit.step(apply, st, h, x[idx], y[idx], num_classes, ones), None

        if holdout <= 0:
            state, _ = jax.lax.scan(one, state, jnp.arange(steps))
            params = state.ema_params
        else:
            hj = jnp.arange(max_holdout)
            hidx = perms[r, jnp.minimum(n_train + hj, perms.shape[1] - 1)]
            hw = (hj < n_hold).astype(jnp.float32)

            def epoch(carry, e):
                # checkpoint e = 0 is the initial parameters (readouts start at the uniform
                # code); checkpoint e >= 1 follows per_eval more updates
                st, best, best_params = carry
                st = jax.lax.fori_loop(
                    0,
                    jnp.where(e == 0, 0, per_eval),
                    lambda i, s: one(s, (e - 1) * per_eval + i)[0],
                    st,
                )
                held = jnp.sum(hw * _fit.example_losses(apply(st.ema_params, x[hidx]), y[hidx]))
                held = held / jnp.maximum(jnp.sum(hw), 1.0)
                better = (n_hold == 0) | (held < best)
                best_params = jax.tree.map(
                    lambda a, b: jnp.where(better, a, b), st.ema_params, best_params
                )
                return (st, jnp.where(better, held, best), best_params), None

            carry = (state, jnp.asarray(jnp.inf, jnp.float32), state.ema_params)
            (_, _, params), _ = jax.lax.scan(epoch, carry, jnp.arange(evals + 1))

        def test_chunk(acc, chunk):
            xc, yc, wc = chunk
            logits = apply(params, xc)
            nll = jnp.sum(wc * _fit.example_losses(logits, yc))
            hit = jnp.sum(wc * (jnp.argmax(logits, axis=1) == yc))
            return (acc[0] + nll, acc[1] + hit), None

        zero = jnp.zeros((), jnp.float32)
        (nll, hit), _ = jax.lax.scan(test_chunk, (zero, zero), (xte, yte, wte))
        total = jnp.sum(wte)
        return nll / total, hit / total

    vm = jax.vmap(probe, in_axes=(None, 0, 0, 0, 0) + (None,) * 6)
    return jax.jit(vm)


def auto_chunk(
    readout: Any,
    in_dim: int,
    num_classes: int,
    batch_size: int,
    test_chunk: int,
    budget: int = MEMORY_BUDGET,
) -> int:
    """Probes per call so that their float32 state fits ``budget`` bytes: per probe, 5 copies
    of the parameters (params, Adam μ and ν, EMA, gradients) plus the activations of one
    training batch (×3: forward, backward) and of one test chunk."""
    params = readout.num_params(in_dim, num_classes) if hasattr(readout, "num_params") else 0
    widths = (
        sum(o for _, o in readout.layer_sizes(in_dim, num_classes))
        if hasattr(readout, "layer_sizes")
        else num_classes
    )
    per_probe = 4 * (5 * params + (3 * batch_size + test_chunk) * (widths + in_dim))
    return max(1, int(budget // max(per_probe, 1)))


def probe_keys(seeds: Sequence[int], seed_index: np.ndarray) -> tuple[jax.Array, jax.Array]:
    """(init keys, minibatch keys) of each probe: ``fold_in(PRNGKey(seed), 0 / 1)``."""
    base = jax.vmap(jax.random.PRNGKey)(jnp.asarray(seeds, jnp.uint32))[jnp.asarray(seed_index)]
    return (
        jax.vmap(lambda k: jax.random.fold_in(k, 0))(base),
        jax.vmap(lambda k: jax.random.fold_in(k, 1))(base),
    )


def _standardize(pool: np.ndarray, *others: np.ndarray) -> list[np.ndarray]:
    mu = pool.mean(axis=0, dtype=np.float64)
    sd = pool.std(axis=0, dtype=np.float64)
    sd = np.where(sd > 1e-6, sd, 1.0)
    return [((a - mu) / sd).astype(np.float32) for a in (pool, *others)]


def _as_seeds(seeds: Any) -> tuple[int, ...]:
    if isinstance(seeds, (int, np.integer)) and not isinstance(seeds, bool):
        if seeds < 1:
            raise ValueError(f"seeds: must be >= 1 (a count) or a list of seeds, got {seeds}")
        return tuple(range(int(seeds)))
    try:
        out = tuple(int(s) for s in seeds)
    except TypeError:
        raise ValueError(f"seeds: must be a count or a list of integers, got {seeds!r}") from None
    if not out or len(set(out)) != len(out):
        raise ValueError(f"seeds: must be non-empty and distinct, got {seeds!r}")
    return out


def split_test(task: Task, test: Task | float | None, seed: int = 0) -> tuple[Task, Task]:
    """(pool, test): ``test`` as given, or a seeded ``test`` fraction (default 0.2) held out."""
    if isinstance(test, Task):
        if test.features.shape[1] != task.features.shape[1]:
            raise ValueError(
                f"test: has {test.features.shape[1]} features, task has {task.features.shape[1]}"
            )
        if test.num_classes != task.num_classes:
            raise ValueError("test: num_classes differs from task's")
        return task, test
    frac = 0.2 if test is None else float(test)
    if not 0.0 < frac < 1.0:
        raise ValueError(f"test: a Task or a fraction in (0, 1), got {test!r}")

    return split(task, frac, seed)


def loss_data_curve(
    task: Task,
    readout: Any = None,
    *,
    test: Task | float | None = None,
    sizes: Sequence[int] | None = None,
    seeds: int | Sequence[int] = 8,
    steps: int = 1000,
    batch_size: int = 64,
    learning_rate: float = 1e-4,
    early_stopping: float = 0.0,
    evals: int = 10,
    max_holdout: int = 1024,
    standardize: bool = True,
    representation: str | None = None,
    chunk: int | None = None,
) -> LossDataCurve:
    """The loss-data curve of ``readout`` on ``task`` (SDL paper Sec. 2.1, App. C.1).

    Args:
      task: training pool (its ``features``); nested prefixes of it are trained on.
      readout: an ``mdlnb.readouts.Readout`` (trained with Adam at ``learning_rate``)
        or an ``mdlnb.experts.Expert`` (its own AdamW/EMA hyperparameters).
        Default: the paper's MLP with 2 hidden layers of 512 units.
      test: held-out Task, or the fraction of ``task`` held out (default 0.2, seeded by 0).
      sizes: training-set sizes; default :func:`log_grid` (20 log-uniform on [10, N]).
      seeds: a count R (seeds 0..R-1) or explicit seeds; each is one permutation,
        initialisation and minibatch stream.
      steps: AdamW updates per probe (the same at every n); batch_size: minibatch size.
      early_stopping: fraction f of each prefix held out for checkpoint selection
        (0: off); ``evals`` checkpoints; at most ``max_holdout`` held-out examples.
      standardize: standardise features with the training pool's mean/std.
      representation: label of the curve (default ``task.name``).
      chunk: at most this many probes per compiled call (default: all in one call,
        unless their estimated state exceeds :data:`MEMORY_BUDGET`: see :func:`auto_chunk`).

    Returns:
      :class:`LossDataCurve`, losses in nats per held-out example.
    """
    if not isinstance(task, Task):
        raise ValueError(f"task: expected an mdlnb.Task, got {type(task).__name__}")
    require_classification(task, "loss_data_curve")

    ro, h, name = _as_expert(_readouts.mlp(2, 512) if readout is None else readout)
    if h is None:
        if not (isinstance(learning_rate, (int, float)) and learning_rate > 0):
            raise ValueError(f"learning_rate: must be > 0, got {learning_rate!r}")
        h = _fit.hyper(learning_rate)
        name = f"{name}-adam{learning_rate:g}"
    pool, test_task = split_test(task, test)
    n_pool = pool.n
    grid = log_grid(n_pool) if sizes is None else _check_sizes(as_array(sizes, "sizes", ndim=1))
    if grid[-1] > n_pool:
        raise ValueError(f"sizes: largest size {grid[-1]} exceeds the {n_pool} training examples")
    seed_list = _as_seeds(seeds)
    for v, nm in (
        (steps, "steps"),
        (batch_size, "batch_size"),
        (evals, "evals"),
        (max_holdout, "max_holdout"),
    ):
        check_int(nm, v, minimum=1)
    if not 0.0 <= float(early_stopping) < 1.0:
        raise ValueError(f"early_stopping: a held-out fraction in [0, 1), got {early_stopping!r}")
    check_int("chunk", chunk, minimum=1, allow_none=True)

    x, xte = pool.features, test_task.features
    if standardize:
        x, xte = _standardize(x, xte)
    perms = permutations(n_pool, seed_list)
    c = task.num_classes
    # probes: seed-major, then size
    r_idx = np.repeat(np.arange(len(seed_list)), len(grid)).astype(np.int32)
    n_idx = np.tile(grid, len(seed_list)).astype(np.int32)
    k_init, k_data = probe_keys(seed_list, r_idx)

    t = test_task.n
    pad = -t % TEST_CHUNK if t > TEST_CHUNK else 0
    tc = TEST_CHUNK if t > TEST_CHUNK else t
    xte_p = np.concatenate([xte, np.zeros((pad, xte.shape[1]), np.float32)]).reshape(
        -1, tc, xte.shape[1]
    )
    yte_p = np.concatenate([test_task.y, np.zeros(pad, np.int32)]).reshape(-1, tc)
    wte_p = np.concatenate([np.ones(t, np.float32), np.zeros(pad, np.float32)]).reshape(-1, tc)

    hold_cap = min(int(max_holdout), max(1, int(math.ceil(float(early_stopping) * grid[-1]))))
    prog = _program(
        ro,
        c,
        int(steps),
        int(batch_size),
        int(evals) if early_stopping else 1,
        float(early_stopping),
        hold_cap,
    )
    p = len(r_idx)
    size = min(
        auto_chunk(ro, x.shape[1], c, batch_size, min(t, TEST_CHUNK))
        if chunk is None
        else int(chunk),
        p,
    )
    args = (
        jnp.asarray(perms),
        jnp.asarray(x),
        jnp.asarray(pool.y, jnp.int32),
        jnp.asarray(xte_p),
        jnp.asarray(yte_p, jnp.int32),
        jnp.asarray(wte_p),
    )
    losses, accs = [], []
    for lo in range(0, p, size):
        sel = np.minimum(np.arange(lo, lo + size), p - 1)  # pad the last chunk: one shape
        out = prog(
            h, k_init[sel], k_data[sel], jnp.asarray(r_idx[sel]), jnp.asarray(n_idx[sel]), *args
        )
        keep = min(size, p - lo)
        losses.append(np.asarray(out[0], np.float64)[:keep])
        accs.append(np.asarray(out[1], np.float64)[:keep])
    shape = (len(seed_list), len(grid))
    meta = dict(
        algorithm=name,
        steps=int(steps),
        batch_size=int(batch_size),
        early_stopping=float(early_stopping),
        evals=int(evals) if early_stopping else 0,
        standardize=bool(standardize),
        task=task.name,
        n_pool=n_pool,
        n_test=t,
        units="nats",
        prefixes="nested prefixes of one permutation per seed",
    )
    return LossDataCurve(
        representation or task.name,
        grid,
        np.concatenate(losses).reshape(shape),
        np.concatenate(accs).reshape(shape),
        seed_list,
        c,
        meta,
    )
