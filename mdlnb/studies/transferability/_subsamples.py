"""Few-shot subsamples (PACTran Sec. 4.1.4): N = max(ratio·K, min_n), stratified,
seeded per (seed, ratio, repeat), the same examples for every encoder."""

from __future__ import annotations

from typing import Any

import numpy as np

from mdlnb.core._checks import check_int
from mdlnb.data import stratified_indices


def subsample_size(ratio: int, num_classes: int, min_n: int = 20) -> int:
    """N = max(ratio · K, min_n) (PACTran Sec. 4.1.4)."""
    for name, v in (("ratio", ratio), ("num_classes", num_classes), ("min_n", min_n)):
        check_int(name, v, minimum=1)
    return max(int(ratio) * int(num_classes), int(min_n))


def subsample_seed(seed: int, ratio: int, repeat: int) -> int:
    """A 32-bit seed for subsample ``repeat`` of setting ``ratio`` (independent streams)."""
    return int(np.random.SeedSequence([int(seed), int(ratio), int(repeat)]).generate_state(1)[0])


def subsample_indices(
    labels: Any, ratio: int, num_classes: int, *, min_n: int = 20, seed: int = 0, repeat: int = 0
) -> np.ndarray:
    """Sorted indices of one stratified subsample of N = max(ratio·K, min_n) examples.

    Depends only on the labels and seeds, so every encoder sees the same examples.
    """
    y = np.asarray(labels)
    n = subsample_size(ratio, num_classes, min_n)
    if n > len(y):
        raise ValueError(f"ratio: N = {n} examples exceed the {len(y)} of the training split")
    return stratified_indices(y, n, subsample_seed(seed, ratio, repeat))
