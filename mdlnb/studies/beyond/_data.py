"""The representations the study codes: pooled pixels and noise beside real features for
the regression tasks, the calibration tasks, LogME's regression evidence and the
t-interval the tables report."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

import mdlnb
from mdlnb import data, encoders
from mdlnb.baselines.transfer import logme_regression
from mdlnb.studies.beyond._config import BeyondConfig

# scikit-learn and scipy.stats are imported inside the functions that use them.


def _noise(n: int, d: int) -> np.ndarray:
    return np.random.default_rng(0).normal(size=(n, d)).astype(np.float32)


def pooled_pixels(images: np.ndarray, grid: int) -> np.ndarray:
    """Images (N, H, W[, C]) averaged over blocks into a ``grid × grid`` map (channels
    averaged too), flattened to (N, grid²), scaled to [0, 1] for uint8 input."""
    x = np.asarray(images, np.float32)
    if x.ndim == 4:
        x = x.mean(-1)
    n, h, w = x.shape
    if h % grid or w % grid:
        raise ValueError(f"pool: {grid} does not divide the image size {h}×{w}")
    x = x.reshape(n, grid, h // grid, grid, w // grid).mean((2, 4)).reshape(n, -1)
    return x / 255.0 if np.asarray(images).dtype == np.uint8 else x


def regression_representations(
    config: BeyondConfig,
) -> dict[str, tuple[Any, dict[str, np.ndarray]]]:
    """``{task name: (task, {representation: features (N, D)})}`` of the regression part."""
    from sklearn.decomposition import PCA

    dia = data.load("diabetes", split="all")
    reps = {
        "features": dia.x.astype(np.float32),
        "pca2": PCA(2, random_state=0).fit_transform(dia.x).astype(np.float32),
        "noise": _noise(dia.n, dia.x.shape[1]),
    }
    img = data.load(config.image_task, size=config.image_size, seed=0)
    if img.kind != "regression":
        raise ValueError(f"image_task: {config.image_task!r} is not a regression task")
    (enc,) = encoders.layers(config.encoder(), [config.layer]).values()
    lite = encoders.features(enc, img).x
    px = pooled_pixels(img.x, config.pool)
    reps_img = {
        f"pixels{config.pool}x{config.pool}": px,
        f"{config.encoder_label}/{config.layer}": lite,
        "noise": _noise(img.n, px.shape[1]),
    }
    return {dia.name: (dia, reps), img.name: (img, reps_img)}


def logme(x: np.ndarray, y: np.ndarray) -> float:
    """LogME regression evidence (nats/example) of z-scored features and centred targets."""
    x = np.asarray(x, np.float64)
    sd = x.std(0)
    x = (x - x.mean(0)) / np.where(sd > 0, sd, 1.0)
    y = np.asarray(y, np.float64)
    return float(logme_regression(x, y - y.mean(0)))


def calibration_tasks(config: BeyondConfig) -> dict[str, Any]:
    """``{representation: Task}``: the first ``calibration_size`` examples of
    ``calibration_task`` as raw pixels and as the encoder's features (extracted on
    the whole split, then cut, so the features do not depend on the cut)."""
    t = data.load(config.calibration_task, split="all")
    if t.kind == "regression":
        raise ValueError(
            f"calibration_task: {config.calibration_task!r} is a regression task; "
            "calibration is of classifiers"
        )
    k = t.n if config.calibration_size is None else min(config.calibration_size, t.n)
    raw = t.x.reshape(t.n, -1).astype(np.float32)
    feats = encoders.features(config.encoder(), t).x
    return {
        name: mdlnb.Task(f"{t.name}|{name}", x[:k], t.y[:k], t.num_classes)
        for name, x in (("pixels", raw), (config.encoder_label, feats))
    }


def t_interval(d: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """Mean and the half-width of the two-sided ``level`` t-interval over ``d``."""
    from scipy import stats

    d = np.asarray(d, np.float64)
    half = stats.t.ppf(0.5 + level / 2, len(d) - 1) * d.std(ddof=1) / math.sqrt(len(d))
    return float(d.mean()), float(half)
