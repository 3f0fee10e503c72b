"""User images: one subfolder per class (``root/<class>/<image>.png``).

Classes are the subfolder names in sorted order (label = index). Images are
read with ``skimage.io.imread`` (PNG, JPEG, BMP, TIFF, GIF first frame),
resized to ``size`` with anti-aliasing, and stored as uint8 ``(N, H, W, C)``:
C = 1 when every image is grey, else 3 (grey images repeated, alpha dropped).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from mdlnb.core._checks import check_int
from mdlnb.core._task import GROUPS, Task

# Imported inside the functions that use them, so that importing this module does not load
# them: scikit-image.

EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".gif")


def _read(path: Path, size: tuple[int, int]) -> np.ndarray:
    from skimage import io, transform

    try:
        with warnings.catch_warnings():  # imageio's plugin probing warns on unreadable files
            warnings.simplefilter("ignore", DeprecationWarning)
            img = np.asarray(io.imread(path))
    except Exception as e:  # imageio/PIL raise many types for bad files
        raise ValueError(
            f"path: cannot read image {str(path)!r} ({type(e).__name__}: {e})"
        ) from None
    if img.ndim == 4 or (img.ndim == 3 and img.shape[-1] not in (1, 3, 4)):
        img = img[0]  # first frame of an animation / stack
    if img.ndim == 3 and img.shape[-1] == 4:
        img = img[..., :3]
    if img.ndim == 3 and img.shape[-1] == 1:
        img = img[..., 0]
    if img.ndim not in (2, 3) or img.size == 0:
        raise ValueError(f"path: {str(path)!r} is not a 2-D image (shape {img.shape})")
    if img.dtype != np.uint8:
        hi = 1.0 if img.dtype.kind == "f" else float(np.iinfo(img.dtype).max)
        img = np.clip(np.rint(img.astype(np.float64) / hi * 255), 0, 255).astype(np.uint8)
    if img.shape[:2] != tuple(size):
        img = transform.resize(img, size, anti_aliasing=True, preserve_range=True)
        img = np.clip(np.rint(img), 0, 255).astype(np.uint8)
    return img


def from_image_folder(
    path: str | Path,
    size: tuple[int, int] = (32, 32),
    *,
    name: str | None = None,
    group: str | None = None,
) -> Task:
    """A ``Task`` from ``path/<class>/*.{png,jpg,...}``.

    Raises ``ValueError`` naming ``path`` for a missing or empty folder, fewer
    than two classes, a class folder without images, or an unreadable file.
    """
    root = Path(path)
    if not root.is_dir():
        raise ValueError(f"path: {str(root)!r} is not a folder")
    if not isinstance(size, (tuple, list)) or len(size) != 2:
        raise ValueError(f"size: must be (H, W) positive integers, got {size!r}")
    for i, v in enumerate(size):
        check_int(f"size[{i}]", v, minimum=1)
    if group is not None and group not in GROUPS:
        raise ValueError(f"group: must be one of {GROUPS} or None, got {group!r}")
    classes = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    if len(classes) < 2:
        raise ValueError(
            f"path: {str(root)!r} needs one subfolder per class (at least 2), found {classes}"
        )
    images, labels = [], []
    for c, cls in enumerate(classes):
        files = sorted(p for p in (root / cls).iterdir() if p.suffix.lower() in EXTENSIONS)
        if not files:
            raise ValueError(
                f"path: class folder {str(root / cls)!r} has no images ({', '.join(EXTENSIONS)})"
            )
        images += [_read(f, tuple(size)) for f in files]
        labels += [c] * len(files)
    if all(im.ndim == 2 for im in images):
        x = np.stack(images)[..., None]
    else:
        x = np.stack([im if im.ndim == 3 else np.repeat(im[..., None], 3, -1) for im in images])
    return Task(
        name or root.name,
        x,
        np.asarray(labels),
        len(classes),
        group=group,
        meta={"source": str(root), "classes": tuple(classes), "size": tuple(size)},
    )
