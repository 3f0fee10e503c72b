"""Tasks cut from the photographs shipped inside the scikit-image wheel.

Only files present in ``skimage/data/`` (and, for ``photo_patches``, the two
photographs in scikit-learn's ``sklearn/datasets/images/``) are read
(directly, with ``skimage.io.imread``); the ``skimage.data`` functions that
download (``cells3d``, ``kidney``, ``lily``, ``skin``, ``brain``, …) are never
called, so these tasks work offline.

- ``textures`` (natural, DTD-like): which texture photograph a 32×32 grey
  patch comes from — brick, grass, gravel, moon surface, printed text.
- ``sci_patches`` (specialized): which scientific image a 32×32 RGB patch
  comes from — retina fundus, Hubble deep field, IHC-stained tissue,
  fluorescence cell (grey, repeated to RGB).
- ``photo_patches`` (natural): which photograph a 32×32 RGB patch comes
  from — astronaut, chelsea (cat), coffee, rocket, motorcycle (scikit-image),
  china (temple), flower (scikit-learn); each rescaled to 200–256 rows so a
  patch covers a similar share of every scene.
- ``ihc_dab`` (specialized, PatchCamelyon-like): is the centre of a 32×32
  patch of the immunohistochemistry slide ``ihc.png`` stained by DAB (brown)?
  DAB optical density comes from Ruifrok & Johnston's colour deconvolution
  (``skimage.color.rgb2hed``); a patch's statistic is the mean DAB density of
  its centre 16×16. Class 0 (low): below the 40th percentile of that
  statistic over every patch position of the whole slide; class 1 (high):
  above the 60th; the ambiguous middle fifth is never drawn. Labels are a
  stain measurement, not a pathologist's annotation.
- ``ihc_hematoxylin`` (specialized): the same question for the other stain of
  the slide, hematoxylin (nuclei, blue; channel 0 of ``rgb2hed``), with the
  same centre, percentiles and sampling.
- ``lfw_faces`` (specialized): face vs non-face on the 200 25×25 images of
  ``lfw_subset`` (100 each); fixed stratified 80/20 split, seed 0.

Patch tasks: train crops come from the left 75 % of each image's columns,
test crops from the right 25 %, so no test patch overlaps a train patch.
Crop positions are uniform and seeded by ``seed``; classes are balanced
(``ihc_dab``: positions uniform among those of the class, without
replacement, so no patch repeats within a split either).
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from mdlnb.core._checks import check_int
from mdlnb.core._task import Task
from mdlnb.data.registry import TaskSpec, register
from mdlnb.data.splits import stratified_split

# Imported inside the functions that use them, so that importing this module does not load
# them: scikit-image, scikit-learn.

TRAIN_FRACTION = 0.75  # of each image's width, from the left
# class name -> (file, rescale factor, crop box (row0, row1, col0, col1) as fractions)
TEXTURES = {
    "brick": ("brick.png", 1.0, (0, 1, 0, 1)),
    "grass": ("grass.png", 1.0, (0, 1, 0, 1)),
    "gravel": ("gravel.png", 1.0, (0, 1, 0, 1)),
    "moon": ("moon.png", 1.0, (0, 1, 0, 1)),
    "text": ("text.png", 1.0, (0.05, 0.95, 0, 1)),
}
SCIENTIFIC = {
    "retina": ("retina.jpg", 0.25, (0.2, 0.8, 0.2, 0.8)),  # inside the fundus disc
    "hubble": ("hubble_deep_field.jpg", 0.5, (0, 1, 0, 1)),
    "ihc": ("ihc.png", 1.0, (0, 1, 0, 1)),
    "cell": ("cell.png", 1.0, (0, 1, 0, 1)),
}
PHOTOS = {
    "astronaut": ("astronaut.png", 0.5, (0, 1, 0, 1)),
    "chelsea": ("chelsea.png", 0.75, (0, 1, 0, 1)),
    "coffee": ("coffee.png", 0.5, (0, 1, 0, 1)),
    "rocket": ("rocket.jpg", 0.5, (0, 1, 0, 1)),
    "motorcycle": ("motorcycle_left.png", 0.5, (0, 1, 0, 1)),
    "china": ("sklearn:china.jpg", 0.5, (0, 1, 0, 1)),
    "flower": ("sklearn:flower.jpg", 0.5, (0, 1, 0, 1)),
}
IHC = ("ihc.png", 1.0, (0, 1, 0, 1))
IHC_CENTRE = 16  # side of the centre square whose DAB density labels a patch
IHC_QUANTILES = (40, 60)  # class 0 below the first percentile, class 1 above the second


def data_dir() -> Path:
    import skimage

    return Path(skimage.__file__).parent / "data"


def file_path(file: str) -> Path:
    """Where ``file`` lies: scikit-image's data folder, or scikit-learn's images if ``sklearn:``."""
    if file.startswith("sklearn:"):
        import sklearn.datasets

        return Path(sklearn.datasets.__file__).parent / "images" / file.split(":", 1)[1]
    return data_dir() / file


@functools.lru_cache(maxsize=16)
def read_image(file: str, scale: float = 1.0, rgb: bool = False) -> np.ndarray:
    """uint8 ``(H, W, C)`` image from the wheel's data folder (C = 3 if ``rgb`` else 1).

    ``file`` is a name in scikit-image's data folder, or ``"sklearn:<name>"``
    for scikit-learn's sample images."""
    from skimage import color, io, transform

    path = file_path(file)
    if not path.is_file():
        package = "scikit-learn" if file.startswith("sklearn:") else "scikit-image"
        raise FileNotFoundError(
            f"{package} data file {str(path)!r} is missing; "
            f"reinstall {package} (the wheel ships it)"
        )
    img = io.imread(path)
    if img.ndim == 3 and img.shape[-1] == 4:
        img = img[..., :3]
    if scale != 1.0:
        img = transform.rescale(
            img,
            scale,
            anti_aliasing=True,
            preserve_range=True,
            channel_axis=-1 if img.ndim == 3 else None,
        )
    img = np.clip(np.rint(img), 0, 255).astype(np.uint8)
    if rgb and img.ndim == 2:
        img = np.repeat(img[..., None], 3, axis=-1)
    elif not rgb and img.ndim == 3:
        img = np.rint(color.rgb2gray(img) * 255).astype(np.uint8)
    img = img if img.ndim == 3 else img[..., None]
    img.setflags(write=False)
    return img


