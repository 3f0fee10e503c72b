"""Input validation shared by the transferability metrics.

Every public metric funnels its arrays through these helpers, so bad input
raises ``ValueError`` naming the argument before any numerics run.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mdlnb.core._checks import (
    as_array,
    check_labels,
    check_matrix,
    check_positive,
    check_same_length,
)


def features(x: Any, name: str = "features", *, keep_float32: bool = False) -> np.ndarray:
    """(N, D) finite real array → float64 (float32 input stays float32 if ``keep_float32``)."""
    a = check_matrix(x, name)
    if keep_float32 and a.dtype == np.float32:
        return a
    return a.astype(np.float64)


def labels(
    y: Any, n: int, num_classes: int | None, name: str = "labels", other: str = "features"
) -> tuple[np.ndarray, int]:
    """Integer labels of length ``n`` in ``[0, C)``; returns ``(labels, C)``.

    ``C`` defaults to ``max(labels) + 1``.
    """
    if num_classes is not None:
        if isinstance(num_classes, bool) or int(num_classes) != num_classes:
            raise ValueError(f"num_classes: must be an integer, got {num_classes!r}")
        num_classes = int(num_classes)
    yy = check_labels(y, num_classes, name)
    if len(yy) != n:
        raise ValueError(f"{other} and {name}: lengths differ ({n} vs {len(yy)})")
    c = int(num_classes) if num_classes is not None else int(yy.max()) + 1
    return yy.astype(np.int64), c


def probabilities(
    p: Any, name: str = "source_probs", *, normalized: bool = True, atol: float = 1e-4
) -> np.ndarray:
    """(N, Z) non-negative array; rows must sum to 1 (within ``atol``) if ``normalized``."""
    a = features(p, name)
    if np.any(a < 0):
        raise ValueError(f"{name}: must be non-negative, got min {a.min():.3g}")
    s = a.sum(axis=1)
    if normalized and not np.allclose(s, 1.0, atol=atol, rtol=0):
        i = int(np.argmax(np.abs(s - 1)))
        raise ValueError(f"{name}: rows must sum to 1, row {i} sums to {s[i]:.6g}")
    if not normalized and np.any(s <= 0):
        raise ValueError(f"{name}: every row needs a positive entry")
    return a


def hard_labels(z: Any, n: int, name: str = "source_labels") -> np.ndarray:
    """Source hard labels (N,) ints, or (N, Z) probabilities reduced by argmax."""
    a = as_array(z, name)
    if a.ndim == 2:
        a = probabilities(a, name, normalized=False)
        zz = np.argmax(a, axis=1)
        if len(zz) != n:
            raise ValueError(f"{name} and labels: lengths differ ({len(zz)} vs {n})")
        return zz.astype(np.int64)
    if a.ndim != 1:
        raise ValueError(
            f"{name}: expected (N,) labels or (N, Z) probabilities, got shape {a.shape}"
        )
    zz = check_labels(a, None, name).astype(np.int64)
    if len(zz) != n:
        raise ValueError(f"{name} and labels: lengths differ ({len(zz)} vs {n})")
    return zz


def positive(v: Any, name: str) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: must be a number, got {v!r}") from None
    return float(check_positive(f, name))


def fraction(v: Any, name: str) -> float:
    f = positive(v, name)
    if not f <= 1.0:
        raise ValueError(f"{name}: must lie in (0, 1], got {v}")
    return f


def same_length(a: np.ndarray, b: np.ndarray, name_a: str, name_b: str) -> None:
    check_same_length(a, b, name_a, name_b)
