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
  updates (``mdlnb.core._fit.step``, the shared training step) on minibatches of
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

import functools
import math
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from mdlnb.baselines.curves._data import (  # noqa: F401  (re-exported)
    LossDataCurve,
    _as_seeds,
    _check_sizes,
    log_grid,
    permutations,
)
from mdlnb.baselines.probes import split
from mdlnb.board import readouts as _readouts
from mdlnb.core import _fit
from mdlnb.core._checks import as_array, check_int
from mdlnb.core._task import Task, require_classification
from mdlnb.infra import _xla_cache

# Imported inside the functions that use them, so that importing this module does not load
# them: pandas.

TEST_CHUNK = 1024  # test examples per forward pass inside the compiled program
MEMORY_BUDGET = 4 * 2**30  # bytes of per-probe state one compiled call may hold (auto chunking)


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


def _check_budget(
    steps: Any, batch_size: Any, evals: Any, max_holdout: Any, early_stopping: Any, chunk: Any
) -> None:
    """The training budget's arguments: counts >= 1, a held-out fraction in [0, 1)."""
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


def _test_blocks(xte: np.ndarray, yte: np.ndarray) -> tuple[np.ndarray, ...]:
    """The test set as blocks of :data:`TEST_CHUNK` examples (one block if fewer), the
    last padded with zeros: ``(features, labels, weights)``, weight 0 on the padding."""
    t = len(yte)
    pad = -t % TEST_CHUNK if t > TEST_CHUNK else 0
    tc = TEST_CHUNK if t > TEST_CHUNK else t
    xte_p = np.concatenate([xte, np.zeros((pad, xte.shape[1]), np.float32)]).reshape(
        -1, tc, xte.shape[1]
    )
    yte_p = np.concatenate([yte, np.zeros(pad, np.int32)]).reshape(-1, tc).astype(np.int32)
    wte_p = np.concatenate([np.ones(t, np.float32), np.zeros(pad, np.float32)]).reshape(-1, tc)
    return xte_p, yte_p, wte_p


def _run_probes(
    prog: Any, h: Any, probes: tuple[Any, ...], args: tuple[Any, ...], size: int
) -> tuple[np.ndarray, np.ndarray]:
    """Every probe through the compiled program, ``size`` per call (the last call padded
    with copies of the last probe, so one shape compiles once): ``probes`` = (init
    keys, data keys, seed index, size) per probe; the held-out losses and accuracies."""
    k_init, k_data, r_idx, n_idx = probes
    p = len(r_idx)
    losses, accs = [], []
    for lo in range(0, p, size):
        sel = np.minimum(np.arange(lo, lo + size), p - 1)  # pad the last chunk: one shape
        out = prog(
            h, k_init[sel], k_data[sel], jnp.asarray(r_idx[sel]), jnp.asarray(n_idx[sel]), *args
        )
        keep = min(size, p - lo)
        losses.append(np.asarray(out[0], np.float64)[:keep])
        accs.append(np.asarray(out[1], np.float64)[:keep])
    return np.concatenate(losses), np.concatenate(accs)


def _probe(readout: Any, learning_rate: Any) -> tuple[Any, _fit.Hyper, str]:
    """``(readout, hyperparameters, name)`` of the probe: an Expert's own, or a Readout
    (default: the SDL paper's MLP 2 × 512) trained with Adam at ``learning_rate``."""
    ro, h, name = _as_expert(_readouts.mlp(2, 512) if readout is None else readout)
    if h is None:
        if not (isinstance(learning_rate, (int, float)) and learning_rate > 0):
            raise ValueError(f"learning_rate: must be > 0, got {learning_rate!r}")
        h = _fit.hyper(learning_rate)
        name = f"{name}-adam{learning_rate:g}"
    return ro, h, name


def _budget(steps: int, batch_size: int, early_stopping: float, evals: int) -> dict[str, Any]:
    """The training budget as recorded in a curve's ``meta``."""
    return dict(
        steps=int(steps),
        batch_size=int(batch_size),
        early_stopping=float(early_stopping),
        evals=int(evals) if early_stopping else 0,
    )


def _probe_index(seed_list: Sequence[int], grid: np.ndarray) -> tuple[Any, ...]:
    """Every (seed, size) probe, seed-major then size: ``(init keys, data keys, seed
    index, size)``, one entry per probe."""
    r_idx = np.repeat(np.arange(len(seed_list)), len(grid)).astype(np.int32)
    n_idx = np.tile(grid, len(seed_list)).astype(np.int32)
    k_init, k_data = probe_keys(seed_list, r_idx)
    return k_init, k_data, r_idx, n_idx


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
      readout: an ``mdlnb.board.readouts.Readout`` (trained with Adam at ``learning_rate``)
        or an ``mdlnb.board.experts.Expert`` (its own AdamW/EMA hyperparameters).
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

    ro, h, name = _probe(readout, learning_rate)
    pool, test_task = split_test(task, test)
    n_pool = pool.n
    grid = log_grid(n_pool) if sizes is None else _check_sizes(as_array(sizes, "sizes", ndim=1))
    if grid[-1] > n_pool:
        raise ValueError(f"sizes: largest size {grid[-1]} exceeds the {n_pool} training examples")
    seed_list = _as_seeds(seeds)
    _check_budget(steps, batch_size, evals, max_holdout, early_stopping, chunk)

    x, xte = pool.features, test_task.features
    if standardize:
        x, xte = _standardize(x, xte)
    perms = permutations(n_pool, seed_list)
    c = task.num_classes
    probes = _probe_index(seed_list, grid)
    r_idx = probes[2]

    t = test_task.n
    xte_p, yte_p, wte_p = _test_blocks(xte, test_task.y)

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
    args = tuple(jnp.asarray(a) for a in (perms, x, pool.y.astype(np.int32), xte_p, yte_p, wte_p))
    losses, accs = _run_probes(prog, h, probes, args, size)
    shape = (len(seed_list), len(grid))
    meta = dict(
        algorithm=name,
        **_budget(steps, batch_size, early_stopping, evals),
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
        losses.reshape(shape),
        accs.reshape(shape),
        seed_list,
        c,
        meta,
    )
