"""Intervals over tasks *and* subsamples: a two-stage (hierarchical) bootstrap.

A study's mean τ is the mean over T tasks of each task's mean over its R
subsamples. Both stages are random: which tasks a benchmark holds (the tasks
are a sample of the tasks one could transfer to) and which few examples each
subsample drew. The two-stage bootstrap (Davison & Hinkley 1997, Sec. 3.8,
"hierarchical data") resamples both: draw T tasks with replacement, then, for
each drawn task, its R subsample values with replacement, and take the mean
of the per-task means; the ``level`` percentile interval of ``resamples`` such
means is the interval. With one subsample per task it is the ordinary
bootstrap over tasks; with one task, over subsamples.

:func:`two_stage` does it for one table of values; :func:`intervals` for every
group of a tidy frame (one value per (task, repeat) in each group), all groups
with the same seeded draws of tasks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mdlnb.core._checks import check_int


def two_stage(
    values: Mapping[Any, Sequence[float]],
    *,
    resamples: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float, int]:
    """``(mean, lo, hi, tasks)`` of the mean over tasks of the per-task mean of
    ``values`` (``{task: subsample values}``; NaN values are dropped, tasks left with
    none too) and its two-stage percentile bootstrap interval (module docstring).
    Fewer than 2 tasks: ``lo`` and ``hi`` are NaN."""
    check_int("resamples", resamples, minimum=1)
    if not 0 < level < 1:
        raise ValueError(f"level: must lie in (0, 1), got {level!r}")
    cols = [np.asarray(v, np.float64) for v in values.values()]
    cols = [c[np.isfinite(c)] for c in cols]
    cols = [c for c in cols if c.size]
    t = len(cols)
    if t == 0:
        return float("nan"), float("nan"), float("nan"), 0
    mean = float(np.mean([c.mean() for c in cols]))
    if t < 2:
        return mean, float("nan"), float("nan"), t
    r = max(c.size for c in cols)
    table = np.full((t, r), np.nan)
    for i, c in enumerate(cols):
        table[i, : c.size] = c
    sizes = np.array([c.size for c in cols])
    rng = np.random.default_rng(seed)
    tasks = rng.integers(0, t, size=(resamples, t))  # stage 1
    pick = np.floor(rng.random((resamples, t, r)) * sizes[tasks][..., None]).astype(int)
    drawn = table[tasks[..., None], pick]  # stage 2
    valid = np.arange(r)[None, None, :] < sizes[tasks][..., None]
    per_task = np.where(valid, drawn, 0.0).sum(-1) / sizes[tasks]
    means = per_task.mean(1)
    lo, hi = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return mean, float(lo), float(hi), t


def intervals(
    frame: Any,
    *,
    by: Sequence[str],
    value: str = "tau",
    task: str = "task",
    resamples: int = 2000,
    level: float = 0.95,
    seed: int = 0,
):
    """One row per group of ``frame`` (columns ``by``): ``mean``, ``lo``, ``hi`` of
    :func:`two_stage` over its (``task``, subsample) values in column ``value``, and
    ``tasks`` (how many have a value). Every group draws with the same ``seed``."""
    import pandas as pd

    rows = []
    for key, g in frame.groupby(list(by), sort=True):
        key = key if isinstance(key, tuple) else (key,)
        vals = {t: h[value].to_numpy(float) for t, h in g.groupby(task, sort=True)}
        mean, lo, hi, n = two_stage(vals, resamples=resamples, level=level, seed=seed)
        rows.append({**dict(zip(by, key)), "mean": mean, "lo": lo, "hi": hi, "tasks": n})
    return pd.DataFrame(rows, columns=[*by, "mean", "lo", "hi", "tasks"])
