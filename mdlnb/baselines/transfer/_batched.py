"""LINEAR, LINEAR-VALID and PACTran-Gaussian (fixed and grid) of many feature sets at once.

The scalar metrics (:mod:`._linear`, :mod:`._gaussian`) solve one L-BFGS
problem per call in scipy. Here every problem a stack of feature sets of one
shape needs — per set, the full-data fits at each β of the grids and the two
folds of LINEAR-VALID at each of its β — goes into one call of
:func:`mdlnb.baselines.transfer._softmax_batch.fit_batch` (one compiled program, the
problems side by side), and the metrics are read off the fits:

* LINEAR at ``β = f·N``: ``L̂(θ*) + ‖θ*‖²/(2β)``;
* PT-Gauss at (``β = f·N``, ``σ0² = s/D``): LINEAR plus
  ``P σ0²/(2β) · log(1 + β Tr∇²L̂(θ*)/P)``, ``P = C·(D + 1)`` (θ* depends on β only);
* LINEAR-VALID: per β, the two stratified folds of :func:`two_folds` (seeded per
  set) each fitted on one half with ``β = f·N_half`` (the other half's rows get
  weight 0, so the shape stays (N, D)) and scored on the other; the lowest mean
  validation cross-entropy over the β grid.

Values are nats per example, lower is better, as the scalar functions return
them; ``tests/test_transfer_batch.py`` checks agreement within the fits' tolerance.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mdlnb.baselines.transfer._gaussian import BETA_FACTORS as PT_BETA_FACTORS
from mdlnb.baselines.transfer._gaussian import SIGMA0_FACTORS, flatness
from mdlnb.baselines.transfer._linear import BETA_FACTORS as VALID_BETA_FACTORS
from mdlnb.baselines.transfer._linear import two_folds
from mdlnb.baselines.transfer._softmax_batch import fit_batch

#: The paper's fixed PT-Gauss (β = 10N, σ0² = 100/D) and LINEAR's default β = 1N.
PT_FIXED = (10.0, 100.0)
LINEAR_BETA = 1.0
#: At most this many bytes of L-BFGS state per call (the stack is cut into calls).
STATE_BYTES = 256 * 2**20


def _check(features: Any, labels: Any, num_classes: int) -> tuple[np.ndarray, np.ndarray, int]:
    x = np.asarray(features, np.float64)
    y = np.asarray(labels)
    if x.ndim != 3:
        raise ValueError(f"features: expected a (S, N, D) stack, got shape {x.shape}")
    if y.shape != x.shape[:2]:
        raise ValueError(f"labels: expected shape {x.shape[:2]}, got {y.shape}")
    return x, y, int(num_classes)


def _fit_all(x, y, c, beta, weight, init, memory: int):
    """fit_batch over the rows of a problem stack, cut into calls of bounded state."""
    b, n, d = x.shape
    per = 2 * memory * (d + 1) * c * 8 + 16 * n * c * 8
    step = max(1, int(STATE_BYTES // per))
    parts = [
        fit_batch(
            x[i : i + step],
            y[i : i + step],
            c,
            beta[i : i + step],
            weight=weight[i : i + step],
            init=init[i : i + step],
            memory=memory,
        )
        for i in range(0, b, step)
    ]
    return {k: np.concatenate([getattr(p, k) for p in parts]) for k in parts[0]._fields}


def _fit_chains(x, y, c, rows, beta, weight, chain, memory: int):
    """Every problem row fitted, the rows of one chain (one set's full data or one fold)
    in order of increasing β, each warm-started from the previous row's optimum (the
    objective is strictly convex, so only the iteration count changes — as the scalar
    LINEAR-VALID and PT-Gauss grid do)."""
    level = np.zeros(len(rows), int)
    seen: dict[int, int] = {}
    for r, ch in enumerate(chain):
        level[r] = seen.get(ch, 0)
        seen[ch] = level[r] + 1
    d = x.shape[2] + 1
    out: dict[str, np.ndarray] = {}
    last: dict[int, np.ndarray] = {}
    for lv in range(level.max() + 1):
        r = np.flatnonzero(level == lv)
        init = np.stack([last.get(chain[k], np.zeros((d, c))) for k in r])
        fit = _fit_all(x[rows[r]], y[rows[r]], c, beta[r], weight[r], init, memory)
        for key, v in fit.items():
            out.setdefault(key, np.zeros((len(rows),) + v.shape[1:], v.dtype))[r] = v
        for k, params in zip(r, fit["params"]):
            last[chain[k]] = params
    return out


def linear_metrics(
    features: Any,
    labels: Any,
    *,
    num_classes: int,
    valid_seeds: Sequence[int] | None = None,
    linear_beta_factors: Sequence[float] = (0.1, 1.0, 10.0),
    pt_beta_factors: Sequence[float] = PT_BETA_FACTORS,
    sigma0_factors: Sequence[float] = SIGMA0_FACTORS,
    valid_beta_factors: Sequence[float] = VALID_BETA_FACTORS,
    memory: int = 5,
) -> dict[str, Any]:
    """LINEAR, LINEAR-VALID, PT-Gauss and their grids for every set of a stack.

    Args:
      features: (S, N, D) feature sets of one shape; labels: (S, N) in [0, C).
      valid_seeds: per set, the seed of LINEAR-VALID's folds (default 0 for all).
      linear_beta_factors, pt_beta_factors, sigma0_factors, valid_beta_factors: the
        grids (β in units of N, σ0² in units of 1/D).
      memory: L-BFGS curvature pairs. The optimum does not depend on it, only the path:
        on the committed ViT-S encoders' features of digits (N = 50, 32 sets) 5 pairs
        took 273 iterations at most and 2.1 CPU s, 20 pairs 221 and 4.3 s (the two-loop
        recursion reads every pair of every problem each iteration: memory traffic
        decides); scipy's 14 fits per set one at a time took 9.3 s.

    Returns ``{"linear": (S,), "linear_valid": (S,), "pactran_gaussian": (S,),
    "linear_grid": {f: (S,)}, "pactran_gaussian_grid": {(f, s): (S,)},
    "iterations": int, "converged": bool}`` (β = 1N for ``linear``, the fixed
    β = 10N, σ0² = 100/D for ``pactran_gaussian``; the largest iteration count and
    whether every fit met its tolerance).
    """
    x, y, c = _check(features, labels, num_classes)
    s, n, d = x.shape
    seeds = [0] * s if valid_seeds is None else [int(v) for v in valid_seeds]
    if len(seeds) != s:
        raise ValueError(f"valid_seeds: expected {s} seeds, got {len(seeds)}")
    full = sorted(
        {float(f) for f in (*linear_beta_factors, *pt_beta_factors, LINEAR_BETA, PT_FIXED[0])}
    )
    vf = sorted(float(f) for f in valid_beta_factors)
    # problem rows: for each set, the full fits then (fold, β) pairs
    xs, betas, weights, folds, chain = [], [], [], [], []
    for i in range(s):
        fa, fb = two_folds(y[i], seeds[i])
        for f in full:
            xs.append(i), betas.append(f * n), weights.append(np.full(n, 1.0 / n))
            chain.append(3 * i)
        for j, (tr, va) in enumerate(((fa, fb), (fb, fa))):
            w = np.zeros(n)
            w[tr] = 1.0 / len(tr)
            for f in vf:
                xs.append(i), betas.append(f * len(tr)), weights.append(w)
                chain.append(3 * i + 1 + j)
            folds.append(va)
    fit = _fit_chains(x, y, c, np.asarray(xs), np.asarray(betas), np.stack(weights), chain, memory)
    per = len(full) + 2 * len(vf)
    p = c * (d + 1)
    out: dict[str, Any] = {"linear_grid": {}, "pactran_gaussian_grid": {}}
    rer = (fit["loss"] + fit["penalty"]).reshape(s, per)
    tr_ = fit["hessian_trace"].reshape(s, per)
    col = {f: j for j, f in enumerate(full)}
    for f in linear_beta_factors:
        out["linear_grid"][float(f)] = rer[:, col[float(f)]]
    for f in pt_beta_factors:
        for sf in sigma0_factors:
            j = col[float(f)]
            fr = np.array([flatness(tr_[k, j], p, f * n, sf / d) for k in range(s)])
            out["pactran_gaussian_grid"][(float(f), float(sf))] = rer[:, j] + fr
    out["linear"] = rer[:, col[LINEAR_BETA]]
    j = col[PT_FIXED[0]]
    out["pactran_gaussian"] = rer[:, j] + np.array(
        [flatness(tr_[k, j], p, PT_FIXED[0] * n, PT_FIXED[1] / d) for k in range(s)]
    )
    out["linear_valid"] = _valid(
        x, y, fit["params"].reshape(s, per, d + 1, c), folds, len(full), len(vf)
    )
    out["iterations"] = int(fit["iterations"].max())
    out["converged"] = bool(fit["converged"].all())
    return out


def _valid(x, y, params, folds, first: int, nb: int) -> np.ndarray:
    """Per set: min over β of the fold-size-weighted validation cross-entropy."""
    from scipy.special import log_softmax

    s, n = y.shape
    out = np.empty(s)
    for i in range(s):
        total = np.zeros(nb)
        for k in range(2):
            va = folds[2 * i + k]
            xa = np.concatenate([x[i, va], np.ones((len(va), 1))], axis=1)
            for j in range(nb):
                lp = log_softmax(xa @ params[i, first + k * nb + j], axis=1)
                total[j] -= lp[np.arange(len(va)), y[i, va]].sum()
        out[i] = total.min() / n
    return out
