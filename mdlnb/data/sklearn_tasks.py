"""scikit-learn's handwritten digits (natural group).

``sklearn.datasets.load_digits`` ships 1,797 8×8 images with 17 grey levels
(0..16); they are mapped to uint8 by ``round(v · 255 / 16)``. There is no
official split: a fixed stratified 80/20 split (seed 0, the same for every
``load`` seed) gives 1,438 train and 359 test images.
"""

from __future__ import annotations

import functools

import numpy as np

from mdlnb._task import Task
from mdlnb.data.registry import TaskSpec, register
from mdlnb.data.splits import stratified_split

TEST_FRACTION = 0.2
SPLIT_SEED = 0


@functools.lru_cache(maxsize=1)
def _digits() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    d = load_digits()
    x = np.round(d.images * (255.0 / 16.0)).astype(np.uint8)[..., None]
    y = d.target.astype(np.int32)
    x.setflags(write=False)
    y.setflags(write=False)
    return x, y


def build(seed: int = 0) -> tuple[Task, Task]:
    """Fixed stratified 80/20 split of the 1,797 digits. ``seed`` is unused."""
    x, y = _digits()
    tr, te = stratified_split(y, TEST_FRACTION, SPLIT_SEED)
    meta = {"source": "sklearn.datasets.load_digits", "split_seed": SPLIT_SEED}
    return (Task("digits", x[tr], y[tr], 10, group="natural", meta={**meta, "split": "train"}),
            Task("digits", x[te], y[te], 10, group="natural", meta={**meta, "split": "test"}))


SPEC = register(TaskSpec(
    name="digits", group="natural", num_classes=10, image_shape=(8, 8, 1),
    n_train=1_438, n_test=359, source="scikit-learn load_digits (UCI optdigits test set)",
    split_rule="fixed stratified 80/20, seed 0", build=build, description="digit 0-9"))
