"""The full VTAB-1k benchmark (Zhai et al. 2019) through ``tensorflow_datasets``.

Optional: needs ``pip install mdlnb[full]`` (tensorflow-datasets and
tensorflow) and either network access for the download or a ``data_dir``
with prepared datasets. Nothing is faked when they are absent: ``vtab``
raises ``ImportError`` naming the package, or ``RuntimeError`` naming the
dataset it could not reach. The 19 tasks and what each predicts follow the
paper's Table 3 and VTAB's task definitions.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from mdlnb.core._task import Task

# Imported inside the functions that use them, so that importing this module does not load
# them: tensorflow-datasets, scikit-image.

# name -> (group, tfds name, label function of the example dict, number of classes)
_Label = Callable[[dict], Any]


def _key(k: str) -> _Label:
    return lambda ex: ex[k]


TASKS: dict[str, tuple[str, str, _Label, int]] = {
    "caltech101": ("natural", "caltech101:3.*.*", _key("label"), 102),
    "cifar100": ("natural", "cifar100:3.*.*", _key("label"), 100),
    "dtd": ("natural", "dtd:3.*.*", _key("label"), 47),
    "flowers102": ("natural", "oxford_flowers102:2.*.*", _key("label"), 102),
    "pets": ("natural", "oxford_iiit_pet:3.*.*", _key("label"), 37),
    "svhn": ("natural", "svhn_cropped:3.*.*", _key("label"), 10),
    "sun397": ("natural", "sun397/tfds:4.*.*", _key("label"), 397),
    "eurosat": ("specialized", "eurosat/rgb:2.*.*", _key("label"), 10),
    "patch_camelyon": ("specialized", "patch_camelyon:2.*.*", _key("label"), 2),
    "resisc45": ("specialized", "resisc45:3.*.*", _key("label"), 45),
    "retinopathy": (
        "specialized",
        "diabetic_retinopathy_detection/btgraham-300:3.*.*",
        _key("label"),
        5,
    ),
    # count 3..10 -> 0..7
    "clevr_count": ("structured", "clevr:3.*.*", lambda ex: len(ex["objects"]["size"]) - 3, 8),
    # VTAB: closest object's depth, thresholds on pixel_coords[:, 2]
    "clevr_distance": (
        "structured",
        "clevr:3.*.*",
        lambda ex: np.digitize(
            np.min(ex["objects"]["pixel_coords"][:, 2]), [8.0, 8.5, 9.0, 9.5, 10.0]
        ),
        6,
    ),
    "dmlab": ("structured", "dmlab:2.0.1", _key("label"), 6),
    "dsprites_location": (
        "structured",
        "dsprites:2.*.*",
        lambda ex: ex["label_x_position"] // 2,
        16,
    ),
    "dsprites_orientation": (
        "structured",
        "dsprites:2.*.*",
        lambda ex: ex["label_orientation"] * 16 // 40,
        16,
    ),
    # VTAB KITTI distance: closest vehicle's distance, 4 bins
    "kitti_distance": ("structured", "kitti:3.*.*", lambda ex: _kitti_bin(ex), 4),
    "smallnorb_azimuth": ("structured", "smallnorb:2.*.*", lambda ex: ex["label_azimuth"], 18),
    "smallnorb_elevation": ("structured", "smallnorb:2.*.*", lambda ex: ex["label_elevation"], 9),
}


def _kitti_bin(ex: dict) -> int:
    objects = ex["objects"]
    vehicles = np.isin(objects["type"], [0, 1, 2])  # Car, Van, Truck
    if not np.any(vehicles):
        return 3
    d = float(np.min(objects["location"][vehicles, 2]))
    return int(np.digitize(d, [8.0, 20.0, 999.0]))


def vtab(
    name: str,
    split: str = "train",
    data_dir: str | Path | None = None,
    *,
    image_size: int | None = None,
) -> Task:
    """One VTAB task as a ``Task`` of uint8 images (full size unless ``image_size``).

    ``split`` is a tfds split string (``"train"``, ``"test"``, ``"train[:800]"``).
    Raises ``ValueError`` for an unknown ``name``, ``ImportError`` when
    tensorflow-datasets is missing, ``RuntimeError`` when the data cannot be
    downloaded or found in ``data_dir``.
    """
    if name not in TASKS:
        raise ValueError(f"name: unknown VTAB task {name!r}; available: {sorted(TASKS)}")
    try:
        import tensorflow_datasets as tfds
    except ImportError as e:
        raise ImportError(
            f"mdlnb.data.vtab needs the optional package 'tensorflow-datasets' "
            f"(and tensorflow): pip install mdlnb[full]  ({e})"
        ) from None
    group, tfds_name, label, classes = TASKS[name]
    try:
        ds = tfds.load(tfds_name, split=split, data_dir=None if data_dir is None else str(data_dir))
    except Exception as e:  # tfds raises many types for network/preparation failures
        raise RuntimeError(
            f"name: could not load VTAB dataset {tfds_name!r} (split {split!r}) — no network, "
            f"or not prepared in data_dir={data_dir!r} ({type(e).__name__}: {e})"
        ) from None
    xs, ys = [], []
    for ex in tfds.as_numpy(ds):
        img = np.asarray(ex["image"])
        if image_size is not None:
            from skimage import transform

            img = np.clip(
                np.rint(
                    transform.resize(
                        img, (image_size, image_size), anti_aliasing=True, preserve_range=True
                    )
                ),
                0,
                255,
            ).astype(np.uint8)
        xs.append(img if img.ndim == 3 else img[..., None])
        ys.append(int(label(ex)))
    if len({x.shape for x in xs}) > 1:
        raise ValueError(f"image_size: {name} images have different sizes; pass image_size=")
    return Task(
        f"vtab_{name}",
        np.stack(xs),
        np.asarray(ys),
        classes,
        group=group,
        meta={"source": f"tensorflow_datasets {tfds_name}", "split": split},
    )
