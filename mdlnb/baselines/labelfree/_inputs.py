"""Input validation shared by the label-free metrics: each check raises
``ValueError`` naming the argument."""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from mdlnb.core._checks import check_int, check_matrix

_METRICS = ("euclidean", "cosine")  # "precomputed" too, for TwoNN only
_CHUNK = 1024  # rows per block of a blocked distance computation
_CANDIDATES = 8  # float32 neighbour candidates re-checked in float64


def features_matrix(z: Any, name: str = "z", *, min_rows: int = 1) -> np.ndarray:
    """Validated (N, D) float32 feature matrix; ValueError naming ``name``."""
    a = check_matrix(z, name)
    if a.shape[0] < min_rows:
        raise ValueError(f"{name}: needs at least {min_rows} rows, got {a.shape[0]}")
    return a.astype(np.float32, copy=False)


def _normalize_rows(z: np.ndarray, name: str) -> np.ndarray:
    norms = np.linalg.norm(z.astype(np.float64), axis=1)
    if np.any(norms == 0):
        raise ValueError(
            f"{name}: row {int(np.argmax(norms == 0))} has zero norm; cannot L2-normalize"
        )
    return (z / norms[:, None]).astype(np.float32)


def _check_metric(metric: str) -> str:
    if metric not in _METRICS:
        raise ValueError(f"metric: expected one of {_METRICS}, got {metric!r}")
    return metric


def _as_key(key: Any) -> jax.Array:
    if isinstance(key, (int, np.integer)):
        return jax.random.PRNGKey(int(key))
    try:
        k = jnp.asarray(key)
    except (TypeError, ValueError):
        raise ValueError(f"key: expected a jax PRNG key or an int seed, got {key!r}") from None
    if jnp.issubdtype(k.dtype, jax.dtypes.prng_key) or (k.shape == (2,) and k.dtype == jnp.uint32):
        return k
    raise ValueError(f"key: expected a jax PRNG key or an int seed, got {key!r}")


def _integer(v: Any, name: str, minimum: int) -> int:
    """``v`` as an int >= ``minimum`` (integral floats accepted); ValueError naming ``name``
    for NaN, ±inf, fractions, bools, strings or None."""
    return check_int(name, v, minimum=minimum, whole_floats=True)


def _real(v: Any, name: str) -> float:
    """``v`` as a float; ValueError naming ``name`` for strings, None or NaN."""
    if not isinstance(v, (int, float, np.integer, np.floating)) or math.isnan(v):
        raise ValueError(f"{name}: must be a real number, got {v!r}")
    return float(v)


def _default_clusters(n: int, n_clusters: int | None) -> int:
    k = (
        max(1, int(round(math.sqrt(n))))
        if n_clusters is None
        else _integer(n_clusters, "n_clusters", 1)
    )
    if not 1 <= k <= n:
        raise ValueError(f"n_clusters: must lie in [1, N={n}], got {n_clusters}")
    return k
