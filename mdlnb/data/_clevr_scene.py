"""The CLEVR-like scenes: spheres and cubes on a floor in perspective, their
attributes drawn from a seed, and the renderer. The tasks that label these images
are :mod:`mdlnb.data.clevr`."""

from __future__ import annotations

import numpy as np

from mdlnb.core._checks import check_int
from mdlnb.data.procedural import add_noise

VERSION = 2  # bump when the pixels change (part of the cache key)
HORIZON = 0.25
Z_FAR = 3.5
NEAREST = (1.0, 2.0)  # range of the nearest depth (the distance label)
RADIUS = 0.09
SIZES = (0.75, 1.0)
GAP = 2.0
SQUARE_HALF = 0.85  # half side of a cube's square, in units of its radius
COLOURS = np.array(
    [
        [173, 35, 35],
        [42, 75, 215],
        [29, 105, 20],
        [129, 74, 25],
        [129, 38, 192],
        [41, 208, 208],
        [255, 238, 51],
    ],
    np.float32,
)
COLOUR_NAMES = ("red", "blue", "green", "brown", "purple", "cyan", "yellow")
KIND_NAMES = ("sphere", "cube")
SIZE_NAMES = ("small", "large")
PROPOSALS = 48  # candidate placements tried per object and round
#: Class names of the nearest-object questions (label = index).


def floor_row(z: np.ndarray, image_size: int) -> np.ndarray:
    """Row where an object at depth ``z`` touches the floor (continuous pixels)."""
    h = HORIZON * image_size
    return h + (image_size - 2 - h) / np.asarray(z)


def _bounding(radius: np.ndarray, kind: np.ndarray) -> np.ndarray:
    return np.where(kind == 1, radius * SQUARE_HALF * np.sqrt(2), radius)


def sample_scenes(
    rng: np.random.Generator, n: int, image_size: int, min_objects: int, max_objects: int
) -> dict[str, np.ndarray]:
    """Object factors, arrays ``(n, max_objects)``; slots ≥ ``count`` are unused (NaN depth).

    Objects are placed one slot at a time, vectorized over scenes: each round
    proposes ``PROPOSALS`` candidates per scene and keeps the first whose
    bounding disc clears every placed one by ``GAP`` pixels. A scene with no
    room left is laid out again from scratch (its count and nearest depth kept).
    """
    count = rng.integers(min_objects, max_objects + 1, n)
    nearest = rng.uniform(*NEAREST, n)
    f = _place(rng, count, nearest, image_size, max_objects)
    for _ in range(20):
        failed = np.flatnonzero(np.isnan(f["z"][np.arange(n), count - 1]))
        if not len(failed):
            f["count"] = count
            return f
        g = _place(rng, count[failed], nearest[failed], image_size, max_objects)
        for key in f:
            f[key][failed] = g[key]
    raise ValueError(
        f"max_objects: could not place {max_objects} non-overlapping objects "
        f"in a {image_size}×{image_size} image; use a larger image_size or fewer objects"
    )


def _place(
    rng: np.random.Generator, count: np.ndarray, nearest: np.ndarray, s: int, k: int
) -> dict[str, np.ndarray]:
    """One layout attempt; scenes that ran out of room have NaN depths from that slot on."""
    n = len(count)
    f = {key: np.full((n, k), np.nan) for key in ("z", "cx", "cy", "r")}
    f["kind"] = np.zeros((n, k), np.int64)
    f["colour"] = np.zeros((n, k), np.int64)
    f["size"] = np.full((n, k), np.nan)
    for j in range(k):
        alive = ~np.isnan(f["z"][:, j - 1]) if j else np.ones(n, bool)
        todo = np.flatnonzero((count > j) & alive)
        for _ in range(8):
            if not len(todo):
                break
            m = len(todo)
            z = (
                np.full((m, PROPOSALS), nearest[todo, None])
                if j == 0
                else rng.uniform(nearest[todo, None], Z_FAR, (m, PROPOSALS))
            )
            size = np.array(SIZES)[rng.integers(0, 2, (m, PROPOSALS))]
            kind = rng.integers(0, 2, (m, PROPOSALS))
            r = RADIUS * s * size / z
            b = _bounding(r, kind)
            cy = floor_row(z, s) - np.where(kind == 1, r * SQUARE_HALF, r)
            cx = rng.uniform(0, 1, (m, PROPOSALS)) * (s - 1 - 2 * (b + 1)) + b + 1
            # clearance to every placed object of the same scene
            px, py = f["cx"][todo, :j, None], f["cy"][todo, :j, None]
            pb = _bounding(f["r"][todo, :j, None], f["kind"][todo, :j, None])
            dist = np.hypot(cx[:, None, :] - px, cy[:, None, :] - py)
            ok = np.all(dist >= b[:, None, :] + pb + GAP, axis=1) & (cy - b >= 0)
            has = ok.any(axis=1)
            pick = ok.argmax(axis=1)
            rows, sel = todo[has], pick[has]
            for key, val in (
                ("z", z),
                ("cx", cx),
                ("cy", cy),
                ("r", r),
                ("kind", kind),
                ("size", size),
            ):
                f[key][rows, j] = val[has, sel]
            f["colour"][rows, j] = rng.integers(0, len(COLOURS), has.sum())
            todo = todo[~has]
    return f


