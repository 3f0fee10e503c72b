"""Fashion-MNIST from Debian's ``dataset-fashion-mnist`` package (natural group).

The package installs the four gzipped idx files of Xiao et al. (2017) under
``/usr/share/datasets/fashion-mnist/``. The idx format is big-endian: a
4-byte magic (``0x00000803`` for 3-D uint8 images, ``0x00000801`` for 1-D
uint8 labels), one 4-byte size per dimension, then the raw bytes — image
data starts at byte 16, label data at byte 8. Official split: 60,000 train,
10,000 test, 28×28×1, 10 classes.

``fashion_mnist_category`` labels the same images (same splits) with a coarser
question, which kind of garment: top (T-shirt/top, pullover, coat, shirt),
one-piece or bottom (trouser, dress), footwear (sandal, sneaker, ankle boot) or
bag (``CATEGORY_OF``; 4 classes of 40 / 20 / 30 / 10 %). It is the second task
in the pretraining domain of the encoder study (the encoders pretrain on the
Fashion-MNIST training images).
"""

from __future__ import annotations

import functools
import gzip
import zlib
from pathlib import Path

import numpy as np

from mdlnb.core._task import Task
from mdlnb.data.registry import TaskSpec, register

ROOT = Path("/usr/share/datasets/fashion-mnist")
FILES = {
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
}
CLASSES = (
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
)
CATEGORIES = ("top", "one-piece or bottom", "footwear", "bag")
#: Category of each of the 10 classes (index into ``CATEGORIES``).
CATEGORY_OF = np.array([0, 1, 0, 1, 0, 2, 0, 2, 3, 2], np.int64)
IMAGE_MAGIC, LABEL_MAGIC = 0x803, 0x801


class MissingDataError(FileNotFoundError, ValueError):
    """A dataset's files are not on disk (an ``OSError`` and a ``ValueError``)."""


def read_idx(path: str | Path, ndim: int) -> np.ndarray:
    """Read a gzipped idx file of uint8 values with ``ndim`` dimensions.

    Raises ``ValueError`` naming the file if it is not gzip, is truncated,
    has the wrong magic number, or its length disagrees with its header.
    """
    path = Path(path)
    if not path.is_file():
        raise MissingDataError(f"root: missing file {str(path)!r}")
    try:
        with gzip.open(path, "rb") as f:
            raw = f.read()
    except (OSError, EOFError, zlib.error) as e:
        raise ValueError(f"root: {path.name} is not a readable gzip file ({e})") from None
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise ValueError(f"root: {path.name} is too short for an idx header ({len(raw)} bytes)")
    magic = int.from_bytes(raw[:4], "big")
    want = 0x800 + ndim  # 0x08 = unsigned byte, then the number of dimensions
    if magic != want:
        raise ValueError(f"root: {path.name} has magic number {magic:#010x}, expected {want:#010x}")
    shape = tuple(int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    if len(raw) - header != int(np.prod(shape)):
        raise ValueError(
            f"root: {path.name} holds {len(raw) - header} data bytes, "
            f"header says {shape} = {int(np.prod(shape))}"
        )
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(shape)


@functools.lru_cache(maxsize=4)
def _read_split(root: str, split: str) -> tuple[np.ndarray, np.ndarray]:
    img_file, lab_file = FILES[split]
    x = read_idx(Path(root) / img_file, 3)
    y = read_idx(Path(root) / lab_file, 1)
    if len(x) != len(y):
        raise ValueError(f"root: {img_file} has {len(x)} images but {lab_file} {len(y)} labels")
    if y.max() >= len(CLASSES):
        raise ValueError(f"root: {lab_file} has label {int(y.max())} outside [0, {len(CLASSES)})")
    x = x[..., None]  # (N, 28, 28, 1); frombuffer arrays are read-only, so the cache is safe
    return x, y


def build(seed: int = 0, *, root: str | Path = ROOT) -> tuple[Task, Task]:
    """The official train (60,000) and test (10,000) splits. ``seed`` is unused."""
    root = Path(root)
    if not root.is_dir():
        raise MissingDataError(
            f"root: Fashion-MNIST not found at {str(root)!r}. Install it with "
            "`sudo apt-get install dataset-fashion-mnist` (or `make setup`), "
            "or pass root= pointing at the four idx .gz files."
        )
    out = []
    for split in ("train", "test"):
        x, y = _read_split(str(root.resolve()), split)
        out.append(
            Task(
                "fashion_mnist",
                x,
                y,
                len(CLASSES),
                group="natural",
                meta={
                    "source": "Debian dataset-fashion-mnist",
                    "root": str(root),
                    "split": split,
                    "classes": CLASSES,
                },
            )
        )
    return out[0], out[1]


SPEC = register(
    TaskSpec(
        name="fashion_mnist",
        group="natural",
        num_classes=10,
        image_shape=(28, 28, 1),
        n_train=60_000,
        n_test=10_000,
        source="Debian dataset-fashion-mnist (Xiao et al. 2017)",
        split_rule="official",
        build=build,
        description="clothing category (10)",
    )
)


def build_category(seed: int = 0, *, root: str | Path = ROOT) -> tuple[Task, Task]:
    """The official splits labelled by garment category (``CATEGORIES``). ``seed`` is unused."""
    out = []
    for t in build(seed, root=root):
        out.append(
            Task(
                "fashion_mnist_category",
                t.x,
                CATEGORY_OF[t.y],
                len(CATEGORIES),
                group="natural",
                meta={**t.meta, "classes": CATEGORIES, "category_of": tuple(CATEGORY_OF.tolist())},
            )
        )
    return out[0], out[1]


register(
    TaskSpec(
        name="fashion_mnist_category",
        group="natural",
        num_classes=len(CATEGORIES),
        image_shape=(28, 28, 1),
        n_train=60_000,
        n_test=10_000,
        source="Debian dataset-fashion-mnist (Xiao et al. 2017)",
        split_rule="official",
        build=build_category,
        description="garment category (4): top, one-piece/bottom, footwear, bag",
    )
)
