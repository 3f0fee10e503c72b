"""The ``Encoder`` interface and cached feature extraction.

An encoder maps a batch of images, float32 ``(B, H, W, C)`` with values in
``[0, 1]``, to features ``(B, D)``. Every encoder family (pretrained
EfficientNet-Lite, self-pretrained ResNet/ViT) returns this one type, so the
studies treat them alike.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from mdlnb.core._checks import check_images
from mdlnb.core._task import Task
from mdlnb.infra import _progress, _xla_cache
from mdlnb.infra._io import cache_dir, compute_once, content_hash

ApplyFn = Callable[[Any, Any], Any]


@dataclasses.dataclass(frozen=True, eq=False)
class Encoder:
    """A feature extractor.

    Attributes:
      name: identifier, part of the feature-cache key (e.g. ``"efficientnet_lite0"``).
      params: parameter pytree (arrays).
      apply: ``apply(params, images) -> features``; images float32
        ``(B, H, W, channels)`` in ``[0, 1]``, features ``(B, feature_dim)``.
      input_size: ``(H, W)`` the encoder expects; inputs are resized to it.
      channels: 1 or 3; grey images are repeated to 3 channels, colour
        images averaged to 1, as needed.
      feature_dim: D.
      meta: provenance (objective, architecture, size, training steps, seed).
    """

    name: str
    params: Any
    apply: ApplyFn
    input_size: tuple[int, int]
    channels: int
    feature_dim: int
    meta: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def fingerprint(self) -> str:
        """Content hash of the name, shapes and parameter values."""
        leaves = [np.asarray(v) for v in jax.tree_util.tree_leaves(self.params)]
        return content_hash(self.name, self.input_size, self.channels, leaves)


def check_taps(taps: Any, available: Any) -> frozenset | None:
    """``taps`` (layer names or None) as a frozenset, every one of them in ``available``
    (a ValueError naming the argument and listing the available layers otherwise)."""
    if taps is None:
        return None
    wanted, available = frozenset(taps), list(available)
    unknown = wanted - set(available)
    if unknown:
        raise ValueError(f"taps: unknown layers {sorted(unknown)}; available: {available}")
    return wanted


def adapt_images(x: Any, input_size: tuple[int, int], channels: int) -> Any:
    """Float images ``(B, H, W, C)`` in [0, 1] → ``(B, *input_size, channels)``, traceable.

    Grey is repeated to 3 channels, colour averaged to 1; resizing is
    bilinear (``jax.image.resize``), antialiased when shrinking.
    """
    x = jnp.asarray(x, jnp.float32)
    c = x.shape[-1]
    if c != channels:
        if c == 1 and channels == 3:
            x = jnp.repeat(x, 3, axis=-1)
        elif c == 3 and channels == 1:
            x = x.mean(axis=-1, keepdims=True)
        else:
            raise ValueError(f"images: cannot map {c} channels to {channels}")
    if tuple(x.shape[1:3]) != tuple(input_size):
        x = jax.image.resize(
            x, (x.shape[0], *input_size, channels), method="bilinear", antialias=True
        )
    return x


def prepare_images(images: Any, input_size: tuple[int, int], channels: int) -> np.ndarray:
    """uint8/float images ``(B, H, W[, C])`` → float32 ``(B, *input_size, channels)`` in [0, 1].

    uint8 is divided by 255; floats must lie in [0, 1] already
    (:func:`mdlnb.core._checks.check_images`); then :func:`adapt_images`.
    """
    x, white = check_images(images, "images")
    x = x.astype(np.float32) / np.float32(white) if white != 1.0 else x.astype(np.float32)
    return np.asarray(adapt_images(x, input_size, channels))


_JITTED: dict[int, tuple[ApplyFn, Any]] = {}


def _jitted(apply: ApplyFn) -> Any:
    """One ``jax.jit`` wrapper per apply function, so repeated feature
    extraction with the same encoder reuses its compilation."""
    _xla_cache.ensure()  # compiled programs are cached on disk

    hit = _JITTED.get(id(apply))
    if hit is None or hit[0] is not apply:
        if len(_JITTED) >= 32:
            _JITTED.pop(next(iter(_JITTED)))
        hit = _JITTED[id(apply)] = (apply, jax.jit(apply))
    return hit[1]


def features(
    encoder: Encoder,
    task: Task,
    *,
    batch_size: int = 128,
    cache: bool = True,
    progress: bool = False,
) -> Task:
    """The task with ``x`` replaced by the encoder's features ``(N, D)`` float32,
    named after the representation: ``"<task>|<encoder>"`` (e.g.
    ``"digits|efficientnet_lite0_64px"``), so reports of two encoders on one task
    print differently; ``meta["source_task"]`` keeps the task's own name.

    Features are cached on disk under ``cache_dir("features")``, keyed by the
    encoder's fingerprint, the task's images and the preprocessing.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size: must be >= 1, got {batch_size}")
    key = content_hash(
        "features-v1", encoder.fingerprint(), task.x, encoder.input_size, encoder.channels
    )
    stem = f"{encoder.name}-{task.name}".replace("/", "--")  # layer encoders: "<enc>/<layer>"
    path = cache_dir("features") / f"{stem}-{key}.npz"
    if cache:  # computed once across processes; a damaged entry is recomputed
        feats = compute_once(
            path, lambda: {"features": _compute_features(encoder, task, batch_size, progress)}
        )["features"]
    else:
        feats = _compute_features(encoder, task, batch_size, progress)
    meta = {
        **task.meta,
        "encoder": encoder.name,
        "encoder_meta": dict(encoder.meta),
        "source_task": task.meta.get("source_task", task.name),
    }
    return task.replace(x=feats, name=f"{task.name}|{encoder.name}", meta=meta)


def _compute_features(encoder: Encoder, task: Task, batch_size: int, progress: bool) -> np.ndarray:
    fn = _jitted(encoder.apply)
    chunks = []
    it = range(0, task.n, batch_size)
    if progress:
        it = _progress.bar(it, desc=f"{encoder.name} features", unit="batch")
    for i in it:
        xb = prepare_images(task.x[i : i + batch_size], encoder.input_size, encoder.channels)
        if xb.shape[0] < batch_size and task.n > batch_size:  # keep one compiled shape
            pad = np.zeros((batch_size - xb.shape[0], *xb.shape[1:]), xb.dtype)
            out = np.asarray(fn(encoder.params, np.concatenate([xb, pad])))[: xb.shape[0]]
        else:
            out = np.asarray(fn(encoder.params, xb))
        chunks.append(out.astype(np.float32))
    feats = np.concatenate(chunks)
    if not np.all(np.isfinite(feats)):
        raise ValueError(f"encoder: {encoder.name} produced non-finite features on {task.name}")
    return feats
