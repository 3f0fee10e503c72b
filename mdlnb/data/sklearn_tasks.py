"""scikit-learn's handwritten digits (natural group) and diabetes (regression).

``sklearn.datasets.load_digits`` ships 1,797 8×8 images with 17 grey levels
(0..16); they are mapped to uint8 by ``round(v · 255 / 16)``. There is no
official split: a fixed stratified 80/20 split (seed 0, the same for every
``load`` seed) gives 1,438 train and 359 test images.

``sklearn.datasets.load_diabetes`` (Efron et al. 2004, "Least angle
regression") ships offline: 442 patients, 10 baseline features (age, sex,
BMI, blood pressure, six serum measurements; the raw, unscaled values,
``scaled=False``) and a real target, a quantitative measure of disease
progression one year later (25…346, integers). A regression task
(``kind="regression"``, :mod:`mdlnb.core._targets`), of feature vectors, not
images, in no VTAB group; a fixed random 80/20 split (seed 0): 354 train, 88
test. Its targets are recorded to the unit, so δ = 1: its density
codelengths are codelengths of the recorded integers up to the quantisation
term, which is then −log 1 = 0 to first order.
"""

from __future__ import annotations

import functools

import numpy as np

from mdlnb.core._task import Task
from mdlnb.data.registry import TaskSpec, register
from mdlnb.data.splits import stratified_split

# Imported inside the functions that use them, so that importing this module does not load
# them: scikit-learn.

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
    return (
        Task("digits", x[tr], y[tr], 10, group="natural", meta={**meta, "split": "train"}),
        Task("digits", x[te], y[te], 10, group="natural", meta={**meta, "split": "test"}),
    )


SPEC = register(
    TaskSpec(
        name="digits",
        group="natural",
        num_classes=10,
        image_shape=(8, 8, 1),
        n_train=1_438,
        n_test=359,
        source="scikit-learn load_digits (UCI optdigits test set)",
        split_rule="fixed stratified 80/20, seed 0",
        build=build,
        description="digit 0-9",
    )
)


@functools.lru_cache(maxsize=1)
def _diabetes() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_diabetes

    d = load_diabetes(scaled=False)
    x = np.asarray(d.data, np.float32)
    y = np.asarray(d.target, np.float64)
    x.setflags(write=False)
    y.setflags(write=False)
    return x, y


def build_diabetes(seed: int = 0) -> tuple[Task, Task]:
    """Fixed random 80/20 split (seed 0) of the 442 diabetes patients. ``seed`` is unused."""
    x, y = _diabetes()
    perm = np.random.default_rng(SPLIT_SEED).permutation(len(y))
    n_test = int(round(TEST_FRACTION * len(y)))
    te, tr = np.sort(perm[:n_test]), np.sort(perm[n_test:])
    meta = {
        "source": "sklearn.datasets.load_diabetes(scaled=False)",
        "split_seed": SPLIT_SEED,
        "target": "disease progression one year after baseline",
        "target_units": "score",
        "quantisation": 1.0,
    }
    return (
        Task(
            "diabetes", x[tr], y[tr], group=None, kind="regression", meta={**meta, "split": "train"}
        ),
        Task(
            "diabetes", x[te], y[te], group=None, kind="regression", meta={**meta, "split": "test"}
        ),
    )


DIABETES = register(
    TaskSpec(
        name="diabetes",
        group=None,
        num_classes=0,
        image_shape=(10,),
        n_train=354,
        n_test=88,
        source="scikit-learn load_diabetes (Efron et al. 2004)",
        split_rule="fixed random 80/20, seed 0",
        build=build_diabetes,
        description="disease progression after one year (real, 25-346)",
        kind="regression",
    )
)
