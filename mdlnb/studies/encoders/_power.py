"""How big the encoder grid must be to decide a2, d1 and f: a power analysis from measured spreads.

Each claim of :mod:`._claims` is decided by a 95 % interval over **tasks**
against zero and the paper's effect (:func:`mdlnb.claims.effect_decision`).
An interval of half-width h over T tasks decides for sure once
h ≤ margin · |paper effect| (default margin ½: then zero and the paper's
effect cannot both lie inside it); with per-task standard deviation σ that
needs T with t_{0.975, T−1} · σ / √T ≤ margin · |effect| (:func:`tasks_to_decide`).

Today's spreads (:data:`TODAY`) come from the committed run of 2026-11-24
(11 encoders × 5 tasks, N = 400, 3 orders; ``paper/objectives_*.csv``):

* a2: per-task d = τ(MLP, MDL) − τ(MLP, linear) over k = 6 encoders:
  −0.27, +0.13, +0.27, −0.48, 0 — σ = 0.30. Most of it is the coarseness of τ
  over few encoders: under independence sd(τ_b) = √(2(2k + 5) / (9k(k − 1)))
  (:func:`tau_sd`), 0.36 at k = 6 and 0.20 at k = 14, so pooling every
  encoder of the grid shrinks σ to about 0.30 · 0.20 / 0.36 ≈ 0.17.
* f: per-task log10 median(sd / gap): σ = 0.34 over 5 tasks; the gap between
  codelengths grows ∝ N and the order sd ∝ √N, so the effect −log10(ratio)
  grows by ½ log10(N / 400): +0.20 at N = 1,000, +0.35 at N = 2,000.
* d1: today's value is void (its reference bin was the prior); its per-task
  spread is assumed σ = 0.5 hidden layers until the new run measures it.

:func:`plan` turns these into the tasks each claim needs. With all 14
encoders, a2 needs 26 tasks to be decided whatever its true value; on the
14 tasks of the mini-VTAB (≥ 3 per group) its half-width is ≈ 0.10, so it is
decided unless its mean falls in about [0.04, 0.10]. d1 needs 7 tasks. f
needs 15 tasks at N = 1,000 and 7 at N = 2,000 (its "does not hold" side,
the paper's 1.54, is far away): hence streams of 2,000 where a task has them.
"""

from __future__ import annotations

import math

import numpy as np

#: Per-task standard deviations and effects measured on the committed 2026-11-24 run.
TODAY = {"a2": {"sd": 0.30, "k": 6, "tasks": 5, "effect": -0.07},
         "f": {"sd": 0.34, "k": 6, "tasks": 5, "effect": -0.007, "n": 400},
         "d1": {"sd": 0.5, "k": 11, "tasks": 5, "effect": float("nan")}}


def tau_sd(k: int) -> float:
    """Standard deviation of Kendall's τ between two independent random orders of ``k``
    items (no ties): √(2(2k + 5) / (9k(k − 1)))."""
    if int(k) < 2:
        raise ValueError(f"k: need at least 2 items, got {k!r}")
    k = int(k)
    return math.sqrt(2 * (2 * k + 5) / (9 * k * (k - 1)))


def tasks_to_decide(sd: float, effect: float, *, margin: float = 0.5, level: float = 0.95,
                    max_tasks: int = 10_000) -> int:
    """Smallest T ≥ 2 with t_{(1+level)/2, T−1} · sd / √T ≤ margin · |effect|."""
    from scipy import stats

    if not (sd >= 0 and np.isfinite(sd)):
        raise ValueError(f"sd: must be a finite number >= 0, got {sd!r}")
    if not effect or not np.isfinite(effect):
        raise ValueError(f"effect: must be finite and non-zero, got {effect!r}")
    target = margin * abs(effect)
    for t in range(2, max_tasks + 1):
        if stats.t.ppf((1 + level) / 2, t - 1) * sd / math.sqrt(t) <= target:
            return t
    return max_tasks


def plan(*, encoders: int = 14, n: int = 1000):
    """Tasks needed per claim for a grid of ``encoders`` encoders and streams of ``n``."""
    import pandas as pd

    from mdlnb.studies.encoders._claims import PAPER_EFFECTS

    a2_sd = TODAY["a2"]["sd"] * tau_sd(encoders) / tau_sd(TODAY["a2"]["k"])
    f_effect = TODAY["f"]["effect"] + 0.5 * math.log10(n / TODAY["f"]["n"])
    rows = [
        {"claim": "a2", "per-task sd": a2_sd, "effect to separate": PAPER_EFFECTS["a2"],
         "tasks to decide": tasks_to_decide(a2_sd, PAPER_EFFECTS["a2"])},
        {"claim": "f", "per-task sd": TODAY["f"]["sd"], "effect to separate": f_effect,
         "tasks to decide": tasks_to_decide(TODAY["f"]["sd"], f_effect, margin=1.0)},
        {"claim": "d1", "per-task sd": TODAY["d1"]["sd"], "effect to separate": PAPER_EFFECTS["d1"],
         "tasks to decide": tasks_to_decide(TODAY["d1"]["sd"], PAPER_EFFECTS["d1"])},
    ]
    return pd.DataFrame(rows)
