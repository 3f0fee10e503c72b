"""Self-pretrained encoders: the objectives family of the paper (Sec. 4), in miniature.

``pretrain(objective, arch, size, data, steps, seed)`` trains a small ResNet or
ViT (``mdlnb.encoders.archs``) on a task of images (Fashion-MNIST's training
split in the studies) with one of

- ``"random"``: no training, the initialization (the same init every other
  objective starts from, for the same seed);
- ``"supervised"``: linear classification head, cross-entropy on the labels;
- ``"simclr"``: NT-Xent between two augmented views through a projector MLP;
- ``"byol"``: online network + predictor regress an EMA target network;
- ``"dino"``: self-distillation from an EMA teacher with centering/sharpening;
- ``"mae"`` (ViT only): reconstruct masked patches from the visible ones;
- ``"autoencoder"``: reconstruct the image from the pooled feature vector.

Every objective's training step is one jitted function; ``lax.scan`` runs it
over chunks of steps (:mod:`mdlnb.encoders._pretrain_step`: hyperparameters,
heads, losses, optimizer), a Python loop here runs the chunks (progress bar,
checkpoint). Parameters are cached under ``cache_dir("encoders")`` keyed by all
inputs; a second call with the same arguments loads them. An interrupted run
resumes from its last checkpoint.

Projector/predictor heads normalize with batch statistics (BatchNorm in
training mode, no running averages): they are discarded after pretraining,
so the encoder's ``apply`` stays stateless.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from mdlnb.core._checks import check_images, check_int
from mdlnb.core._task import Task
from mdlnb.encoders import archs
from mdlnb.encoders._pretrain_step import (  # noqa: F401  (Hyper, OBJECTIVES: public here)
    _VIT_ONLY,
    OBJECTIVES,
    Hyper,
    _init_encoder,
    _init_state,
    _make_chunk,
)
from mdlnb.encoders.base import Encoder, prepare_images
from mdlnb.infra import _checkpoint, _progress
from mdlnb.infra._io import cache_dir, content_hash

_FORMAT = "mdlnb-pretrain-v1"


# -- public API -------------------------------------------------------------------


def _check_args(objective: str, arch: str, size: str, steps: int, seed: int) -> archs.ArchConfig:
    if objective not in OBJECTIVES:
        raise ValueError(f"objective: must be one of {OBJECTIVES}, got {objective!r}")
    cfg = archs.config(arch, size)
    if objective in _VIT_ONLY and arch != "vit":
        raise ValueError(f"arch: objective {objective!r} needs arch='vit', got {arch!r}")
    check_int("steps", steps, minimum=0)
    if objective != "random" and steps < 1:
        raise ValueError(f"steps: objective {objective!r} needs steps >= 1, got {steps}")
    check_int("seed", seed, minimum=0)
    return cfg


def _images(data: Task) -> np.ndarray:
    """``data.x`` as uint8 (N, 28, 28, 1) when it already is, else float32 in [0, 1]."""
    if not isinstance(data, Task):
        raise ValueError(f"data: must be an mdlnb.Task of images, got {type(data).__name__}")
    x, _ = check_images(data.x, "data")
    if x.dtype == np.uint8 and x.shape[1:] == (28, 28, 1):
        return x
    return prepare_images(x, (archs.IMAGE_SIZE, archs.IMAGE_SIZE), 1)


def _encoder(objective: str, cfg: archs.ArchConfig, params: Any, meta: dict) -> Encoder:
    name = f"{objective}-{cfg.kind}_{cfg.size}-{meta['steps']}steps-seed{meta['seed']}"
    return Encoder(
        name=name,
        params=params,
        apply=functools.partial(archs.apply, cfg=cfg),
        input_size=(archs.IMAGE_SIZE, archs.IMAGE_SIZE),
        channels=1,
        feature_dim=cfg.feature_dim,
        meta=meta,
    )


def _save(path, tree: Any, meta: dict, key: str) -> None:
    _checkpoint.save(path, tree, key=key, meta=meta)


def _load(path, template: Any) -> tuple[Any, dict] | None:
    """Leaves from ``path`` in the structure of ``template``; None if they do not fit.
    The file name holds the cache key (files written before the shared format
    carry no key field and still load)."""
    ck = _checkpoint.load(path, template, key=None)
    return None if ck is None else (ck.tree, ck.meta)


def _hyper(hyper: Hyper | None, batch_size: int | None, learning_rate: float | None) -> Hyper:
    """``hyper`` (default ``Hyper()``) with ``batch_size`` and ``learning_rate`` if given."""
    hp = hyper or Hyper()
    if not isinstance(hp, Hyper):
        raise ValueError(f"hyper: must be a Hyper, got {type(hp).__name__}")
    changes = {
        k: v
        for k, v in (("batch_size", batch_size), ("learning_rate", learning_rate))
        if v is not None
    }
    return dataclasses.replace(hp, **changes)


def _resume(ckpt: Path, state: tuple) -> tuple[tuple, tuple[int, list, float]]:
    """The state and (steps done, mean loss per chunk, training seconds) of the checkpoint
    of an interrupted run at ``ckpt``, or ``state`` and the start when there is none."""
    if ckpt.exists():
        loaded = _load(ckpt, (state, np.int64(0), np.float64(0.0)))
        if loaded is not None:
            (state, done, seconds), extra = loaded
            return state, (int(done), list(extra["chunk_losses"]), float(seconds))
    return state, (0, [], 0.0)


class _Chunks(NamedTuple):
    """What the compiled chunks of one run are: ``steps`` optimizer steps of
    ``objective`` on ``cfg`` under ``hp``, ``chunk`` steps per compiled call."""

    objective: str
    cfg: archs.ArchConfig
    hp: Hyper
    steps: int
    chunk: int
    unroll: bool

    @property
    def label(self) -> str:
        return f"{self.objective} {self.cfg.kind}_{self.cfg.size}"


def _train(
    run: _Chunks,
    state: tuple,
    resume: tuple[int, list, float],
    images: jax.Array,
    labels: jax.Array,
    progress: bool | Callable[[int, float], Any] | None,
    checkpoint: tuple[Path, str, float] | None,
) -> tuple[tuple, list, float]:
    """Run the chunks from ``resume`` = (steps done, mean loss per chunk so far, training
    seconds so far) to ``run.steps``; returns the final state, the losses per chunk and the
    training seconds. ``checkpoint``: (path, cache key, seconds between checkpoints), or
    None for no checkpoints. A non-finite loss is a ``FloatingPointError``."""
    done, losses, seconds = resume
    fns: dict[int, Callable] = {}
    bar = None
    if progress is True:
        bar = _progress.bar(total=run.steps, initial=done, desc=run.label, unit="step")
    t_last = time.perf_counter()
    while done < run.steps:
        n = min(run.chunk, run.steps - done)
        if n not in fns:
            fns[n] = _make_chunk(run.objective, run.cfg, run.hp, run.steps, n, run.unroll)
        t0 = time.perf_counter()
        state, chunk_losses = fns[n](state, images, labels)
        chunk_losses = np.asarray(chunk_losses, np.float64)
        seconds += time.perf_counter() - t0
        if not np.all(np.isfinite(chunk_losses)):
            raise FloatingPointError(
                f"{run.label}: non-finite loss at step "
                f"{done + int(np.argmin(np.isfinite(chunk_losses)))}"
            )
        done += n
        losses.append(float(chunk_losses.mean()))
        if (
            checkpoint is not None
            and done < run.steps
            and time.perf_counter() - t_last >= checkpoint[2]
        ):
            _save(
                checkpoint[0],
                (state, np.int64(done), np.float64(seconds)),
                {"chunk_losses": losses},
                checkpoint[1],
            )
            t_last = time.perf_counter()
        if bar is not None:
            bar.update(n)
            bar.set_postfix(loss=f"{losses[-1]:.4f}")
        elif callable(progress):
            progress(done, losses[-1])
    if bar is not None:
        bar.close()
    return state, losses, seconds


def _provenance(
    objective: str, arch: str, size: str, steps: int, seed: int, cfg: Any, enc0: Any, data: str
) -> dict[str, Any]:
    """The part of an encoder's ``meta`` known before training: what was asked for and
    the architecture's sizes (``pretrain`` adds the training record)."""
    return {
        "objective": objective,
        "arch": arch,
        "size": size,
        "steps": steps,
        "seed": seed,
        "param_count": archs.param_count(enc0),
        "feature_dim": cfg.feature_dim,
        "arch_config": dataclasses.asdict(cfg),
        "data": data,
        "loaded_from_cache": False,
    }


