"""The switching study's measures of one loss matrix (paper App. A.6 / Fig. 5, App. A.1).

Everything takes a loss matrix ``L`` (N, K), ``L[t, k]`` = next-step log-loss
of expert k on example t in nats (stage 1, :func:`mdlnb.prequential.run`),
and returns tidy DataFrames:

* :func:`regret_curves` — cumulative codelength of each strategy minus that of
  a baseline (fixed share, α_t = (m − 1)/t) along the stream (Fig. 5);
* :func:`sensitivity` — fixed share's total codelength for several m and
  several constant α;
* :func:`bound_curves` — the regret of a strategy relative to the best single
  expert at every n, against :func:`mdlnb.switching.never_switch_curve`, the exact prior cost
  −log p(ξ_{1:n} = k, …, k) of never switching — a hard upper bound on that
  regret, since the mixture sums over that path among others (Eq. 4, first
  inequality) — and the paper's A.1 bound :func:`fixed_share_bound`
  m log K + (m − 1) log(N/(m − 1)) against the regret relative to the best
  expert *sequence* with at most m − 1 switches (:func:`best_sequence_loss`);
* :func:`switch_counts` — how often the posterior p(ξ_t | D_<t)'s most
  probable readout changes along the stream, and the total-variation distance
  between consecutive posteriors.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from mdlnb import switching
from mdlnb.core._grid import log_integers

BASELINE = "fixed share"


def strategies(m: float = 11.0) -> dict[str, Any]:
    """The strategies of App. A.6 with uniform weights, fixed share (decreasing
    rate α_t = (m − 1)/t) first, as the baseline of Fig. 5."""
    return {
        BASELINE: switching.FixedShare(m=m),
        "Bayesian mixture": switching.BayesianMixture(),
        "elementwise mixture": switching.ElementwiseMixture(),
        "switch distribution": switching.SwitchDistribution(),
        "run-length": switching.RunLength(),
    }


def checkpoints(n: int, points: int = 200) -> np.ndarray:
    """≤ ``points`` 1-indexed sample sizes, log-spaced from 1 to n (n included)."""
    if n < 1 or points < 2:
        raise ValueError(f"n, points: need n >= 1 and points >= 2, got {n}, {points}")
    return log_integers(1, n, points)


def regret_curves(
    losses: Any, strats: Mapping[str, Any], *, baseline: str = BASELINE, points: int = 200
):
    """Cumulative codelength of each strategy and its regret to ``baseline`` (nats).

    Columns: ``n`` (examples coded), ``strategy``, ``codelength [nats]``,
    ``regret [nats]`` (strategy − baseline at the same n; > 0: worse)."""
    if baseline not in strats:
        raise ValueError(f"baseline: {baseline!r} is not among strats {list(strats)}")
    L = np.asarray(losses)
    cum = {
        name: np.cumsum(switching.codelength(L, s, posterior=False).per_step_nats)
        for name, s in strats.items()
    }
    ns = checkpoints(L.shape[0], points)
    return pd.DataFrame(
        [
            {
                "n": int(n),
                "strategy": name,
                "codelength [nats]": float(c[n - 1]),
                "regret [nats]": float(c[n - 1] - cum[baseline][n - 1]),
            }
            for name, c in cum.items()
            for n in ns
        ]
    )


def sensitivity(
    losses: Any,
    *,
    ms: Sequence[float] = (2, 5, 11, 31, 101),
    alphas: Sequence[float] = (1e-4, 1e-3, 1e-2, 1e-1),
):
    """Fixed share's total codelength for each m (α_t = (m − 1)/t) and each constant α.

    Columns: ``rate`` ("m" or "constant α"), ``value``, ``codelength [nats]``,
    ``regret to best expert [nats]`` (minus the best single column total)."""
    L = np.asarray(losses)
    best = float(L.sum(axis=0, dtype=np.float64).min())
    rows = []
    for rate, values, make in (
        ("m", ms, lambda v: switching.FixedShare(m=v)),
        ("constant α", alphas, lambda v: switching.FixedShare(alpha=v)),
    ):
        for v in values:
            tot = switching.codelength(L, make(v), posterior=False).total_nats
            rows.append(
                {
                    "rate": rate,
                    "value": float(v),
                    "codelength [nats]": tot,
                    "regret to best expert [nats]": tot - best,
                }
            )
    return pd.DataFrame(rows)


def fixed_share_bound(n: Any, num_experts: int, m: float) -> np.ndarray:
    """Paper Sec. 3.3 / App. A.1: m log K + (m − 1) log(n/(m − 1)) nats — the
    prior cost of the best sequence with m − 1 switches under fixed share."""
    if m <= 1:
        raise ValueError(f"m: must be > 1 for the bound, got {m}")
    n = np.asarray(n, dtype=np.float64)
    return m * math.log(num_experts) + (m - 1) * np.log(n / (m - 1))


def best_sequence_loss(losses: Any, max_switches: int) -> np.ndarray:
    """(S + 1,) min over expert sequences with ≤ s switches of Σ_t L[t, ξ_t], s = 0..S.

    Dynamic programme V_s[t, k] = L[t, k] + min(V_s[t − 1, k], min_j V_{s−1}[t − 1, j]),
    compiled with ``lax.scan`` over t (float64 on the host via NumPy would be a
    Python loop per step)."""
    L = jnp.asarray(np.asarray(losses, dtype=np.float32))
    S = int(max_switches)
    if S < 0 or L.ndim != 2:
        raise ValueError(f"max_switches, losses: need S >= 0 and a 2-D matrix, got {S}, {L.shape}")
    inf = jnp.float32(jnp.inf)

    def body(V, row):
        switch_in = jnp.concatenate([jnp.full((1, 1), inf), V[:-1].min(axis=1, keepdims=True)])
        return row[None, :] + jnp.minimum(V, switch_in), None

    V0 = jnp.concatenate([L[0][None, :], jnp.full((S, L.shape[1]), inf)])
    V, _ = jax.lax.scan(body, V0, L[1:])
    return np.minimum.accumulate(np.asarray(V.min(axis=1), dtype=np.float64))


def bound_curves(losses: Any, strategy: Any, *, points: int = 200):
    """Regret of ``strategy`` to the best single expert at each n, and its bound.

    Columns: ``n``, ``regret [nats]`` (strategy codelength of the first n
    examples minus the smallest column sum over them), ``bound [nats]``
    (:func:`mdlnb.switching.never_switch_curve`)."""
    L = np.asarray(losses)
    cum = np.cumsum(switching.codelength(L, strategy, posterior=False).per_step_nats)
    best = np.cumsum(L.astype(np.float64), axis=0).min(axis=1)
    cost = switching.never_switch_curve(strategy, L.shape[0], L.shape[1])
    ns = checkpoints(L.shape[0], points)
    return pd.DataFrame(
        {"n": ns, "regret [nats]": cum[ns - 1] - best[ns - 1], "bound [nats]": cost[ns - 1]}
    )


def switch_counts(posterior: Any, groups: Sequence[str] | None = None, *, points: int = 200):
    """How often the posterior's favourite changes along the stream.

    ``posterior`` (N, K) p(ξ_t | D_<t); ``groups`` (K,) names (e.g. readouts)
    summed first. Columns: ``n``, ``map switches`` (changes of the most
    probable group in steps 2..n), ``tv`` (½ Σ |p_n − p_{n−1}|, 0 at n = 1)."""
    P = np.asarray(posterior, dtype=np.float64)
    if groups is not None:
        names = list(dict.fromkeys(groups))
        idx = np.array([names.index(g) for g in groups])
        Q = np.zeros((P.shape[0], len(names)))
        np.add.at(Q.T, idx, P.T)
        P = Q
    top = P.argmax(axis=1)
    changes = np.concatenate([[0], np.cumsum(top[1:] != top[:-1])])
    tv = np.concatenate([[0.0], 0.5 * np.abs(np.diff(P, axis=0)).sum(axis=1)])
    ns = checkpoints(P.shape[0], points)
    return pd.DataFrame({"n": ns, "map switches": changes[ns - 1], "tv": tv[ns - 1]})
