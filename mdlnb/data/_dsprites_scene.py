"""The dSprites-like scenes: the shapes, their factors drawn from a seed, and the
renderer (binary uint8 images of one white shape on black). The tasks that label
these images are :mod:`mdlnb.data.dsprites`."""

from __future__ import annotations

import functools

import numpy as np

from mdlnb.core._checks import check_int
from mdlnb.data.procedural import add_noise

VERSION = 2  # bump when the pixels change (part of the cache key)
SHAPES = ("square", "ellipse", "heart")
PERIOD = {"square": np.pi / 2, "ellipse": np.pi, "heart": 2 * np.pi}
RADIUS = 0.18  # bounding radius at scale 1, as a fraction of the image side
SCALES = (0.5, 1.0)
ELLIPSE_AXES = (1.0, 0.5)


def _heart_implicit(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    # (X² + Y² − 1)³ − X² Y³ ≤ 0, Y pointing up; lobes up, tip down.
    t = X * X + Y * Y - 1
    return t * t * t - X * X * Y * Y * Y


@functools.lru_cache(maxsize=1)
def _heart_frame() -> tuple[float, float]:
    """(vertical centroid offset, bounding radius about the centroid) of the heart curve."""
    g = np.linspace(-1.6, 1.6, 1201)
    X, Y = np.meshgrid(g, g)
    inside = _heart_implicit(X, Y) <= 0
    cy = float(Y[inside].mean())  # the centroid lies on the mirror axis X = 0
    r = float(np.sqrt(X[inside] ** 2 + (Y[inside] - cy) ** 2).max())
    return cy, r


def _inside(shape: int, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Membership in canonical shape ``shape`` (index into ``SHAPES``), centred on its
    area centroid with bounding radius 1; ``u`` right, ``v`` down, in bounding radii."""
    if shape == 0:
        return np.maximum(np.abs(u), np.abs(v)) <= 1 / np.sqrt(2)
    if shape == 1:
        a, b = ELLIPSE_AXES
        return (u * u) / (a * a) + (v * v) / (b * b) <= 1
    cy, r = _heart_frame()
    return _heart_implicit(u * r, cy - v * r) <= 0


def margin(image_size: int) -> float:
    """Distance from the border kept free: the largest bounding radius plus one pixel."""
    return RADIUS * image_size * SCALES[1] + 1.0


def render(
    shape: np.ndarray,
    scale: np.ndarray,
    orientation: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
    image_size: int = 64,
) -> np.ndarray:
    """Binary uint8 images ``(N, S, S)`` of the given factors (vectorized over N).

    Only a window around each shape is evaluated; positions must keep the
    shape ``margin(image_size)`` pixels from the border.
    """
    shape, scale, orientation, x, y = (np.asarray(a) for a in (shape, scale, orientation, x, y))
    n, s = len(shape), int(image_size)
    m = margin(s)
    if np.any((x < m) | (x > s - 1 - m) | (y < m) | (y > s - 1 - m)):
        raise ValueError(f"x: positions must lie in [{m:.2f}, {s - 1 - m:.2f}] for image_size={s}")
    half = int(np.ceil(m))
    w = min(2 * half + 1, s)
    top = np.clip(np.rint(y).astype(np.int64) - half, 0, s - w)  # window covers [y − R, y + R]
    left = np.clip(np.rint(x).astype(np.int64) - half, 0, s - w)
    rows = top[:, None] + np.arange(w)  # (N, w)
    cols = left[:, None] + np.arange(w)
    R = (RADIUS * s * scale)[:, None, None]
    dy = ((rows - y[:, None])[:, :, None] / R).astype(np.float32)  # (N, w, 1)
    dx = ((cols - x[:, None])[:, None, :] / R).astype(np.float32)  # (N, 1, w)
    c = np.cos(orientation).astype(np.float32)[:, None, None]
    s_ = np.sin(orientation).astype(np.float32)[:, None, None]
    # Counter-clockwise on screen (v down) is clockwise in (u, v): rotate the pixel by +θ there.
    u = c * dx - s_ * dy
    v = s_ * dx + c * dy
    mask = np.zeros((n, w, w), bool)
    for k in np.unique(shape):  # one vectorized pass per shape kind (at most 3)
        sel = shape == k
        mask[sel] = _inside(int(k), u[sel], v[sel])
    out = np.zeros((n, s, s), np.uint8)
    out[np.arange(n)[:, None, None], rows[:, :, None], cols[:, None, :]] = mask * np.uint8(255)
    return out


def sample_factors(
    rng: np.random.Generator, n: int, image_size: int = 64, shapes: tuple[str, ...] = SHAPES
) -> dict[str, np.ndarray]:
    """Independent uniform factors; ``orientation`` in [0, period of the shape)."""
    ids = np.array([SHAPES.index(s) for s in shapes])
    shape = ids[rng.integers(0, len(ids), n)]
    period = np.array([PERIOD[s] for s in SHAPES])[shape]
    m = margin(image_size)
    return {
        "shape": shape,
        "scale": rng.uniform(*SCALES, n),
        "orientation": rng.uniform(0, 1, n) * period,
        "x": rng.uniform(m, image_size - 1 - m, n),
        "y": rng.uniform(m, image_size - 1 - m, n),
    }


def generate(
    n: int,
    seed: int = 0,
    *,
    image_size: int = 64,
    shapes: tuple[str, ...] = SHAPES,
    noise: float = 0.0,
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """``n`` images ``(n, S, S, 1)`` uint8 and their factors, from ``seed``."""
    n = check_int("n", n, minimum=1)
    image_size = check_int("image_size", image_size, minimum=16)
    bad = [s for s in shapes if s not in SHAPES]
    if bad or not shapes:
        raise ValueError(f"shapes: must be a non-empty subset of {SHAPES}, got {shapes!r}")
    rng = np.random.default_rng(seed)
    f = sample_factors(rng, n, image_size, tuple(shapes))
    images = np.concatenate(
        [
            render(
                *(f[k][i : i + 2048] for k in ("shape", "scale", "orientation", "x", "y")),
                image_size,
            )
            for i in range(0, n, 2048)
        ]
    )
    return add_noise(images, noise, rng)[..., None], f
