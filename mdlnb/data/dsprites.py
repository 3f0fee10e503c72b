"""A dSprites-like generator (structured group): white shapes on black.

Factors, as in Matthey et al. (2017): shape ∈ {square, ellipse, heart},
scale ∈ [0.5, 1], orientation, and the (x, y) position of the shape's area
centroid in pixels (continuous, x = column, y = row, pixel centres at
integers). Images are binary uint8 (0 or 255) ``(N, S, S, 1)``.

Orientation is measured within each shape's rotational-symmetry period
(square π/2, ellipse π, heart 2π) and drawn uniformly over it, so every
orientation label can be read off the pixels. (Real dSprites draws [0, 2π)
for every shape, which leaves squares and ellipses ambiguous.) A positive
angle turns the shape counter-clockwise as displayed (rows pointing down).

Tasks, as in VTAB (Zhai et al. 2019, paper Table 3):
``dsprites_location`` — x position in ``bins`` equal bins over the allowed
range; ``dsprites_orientation`` — orientation as a fraction of the period, in
``bins`` equal bins. Defaults: 64×64, 4,000 train / 1,000 test, 16 bins.

Two more factors of dSprites, predicted the same way (not in VTAB):
``dsprites_scale`` — scale in ``bins`` equal bins over [0.5, 1] (default 6:
real dSprites has exactly six scale values, 0.5, 0.6, …, 1, so the default
task is dSprites' own scale factor; a bin is then ~1 px of bounding radius
at 64×64 and the rendered area grows by ~20–40 % from one bin to the next,
which pixels resolve); ``dsprites_shape`` — which shape, one class per entry
of ``shapes`` in its order (default 3: square, ellipse, heart). Scale and
shape are drawn uniformly, so classes are balanced. All four tasks label the
same images (one cached stream per seed and options).

Regression variants (``kind="regression"``, real targets, listed by
``names(kind="regression")``), on the same images as the classification
tasks of the same seed and options: ``dsprites_x_reg`` and
``dsprites_y_reg`` — the centroid's column and row in pixels (continuous);
``dsprites_orientation_reg`` — the orientation as a point on the unit circle,
``(cos φ, sin φ)`` with φ = 2π · orientation / period (P = 2 targets: the
fraction of the period is circular, so its ends meet).
"""

from __future__ import annotations

import numpy as np

from mdlnb.core._checks import check_int
from mdlnb.core._task import Task
from mdlnb.data._dsprites_scene import (  # noqa: F401  (the scenes, re-exported)
    ELLIPSE_AXES,
    PERIOD,
    RADIUS,
    SCALES,
    SHAPES,
    VERSION,
    generate,
    margin,
    render,
    sample_factors,
)
from mdlnb.data.procedural import SPLIT_RULE, cached, disjoint_split
from mdlnb.data.registry import TaskSpec, register


def location_bin(x: np.ndarray, image_size: int, bins: int) -> np.ndarray:
    """Bin of the x position among ``bins`` equal bins over the allowed range."""
    m = margin(image_size)
    frac = (np.asarray(x) - m) / (image_size - 1 - 2 * m)
    return np.clip((frac * bins).astype(np.int64), 0, bins - 1)


def orientation_bin(shape: np.ndarray, orientation: np.ndarray, bins: int) -> np.ndarray:
    """Bin of the orientation as a fraction of the shape's symmetry period."""
    period = np.array([PERIOD[s] for s in SHAPES])[np.asarray(shape)]
    frac = np.asarray(orientation) / period
    return np.clip((frac * bins).astype(np.int64), 0, bins - 1)


def scale_bin(scale: np.ndarray, bins: int) -> np.ndarray:
    """Bin of the scale among ``bins`` equal bins over ``SCALES`` = [0.5, 1]."""
    frac = (np.asarray(scale) - SCALES[0]) / (SCALES[1] - SCALES[0])
    return np.clip((frac * bins).astype(np.int64), 0, bins - 1)


