"""Pretraining in stages until a monitored score stops improving.

:func:`train_until_plateau` trains one encoder of :mod:`mdlnb.encoders._pretrain`
with a warmup-then-constant learning rate (training of unknown length), and
every ``plateau.eval_every`` steps hands the encoder to a ``monitor``
(``monitor(step, encoder) -> {name: value}``; e.g. the linear probe accuracy
on the pretraining data's held-out split, RankMe, any label-free score). The
run stops when the deciding value (``plateau.key``) has not improved by at
least ``plateau.min_delta`` over ``plateau.patience`` evaluations, or at
``plateau.max_steps``; the encoder returned is the one of the last
evaluation that improved (the "chosen steps"), and the whole monitored curve
comes with it.

Resumable and deterministic: the training state, the curve and the chosen
parameters are checkpointed at every evaluation (an evaluation is always at a
chunk boundary), so an interrupted run continues bit for bit where it stopped
and a rerun on the same machine reproduces the same parameters.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from mdlnb.core._checks import check_int
from mdlnb.core._task import Task
from mdlnb.encoders import _pretrain as P
from mdlnb.encoders import archs
from mdlnb.encoders.base import Encoder
from mdlnb.infra import _checkpoint
from mdlnb.infra._io import cache_dir, content_hash

Monitor = Callable[[int, Encoder], Mapping[str, float]]
_FORMAT = "mdlnb-staged-v1"


@dataclasses.dataclass(frozen=True)
class Plateau:
    """When to evaluate and when to stop.

    Attributes:
      eval_every: optimizer steps between evaluations (a multiple of the chunk).
      max_steps: the most steps ever trained; also the horizon of the warmup
        (``Hyper.warmup · max_steps`` steps).
      patience: stop after this many evaluations in a row without an
        improvement of the deciding value by ``min_delta`` or more.
      min_delta: the smallest improvement that counts (in the value's unit,
        e.g. 0.005 = half a percentage point of accuracy).
      key: the monitor value that decides (higher is better).
    """

    eval_every: int = 500
    max_steps: int = 20_000
    patience: int = 3
    min_delta: float = 0.005
    key: str = "probe_accuracy"

    def __post_init__(self) -> None:
        for name in ("eval_every", "max_steps", "patience"):
            check_int(name, getattr(self, name), minimum=1)
        if self.max_steps % self.eval_every:
            raise ValueError(
                f"max_steps: must be a multiple of eval_every ({self.eval_every}), "
                f"got {self.max_steps}"
            )
        if not (np.isfinite(self.min_delta) and self.min_delta >= 0):
            raise ValueError(f"min_delta: must be a finite number >= 0, got {self.min_delta!r}")

    def chosen(self, values: list[float]) -> int:
        """Index of the last evaluation that improved on all before it by ``min_delta``."""
        best, best_i = -np.inf, 0
        for i, v in enumerate(values):
            if v >= best + self.min_delta:
                best, best_i = v, i
        return best_i

    def stopped(self, values: list[float]) -> bool:
        """Whether training stops after the evaluations ``values`` (step 0 first)."""
        return len(values) - 1 - self.chosen(values) >= self.patience


@dataclasses.dataclass(frozen=True, eq=False)
class StagedRun:
    """What :func:`train_until_plateau` returns.

    Attributes:
      encoder: the encoder at the chosen evaluation (``meta["steps"]`` = its step).
      curve: one dict per evaluation: ``step``, the monitor's values,
        ``loss`` (the objective's mean over the steps since the last
        evaluation; NaN at step 0) and ``train_seconds`` (cumulative).
      chosen_step: the step of the chosen evaluation.
      trained_steps: the steps trained before stopping.
      reason: ``"plateau"`` or ``"max_steps"`` (``"untrained"`` for random).
      state_path: the resumable state's file (None for random).
    """

    encoder: Encoder
    curve: tuple[dict, ...]
    chosen_step: int
    trained_steps: int
    reason: str
    state_path: Path | None = None

    def evaluations(self) -> dict[int, Any]:
        """The encoder parameters of every evaluation kept (``keep_evaluations=True``),
        by step; calling :func:`train_until_plateau` again with the same arguments
        returns at once with this run (its state is complete)."""
        if self.state_path is None:
            return {0: self.encoder.params}
        out = {}
        for r in self.curve:
            ck = _checkpoint.load(
                _step_path(self.state_path, r["step"]), self.encoder.params, key=None
            )
            if ck is not None:
                out[int(r["step"])] = ck.tree
        return out


def _checked(
    objective: str,
    arch: str,
    size: str,
    data: Task,
    monitor: Any,
    plateau: Any,
    seed: int,
    hyper: P.Hyper | None,
    chunk_steps: int | None,
) -> tuple[Any, P.Hyper, np.ndarray, int]:
    """:func:`train_until_plateau`'s arguments checked: ``(architecture config, hyper,
    images of data, steps per compiled chunk)``."""
    cfg = P._check_args(objective, arch, size, plateau.max_steps, seed)
    hp = hyper or P.Hyper()
    if not isinstance(plateau, Plateau):
        raise ValueError(f"plateau: must be a Plateau, got {type(plateau).__name__}")
    if not callable(monitor):
        raise ValueError(f"monitor: must be callable (step, encoder) -> mapping, got {monitor!r}")
    chunk = (
        int(chunk_steps)
        if chunk_steps is not None
        else math.gcd(10 if cfg.kind == "resnet" else 50, plateau.eval_every)
    )
    if chunk < 1 or plateau.eval_every % chunk:
        raise ValueError(
            f"chunk_steps: must divide plateau.eval_every ({plateau.eval_every}), got {chunk}"
        )
    images = P._images(data)
    if objective != "random" and hp.batch_size > images.shape[0]:
        raise ValueError(
            f"batch_size: {hp.batch_size} exceeds the {images.shape[0]} images of data"
        )
    return cfg, hp, images, chunk


def _reporter(
    progress: bool | Callable[[int, Mapping[str, float]], Any], label: str
) -> Callable[[int, Mapping[str, float]], None]:
    """``report(step, values)``: one line ``LABEL: step N: ...`` on stdout when
    ``progress`` is True, a call of ``progress`` when it is callable, else nothing."""

    def report(step: int, values: Mapping[str, float]) -> None:
        if progress is True:
            shown = ", ".join(f"{k} {v:.4g}" for k, v in values.items() if k != "step")
            print(f"{label}: step {step}: {shown}", flush=True)
        elif callable(progress):
            progress(step, values)

    return report


def _train_stage(
    fn: Callable, state: Any, images: Any, labels: Any, chunks: int, *, label: str, start: int
) -> tuple[Any, np.ndarray, float]:
    """``chunks`` calls of the compiled chunk ``fn`` from step ``start``: ``(state, every
    step's loss, wall seconds)``; FloatingPointError (naming ``label`` and the step) on a
    non-finite loss."""
    losses = []
    t0 = time.perf_counter()
    for _ in range(chunks):
        state, chunk_losses = fn(state, images, labels)
        losses.append(np.asarray(chunk_losses, np.float64))
    losses = np.concatenate(losses)
    took = time.perf_counter() - t0
    if not np.all(np.isfinite(losses)):
        raise FloatingPointError(
            f"{label}: non-finite loss after step {start + int(np.argmin(np.isfinite(losses)))}"
        )
    return state, losses, took


def _resume(path: Path, key: str, state: Any, enc0: Any) -> tuple[Any, Any, int, float, list]:
    """``(state, chosen parameters, steps done, train seconds, curve)``: those saved at
    ``path`` under ``key``, else those of a fresh run (``state``, ``enc0``, 0, 0.0, no
    evaluation yet)."""
    ck = _checkpoint.load(path, (state, enc0, np.int64(0), np.float64(0.0)), key=key)
    if ck is None:
        return state, enc0, 0, 0.0, []
    (state, chosen, done, seconds), curve = ck.tree, list(ck.meta["curve"])
    return state, chosen, int(done), float(seconds), curve


def _state_path(directory: Path, key: str) -> Path:
    return directory / f"staged-{key}.ckpt.npz"


def _step_path(state: Path, step: int) -> Path:
    return state.with_name(state.name.replace(".ckpt.npz", f"-step{int(step)}.npz"))


def _state_key(
    objective: str, cfg: Any, seed: int, data_hash: str, hp: Any, plateau: Plateau, chunk: int
) -> str:
    """The resumable state's key: every input that changes what the run computes."""
    return content_hash(
        _FORMAT,
        objective,
        cfg,
        seed,
        data_hash,
        dataclasses.asdict(hp),
        dataclasses.asdict(plateau),
        chunk,
    )


def _provenance(
    objective: str,
    arch: str,
    size: str,
    seed: int,
    cfg: Any,
    enc0: Any,
    data: str,
    hp: Any,
    plateau: Plateau,
) -> dict[str, Any]:
    """The part of a staged run's ``meta`` known before training: what was asked for,
    the architecture's sizes, the hyperparameters and the stopping rule."""
    return {
        "objective": objective,
        "arch": arch,
        "size": size,
        "seed": seed,
        "param_count": archs.param_count(enc0),
        "feature_dim": cfg.feature_dim,
        "arch_config": dataclasses.asdict(cfg),
        "data": data,
        "hyper": dataclasses.asdict(hp),
        "schedule": "constant",
        "plateau": dataclasses.asdict(plateau),
    }


def _training_record(
    best: Mapping[str, Any], done: int, reason: str, seconds: float, chunk: int
) -> dict[str, Any]:
    """What the run adds to ``meta``: the chosen evaluation's step and loss (``best``,
    a row of the curve), the steps trained, why it stopped, its time and chunk size."""
    return {
        "steps": int(best["step"]),
        "trained_steps": done,
        "final_loss": best["loss"],
        "stop_reason": reason,
        "train_seconds": round(seconds, 3),
        "chunk_steps": chunk,
    }


def _save_progress(
    path: Path, key: str, run: tuple, curve: list, evaluated: Any | None = None
) -> None:
    """Checkpoint a staged run after an evaluation: ``run`` = (optimizer state, chosen
    parameters, steps done, seconds), with the curve so far in the metadata, and the
    evaluated parameters beside it (``<state>-step<N>.npz``) if ``evaluated`` is given."""
    state, chosen, done, seconds = run
    if evaluated is not None:
        _checkpoint.save(_step_path(path, done), evaluated, key=key, meta={"step": done})
    _checkpoint.save(
        path,
        (state, chosen, np.int64(done), np.float64(seconds)),
        key=key,
        meta={"curve": curve},
    )


def train_until_plateau(
    objective: str,
    arch: str,
    size: str,
    data: Task,
    monitor: Monitor,
    *,
    plateau: Plateau = Plateau(),
    seed: int = 0,
    hyper: P.Hyper | None = None,
    directory: str | Path | None = None,
    progress: bool | Callable[[int, Mapping[str, float]], Any] = False,
    chunk_steps: int | None = None,
    keep_evaluations: bool = False,
) -> StagedRun:
    """Train ``objective`` on ``arch``/``size`` over ``data`` until ``monitor`` plateaus.

    Args:
      objective, arch, size, data, seed, hyper: as :func:`mdlnb.encoders.pretrain`
        (``"random"`` is evaluated once at step 0 and not trained).
      monitor: ``monitor(step, encoder) -> {name: value}``; must return
        ``plateau.key``. Called at step 0 and every ``plateau.eval_every`` steps.
      plateau: evaluation interval and stopping rule (:class:`Plateau`).
      directory: where the resumable state lives (default
        ``cache_dir("pretraining")``); the file is keyed by every input.
      progress: True for a one-line report per evaluation on stdout, or a
        callable ``(step, values)``.
      chunk_steps: steps per compiled chunk (default 10 for the ResNet, 50 for
        the ViT, or their greatest common divisor with ``plateau.eval_every``;
        must divide ``plateau.eval_every``).
      keep_evaluations: also keep the encoder parameters of every evaluation
        beside the state (``<state>-step<N>.npz``, read back with
        :meth:`StagedRun.evaluations`), so further monitors can score the
        checkpoints later without retraining.
    """
    cfg, hp, images, chunk = _checked(
        objective, arch, size, data, monitor, plateau, seed, hyper, chunk_steps
    )
    unroll = cfg.kind == "resnet"
    enc0 = P._init_encoder(cfg, int(seed))
    meta = _provenance(objective, arch, size, int(seed), cfg, enc0, data.name, hp, plateau)
    label = f"{objective} {arch}_{size}"
    report = _reporter(progress, label)

    def evaluate(step: int, params: Any, loss: float, seconds: float) -> dict:
        """The curve's row of ``step``: the monitor's values of the encoder ``params``."""
        enc = P._encoder(objective, cfg, params, {**meta, "steps": step})
        values = {k: float(v) for k, v in monitor(step, enc).items()}
        if plateau.key not in values:
            raise ValueError(
                f"monitor: returned {sorted(values)} without plateau.key {plateau.key!r}"
            )
        return {"step": step, **values, "loss": loss, "train_seconds": seconds}

    if objective == "random":
        row = evaluate(0, enc0, float("nan"), 0.0)
        report(0, row)
        enc = P._encoder(objective, cfg, enc0, {**meta, "steps": 0, "final_loss": None})
        return StagedRun(enc, (row,), 0, 0, "untrained")

    meta["data_hash"] = data_hash = content_hash(images, data.y, data.num_classes)
    key = _state_key(objective, cfg, int(seed), data_hash, hp, plateau, chunk)
    path = _state_path(Path(directory) if directory else cache_dir("pretraining"), key)
    path.parent.mkdir(parents=True, exist_ok=True)

    state = P._init_state(objective, cfg, hp, plateau.max_steps, data.num_classes, int(seed))
    state, chosen, done, seconds, curve = _resume(path, key, state, enc0)
    if not curve:  # a fresh run: evaluate the initial encoder
        row = evaluate(0, enc0, float("nan"), 0.0)
        curve.append(row)
        report(0, row)

    fn = P._make_chunk(objective, cfg, hp, plateau.max_steps, chunk, unroll, "constant")
    images_d, labels_d = jnp.asarray(images), jnp.asarray(data.y, jnp.int32)
    values = [r[plateau.key] for r in curve]
    while not plateau.stopped(values) and done < plateau.max_steps:
        state, losses, took = _train_stage(
            fn, state, images_d, labels_d, plateau.eval_every // chunk, label=label, start=done
        )
        seconds += took
        done += plateau.eval_every
        params = jax.tree_util.tree_map(np.asarray, state[0]["encoder"])
        row = evaluate(done, params, float(losses.mean()), round(seconds, 3))
        curve.append(row)
        values.append(row[plateau.key])
        report(done, row)
        if plateau.chosen(values) == len(values) - 1:
            chosen = params
        _save_progress(
            path, key, (state, chosen, done, seconds), curve, params if keep_evaluations else None
        )

    best = plateau.chosen(values)
    reason = "plateau" if plateau.stopped(values) else "max_steps"
    chosen = jax.tree_util.tree_map(np.asarray, chosen)
    final = {**meta, **_training_record(curve[best], done, reason, seconds, chunk)}
    enc = P._encoder(objective, cfg, chosen, final)
    return StagedRun(enc, tuple(curve), int(curve[best]["step"]), done, reason, path)
