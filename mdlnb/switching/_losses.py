"""The checks of a loss matrix: its shape before a pass, its values after.

:func:`check_losses` takes the argument (an (N, K) real array); the values
are checked inside the pass itself, whose per-row flags
(:data:`~mdlnb.switching._primitives.FLAG_NEGATIVE`, ``FLAG_ALL_INF``) and
per-step losses :func:`raise_for_flags` turns into a ValueError naming the
first bad step.
"""

from __future__ import annotations

import jax
import numpy as np

from mdlnb.core._checks import as_array
from mdlnb.switching._primitives import FLAG_NEGATIVE


def check_losses(losses, name: str = "losses") -> np.ndarray | jax.Array:
    """(N, K) real array with N, K ≥ 1 (a JAX array stays one); values are
    checked inside the pass."""
    if isinstance(losses, jax.Array):
        L: np.ndarray | jax.Array = losses
        if L.ndim != 2:
            raise ValueError(f"{name}: expected a 2-D array, got shape {L.shape}")
    else:
        L = as_array(losses, name, ndim=2)
    if L.dtype.kind not in "fiu":
        raise ValueError(f"{name}: expected real numbers, got dtype {L.dtype}")
    if L.shape[0] == 0 or L.shape[1] == 0:
        raise ValueError(f"{name}: needs N >= 1 rows and K >= 1 experts, got shape {L.shape}")
    return L


def raise_for_flags(
    flags: np.ndarray, per_step: np.ndarray, offset: int, name: str = "losses"
) -> None:
    """ValueError naming the first bad step (1-indexed t = row + 1)."""
    bad = np.flatnonzero(flags)
    if bad.size:
        i = int(bad[0])
        f, t = int(flags[i]), offset + i + 1
        if f & FLAG_NEGATIVE:
            raise ValueError(
                f"{name}: negative loss at step t={t} (row {t - 1}); log-losses are >= 0"
            )
        raise ValueError(f"{name}: every expert has an infinite loss at step t={t} (row {t - 1})")
    inf = np.flatnonzero(~np.isfinite(per_step))
    if inf.size:
        t = offset + int(inf[0]) + 1
        raise ValueError(
            f"{name}: the mixture gives zero probability at step t={t} (row {t - 1}): every expert "
            "with positive weight has an infinite loss there"
        )
