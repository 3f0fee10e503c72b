"""Per-feature standardisation: one zero-variance rule, an optional clip.

Every place that z-scores features uses these functions: stage 1's online
prefix statistics (:mod:`mdlnb.prequential`), block-wise MDL and the offline
probes (:mod:`mdlnb.core._fit`, :mod:`mdlnb.baselines.probes`), and the transferability
study. With per-feature mean ``μ`` and (biased) variance ``σ²`` of the rows
the statistics are taken from,

    z = clip((x − μ) · s, −c, c),   s = 1/σ if σ² > ε_rel·μ² + ε_abs else 1,

so a feature that is constant on those rows (up to the round-off of a
one-pass float64 variance, ``ε_rel = 1e-12``; ``ε_abs = 1e-30``) is only
centred, never divided by ~0. The clip ``c`` (``None``: no clip) bounds what
a readout can see when the statistics come from few rows: stage 1 codes
each batch with the statistics of the examples *before* it, and a feature
that was nearly constant so far reaches the readout as z ~ 1e4–1e6 without
it (:data:`CLIP_Z` = 10 is the protocol's ``"prefix"`` clip).

The functions accept NumPy or JAX arrays and return the same kind (JAX
inside ``jit``). Statistics are dimensionless; units of ``x`` cancel.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

# Imported inside the functions that use them, so that importing this module does not load
# them: JAX.

CLIP_Z = 10.0  #: the clip of the ``"prefix"`` standardisation of stage 1
VAR_RTOL = 1e-12  #: σ² ≤ VAR_RTOL·μ² + VAR_ATOL counts as zero variance
VAR_ATOL = 1e-30


def _xp(*arrays: Any):
    import jax
    import jax.numpy as jnp

    return jnp if any(isinstance(a, jax.Array) for a in arrays) else np


class Moments(NamedTuple):
    """Per-feature mean and inverse scale ``s`` (1/σ, or 1 for a constant feature)."""

    mean: Any
    inv_std: Any


def inv_std(mean: Any, var: Any) -> Any:
    """``1/σ`` where the variance is not zero up to round-off, else 1 (the one rule)."""
    xp = _xp(mean, var)
    var = xp.maximum(var, 0.0)
    ok = var > VAR_RTOL * mean * mean + VAR_ATOL
    return xp.where(ok, 1.0 / xp.sqrt(xp.where(ok, var, 1.0)), 1.0)


def from_sums(s1: Any, s2: Any, count: Any) -> Moments:
    """:class:`Moments` from running sums ``Σx``, ``Σx²`` over ``count`` rows (float64
    on the host; ``count`` may be an array broadcasting against the leading axes)."""
    xp = _xp(s1, s2)
    count = xp.maximum(xp.asarray(count, s1.dtype), 1.0)
    if getattr(count, "ndim", 0):
        count = count[..., None]
    mean = s1 / count
    return Moments(mean, inv_std(mean, s2 / count - mean * mean))


def fit(x: Any, mask: Any = None) -> Moments:
    """:class:`Moments` of the rows of ``x`` (N, D) where ``mask`` (N,) is set (all rows
    if None); two-pass mean and variance. NumPy input is computed in float64."""
    xp = _xp(x, mask)
    if xp is np:
        x = np.asarray(x, np.float64)
    w = xp.ones(x.shape[:1], x.dtype) if mask is None else xp.asarray(mask).astype(x.dtype)
    n = xp.maximum(xp.sum(w), 1.0)
    mean = xp.sum(w[:, None] * x, axis=0) / n
    var = xp.sum(w[:, None] * (x - mean) ** 2, axis=0) / n
    return Moments(mean, inv_std(mean, var))


def apply(x: Any, moments: Moments, *, clip: float | None = None) -> Any:
    """``(x − μ)·s``, clipped to ``±clip`` when ``clip`` is given."""
    xp = _xp(x, moments.mean)
    z = (x - moments.mean) * moments.inv_std
    return z if clip is None else xp.clip(z, -clip, clip)


def zscore(x: Any, *, clip: float | None = None) -> Any:
    """Standardise ``x`` (N, D) with its own statistics: :func:`apply` of :func:`fit`.

    NumPy input returns float32."""
    if _xp(x) is np:
        x = np.asarray(x, np.float64)
        return apply(x, fit(x), clip=clip).astype(np.float32)
    return apply(x, fit(x), clip=clip)
