"""The papers' tables from a run, each within one zoo (one architecture, one feature size).

* :func:`table_1`: PACTran Table 1 — mean Kendall τ over tasks per metric and
  N/K, with the two-stage bootstrap interval (tasks, then subsamples;
  :mod:`._bootstrap`). Every zoo has one feature size, so it is also PACTran
  Table 7 ("the checkpoints with the same feature dimensions").
* :func:`clid_table_1`: CLID Table 1 — Pearson ρ and Kendall τ across the
  checkpoints between each label-free predictor, computed on the pretraining
  data, and the checkpoint's source accuracy.
* :func:`clid_table_2`: CLID Table 2 — Kendall τ per task between each label-free
  predictor, computed on the task's whole training split, and the ground
  truth, and its average over tasks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mdlnb.research.ranking import kendall_tau
from mdlnb.studies.transferability._bootstrap import intervals
from mdlnb.studies.transferability._kendall import kendall_per_repeat
from mdlnb.studies.transferability._metrics import LABEL_FREE, metric_order, metric_sign


def table_1(per_repeat: Any, *, resamples: int = 2000, level: float = 0.95, seed: int = 0):
    """One row per (zoo, metric): ``N/K=<r>`` (mean over tasks of the per-task mean τ),
    ``lo N/K=<r>``, ``hi N/K=<r>`` (its two-stage bootstrap ``level`` interval), then
    ``tasks`` (the fewest with a τ) and ``encoders`` (the fewest a τ is over)."""
    import pandas as pd

    if per_repeat.empty:
        return pd.DataFrame(columns=["zoo", "metric"])
    iv = intervals(
        per_repeat, by=["zoo", "metric", "ratio"], resamples=resamples, level=level, seed=seed
    )
    enc = per_repeat.groupby(["zoo", "metric"])["encoders"].min()
    parts = []
    for zoo, g in iv.groupby("zoo", sort=True):
        wide = pd.DataFrame(index=pd.Index(metric_order(g["metric"].unique()), name="metric"))
        for r, h in g.groupby("ratio", sort=True):
            h = h.set_index("metric")
            wide[f"N/K={r}"] = h["mean"].round(12) + 0.0
            wide[f"lo N/K={r}"] = h["lo"].round(12) + 0.0
            wide[f"hi N/K={r}"] = h["hi"].round(12) + 0.0
        wide["tasks"] = g.groupby("metric")["tasks"].min()
        wide["encoders"] = [int(enc.get((zoo, m), 0)) for m in wide.index]
        parts.append(wide.reset_index().assign(zoo=zoo))
    out = pd.concat(parts, ignore_index=True)
    return out[["zoo", *[c for c in out.columns if c != "zoo"]]]


def _correlated(x: np.ndarray, y: np.ndarray) -> bool:
    """Whether a correlation of ``x`` and ``y`` is defined: 2 points or more, neither constant."""
    return len(x) >= 2 and np.ptp(x) != 0 and np.ptp(y) != 0


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson ρ, NaN with fewer than 2 points or a constant side."""
    return float(np.corrcoef(x, y)[0, 1]) if _correlated(x, y) else float("nan")


def clid_table_1(source: Any):
    """Per label-free predictor: Pearson ρ and Kendall τ_b across checkpoints between its
    value on the source data and the source accuracy (``source``: rows ``encoder``,
    ``metric``, ``value``, ``source_accuracy``, from
    :func:`mdlnb.studies.transferability._source.source_label_free`)."""
    import pandas as pd

    rows = []
    for m in [m for m in metric_order(source["metric"].unique()) if m in set(source["metric"])]:
        g = source[source["metric"] == m]
        g = g[np.isfinite(g["value"]) & np.isfinite(g["source_accuracy"])]
        x, y = metric_sign(m) * g["value"].to_numpy(float), g["source_accuracy"].to_numpy(float)
        tau = float(kendall_tau(x, y)) if _correlated(x, y) else np.nan
        rows.append(
            {"predictor": m, "pearson": _pearson(x, y), "kendall tau": tau, "checkpoints": len(g)}
        )
    return pd.DataFrame(rows, columns=["predictor", "pearson", "kendall tau", "checkpoints"])


def clid_table_2(
    full: Any,
    truth: Any,
    *,
    readout: str = "finetune",
    predictors: Sequence[str] = ("clid", "cl", "twonn_id", "rankme"),
):
    """Per (zoo, predictor): Kendall τ_b across the zoo's checkpoints between the
    predictor on each task's whole training split (``full``, higher-is-better in
    ``oriented``) and the ``readout`` ground truth, one column per task and ``Avg``."""
    import pandas as pd

    part = full[full["metric"].isin([p for p in predictors if p in LABEL_FREE])]
    if part.empty:
        return pd.DataFrame(columns=["zoo", "predictor", "Avg"])
    per = kendall_per_repeat(part, truth, readout=readout)
    wide = per.pivot_table(index=["zoo", "metric"], columns="task", values="tau")
    wide["Avg"] = wide.mean(axis=1)
    wide = wide.reset_index().rename(columns={"metric": "predictor"})
    order = {p: i for i, p in enumerate(predictors)}
    return (
        wide.assign(_o=wide["predictor"].map(order))
        .sort_values(["zoo", "_o"])
        .drop(columns="_o")
        .reset_index(drop=True)
    )


def truth_table(truth: Any):
    """Fine-tuned and frozen-probe test accuracy per (zoo, encoder, task), side by side."""
    t = truth[truth["readout"].isin(["finetune", "probe"])]
    wide = t.pivot_table(
        index=["zoo", "encoder", "task"], columns="readout", values="accuracy"
    ).reset_index()
    wide.columns.name = None
    return wide
