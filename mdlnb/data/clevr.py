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

from mdlnb.core._checks import check_int
from mdlnb.core._task import Task
from mdlnb.data._clevr_scene import (  # noqa: F401  (the scenes, re-exported)
    COLOUR_NAMES,
    COLOURS,
    GAP,
    HORIZON,
    KIND_NAMES,
    NEAREST,
    PROPOSALS,
    RADIUS,
    SIZE_NAMES,
    SIZES,
    SQUARE_HALF,
    VERSION,
    Z_FAR,
    floor_row,
    generate,
    render,
    sample_scenes,
)
from mdlnb.data.procedural import SPLIT_RULE, cached, disjoint_split
from mdlnb.data.registry import TaskSpec, register

_CLASS_NAMES = {
    "closest_colour": COLOUR_NAMES,
    "closest_shape": KIND_NAMES,
    "closest_size": SIZE_NAMES,
}


def depth_bin(z: np.ndarray, bins: int) -> np.ndarray:
    """Bin of depth ``z`` among ``bins`` equal bins over ``NEAREST``."""
    frac = (np.asarray(z) - NEAREST[0]) / (NEAREST[1] - NEAREST[0])
    return np.clip((frac * bins).astype(np.int64), 0, bins - 1)


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
