"""Timing helper shared by the benchmarks."""

from __future__ import annotations

import math
import time
from collections.abc import Callable


def best_of(fn: Callable[[], object], repeats: int = 3, *, warmup: bool = True) -> float:
    """Minimum wall time (s) of ``repeats`` calls of ``fn``, after one untimed
    warm-up call (compilation, caches) when ``warmup``."""
    if warmup:
        fn()
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best
