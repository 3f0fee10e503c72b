"""A Clevr-like renderer (structured group): shaded objects on a ground plane.

A pinhole camera looks at a flat floor; the horizon is at row
``HORIZON · S``. An object at depth z ∈ [1, Z_FAR] touches the floor at row
``y_b = horizon + (S − 2 − horizon) / z`` and has apparent radius
``RADIUS · S · size / z`` with size ∈ {0.75 (small), 1 (large)}: nearer
objects are lower and larger. Objects are shaded spheres (circles, lit from
the upper left) or flat-shaded cubes (squares) in Clevr's seven saturated
colours, on a grey floor whose brightness grows towards the camera. They
never overlap: every pair of bounding discs is at least ``GAP`` pixels apart.
Images are uint8 ``(N, S, S, 3)``.

Tasks, after VTAB's Clevr tasks (paper Table 3): ``clevr_count`` — the number
of objects, ``min_objects..max_objects`` (default 3–10 → 8 classes);
``clevr_distance`` — depth of the nearest object in ``bins`` equal bins over
``NEAREST`` = [1, 2] (default 6). The nearest depth is drawn uniformly from
``NEAREST``, the others uniformly from [nearest, Z_FAR], so distance classes
are balanced. Defaults: 64×64, 4,000 train / 1,000 test.

One more CLEVR question (CLEVR's "what colour is the closest object?", not
in VTAB): ``clevr_closest_colour`` — the colour of the nearest object, one of
the seven ``COLOUR_NAMES`` (7 classes, balanced: colours are drawn
uniformly). It combines the distance task's relation (find the nearest
object, the lowest one in the image) with an attribute read off that object
only; the other objects' colours are independent of the label. In about
2 % of scenes the two nearest objects reach the same lowest pixel row (their
depths differ by less than a pixel's worth); the label is still the colour
of the truly nearest one.

Two more questions about the nearest object, CLEVR's "what shape / what size
is the closest object?": ``clevr_closest_shape`` — sphere (0) or cube (1);
``clevr_closest_size`` — small (0) or large (1). Both are drawn uniformly,
so the classes are balanced. Size is relational: the apparent radius is
``RADIUS · S · size / z``, so a small object nearby and a large one further
away can have the same radius on screen; only the radius read together with
the floor row (which gives z) tells them apart. All five tasks label the same
images (one cached stream per seed and options).
"""

from __future__ import annotations

import numpy as np

from mdlnb._checks import check_int
from mdlnb._task import Task
from mdlnb.data.procedural import SPLIT_RULE, add_noise, cached, disjoint_split
from mdlnb.data.registry import TaskSpec, register

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
_CLASS_NAMES = {
    "closest_colour": COLOUR_NAMES,
    "closest_shape": KIND_NAMES,
    "closest_size": SIZE_NAMES,
}


def floor_row(z: np.ndarray, image_size: int) -> np.ndarray:
    """Row where an object at depth ``z`` touches the floor (continuous pixels)."""
    h = HORIZON * image_size
    return h + (image_size - 2 - h) / np.asarray(z)


def depth_bin(z: np.ndarray, bins: int) -> np.ndarray:
    """Bin of depth ``z`` among ``bins`` equal bins over ``NEAREST``."""
    frac = (np.asarray(z) - NEAREST[0]) / (NEAREST[1] - NEAREST[0])
    return np.clip((frac * bins).astype(np.int64), 0, bins - 1)


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


def _build(
    target: str,
    seed: int,
    n_train: int,
    n_test: int,
    image_size: int,
    min_objects: int,
    max_objects: int,
    bins: int,
    noise: float,
    cache: bool,
) -> tuple[Task, Task]:
    n_train = check_int("n_train", n_train, minimum=1)
    n_test = check_int("n_test", n_test, minimum=1)
    bins = check_int("bins", bins, minimum=2)
    params = dict(
        version=VERSION,
        seed=seed,
        n=n_train + n_test,
        image_size=image_size,
        min_objects=min_objects,
        max_objects=max_objects,
        noise=float(noise),
    )

    def make() -> dict[str, np.ndarray]:
        images, f = generate(
            int((n_train + n_test) * 1.02) + 8,
            seed,
            image_size=image_size,
            min_objects=min_objects,
            max_objects=max_objects,
            noise=noise,
        )
        return {"images": images, **f}

    d = cached("clevr", params, make, cache=cache)
    tr, te = disjoint_split(d["images"], n_train, n_test)
    if target == "count":
        y, c = d["count"] - min_objects, max_objects - min_objects + 1
        if c < 2:
            raise ValueError("max_objects: counting needs max_objects > min_objects")
    elif target == "distance":
        y, c = depth_bin(np.nanmin(d["z"], axis=1), bins), bins
    else:  # an attribute of the nearest object
        nearest = np.nanargmin(d["z"], axis=1)
        rows = np.arange(len(nearest))
        if target == "closest_colour":
            y, c = d["colour"][rows, nearest], len(COLOURS)
        elif target == "closest_shape":
            y, c = d["kind"][rows, nearest], len(KIND_NAMES)
        else:  # closest_size
            y, c = (d["size"][rows, nearest] == SIZES[1]).astype(np.int64), len(SIZE_NAMES)
    out = []
    for split, idx in (("train", tr), ("test", te)):
        factors = {k: d[k][idx] for k in ("count", "z", "cx", "cy", "r", "kind", "colour", "size")}
        meta = {
            "source": "procedural Clevr-like",
            "split": split,
            "factors": factors,
            "params": params,
            "label_offset": min_objects if target == "count" else 0,
        }
        if target in _CLASS_NAMES:
            meta["classes"] = _CLASS_NAMES[target]
        out.append(
            Task(f"clevr_{target}", d["images"][idx], y[idx], c, group="structured", meta=meta)
        )
    return out[0], out[1]