def render(f: dict[str, np.ndarray], image_size: int) -> np.ndarray:
    """uint8 images ``(n, S, S, 3)`` of scenes from ``sample_scenes`` (vectorized over scenes)."""
    s = image_size
    n, k = f["z"].shape
    rows = np.arange(s, dtype=np.float32)
    floor = 70 + 80 * np.clip((rows - HORIZON * s) / ((1 - HORIZON) * s), 0, 1)
    background = np.rint(np.where(rows < HORIZON * s, 60, floor)).astype(np.uint8)
    img = np.empty((n, s, s, 3), np.uint8)
    img[...] = background[None, :, None, None]
    flat_img = img.reshape(n * s * s, 3)
    half = int(np.ceil(RADIUS * s * max(SIZES) * SQUARE_HALF * np.sqrt(2))) + 1
    w = min(2 * half + 1, s)
    light = np.array([-0.5, -0.6, 0.62])
    light /= np.linalg.norm(light)
    for j in range(k):
        idx = np.flatnonzero(~np.isnan(f["z"][:, j]))
        if not len(idx):
            continue
        cx, cy, r = f["cx"][idx, j], f["cy"][idx, j], f["r"][idx, j]
        top = np.clip(np.rint(cy).astype(np.int64) - half, 0, s - w)
        left = np.clip(np.rint(cx).astype(np.int64) - half, 0, s - w)
        wr = top[:, None] + np.arange(w)
        wc = left[:, None] + np.arange(w)
        dy = ((wr - cy[:, None]) / r[:, None])[:, :, None]
        dx = ((wc - cx[:, None]) / r[:, None])[:, None, :]
        d2 = dx**2 + dy**2
        is_sq = (f["kind"][idx, j] == 1)[:, None, None]
        square = np.maximum(np.abs(dx), np.abs(dy)) <= SQUARE_HALF
        mask = np.where(is_sq, square, d2 <= 1)
        nz = np.sqrt(np.clip(1 - d2, 0, 1))
        lambert = np.clip(dx * light[0] + dy * light[1] + nz * light[2], 0, 1)
        shade = np.where(is_sq, 0.85, 0.55 + 0.45 * lambert)[mask]
        which = np.broadcast_to(f["colour"][idx, j][:, None, None], mask.shape)[mask]
        # only covered pixels are written (flat indices: objects never overlap)
        flat = ((idx[:, None, None] * s + wr[:, :, None]) * s + wc[:, None, :])[mask]
        flat_img[flat] = np.rint(COLOURS[which] * shade[:, None]).astype(np.uint8)
    return img


def generate(
    n: int,
    seed: int = 0,
    *,
    image_size: int = 64,
    min_objects: int = 3,
    max_objects: int = 10,
    noise: float = 0.0,
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """``n`` scenes: uint8 images ``(n, S, S, 3)`` and their object factors."""
    n = check_int("n", n, minimum=1)
    image_size = check_int("image_size", image_size, minimum=24)
    min_objects = check_int("min_objects", min_objects, minimum=1)
    max_objects = check_int("max_objects", max_objects, minimum=1)
    if max_objects < min_objects:
        raise ValueError(f"max_objects: must be >= min_objects={min_objects}, got {max_objects}")
    rng = np.random.default_rng(seed)
    f = sample_scenes(rng, n, image_size, min_objects, max_objects)
    images = np.concatenate(
        [
            render({k: v[i : i + 1024] for k, v in f.items() if v.ndim == 2}, image_size)
            for i in range(0, n, 1024)
        ]
    )
    return add_noise(images, noise, rng), f
