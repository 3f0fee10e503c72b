"""Shared plumbing for procedural tasks: seeds, disjoint splits, a disk cache.

Train and test are drawn from one seeded stream and made disjoint by removing
every repeated image (byte-identical) before splitting, so no test image also
appears in train, for any seed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from mdlnb.infra._io import atomic_savez, cache_dir, content_hash, load_entry

CACHE_AFTER_S = 2.0  # builds slower than this are cached on disk


# How every procedural task splits (recorded in the registry).
SPLIT_RULE = "one seeded stream, repeated images dropped, first n_train / next n_test"


def first_unique(images: np.ndarray) -> np.ndarray:
    """Sorted indices of the first occurrence of each distinct image."""
    flat = np.ascontiguousarray(images.reshape(len(images), -1))
    rows = flat.view(np.dtype((np.void, flat.shape[1])))[:, 0]
    _, first = np.unique(rows, return_index=True)
    return np.sort(first)


def disjoint_split(images: np.ndarray, n_train: int, n_test: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices ``(train, test)``: the first ``n_train`` distinct images, then the next ``n_test``."""
    keep = first_unique(images)
    if len(keep) < n_train + n_test:
        raise ValueError(
            f"n_train: only {len(keep)} distinct images for n_train + n_test = "
            f"{n_train + n_test}; enlarge the image or the factor ranges"
        )
    return keep[:n_train], keep[n_train : n_train + n_test]


def add_noise(images: np.ndarray, noise: float, rng: np.random.Generator) -> np.ndarray:
    """Add Gaussian pixel noise of std ``noise`` (uint8 units) and clip to 0..255."""
    if not np.isfinite(noise) or noise < 0:
        raise ValueError(f"noise: must be >= 0 (std in uint8 units), got {noise}")
    if noise == 0:
        return images
    noisy = images.astype(np.float32) + rng.normal(0.0, noise, images.shape).astype(np.float32)
    return np.clip(np.rint(noisy), 0, 255).astype(np.uint8)


def cached(
    kind: str,
    params: Mapping[str, Any],
    make: Callable[[], dict[str, np.ndarray]],
    *,
    cache: bool = True,
) -> dict[str, np.ndarray]:
    """``make()`` → dict of arrays, stored in ``cache_dir("data")`` when it took > 2 s.

    The key hashes ``kind`` and ``params`` (and ``make``'s module version
    string ``VERSION`` via ``params``); the file is written atomically.
    """
    path = cache_dir("data") / f"{kind}-{content_hash(kind, dict(params))}.npz"
    hit = load_entry(path) if cache else None  # None: absent, or damaged (warned, recomputed)
    if hit is not None:
        return hit
    t0 = time.perf_counter()
    out = make()
    if cache and time.perf_counter() - t0 > CACHE_AFTER_S:
        atomic_savez(path, **out)
    return out