def build_count(
    seed: int = 0,
    *,
    n_train: int = 4_000,
    n_test: int = 1_000,
    image_size: int = 64,
    min_objects: int = 3,
    max_objects: int = 10,
    noise: float = 0.0,
    cache: bool = True,
) -> tuple[Task, Task]:
    """Clevr count: label = number of objects − ``min_objects``."""
    return _build(
        "count", seed, n_train, n_test, image_size, min_objects, max_objects, 2, noise, cache
    )


def build_distance(
    seed: int = 0,
    *,
    n_train: int = 4_000,
    n_test: int = 1_000,
    image_size: int = 64,
    min_objects: int = 3,
    max_objects: int = 10,
    bins: int = 6,
    noise: float = 0.0,
    cache: bool = True,
) -> tuple[Task, Task]:
    """Clevr distance: depth of the nearest object in ``bins`` classes."""
    return _build(
        "distance", seed, n_train, n_test, image_size, min_objects, max_objects, bins, noise, cache
    )


def build_closest_colour(
    seed: int = 0,
    *,
    n_train: int = 4_000,
    n_test: int = 1_000,
    image_size: int = 64,
    min_objects: int = 3,
    max_objects: int = 10,
    noise: float = 0.0,
    cache: bool = True,
) -> tuple[Task, Task]:
    """Clevr closest colour: the colour of the nearest object, 7 classes (``COLOUR_NAMES``)."""
    return _build(
        "closest_colour",
        seed,
        n_train,
        n_test,
        image_size,
        min_objects,
        max_objects,
        2,
        noise,
        cache,
    )


def build_closest_shape(
    seed: int = 0,
    *,
    n_train: int = 4_000,
    n_test: int = 1_000,
    image_size: int = 64,
    min_objects: int = 3,
    max_objects: int = 10,
    noise: float = 0.0,
    cache: bool = True,
) -> tuple[Task, Task]:
    """Clevr closest shape: sphere (0) or cube (1), the nearest object's (``KIND_NAMES``)."""
    return _build(
        "closest_shape",
        seed,
        n_train,
        n_test,
        image_size,
        min_objects,
        max_objects,
        2,
        noise,
        cache,
    )


def build_closest_size(
    seed: int = 0,
    *,
    n_train: int = 4_000,
    n_test: int = 1_000,
    image_size: int = 64,
    min_objects: int = 3,
    max_objects: int = 10,
    noise: float = 0.0,
    cache: bool = True,
) -> tuple[Task, Task]:
    """Clevr closest size: small (0) or large (1), the nearest object's (``SIZE_NAMES``)."""
    return _build(
        "closest_size", seed, n_train, n_test, image_size, min_objects, max_objects, 2, noise, cache
    )


_SOURCE = "procedural (this package), after CLEVR (Johnson et al. 2017)"
register(
    TaskSpec(
        name="clevr_count",
        group="structured",
        num_classes=8,
        image_shape=(64, 64, 3),
        n_train=4_000,
        n_test=1_000,
        source=_SOURCE,
        split_rule=SPLIT_RULE,
        build=build_count,
        description="number of objects, 3-10",
    )
)
register(
    TaskSpec(
        name="clevr_distance",
        group="structured",
        num_classes=6,
        image_shape=(64, 64, 3),
        n_train=4_000,
        n_test=1_000,
        source=_SOURCE,
        split_rule=SPLIT_RULE,
        build=build_distance,
        description="depth of the nearest object, 6 bins",
    )
)
register(
    TaskSpec(
        name="clevr_closest_colour",
        group="structured",
        num_classes=len(COLOURS),
        image_shape=(64, 64, 3),
        n_train=4_000,
        n_test=1_000,
        source=_SOURCE,
        split_rule=SPLIT_RULE,
        build=build_closest_colour,
        description="colour of the nearest object (7)",
    )
)
register(
    TaskSpec(
        name="clevr_closest_shape",
        group="structured",
        num_classes=len(KIND_NAMES),
        image_shape=(64, 64, 3),
        n_train=4_000,
        n_test=1_000,
        source=_SOURCE,
        split_rule=SPLIT_RULE,
        build=build_closest_shape,
        description="shape of the nearest object: sphere vs cube",
    )
)
register(
    TaskSpec(
        name="clevr_closest_size",
        group="structured",
        num_classes=len(SIZE_NAMES),
        image_shape=(64, 64, 3),
        n_train=4_000,
        n_test=1_000,
        source=_SOURCE,
        split_rule=SPLIT_RULE,
        build=build_closest_size,
        description="size of the nearest object: small vs large",
    )
)
