"""The accuracy-based protocol of the paper's App. A.4 (the baseline MDL is compared with).

Protocol: the training data is split 90 % / 10 % into train / validation;
every readout is trained under every hyperparameter setting of the grid
(Table 4: learning rate × weight decay × EMA step size, AdamW, batch size
1024); within each readout *family* the (readout, hyperparameters) with the
lowest validation loss (nats) is selected — the readout type counts as one
more hyperparameter, so the "MLP" row is the best MLP of any depth — and its
top-1 accuracy on the test split is reported. The selected model is the one
trained on the 90 % (no retraining on train + validation).

Training: ``steps`` AdamW steps, each on ``batch_size`` examples drawn
uniformly with replacement from the train split (the same minibatch sequence
for every configuration), predictions with the EMA parameters. Features are
standardized with the train split's mean and std. The grid of one readout runs
as one compiled, ``vmap``-ed ``lax.scan``.
"""

from __future__ import annotations

import functools
import itertools
import math
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from mdlnb.board import readouts as _readouts
from mdlnb.core import _fit, _standardize
from mdlnb.core._checks import check_int
from mdlnb.core._task import Task, require_classification
from mdlnb.infra import _xla_cache

# Imported inside the functions that use them, so that importing this module does not load
# them: pandas.

#: Paper Table 4 (accuracy-based evaluation on VTAB).
DEFAULT_GRID: dict[str, tuple[float, ...]] = {
    "learning_rate": (1e-4, 3e-4, 1e-3, 3e-3),
    "weight_decay": (0.0, 1e-6, 1e-4, 1e-2),
    "ema": (1e-4, 1e-2, 1.0),
}
_DATA_STREAM = 0x7FFFFFFF  # fold_in index of the minibatch key (config i uses index i)
GRID_KEYS = ("learning_rate", "weight_decay", "ema", "b1", "label_smoothing")


def default_readouts() -> list[Any]:
    """Linear and MLPs with 1–3 hidden layers of 256 units (the CPU board)."""
    return [_readouts.linear(), *(_readouts.mlp(h) for h in (1, 2, 3))]


def grid_configs(grid: Mapping[str, Sequence[float]] | None = None) -> list[dict[str, float]]:
    """Cross product of ``grid`` (keys from ``learning_rate``, ``weight_decay``, ``ema``,
    ``b1``, ``label_smoothing``; missing keys take AdamW defaults), deterministic order."""
    g = dict(DEFAULT_GRID if grid is None else grid)
    unknown = set(g) - set(GRID_KEYS)
    if unknown:
        raise ValueError(f"grid: unknown hyperparameters {sorted(unknown)}; use {list(GRID_KEYS)}")
    axes = {}
    for k in GRID_KEYS:
        v = g.get(
            k,
            {
                "learning_rate": (1e-3,),
                "weight_decay": (0.0,),
                "ema": (1.0,),
                "b1": (0.9,),
                "label_smoothing": (0.0,),
            }[k],
        )
        vals = [float(x) for x in (v if isinstance(v, (list, tuple, np.ndarray)) else [v])]
        if not vals or not all(math.isfinite(x) for x in vals):
            raise ValueError(f"grid: {k} must be a non-empty list of finite numbers, got {v!r}")
        axes[k] = vals
    ranges = {
        "learning_rate": (lambda v: v > 0, "> 0"),
        "weight_decay": (lambda v: v >= 0, ">= 0"),
        "ema": (lambda v: 0 < v <= 1, "in (0, 1]"),
        "b1": (lambda v: 0 <= v < 1, "in [0, 1)"),
        "label_smoothing": (lambda v: 0 <= v < 1, "in [0, 1)"),
    }
    for k, (ok, text) in ranges.items():
        if not all(ok(v) for v in axes[k]):
            raise ValueError(f"grid: {k} values must be {text}, got {axes[k]}")
    return [dict(zip(GRID_KEYS, combo)) for combo in itertools.product(*axes.values())]


def _readout_key(seed: int, name: str) -> jax.Array:
    return jax.random.fold_in(jax.random.PRNGKey(seed), zlib.crc32(name.encode()) & 0x7FFFFFFF)


def _metrics(apply, params, x, y):
    logits = apply(params, x)
    loss = jnp.mean(_fit.example_losses(logits, y))
    acc = jnp.mean((jnp.argmax(logits, axis=1) == y).astype(jnp.float32))
    return loss, acc


