"""Diverged experts: which columns of a loss matrix stop giving finite losses, and when.

An expert whose learning rate is too large can overflow: its parameters
become inf/NaN and so does every later loss L[t, k]. The switching forward
pass reads such a loss as +inf (the expert gives the label probability 0, so
its filtered weight p(ξ_t = k | D_≤t) is 0) and stays finite while some
expert with positive weight has a finite loss. Nothing is silent:
:func:`diverged` lists the experts and their first non-finite step, and
:class:`mdlnb.Report` warns with :class:`DivergenceWarning`.
"""

from __future__ import annotations

import numpy as np


class DivergenceWarning(RuntimeWarning):
    """Some experts produced non-finite losses (they diverged)."""


def diverged(losses) -> list[tuple[int, int]]:
    """``[(k, t), ...]``: each expert (column k, 0-indexed) with a non-finite loss
    (NaN or ±inf) and its first such step t (1-indexed, t = row + 1), by k.

    losses: (N, K) array of next-step log-losses in nats.
    """
    L = np.asarray(losses)
    if L.ndim != 2:
        raise ValueError(f"losses: expected a 2-D array (N, K), got shape {L.shape}")
    if L.dtype.kind not in "fiub":
        raise ValueError(f"losses: expected real numbers, got dtype {L.dtype}")
    if L.dtype.kind != "f" or L.shape[0] == 0:
        return []
    bad = ~np.isfinite(L)
    cols = np.flatnonzero(bad.any(axis=0))
    first = bad[:, cols].argmax(axis=0)
    return [(int(k), int(i) + 1) for k, i in zip(cols, first)]


def describe(diverged_experts, names) -> str:
    """One line: ``"2 of 5 experts diverged (…): mlp-lr1e20 at t=33, …"``."""
    shown = ", ".join(f"{names[k]} at t={t}" for k, t in diverged_experts[:5])
    more = f" and {len(diverged_experts) - 5} more" if len(diverged_experts) > 5 else ""
    return (
        f"{len(diverged_experts)} of {len(names)} experts diverged (non-finite losses, "
        f"probability 0 from then on): {shown}{more}"
    )
