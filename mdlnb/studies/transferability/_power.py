"""How many tasks and subsamples the claims need: a power analysis from today's spreads.

Every claim (:mod:`._claims`) is decided on a mean over T tasks of per-task
means over R subsamples, with the two-stage bootstrap interval of
:mod:`._bootstrap`. Its variance is

    V(T, R) = σ_T² / T + σ_R² / (T · R),

σ_T the spread of the per-task mean effect across tasks, σ_R the spread of one
subsample's effect around its task's mean; the 95 % half-width is ≈ 1.96 √V.
A claim is decided whatever its true value once the half-width is at most
half the paper's effect P (then 0 and P cannot both lie inside).

**Today's spreads** (:data:`TODAY`, from the run committed before the zoo:
6 encoders of two feature sizes, 3 tasks, 5 subsamples, frozen-probe ground
truth; ``paper/transferability_kendall_per_task.csv``, recomputed by
:func:`spreads`): for the paired τ differences of the claims h1–h4, i2, i3
at N/K ∈ {2, 5, 10}, σ_T has median 0.16 (0.02–0.63 over the 18
cells) and σ_R median 0.39 (0.18–0.69; the hypotenuse of the two metrics'
subsample sd, an upper bound for a positively correlated pair). Much of σ_R
is the coarseness of τ over few encoders: under independence
sd(τ_b) = √(2(2k + 5) / (9k(k − 1))) (:func:`tau_sd`), 0.36 at k = 6 and 0.12
at the zoo's k = 37, so σ_R scales to ≈ 0.39 · 0.12/0.36 ≈ 0.13.

:func:`plan` turns these into half-widths: at T = 9 tasks with σ_T = 0.16,
σ_R = 0.126, R = 1 gives ±0.133, R = 3 ±0.115, R = 5 ±0.111, R = 10 ±0.108,
R → ∞ ±0.105: past R = 3 more subsamples narrow the interval by < 4 %, the
tasks are the limit. Deciding h2 (N-LEEP − LogME, P ≈ 0.26, the smallest
paper effect) for sure needs ±0.13: T = 8 tasks at the median σ_T, 28 at
σ_T = 0.33, 98 at the largest (0.63, PT-Gauss − LEEP at N/K = 2 over the
three encoders with a source classifier).

**Chosen**: R = 3 subsamples per (task, N/K) and T = 9 tasks. The tasks are
what the budget buys: each (zoo, task) needs its fine-tuning ground truth
(:mod:`._groundtruth`: 37 checkpoints × 3 rates = 111 fine-tuning runs for the
ViT-S zoo, 9 for the Lite zoo), hours per task on a 2-core CPU. PACTran's 5
subsamples would cost 5/3 of the scoring for a 4 % narrower interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

#: The claims' metric pairs (A, B) whose paired τ difference is measured.
PAIRS = (
    ("pactran_gaussian", "logme"),
    ("nleep", "logme"),
    ("pactran_gaussian", "leep"),
    ("nleep", "leep"),
    ("clid", "twonn_id"),
    ("clid", "cl"),
)
#: Medians over the 18 (pair, N/K) cells of the committed run's spreads (module doc).
TODAY = {"sigma_task": 0.16, "sigma_repeat": 0.39, "encoders": 6}


def tau_sd(k: int) -> float:
    """Standard deviation of Kendall τ over k items under independence,
    √(2(2k + 5) / (9k(k − 1)))."""
    if k < 2:
        raise ValueError(f"k: needs at least 2 items, got {k}")
    return math.sqrt(2 * (2 * k + 5) / (9 * k * (k - 1)))


def spreads(per_task: Any, tasks: Sequence[str], *, pairs=PAIRS) -> Any:
    """Per (pair, N/K): σ_T (sd over tasks of the per-task mean difference, ddof 1) and
    σ_R (root mean square over tasks of the hypotenuse of the two metrics' subsample
    sd), from a :func:`per_task_table`-shaped frame (columns ``<task>``, ``<task> sd``)."""
    import pandas as pd

    rows = []
    for a, b in pairs:
        for r in sorted(per_task["ratio"].unique()):
            ta = per_task[(per_task["metric"] == a) & (per_task["ratio"] == r)]
            tb = per_task[(per_task["metric"] == b) & (per_task["ratio"] == r)]
            if ta.empty or tb.empty:
                continue
            ta, tb = ta.iloc[0], tb.iloc[0]
            d = np.array([ta[t] - tb[t] for t in tasks], float)
            s = np.array([math.hypot(ta[f"{t} sd"], tb[f"{t} sd"]) for t in tasks], float)
            d, s = d[np.isfinite(d)], s[np.isfinite(s)]
            rows.append(
                {
                    "a": a,
                    "b": b,
                    "ratio": int(r),
                    "sigma_task": float(np.std(d, ddof=1)) if d.size > 1 else math.nan,
                    "sigma_repeat": float(np.sqrt(np.mean(s**2))) if s.size else math.nan,
                }
            )
    return pd.DataFrame(rows, columns=["a", "b", "ratio", "sigma_task", "sigma_repeat"])


def half_width(tasks: int, repeats: int, sigma_task: float, sigma_repeat: float) -> float:
    """1.96 √(σ_T²/T + σ_R²/(T·R)) (module docstring)."""
    if tasks < 1 or repeats < 1:
        raise ValueError(f"tasks, repeats: must be >= 1, got {tasks}, {repeats}")
    return 1.96 * math.sqrt(sigma_task**2 / tasks + sigma_repeat**2 / (tasks * repeats))


def tasks_to_decide(effect: float, sigma_task: float, sigma_repeat: float, repeats: int) -> int:
    """The fewest tasks whose half-width is at most half of ``effect``."""
    t = 1
    while half_width(t, repeats, sigma_task, sigma_repeat) > abs(effect) / 2:
        t += 1
        if t > 100_000:
            return t
    return t


def plan(
    *,
    encoders: int = 37,
    tasks: int = 9,
    repeats: Sequence[int] = (1, 2, 3, 5, 10),
    today: dict = TODAY,
):
    """Half-widths at ``tasks`` tasks for each number of subsamples, with today's σ_R
    rescaled from ``today["encoders"]`` to ``encoders`` checkpoints (:func:`tau_sd`)."""
    import pandas as pd

    s_r = today["sigma_repeat"] * tau_sd(encoders) / tau_sd(today["encoders"])
    rows = [
        {
            "tasks": tasks,
            "repeats": r,
            "sigma_task": today["sigma_task"],
            "sigma_repeat": s_r,
            "half_width": half_width(tasks, r, today["sigma_task"], s_r),
        }
        for r in repeats
    ]
    limit = 1.96 * today["sigma_task"] / math.sqrt(tasks)
    return pd.DataFrame(rows).assign(limit=limit)