def _config_program(readout: Any, num_classes: int, steps: int, batch_size: int):
    """``(h, init_key, data_key, xtr, ytr, xva, yva, xte, yte) -> (val_loss, val_acc,
    test_loss, test_acc)`` for one configuration (pure; vmap it over ``h``, ``init_key``)."""
    apply = readout.apply

    def program(h, init_key, data_key, xtr, ytr, xva, yva, xte, yte):
        n = xtr.shape[0]
        state = _fit.init_state(readout.init, init_key, xtr.shape[1], num_classes, h)

        def body(st, i):
            idx = jax.random.randint(jax.random.fold_in(data_key, i), (batch_size,), 0, n)
            return _fit.step(apply, st, h, xtr[idx], ytr[idx], num_classes), None

        state, _ = jax.lax.scan(body, state, jnp.arange(steps))
        vl, va = _metrics(apply, state.ema_params, xva, yva)
        tl, ta = _metrics(apply, state.ema_params, xte, yte)
        return vl, va, tl, ta

    return program


@functools.lru_cache(maxsize=64)
def _compiled(readout: Any, num_classes: int, steps: int, batch_size: int, grid: bool):
    """The jitted single-configuration program, or its vmap over a grid (cached, so
    repeated calls with the same shapes do not recompile)."""
    _xla_cache.ensure()  # compiled programs are cached on disk
    prog = _config_program(readout, num_classes, steps, batch_size)
    return jax.jit(jax.vmap(prog, in_axes=(0, 0) + (None,) * 7) if grid else prog)


def evaluate_config(
    readout: Any,
    config: Mapping[str, float],
    index: int,
    train: Task,
    val: Task,
    test: Task,
    *,
    seed: int = 0,
    steps: int = 1000,
    batch_size: int = 1024,
) -> dict[str, float]:
    """Train and score one configuration alone (no vmap): the reference for :func:`search`.

    ``index`` is the configuration's position in :func:`grid_configs` (it
    selects the initialization key, as in the vmapped search)."""
    b = min(int(batch_size), train.n)
    prog = _compiled(readout, train.num_classes, int(steps), b, False)
    rkey = _readout_key(seed, readout.name)
    xtr, xva, xte = _standardized(train, val, test)
    h = _fit.hyper(
        config["learning_rate"],
        config.get("b1", 0.9),
        config.get("weight_decay", 0.0),
        config.get("ema", 1.0),
        config.get("label_smoothing", 0.0),
    )
    out = prog(
        h,
        jax.random.fold_in(rkey, index),
        jax.random.fold_in(rkey, _DATA_STREAM),
        xtr,
        train.y,
        xva,
        val.y,
        xte,
        test.y,
    )
    return dict(
        zip(("val_loss", "val_accuracy", "test_loss", "test_accuracy"), (float(v) for v in out))
    )


def _standardized(train: Task, val: Task, test: Task):
    """All three splits standardised with the training split's statistics (no clip)."""
    mom = _standardize.fit(train.features)
    f = lambda x: jnp.asarray(_standardize.apply(np.asarray(x, np.float64), mom).astype(np.float32))  # noqa: E731
    return f(train.features), f(val.features), f(test.features)


def search(
    train: Task,
    val: Task,
    test: Task,
    readouts: Sequence[Any] | None = None,
    grid: Mapping[str, Sequence[float]] | None = None,
    *,
    seed: int = 0,
    steps: int = 1000,
    batch_size: int = 1024,
):
    """Every (readout, configuration): validation and test loss (nats) and accuracy.

    One tidy row per pair, columns ``family``, ``readout``, ``config`` (index
    into :func:`grid_configs`), the hyperparameters, ``val_loss``,
    ``val_accuracy``, ``test_loss``, ``test_accuracy``.
    """
    import pandas as pd

    for t, nm in ((train, "train"), (val, "val"), (test, "test")):
        if not isinstance(t, Task):
            raise ValueError(f"{nm}: expected an mdlnb.Task, got {type(t).__name__}")
    if (
        val.features.shape[1] != train.features.shape[1]
        or test.features.shape[1] != train.features.shape[1]
    ):
        raise ValueError("test: feature dimension differs from the training data")
    if len({train.num_classes, val.num_classes, test.num_classes}) != 1:
        raise ValueError("test: num_classes differs from the training data")
    check_int("steps", steps, minimum=1)
    check_int("batch_size", batch_size, minimum=1)
    ros = default_readouts() if readouts is None else list(readouts)
    if not ros:
        raise ValueError("readouts: is empty")
    configs = grid_configs(grid)
    hs = _fit.stack_hypers(
        [
            _fit.hyper(
                c["learning_rate"], c["b1"], c["weight_decay"], c["ema"], c["label_smoothing"]
            )
            for c in configs
        ]
    )
    xtr, xva, xte = _standardized(train, val, test)
    b = min(int(batch_size), train.n)
    rows = []
    for ro in ros:
        rkey = _readout_key(seed, ro.name)
        init_keys = jax.vmap(lambda i, rkey=rkey: jax.random.fold_in(rkey, i))(
            jnp.arange(len(configs))
        )
        grid_prog = _compiled(ro, train.num_classes, int(steps), b, True)
        out = grid_prog(
            hs,
            init_keys,
            jax.random.fold_in(rkey, _DATA_STREAM),
            xtr,
            train.y,
            xva,
            val.y,
            xte,
            test.y,
        )
        vl, va, tl, ta = (np.asarray(v, np.float64) for v in out)
        for i, c in enumerate(configs):
            rows.append(
                {
                    "family": ro.family,
                    "readout": ro.name,
                    "config": i,
                    **c,
                    "val_loss": vl[i],
                    "val_accuracy": va[i],
                    "test_loss": tl[i],
                    "test_accuracy": ta[i],
                }
            )
    return pd.DataFrame(rows)


