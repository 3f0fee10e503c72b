"""Task kinds and how a readout's outputs code a target: class labels or real values.

Two kinds (:data:`KINDS`):

* ``"classification"``: ``y`` holds class indices in ``[0, C)``; a readout
  outputs C logits ``o`` and codes a label with ``−log softmax(o)[y]`` nats —
  a code length, up to the arithmetic coder's ≤ 2 bits per message.
* ``"regression"``: ``y`` holds real targets, ``(N,)`` or ``(N, P)``; a readout
  outputs ``2P`` numbers ``o = (μ, r)`` read as a Gaussian predictive density
  of the *standardised* target ``z`` (below), independent across outputs,
  with a **heteroscedastic** log-variance head (the variance depends on the
  input through the same network as the mean)::

      log σ_p² = s_p = L · tanh(r_p / L),   L = LOGVAR_BOUND = 12,
      −log p(z | x) = Σ_p ½ (log 2π + s_p + (z_p − μ_p)² e^{−s_p})   nats.

  ``tanh`` bounds σ to ``[e^{−6}, e^{6}]`` standardised units, so a readout
  cannot buy an unbounded density on one lucky example, and is the identity
  to first order near 0: a zero-initialised output layer predicts
  N(0, 1) for every output (the standardised target's unit variance).

**Target standardisation (stage 1).** Like the features, the targets are
z-scored with the statistics of the examples *before* each batch (float64
running sums, :func:`mdlnb.core._standardize.from_sums`; not clipped):
``z = (y − m_{<t}) · s_{<t}``. The density of the raw target is then
``p(y) = p(z) · Π_p s_{<t,p}``, so stage 1 records
``−log p(z) − Σ_p log s_{<t,p}`` nats: a density of ``y`` in the units the user
gave, the same for every expert's column apart from its own ``−log p(z)``.
Under ``standardize="none"`` ``m = 0``, ``s = 1``.

**The first batch** has no past to standardise by or learn from. Where a
classification stream codes it uniformly (``log C``), a regression stream
codes it with the Gaussian fitted to that batch itself (maximum-likelihood
mean and variance per output, the zero-variance rule of
:mod:`mdlnb.core._standardize`): :func:`first_batch_nats`,
``Σ_p ½ (log 2π + z_p²) − log s_p`` per example with the batch's own
``(m, s)``; in total ``B/2 · Σ_p (log 2π σ̂_p² + 1)``. It is the same for every
expert (so switching is unaffected) and is *not* a proper code: the 2P
fitted numbers are not transmitted (about ``P log B`` nats more for a real
code). A convention, recorded in the loss matrix's ``meta["target"]``.

**Quantisation caveat** (:data:`QUANTISATION_NOTE`). A density is not a
probability: coding a real ``y`` to precision δ (per output) costs
``−log p(y) − P log δ + o(1)`` nats, so a density codelength equals a
codelength only up to ``−log δ`` per example and output, and changes by
``log a`` per example when ``y`` is rescaled by ``a``. Density codelengths of
one task with one target (the same δ) rank representations; they are never
comparable with, or summed with, classification codelengths.

References: Nix & Weigend (1994), mean–variance networks; Grünwald (2007),
*The MDL Principle*, Sec. 3.1 (codes for continuous data by discretisation).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mdlnb.core import _standardize

# Imported inside the functions that use them, so that importing this module does not load
# them: JAX.

KINDS = ("classification", "regression")
LOGVAR_BOUND = 12.0
LOG_2PI = math.log(2.0 * math.pi)
#: the stage-1 code of a regression target; part of the cache key (v1)
GAUSSIAN_CODE = "gaussian-heteroscedastic-v1"

QUANTISATION_NOTE = (
    "density codelength: -log p(y) of real targets, nats; it equals a codelength only up to "
    "the targets' quantisation, -log(delta) nats per example and output (coding y to "
    "precision delta), so compare it only with density codelengths of the same targets in "
    "the same units, never with classification codelengths"
)


def check_kind(kind: Any, name: str = "kind") -> str:
    """``kind`` if it is one of :data:`KINDS`, else a ValueError naming ``name``."""
    if kind not in KINDS:
        raise ValueError(f"{name}: must be one of {KINDS}, got {kind!r}")
    return kind


def gaussian_split(outputs: Any):
    """``(μ, s)`` of a regression readout's outputs ``(..., 2P)``: the first P are the
    mean, the last P the raw log-variance, bounded as ``s = L tanh(r / L)``."""
    import jax.numpy as jnp

    p = outputs.shape[-1] // 2
    return outputs[..., :p], LOGVAR_BOUND * jnp.tanh(outputs[..., p:] / LOGVAR_BOUND)


def gaussian_nll(outputs: Any, z: Any) -> Any:
    """Per-example ``−log p(z)`` in nats, ``(B,)``, of standardised targets ``z`` (B, P)
    under the diagonal Gaussian of ``outputs`` (B, 2P) (JAX; see the module docstring)."""
    import jax.numpy as jnp

    mu, s = gaussian_split(outputs)
    return 0.5 * jnp.sum(LOG_2PI + s + jnp.square(z - mu) * jnp.exp(-s), axis=-1)


def gaussian_nll_np(mean: np.ndarray, var: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``−log N(y; mean, var)`` summed over the last axis, float64 NumPy (a reference)."""
    mean, var, y = (np.asarray(a, np.float64) for a in (mean, var, y))
    return 0.5 * np.sum(LOG_2PI + np.log(var) + (y - mean) ** 2 / var, axis=-1)