def pretrain(
    objective: str,
    arch: str,
    size: str,
    data: Task,
    steps: int,
    seed: int = 0,
    *,
    batch_size: int | None = None,
    learning_rate: float | None = None,
    hyper: Hyper | None = None,
    progress: bool | Callable[[int, float], Any] | None = None,
    cache: bool = True,
    chunk_steps: int | None = None,
    checkpoint_seconds: float = 60.0,
) -> Encoder:
    """Train (or load) an encoder; returns an ``Encoder`` of pooled pre-projection features.

    Args:
      objective: one of ``OBJECTIVES``.
      arch: ``"resnet"`` or ``"vit"``; size: ``"XS"``, ``"S"``, ``"M"``, ``"L"``.
      data: a ``Task`` of images (uint8 or float in [0, 1]); labels are used by
        ``"supervised"`` only.
      steps: optimizer steps (ignored, recorded as 0, for ``"random"``).
      seed: one seed for initialization, batch sampling, augmentations, masks.
      batch_size, learning_rate: override those of ``hyper`` (default ``Hyper()``).
      progress: True for a tqdm bar, or a callable ``(steps_done, mean_chunk_loss)``.
      cache: load/save parameters under ``cache_dir("encoders")``; also
        checkpoint every ``checkpoint_seconds`` and resume an interrupted run.
      chunk_steps: steps per compiled ``lax.scan`` chunk; default 50 for the
        ViT (a rolled loop) and 10 for the ResNet (unrolled, see ``_make_chunk``).

    ``meta`` records objective, arch, size, steps, seed, final loss (mean over
    the last chunk; nats for supervised/simclr/dino, squared error otherwise),
    loss per chunk, encoder parameter count, head parameter count, training
    seconds, hyperparameters, data hash, and ``loaded_from_cache``.
    """
    cfg = _check_args(objective, arch, size, steps, seed)
    hp = _hyper(hyper, batch_size, learning_rate)
    unroll = cfg.kind == "resnet"
    chunk_steps = chunk_steps if chunk_steps is not None else (10 if unroll else 50)
    if int(chunk_steps) < 1:
        raise ValueError(f"chunk_steps: must be >= 1, got {chunk_steps}")
    images = _images(data)
    if objective != "random" and hp.batch_size > images.shape[0]:
        raise ValueError(
            f"batch_size: {hp.batch_size} exceeds the {images.shape[0]} images of data"
        )
    steps = 0 if objective == "random" else int(steps)

    enc0 = _init_encoder(cfg, int(seed))
    meta = _provenance(objective, arch, size, steps, int(seed), cfg, enc0, data.name)
    if objective == "random":
        return _encoder(objective, cfg, enc0, {**meta, "final_loss": None})

    hp_dict = dataclasses.asdict(hp)
    data_hash = content_hash(images, data.y, data.num_classes)
    ckey = content_hash(_FORMAT, objective, cfg, steps, int(seed), data_hash, hp_dict)
    path = cache_dir("encoders") / f"{objective}-{arch}_{size}-{steps}-s{seed}-{ckey}.npz"
    ckpt = path.with_suffix(".ckpt.npz")
    meta.update(hyper=hp_dict, data_hash=data_hash)
    if cache and path.exists():
        loaded = _load(path, enc0)
        if loaded is not None:
            params, saved = loaded
            return _encoder(objective, cfg, params, {**saved, "loaded_from_cache": True})

    state = _init_state(objective, cfg, hp, steps, data.num_classes, int(seed))
    meta["head_param_count"] = archs.param_count(state[0]["head"])
    state, resume = _resume(ckpt, state) if cache else (state, (0, [], 0.0))
    chunk = max(1, min(int(chunk_steps), steps))
    state, losses, seconds = _train(
        _Chunks(objective, cfg, hp, steps, chunk, unroll),
        state,
        resume,
        jnp.asarray(images),
        jnp.asarray(data.y, jnp.int32),
        progress,
        (ckpt, ckey, checkpoint_seconds) if cache else None,
    )
    params = jax.tree_util.tree_map(np.asarray, state[0]["encoder"])
    meta.update(
        final_loss=losses[-1],
        chunk_losses=losses,
        train_seconds=round(seconds, 3),
        chunk_steps=chunk,
        unrolled=unroll,
    )
    if cache:
        _save(path, params, meta, ckey)
        ckpt.unlink(missing_ok=True)
    return _encoder(objective, cfg, jax.tree_util.tree_map(jnp.asarray, params), meta)


# -- which objective on which architecture ---------------------------------------------


def supports(objective: str, arch: str) -> bool:
    """Whether ``objective`` is defined for ``arch`` (MAE needs patch tokens: ViT only)."""
    return (
        objective in OBJECTIVES
        and arch in archs.ARCHS
        and (objective not in _VIT_ONLY or arch == "vit")
    )
