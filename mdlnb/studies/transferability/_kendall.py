"""Kendall τ between each metric and the ground truth, with its spread.

τ is computed across encoders for every (task, ratio, repeat, metric)
(:func:`kendall_per_repeat`), then averaged over the repeats of a task
(:func:`kendall_table`, PACTran Tables 4–6: mean ± sample standard deviation
over the 5 subsamples) and over tasks (:func:`average_table`, PACTran
Table 1, CLID Table 2's "Avg" row).

Spread of the mean over tasks: the tasks are fixed and the subsamples are
random, so the standard error of the mean of T per-task means is
SE = (1/T)·sqrt(Σ_t s_t² / R_t), s_t the sample standard deviation (ddof 1)
of task t's R_t repeats; the table gives the half-width of the 95 % interval,
t_{0.975, Σ(R_t−1)}·SE. Two runs whose means differ by less than their
half-widths combined (sqrt(h_a² + h_b²)) do not differ beyond subsample noise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from mdlnb.research.ranking import kendall_tau
from mdlnb.studies.transferability._metrics import metric_order, with_zoo
from mdlnb.studies.transferability._scores import orient

PER_REPEAT_COLUMNS = ["zoo", "task", "ratio", "metric", "repeat", "tau", "encoders", "nonfinite"]


def kendall_per_repeat(scores, truth, *, readout: str = "best"):
    """τ_b (:func:`mdlnb.research.ranking.kendall_tau`) of each metric's oriented values against
    the ``readout`` ground-truth accuracy, across encoders, per (task, ratio, repeat).

    A metric constant across encoders gets τ = 0 (PACTran's definition:
    sign(0) = 0 in every pair). A ground truth that ties across all the
    eligible encoders gives no τ at all (no ranking to recover): that (task,
    ratio, metric, repeat) is left out (:func:`tied_truth` lists such tasks).
    Non-finite values (a metric that failed on an encoder) are left out of
    that τ and counted in ``nonfinite``; ``encoders`` says over how many
    encoders τ is.
    """
    import pandas as pd

    if readout not in set(truth["readout"]):
        raise ValueError(f"readout: {readout!r} not in truth; has {sorted(set(truth['readout']))}")
    if "oriented" not in scores:
        scores = orient(scores)
    scores = with_zoo(scores)
    acc = truth[truth["readout"] == readout].set_index(["task", "encoder"])["accuracy"]
    rows = []
    for (zoo, task, ratio, metric, repeat), g in scores.groupby(
        ["zoo", "task", "ratio", "metric", "repeat"], sort=True
    ):
        g = g[np.array([(task, e) in acc.index for e in g["encoder"]], bool)]
        finite = np.isfinite(g["oriented"].to_numpy(float))
        nonfinite, g = int((~finite).sum()), g[finite]
        if len(g) < 2:
            continue
        x = g["oriented"].to_numpy(float)
        y = np.array([acc[(task, e)] for e in g["encoder"]], float)
        if np.ptp(y) == 0:
            continue
        tau = 0.0 if np.ptp(x) == 0 else kendall_tau(x, y)
        rows.append(
            dict(
                zoo=zoo,
                task=task,
                ratio=ratio,
                metric=metric,
                repeat=repeat,
                tau=float(tau),
                encoders=len(g),
                nonfinite=nonfinite,
            )
        )
    return pd.DataFrame(rows, columns=PER_REPEAT_COLUMNS)


def tied_truth(truth, *, readout: str = "best", encoders=None) -> list[str]:
    """Tasks whose ``readout`` ground-truth accuracy is the same for every encoder (of
    ``encoders``, default all): they give no Kendall τ."""
    t = truth[truth["readout"] == readout]
    if encoders is not None:
        t = t[t["encoder"].isin(list(encoders))]
    return sorted(task for task, g in t.groupby("task") if np.ptp(g["accuracy"].to_numpy()) == 0)


def _sd(s) -> float:
    return float(np.std(s, ddof=1)) if len(s) > 1 else math.nan


def kendall_table(scores, truth, *, readout: str = "best"):
    """τ per (zoo, task, ratio, metric): ``tau`` (mean over repeats), ``tau_std`` (sample
    standard deviation over repeats, ddof 1; NaN with one repeat), ``repeats``,
    ``encoders`` (the fewest encoders any of its τ is over), ``nonfinite``
    (metric values left out as NaN/inf, summed over repeats)."""
    per_rep = kendall_per_repeat(scores, truth, readout=readout)
    agg = per_rep.groupby(["zoo", "task", "ratio", "metric"], sort=True).agg(
        tau=("tau", "mean"),
        tau_std=("tau", _sd),
        repeats=("tau", "size"),
        encoders=("encoders", "min"),
        nonfinite=("nonfinite", "sum"),
    )
    return agg.reset_index()


def mean_over_tasks(tau, *, level: float = 0.95):
    """One row per (metric, ratio): ``tau`` (mean of the per-task means), ``ci`` (half-width
    of the ``level`` interval of that mean over subsamples, tasks fixed; module
    docstring), ``tasks``, ``encoders`` (fewest), ``nonfinite`` (summed)."""
    import pandas as pd
    from scipy import stats

    if not 0 < level < 1:
        raise ValueError(f"level: must be in (0, 1), got {level!r}")
    rows = []
    for (zoo, metric, ratio), g in with_zoo(tau).groupby(["zoo", "metric", "ratio"], sort=True):
        t = len(g)
        var = (g["tau_std"] ** 2 / g["repeats"]).sum()
        dof = int((g["repeats"] - 1).sum())
        ci = (
            float(stats.t.ppf(0.5 + level / 2, dof) * math.sqrt(var) / t)
            if dof > 0 and np.isfinite(var)
            else math.nan
        )
        rows.append(
            dict(
                zoo=zoo,
                metric=metric,
                ratio=int(ratio),
                tau=float(g["tau"].mean()),
                ci=ci,
                tasks=t,
                encoders=int(g["encoders"].min()),
                nonfinite=int(g["nonfinite"].sum()) if "nonfinite" in g else 0,
            )
        )
    return pd.DataFrame(
        rows, columns=["zoo", "metric", "ratio", "tau", "ci", "tasks", "encoders", "nonfinite"]
    )


def average_table(tau, *, metrics: Sequence[str] | None = None, level: float = 0.95):
    """Mean τ over tasks, one row per (zoo, metric): per ratio a column ``N/K=<ratio>``
    and its spread ``±95% N/K=<ratio>`` (:func:`mean_over_tasks`), then ``encoders``
    and ``nonfinite`` — PACTran Table 1's "Average", CLID Table 2's "Avg" row. A
    single pool of encoders (no ``zoo`` column) gives no ``zoo`` column either."""
    import pandas as pd

    long = mean_over_tasks(tau, level=level)
    pct = f"±{level:.0%}"
    parts = []
    for zoo, lz in long.groupby("zoo", sort=True):
        wide = pd.DataFrame(index=pd.Index(sorted(lz["metric"].unique()), name="metric"))
        for ratio, g in lz.groupby("ratio", sort=True):
            g = g.set_index("metric")
            wide[f"N/K={ratio}"] = g["tau"].round(12) + 0.0  # drop 1e-17 residues and −0
            wide[f"{pct} N/K={ratio}"] = g["ci"].round(12)
        wide["encoders"] = lz.groupby("metric")["encoders"].min()
        wide["nonfinite"] = lz.groupby("metric")["nonfinite"].sum()
        order = list(metrics) if metrics is not None else metric_order(wide.index)
        wide = wide.loc[[m for m in order if m in wide.index]].reset_index()
        parts.append(wide.assign(zoo=zoo)[["zoo", *wide.columns]])
    out = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    return out.drop(columns="zoo") if "zoo" not in tau else out


def per_task_table(tau):
    """τ per task for each (zoo, ratio, metric): columns ``<task>`` (mean over repeats)
    and ``<task> sd`` (sample standard deviation over repeats) — PACTran Tables 4–6."""
    import pandas as pd

    tau = with_zoo(tau)
    tasks = sorted(tau["task"].unique())
    mean = tau.pivot_table(index=["zoo", "ratio", "metric"], columns="task", values="tau")
    sd = tau.pivot_table(
        index=["zoo", "ratio", "metric"], columns="task", values="tau_std", dropna=False
    )
    wide = pd.DataFrame(index=mean.index)
    for t in tasks:
        wide[t] = mean[t]
        wide[f"{t} sd"] = sd[t] if t in sd else np.nan
    order = {m: i for i, m in enumerate(metric_order(tau["metric"].unique()))}
    wide = wide.reset_index()
    wide = wide.assign(_o=wide["metric"].map(order)).sort_values(["zoo", "ratio", "_o"])
    return wide.drop(columns="_o").reset_index(drop=True)


def differences(current, reference, *, level: float = 0.95) -> Any:
    """Compare two :func:`average_table` frames (e.g. this run and the committed
    ``paper/transferability_kendall.csv``): per (zoo, metric, ratio) both means,
    the difference, the combined half-width sqrt(h_a² + h_b²) (a missing
    spread counts as 0) and ``beyond_noise`` = |difference| > combined."""
    import pandas as pd

    pct = f"±{level:.0%}"

    def long(df):
        df = with_zoo(df).set_index(["zoo", "metric"])
        out = {}
        for c in df.columns:
            if c.startswith("N/K="):
                r = int(c[4:])
                h = df[f"{pct} {c}"] if f"{pct} {c}" in df else pd.Series(np.nan, df.index)
                for z, m in df.index:
                    out[(z, m, r)] = (float(df.loc[(z, m), c]), float(h.loc[(z, m)]))
        return out

    a, b = long(current), long(reference)
    rows = []
    for key in [k for k in a if k in b]:
        (ta, ha), (tb, hb) = a[key], b[key]
        comb = math.sqrt(np.nan_to_num(ha) ** 2 + np.nan_to_num(hb) ** 2)
        rows.append(
            dict(
                zoo=key[0],
                metric=key[1],
                ratio=key[2],
                tau=ta,
                reference=tb,
                difference=ta - tb,
                noise=comb,
                beyond_noise=bool(abs(ta - tb) > comb),
            )
        )
    return pd.DataFrame(
        rows,
        columns=[
            "zoo",
            "metric",
            "ratio",
            "tau",
            "reference",
            "difference",
            "noise",
            "beyond_noise",
        ],
    )


def noise_summary(diff) -> str:
    """One Markdown sentence on a :func:`differences` frame: how many (metric, N/K)
    means moved beyond their combined 95 % half-widths, and which."""
    if diff is None:
        return "No earlier table to compare with.\n"
    if diff.empty:
        return "The earlier table shares no (metric, N/K) cell with this run.\n"
    moved = diff[diff["beyond_noise"]]
    text = (
        f"{len(diff) - len(moved)} of {len(diff)} (metric, N/K) means differ from the "
        f"earlier table by less than their combined 95 % half-widths (within subsample "
        f"noise); largest difference {diff['difference'].abs().max():.3f}."
    )
    if not moved.empty:
        text += (
            " Beyond noise: "
            + ", ".join(
                f"{r.metric} at N/K = {r.ratio} ({r.reference:.3f} → {r.tau:.3f}, ± {r.noise:.3f})"
                for r in moved.itertuples()
            )
            + "."
        )
    return text + "\n"