def as_targets(y: np.ndarray) -> np.ndarray:
    """Regression targets as a float64 ``(N, P)`` matrix (a ``(N,)`` vector is P = 1)."""
    y = np.asarray(y, np.float64)
    return y[:, None] if y.ndim == 1 else y


def prefix_moments(y: np.ndarray, batch_size: int, standardize: bool):
    """Per batch ``t`` the target moments ``(m, s)`` of the examples before it and up to
    its end, for ``y`` (N, P) in stream order: arrays ``(T + 1, P)`` indexed by the
    number of batches seen (row 0: nothing seen: ``m = 0``, ``s = 1``), float64
    running sums and :func:`mdlnb.core._standardize.from_sums`. ``standardize=False``:
    ``m = 0``, ``s = 1`` throughout."""
    y = np.asarray(y, np.float64)
    n, p = y.shape
    t = math.ceil(n / batch_size)
    ends = np.minimum(np.arange(t + 1) * batch_size, n)
    c1 = np.concatenate([np.zeros((1, p)), np.cumsum(y, axis=0)])[ends]
    c2 = np.concatenate([np.zeros((1, p)), np.cumsum(y * y, axis=0)])[ends]
    mean, inv = _standardize.from_sums(c1, c2, ends.astype(np.float64))
    if not standardize:
        mean, inv = np.zeros_like(mean), np.ones_like(inv)
    return mean, inv


def first_batch_nats(y_first: np.ndarray) -> np.ndarray:
    """The code of the first batch's targets ``y_first`` (B, P), per example, nats:
    the maximum-likelihood Gaussian of the batch itself (see the module docstring);
    sums to ``B/2 · Σ_p (log 2π σ̂_p² + 1)`` when no output is constant."""
    y = np.asarray(y_first, np.float64)
    mom = _standardize.fit(y)
    z = (y - mom.mean) * mom.inv_std
    return 0.5 * np.sum(LOG_2PI + z * z, axis=1) - np.sum(np.log(mom.inv_std))


def untrained_nats(y: np.ndarray, batch_size: int, standardize: bool) -> np.ndarray:
    """Per-example nats of the regression stream ``y`` (N, P, stream order) under an
    untrained readout (zero output layer: N(0, 1) of the prefix-standardised target,
    i.e. the prefix's Gaussian, features unused), the first batch coded by
    :func:`first_batch_nats` as in stage 1: the regression analogue of the uniform
    code ``N log C``, the baseline a representation must beat."""
    y = np.asarray(y, np.float64)
    mean, inv = prefix_moments(y, batch_size, standardize)
    t = np.arange(len(y)) // batch_size
    z = (y - mean[t]) * inv[t]
    out = 0.5 * np.sum(LOG_2PI + z * z, axis=1) - np.sum(np.log(inv[t]), axis=1)
    out[:batch_size] = first_batch_nats(y[:batch_size])
    return out


def loss_meta(y: np.ndarray, batch_size: int, standardize: bool) -> dict:
    """``meta["target"]`` of a regression loss matrix of the targets ``y`` (N, P, stream
    order): the kind, P, the code and its first-batch convention, the untrained
    readout's codelength (the baseline, :func:`untrained_nats`) and the
    quantisation caveat (:data:`QUANTISATION_NOTE`)."""
    return {
        "kind": "regression",
        "dims": int(y.shape[1]),
        "code": GAUSSIAN_CODE,
        "untrained_nats": float(untrained_nats(y, batch_size, standardize).sum()),
        "units": "nats of density (per example)",
        "first_batch": f"the maximum-likelihood Gaussian of the first {batch_size} targets "
        "(not a proper code; the same for every expert)",
        "caveat": QUANTISATION_NOTE,
    }


def shift_rows(losses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(L − m[:, None], m)`` with ``m_t`` the smallest finite entry of row t (0 if none).

    A density code can be negative (a density above 1), while stage 2 validates
    log-losses as ≥ 0. Switching is exact under a per-row shift: the mixture's
    −log Σ_k w_k e^{−L_tk} = m_t − log Σ_k w_k e^{−(L_tk − m_t)}, and the posterior
    update is the same, so a regression report runs stage 2 on the shifted rows
    and adds ``m`` back to each step (float32 rows: the shift rounds like one
    float32 subtraction)."""
    L = np.asarray(losses)
    finite = np.where(np.isfinite(L), L, np.inf)
    m = finite.min(axis=1) if L.shape[1] else np.zeros(L.shape[0])
    m = np.where(np.isfinite(m), m, 0.0).astype(L.dtype)
    with np.errstate(invalid="ignore"):
        return L - m[:, None], m