def _build(
    target: str,
    seed: int,
    n_train: int,
    n_test: int,
    image_size: int,
    bins: int,
    shapes: tuple[str, ...],
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
        shapes=list(shapes),
        noise=float(noise),
    )

    def make() -> dict[str, np.ndarray]:
        # 2 % spare draws replace the (rare) repeated images removed by disjoint_split
        images, f = generate(
            int((n_train + n_test) * 1.02) + 8,
            seed,
            image_size=image_size,
            shapes=tuple(shapes),
            noise=noise,
        )
        return {"images": images, **f}

    d = cached("dsprites", params, make, cache=cache)
    tr, te = disjoint_split(d["images"], n_train, n_test)
    classes = bins
    if target == "location":
        y = location_bin(d["x"], image_size, bins)
    elif target == "orientation":
        y = orientation_bin(d["shape"], d["orientation"], bins)
    elif target == "scale":
        y = scale_bin(d["scale"], bins)
    else:  # shape: the position of the factor's shape in ``shapes``
        if len(shapes) < 2:
            raise ValueError(f"shapes: the shape task needs at least 2 shapes, got {shapes!r}")
        lookup = np.full(len(SHAPES), -1)
        lookup[[SHAPES.index(s) for s in shapes]] = np.arange(len(shapes))
        y, classes = lookup[d["shape"]], len(shapes)
    name = f"dsprites_{target}"
    out = []
    for split, idx in (("train", tr), ("test", te)):
        factors = {k: d[k][idx] for k in ("shape", "scale", "orientation", "x", "y")}
        meta = {
            "source": "procedural dSprites-like",
            "split": split,
            "factors": factors,
            "shapes": SHAPES,
            "params": params,
        }
        if target == "shape":
            meta["classes"] = tuple(shapes)
        out.append(Task(name, d["images"][idx], y[idx], classes, group="structured", meta=meta))
    return out[0], out[1]


def build_location(
    seed: int = 0,
    *,
    n_train: int = 4_000,
    n_test: int = 1_000,
    image_size: int = 64,
    bins: int = 16,
    shapes: tuple[str, ...] = SHAPES,
    noise: float = 0.0,
    cache: bool = True,
) -> tuple[Task, Task]:
    """dSprites location: the x position of the shape in ``bins`` classes."""
    return _build("location", seed, n_train, n_test, image_size, bins, tuple(shapes), noise, cache)


def build_orientation(
    seed: int = 0,
    *,
    n_train: int = 4_000,
    n_test: int = 1_000,
    image_size: int = 64,
    bins: int = 16,
    shapes: tuple[str, ...] = SHAPES,
    noise: float = 0.0,
    cache: bool = True,
) -> tuple[Task, Task]:
    """dSprites orientation: the orientation within the symmetry period in ``bins`` classes."""
    return _build(
        "orientation", seed, n_train, n_test, image_size, bins, tuple(shapes), noise, cache
    )


def build_scale(
    seed: int = 0,
    *,
    n_train: int = 4_000,
    n_test: int = 1_000,
    image_size: int = 64,
    bins: int = 6,
    shapes: tuple[str, ...] = SHAPES,
    noise: float = 0.0,
    cache: bool = True,
) -> tuple[Task, Task]:
    """dSprites scale: the scale in [0.5, 1] in ``bins`` equal classes (6: dSprites' six values)."""
    return _build("scale", seed, n_train, n_test, image_size, bins, tuple(shapes), noise, cache)


def build_shape(
    seed: int = 0,
    *,
    n_train: int = 4_000,
    n_test: int = 1_000,
    image_size: int = 64,
    shapes: tuple[str, ...] = SHAPES,
    noise: float = 0.0,
    cache: bool = True,
) -> tuple[Task, Task]:
    """dSprites shape: which of ``shapes`` (label = its position there)."""
    return _build("shape", seed, n_train, n_test, image_size, 2, tuple(shapes), noise, cache)


