"""One log-spaced integer grid: sizes, bin edges and plotting positions all come from here."""

from __future__ import annotations

import numpy as np


def log_integers(lo: float, hi: float, num: int) -> np.ndarray:
    """The distinct integers nearest to ``num`` log-uniform points on ``[lo, hi]``
    (both ends included), int64 and sorted: ``unique(round(geomspace(lo, hi, num)))``."""
    return np.unique(np.round(np.geomspace(lo, hi, num)).astype(np.int64))