def region(img: np.ndarray, box: tuple[float, float, float, float], split: str) -> np.ndarray:
    """The part of ``img`` inside ``box`` that belongs to ``split`` (train: left, test: right)."""
    h, w = img.shape[:2]
    r0, r1, c0, c1 = (int(round(f * n)) for f, n in zip(box, (h, h, w, w)))
    cut = c0 + int(round(TRAIN_FRACTION * (c1 - c0)))
    return img[r0:r1, c0:cut] if split == "train" else img[r0:r1, cut:c1]


def random_crops(img: np.ndarray, n: int, patch: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` uniformly placed ``patch``×``patch`` crops of ``img`` (vectorized gather)."""
    h, w = img.shape[:2]
    if h < patch or w < patch:
        raise ValueError(f"patch: {patch} is larger than an image region of {h}×{w}")
    top = rng.integers(0, h - patch + 1, n)
    left = rng.integers(0, w - patch + 1, n)
    ar = np.arange(patch)
    return img[(top[:, None] + ar)[:, :, None], (left[:, None] + ar)[:, None, :]]


def _patch_task(
    name: str,
    group: str,
    sources: dict,
    rgb: bool,
    seed: int,
    n_train: int,
    n_test: int,
    patch: int,
) -> tuple[Task, Task]:
    n_train = check_int("n_train", n_train, minimum=1)
    n_test = check_int("n_test", n_test, minimum=1)
    patch = check_int("patch", patch, minimum=4)
    classes = tuple(sources)
    k = len(classes)
    rng = np.random.default_rng(seed)
    out = []
    for split, n in (("train", n_train), ("test", n_test)):
        per = np.full(k, n // k) + (np.arange(k) < n % k)
        xs, ys = [], []
        for c, (file, scale, box) in enumerate(sources.values()):
            part = region(read_image(file, scale, rgb), box, split)
            xs.append(random_crops(part, int(per[c]), patch, rng))
            ys.append(np.full(per[c], c))
        perm = rng.permutation(n)
        out.append(
            Task(
                name,
                np.concatenate(xs)[perm],
                np.concatenate(ys)[perm],
                k,
                group=group,
                meta={
                    "source": "scikit-image data folder",
                    "split": split,
                    "classes": classes,
                    "files": [v[0] for v in sources.values()],
                },
            )
        )
    return out[0], out[1]


def build_textures(
    seed: int = 0, *, n_train: int = 2_500, n_test: int = 500, patch: int = 32
) -> tuple[Task, Task]:
    """Texture patches: 5 classes, grey, train/test from disjoint image regions."""
    return _patch_task("textures", "natural", TEXTURES, False, seed, n_train, n_test, patch)


def build_sci_patches(
    seed: int = 0, *, n_train: int = 2_000, n_test: int = 400, patch: int = 32
) -> tuple[Task, Task]:
    """Scientific-image patches: 4 classes, RGB, train/test from disjoint image regions."""
    return _patch_task("sci_patches", "specialized", SCIENTIFIC, True, seed, n_train, n_test, patch)


def build_photo_patches(
    seed: int = 0, *, n_train: int = 3_500, n_test: int = 700, patch: int = 32
) -> tuple[Task, Task]:
    """Photograph patches: 7 classes, RGB, train/test from disjoint image regions."""
    return _patch_task("photo_patches", "natural", PHOTOS, True, seed, n_train, n_test, patch)


def centre_means(values: np.ndarray, patch: int, centre: int) -> np.ndarray:
    """Mean of ``values`` (H, W) over the centre ``centre``×``centre`` square of every
    ``patch``×``patch`` crop; entry ``[top, left]`` is the crop at that corner."""
    h, w = values.shape
    off = (patch - centre) // 2
    s = np.zeros((h + 1, w + 1))
    s[1:, 1:] = np.cumsum(np.cumsum(values, axis=0), axis=1)  # integral image
    r = np.arange(h - patch + 1)[:, None] + off
    c = np.arange(w - patch + 1)[None, :] + off
    total = s[r + centre, c + centre] - s[r, c + centre] - s[r + centre, c] + s[r, c]
    return total / (centre * centre)


#: The stains of ``skimage.color.rgb2hed``'s channels that label an ``ihc_*`` task.
STAINS = {"hematoxylin": 0, "dab": 2}


@functools.lru_cache(maxsize=4)
def _ihc_stain(stain: str, patch: int) -> tuple[np.ndarray, np.ndarray, tuple[float, float]]:
    """The slide (uint8 RGB), one stain's optical density, and the two class thresholds."""
    from skimage import color

    file, scale, _ = IHC
    img = read_image(file, scale, True)
    density = color.rgb2hed(img)[..., STAINS[stain]]
    stat = centre_means(density, patch, min(IHC_CENTRE, patch))
    lo, hi = np.percentile(stat, IHC_QUANTILES)
    density.setflags(write=False)
    return img, density, (float(lo), float(hi))


def _build_ihc(stain: str, seed: int, n_train: int, n_test: int, patch: int) -> tuple[Task, Task]:
    n_train = check_int("n_train", n_train, minimum=2)
    n_test = check_int("n_test", n_test, minimum=2)
    patch = check_int("patch", patch, minimum=4)
    img, density, (lo, hi) = _ihc_stain(stain, patch)
    centre = min(IHC_CENTRE, patch)
    for split in ("train", "test"):
        shape = region(img, IHC[2], split).shape[:2]
        if min(shape) < patch:
            raise ValueError(
                f"patch: {patch} is larger than the slide's {split} region {shape[0]}×{shape[1]}"
            )
    rng = np.random.default_rng(seed)
    label = {"dab": "DAB", "hematoxylin": "hematoxylin"}[stain]
    out = []
    for split, n in (("train", n_train), ("test", n_test)):
        part = region(img, IHC[2], split)
        part_density = region(density[..., None], IHC[2], split)[..., 0]
        stat = centre_means(part_density, patch, centre)
        per = (n // 2 + n % 2, n // 2)
        xs, ys = [], []
        for c, where in enumerate((stat < lo, stat > hi)):
            pos = np.flatnonzero(where)
            if len(pos) < per[c]:
                raise ValueError(
                    f"n_{split}: only {len(pos)} distinct class-{c} patch positions "
                    f"in the {split} region, asked for {per[c]}"
                )
            top, left = np.divmod(rng.choice(pos, per[c], replace=False), stat.shape[1])
            ar = np.arange(patch)
            xs.append(part[(top[:, None] + ar)[:, :, None], (left[:, None] + ar)[:, None, :]])
            ys.append(np.full(per[c], c))
        perm = rng.permutation(n)
        out.append(
            Task(
                f"ihc_{stain}",
                np.concatenate(xs)[perm],
                np.concatenate(ys)[perm],
                2,
                group="specialized",
                meta={
                    "source": "scikit-image data folder",
                    "split": split,
                    "classes": (f"low {label}", f"high {label}"),
                    "files": [IHC[0]],
                    "stain": stain,
                    "thresholds": (lo, hi),
                    "centre": centre,
                },
            )
        )
    return out[0], out[1]


def build_ihc_dab(
    seed: int = 0, *, n_train: int = 2_000, n_test: int = 400, patch: int = 32
) -> tuple[Task, Task]:
    """DAB stain in the patch centre, low (0) or high (1); train/test from disjoint regions."""
    return _build_ihc("dab", seed, n_train, n_test, patch)


def build_ihc_hematoxylin(
    seed: int = 0, *, n_train: int = 2_000, n_test: int = 400, patch: int = 32
) -> tuple[Task, Task]:
    """Hematoxylin (nuclei) stain in the patch centre, low (0) or high (1), as ``ihc_dab``."""
    return _build_ihc("hematoxylin", seed, n_train, n_test, patch)


@functools.lru_cache(maxsize=1)
def _lfw() -> tuple[np.ndarray, np.ndarray]:
    path = data_dir() / "lfw_subset.npy"
    if not path.is_file():
        raise FileNotFoundError(f"scikit-image data file {str(path)!r} is missing")
    faces = np.load(path, allow_pickle=False)
    x = np.rint(faces * 255).astype(np.uint8)[..., None]
    y = (np.arange(len(x)) >= 100).astype(np.int32)  # first 100 faces (0), then non-faces (1)
    return x, y


def build_lfw_faces(seed: int = 0) -> tuple[Task, Task]:
    """Face (0) vs non-face (1); fixed stratified 80/20 split. ``seed`` is unused."""
    x, y = _lfw()
    tr, te = stratified_split(y, 0.2, 0)
    meta = {"source": "skimage lfw_subset (LFW, Huang et al.)", "classes": ("face", "non-face")}
    return (
        Task("lfw_faces", x[tr], y[tr], 2, group="specialized", meta={**meta, "split": "train"}),
        Task("lfw_faces", x[te], y[te], 2, group="specialized", meta={**meta, "split": "test"}),
    )


_REGION = "crops from disjoint image regions (left 75 % / right 25 %), seeded"
register(
    TaskSpec(
        name="textures",
        group="natural",
        num_classes=len(TEXTURES),
        image_shape=(32, 32, 1),
        n_train=2_500,
        n_test=500,
        source="scikit-image: brick, grass, gravel, moon, text",
        split_rule=_REGION,
        build=build_textures,
        description="which texture photograph (5)",
    )
)
register(
    TaskSpec(
        name="sci_patches",
        group="specialized",
        num_classes=len(SCIENTIFIC),
        image_shape=(32, 32, 3),
        n_train=2_000,
        n_test=400,
        source="scikit-image: retina, hubble_deep_field, ihc, cell",
        split_rule=_REGION,
        build=build_sci_patches,
        description="which scientific image (4)",
    )
)
register(
    TaskSpec(
        name="photo_patches",
        group="natural",
        num_classes=len(PHOTOS),
        image_shape=(32, 32, 3),
        n_train=3_500,
        n_test=700,
        source="scikit-image: astronaut, chelsea, coffee, rocket, motorcycle_left; "
        "scikit-learn: china, flower",
        split_rule=_REGION,
        build=build_photo_patches,
        description="which photograph (7)",
    )
)
register(
    TaskSpec(
        name="ihc_dab",
        group="specialized",
        num_classes=2,
        image_shape=(32, 32, 3),
        n_train=2_000,
        n_test=400,
        source="scikit-image: ihc (IHC-stained tissue)",
        split_rule=_REGION + "; positions without replacement",
        build=build_ihc_dab,
        description="DAB stain in the patch centre: low vs high (40th/60th percentiles)",
    )
)
register(
    TaskSpec(
        name="ihc_hematoxylin",
        group="specialized",
        num_classes=2,
        image_shape=(32, 32, 3),
        n_train=2_000,
        n_test=400,
        source="scikit-image: ihc (IHC-stained tissue)",
        split_rule=_REGION + "; positions without replacement",
        build=build_ihc_hematoxylin,
        description="hematoxylin (nuclei) stain in the patch centre: low vs high (40th/60th "
        "percentiles)",
    )
)
register(
    TaskSpec(
        name="lfw_faces",
        group="specialized",
        num_classes=2,
        image_shape=(25, 25, 1),
        n_train=160,
        n_test=40,
        source="scikit-image lfw_subset (LFW)",
        split_rule="fixed stratified 80/20, seed 0",
        build=build_lfw_faces,
        description="face vs non-face",
    )
)