def split(task: Task, fraction: float, seed: int) -> tuple[Task, Task]:
    """(rest, held) with ``held`` a uniformly random ``⌈fraction·N⌉`` examples (seeded)."""
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"fraction: must lie in (0, 1), got {fraction}")
    n_held = int(math.ceil(fraction * task.n))
    if not 1 <= n_held < task.n:
        raise ValueError(f"task: too small ({task.n} examples) to split off {fraction:.0%}")
    perm = np.random.default_rng(seed).permutation(task.n)
    return task.take(np.sort(perm[n_held:])), task.take(np.sort(perm[:n_held]))


def accuracy(
    task: Task,
    readouts: Sequence[Any] | None = None,
    grid: Mapping[str, Sequence[float]] | None = None,
    *,
    test: Task | None = None,
    seed: int = 0,
    val_fraction: float = 0.1,
    test_fraction: float = 0.2,
    steps: int = 1000,
    batch_size: int = 1024,
):
    """Linear and best-MLP test accuracy under the paper's App. A.4 protocol.

    Args:
      task: the training data (split 90/10 into train/validation, ``val_fraction``).
      readouts: readouts to search; default :func:`default_readouts`.
      grid: hyperparameter lists; default :data:`DEFAULT_GRID` (paper Table 4).
      test: the test split; if None, ``test_fraction`` of ``task`` is held out first.
      seed: splits, initializations and minibatches.
      steps, batch_size: AdamW steps per configuration and their batch size (paper: 1024).

    Returns:
      DataFrame, one row per readout family present (``"linear"``, ``"mlp"``):
      the winning ``readout`` and hyperparameters, ``val_loss [nats]``,
      ``val_accuracy``, ``test_accuracy``, ``test_loss [nats]``, ``configs``
      (number searched in the family), ``n_train``, ``n_val``, ``n_test``.
    """
    if not isinstance(task, Task):
        raise ValueError(f"task: expected an mdlnb.Task, got {type(task).__name__}")
    require_classification(task, "probes.accuracy")
    if test is None:
        task, test = split(task, test_fraction, seed)
    elif not isinstance(test, Task):
        raise ValueError(f"test: expected an mdlnb.Task or None, got {type(test).__name__}")
    train, val = split(task, val_fraction, seed + 1)
    table = search(train, val, test, readouts, grid, seed=seed, steps=steps, batch_size=batch_size)
    return select(table, n_train=train.n, n_val=val.n, n_test=test.n)


def select(table, **extra: Any):
    """Per family, the row of ``search``'s table with the lowest validation loss."""
    import pandas as pd

    rows = []
    for fam, g in table.groupby("family", sort=False):
        best = g.loc[g["val_loss"].idxmin()]
        rows.append(
            {
                "family": fam,
                "readout": best["readout"],
                **{k: best[k] for k in ("learning_rate", "weight_decay", "ema")},
                "val_loss [nats]": best["val_loss"],
                "val_accuracy": best["val_accuracy"],
                "test_accuracy": best["test_accuracy"],
                "test_loss [nats]": best["test_loss"],
                "configs": len(g),
                **extra,
            }
        )
    return pd.DataFrame(rows)
