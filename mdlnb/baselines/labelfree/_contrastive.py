"""Alignment and uniformity (Wang & Isola 2020)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mdlnb.baselines.labelfree._inputs import _CHUNK, _normalize_rows, _real, features_matrix
from mdlnb.core._checks import check_positive


def alignment(z1: Any, z2: Any, *, alpha: float = 2.0) -> float:
    """L_align = mean_i ‖ẑ1_i − ẑ2_i‖₂^α over positive pairs (row i of ``z1``
    and of ``z2`` are two views of one input); ẑ = z/‖z‖. In [0, 2^α]; lower =
    better aligned."""
    a = features_matrix(z1, "z1")
    b = features_matrix(z2, "z2")
    if a.shape != b.shape:
        raise ValueError(f"z2: shape {b.shape} differs from z1 shape {a.shape}")
    check_positive(_real(alpha, "alpha"), "alpha")
    a = _normalize_rows(a, "z1").astype(np.float64)
    b = _normalize_rows(b, "z2").astype(np.float64)
    with np.errstate(over="ignore"):
        value = float(np.mean(np.linalg.norm(a - b, axis=1) ** alpha))
    if not math.isfinite(value):
        raise ValueError(f"alpha: {alpha} overflows float64 (L_align lies in [0, 2^alpha])")
    return value


def uniformity(z: Any, *, t: float = 2.0) -> float:
    """L_unif = log mean_{i<j} exp(−t ‖ẑ_i − ẑ_j‖²) in nats, ẑ = z/‖z‖. In
    [−4t, 0]; lower = more uniform on the sphere. Blocked over the upper
    triangle (N²D/2 multiply-adds), no N×N matrix held; log-sum-exp per row,
    rows combined in float64."""
    z = _normalize_rows(features_matrix(z, min_rows=2), "z")
    check_positive(_real(t, "t"), "t")
    n = len(z)
    row_lse = np.full(n, -np.inf)
    for a in range(0, n - 1, _CHUNK):
        b = min(a + _CHUNK, n)
        v = -t * np.maximum(2.0 - 2.0 * (z[a:b] @ z[a:].T), 0.0)  # −t‖ẑi − ẑj‖², j ≥ a
        v[np.tril_indices(b - a, 0, v.shape[1])] = -np.inf  # keep j > i only
        m = v.max(axis=1)
        ok = np.isfinite(m)
        s = np.exp(v[ok] - m[ok, None]).sum(axis=1, dtype=np.float64)
        row_lse[a:b][ok] = m[ok] + np.log(s)
    top = row_lse.max()
    return float(top + np.log(np.exp(row_lse - top).sum()) - np.log(n * (n - 1.0) / 2.0))