_SOURCE = "procedural (this package), after dSprites (Matthey et al. 2017)"
register(
    TaskSpec(
        name="dsprites_location",
        group="structured",
        num_classes=16,
        image_shape=(64, 64, 1),
        n_train=4_000,
        n_test=1_000,
        source=_SOURCE,
        split_rule=SPLIT_RULE,
        build=build_location,
        description="x position of the shape, 16 bins",
    )
)
register(
    TaskSpec(
        name="dsprites_orientation",
        group="structured",
        num_classes=16,
        image_shape=(64, 64, 1),
        n_train=4_000,
        n_test=1_000,
        source=_SOURCE,
        split_rule=SPLIT_RULE,
        build=build_orientation,
        description="orientation within the shape's symmetry period, 16 bins",
    )
)
register(
    TaskSpec(
        name="dsprites_scale",
        group="structured",
        num_classes=6,
        image_shape=(64, 64, 1),
        n_train=4_000,
        n_test=1_000,
        source=_SOURCE,
        split_rule=SPLIT_RULE,
        build=build_scale,
        description="scale of the shape in [0.5, 1], 6 bins (dSprites' 6 values)",
    )
)
register(
    TaskSpec(
        name="dsprites_shape",
        group="structured",
        num_classes=len(SHAPES),
        image_shape=(64, 64, 1),
        n_train=4_000,
        n_test=1_000,
        source=_SOURCE,
        split_rule=SPLIT_RULE,
        build=build_shape,
        description="which shape: square, ellipse, heart",
    )
)


def _regression(target: str, task: Task) -> Task:
    """``task`` (a classification task of the stream) with the real factor ``target``."""
    f = task.meta["factors"]
    if target == "x":
        y, units = f["x"], "pixels (column of the centroid)"
    elif target == "y":
        y, units = f["y"], "pixels (row of the centroid)"
    else:  # orientation: a point on the unit circle
        phi = 2 * np.pi * f["orientation"] / np.array([PERIOD[s] for s in SHAPES])[f["shape"]]
        y, units = np.stack([np.cos(phi), np.sin(phi)], axis=1), "(cos, sin) of the period's angle"
    meta = {**task.meta, "target": target, "target_units": units}
    return Task(
        f"dsprites_{target}_reg",
        task.x,
        np.asarray(y, np.float64),
        group="structured",
        meta=meta,
        kind="regression",
    )


def _build_regression(
    target: str,
    seed: int,
    n_train: int,
    n_test: int,
    image_size: int,
    shapes: tuple[str, ...],
    noise: float,
    cache: bool,
) -> tuple[Task, Task]:
    tr, te = build_location(
        seed,
        n_train=n_train,
        n_test=n_test,
        image_size=image_size,
        shapes=shapes,
        noise=noise,
        cache=cache,
    )
    return _regression(target, tr), _regression(target, te)


def build_x_reg(
    seed: int = 0,
    *,
    n_train: int = 4_000,
    n_test: int = 1_000,
    image_size: int = 64,
    shapes: tuple[str, ...] = SHAPES,
    noise: float = 0.0,
    cache: bool = True,
) -> tuple[Task, Task]:
    """dSprites x position as a real target (pixels)."""
    return _build_regression("x", seed, n_train, n_test, image_size, tuple(shapes), noise, cache)


def build_y_reg(
    seed: int = 0,
    *,
    n_train: int = 4_000,
    n_test: int = 1_000,
    image_size: int = 64,
    shapes: tuple[str, ...] = SHAPES,
    noise: float = 0.0,
    cache: bool = True,
) -> tuple[Task, Task]:
    """dSprites y position as a real target (pixels)."""
    return _build_regression("y", seed, n_train, n_test, image_size, tuple(shapes), noise, cache)


def build_orientation_reg(
    seed: int = 0,
    *,
    n_train: int = 4_000,
    n_test: int = 1_000,
    image_size: int = 64,
    shapes: tuple[str, ...] = SHAPES,
    noise: float = 0.0,
    cache: bool = True,
) -> tuple[Task, Task]:
    """dSprites orientation as two real targets, (cos, sin) of its angle in the period."""
    return _build_regression(
        "orientation", seed, n_train, n_test, image_size, tuple(shapes), noise, cache
    )


for _t, _b, _d in (
    ("x", build_x_reg, "x position of the shape's centroid, pixels (real)"),
    ("y", build_y_reg, "y position of the shape's centroid, pixels (real)"),
    (
        "orientation",
        build_orientation_reg,
        "orientation in the symmetry period as (cos, sin), 2 real targets",
    ),
):
    register(
        TaskSpec(
            name=f"dsprites_{_t}_reg",
            group="structured",
            num_classes=0,
            image_shape=(64, 64, 1),
            n_train=4_000,
            n_test=1_000,
            source=_SOURCE,
            split_rule=SPLIT_RULE,
            build=_b,
            description=_d,
            kind="regression",
        )
    )
