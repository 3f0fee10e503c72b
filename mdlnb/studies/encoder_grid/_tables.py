"""Tables the notebooks show: slices of the study's tidy frame, nothing recomputed.

Ranking follows Demšar (2006) as the paper does (Sec. 4): per task, rank the
encoders by a method's score (1 = best; accuracy higher-is-better, codelength
lower-is-better; ties averaged), average over tasks (:mod:`mdlnb.research.ranking`).
Every average carries its spread: the standard deviation of the per-task
ranks, or over data orders. Whether a ranking is more than noise (Friedman,
Nemenyi, the permutation variance of App. A.7) is :mod:`._significance`.

``mdlnb.research.ranking`` (SciPy) is imported inside the functions that use it.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from mdlnb.research import ranking

#: method → (metric of the frame, higher is better). Table 1's three columns.
METHODS: dict[str, tuple[str, bool]] = {
    "linear": ("linear accuracy", True),
    "mlp": ("mlp accuracy", True),
    "mdl": ("codelength [nats]", False),
}
GROUP_ORDER = ("natural", "specialized", "structured")


def _subset(
    frame,
    encoders: Sequence[str] | None = None,
    tasks: Sequence[str] | None = None,
    group: str | None = None,
):
    f = frame
    if encoders is not None:
        missing = sorted(set(encoders) - set(f["encoder"]))
        if missing:
            raise ValueError(f"encoders: not in the study: {missing}")
        f = f[f["encoder"].isin(encoders)]
    if tasks is not None:
        f = f[f["task"].isin(tasks)]
    if group is not None:
        if group not in GROUP_ORDER:
            raise ValueError(f"group: must be one of {GROUP_ORDER}, got {group!r}")
        f = f[f["group"] == group]
    return f


def task_order(frame) -> list[str]:
    """Tasks grouped natural → specialized → structured, by name within a group."""
    g = frame.drop_duplicates("task").set_index("task")["group"]
    return sorted(g.index, key=lambda t: (GROUP_ORDER.index(g[t]), t))


def scores(frame, metric: str, *, encoders: Sequence[str] | None = None, group: str | None = None):
    """tasks × encoders: ``metric`` averaged over data orders (seeds)."""
    f = _subset(frame, encoders, group=group)
    f = f[f["metric"] == metric]
    if f.empty:
        raise ValueError(f"metric: no rows for {metric!r}")
    w = f.pivot_table(index="task", columns="encoder", values="value", aggfunc="mean")
    cols = list(encoders) if encoders is not None else sorted(w.columns)
    return w.loc[[t for t in task_order(frame) if t in w.index], cols]


def rank_frame(
    frame,
    *,
    encoders: Sequence[str] | None = None,
    group: str | None = None,
    methods: Sequence[str] = tuple(METHODS),
):
    """Tidy per-task ranks: ``method``, ``task``, ``group``, ``encoder``, ``rank`` (1 = best)."""
    groups = frame.drop_duplicates("task").set_index("task")["group"]
    out = []
    for m in methods:
        metric, hib = METHODS[m]
        r = ranking.rank_table(
            scores(frame, metric, encoders=encoders, group=group), higher_is_better=hib
        )
        long = r.reset_index().melt(id_vars="task", var_name="encoder", value_name="rank")
        out.append(long.assign(method=m, group=long["task"].map(groups)))
    return pd.concat(out, ignore_index=True)[["method", "task", "group", "encoder", "rank"]]


def average_rank_table(
    frame,
    encoders: Sequence[str],
    *,
    group: str | None = None,
    methods: Sequence[str] = tuple(METHODS),
):
    """Paper Table 1: per encoder and method the average rank over tasks, the
    standard deviation of its per-task ranks (``sd``) and its position
    (``#``, 1 = best average rank). Rows in order of the MDL average rank."""
    rf = rank_frame(frame, encoders=encoders, group=group, methods=methods)
    agg = rf.groupby(["method", "encoder"])["rank"].agg(["mean", "std"])
    out = pd.DataFrame(index=list(encoders))
    for m in methods:
        a = agg.loc[m].reindex(list(encoders))
        out[f"{m} rank"] = a["mean"]
        out[f"{m} sd"] = a["std"].fillna(0.0)
        out[f"{m} #"] = a["mean"].rank(method="min").astype(int)
    key = "mdl rank" if "mdl" in methods else f"{methods[0]} rank"
    out = out.sort_values(key, kind="stable")
    out.index.name = "encoder"
    return out.reset_index()


def group_rank_table(frame, encoders: Sequence[str], *, method: str = "mdl"):
    """Paper Table 2: average rank (± sd over the group's tasks) and position of
    each encoder within each task group, by ``method``; groups absent from the
    study are left out."""
    present = [g for g in GROUP_ORDER if g in set(frame["group"])]
    out = pd.DataFrame(index=list(encoders))
    for g in present:
        t = average_rank_table(frame, encoders, group=g, methods=(method,)).set_index("encoder")
        out[f"{g} rank"] = t[f"{method} rank"]
        out[f"{g} sd"] = t[f"{method} sd"]
        out[f"{g} #"] = t[f"{method} #"]
        out[f"{g} tasks"] = int(frame.loc[frame["group"] == g, "task"].nunique())
    out.index.name = "encoder"
    return out.reset_index()


def ranking_agreement(frame, encoders: Sequence[str]):
    """Kendall τ between the average-rank orderings of the three methods
    (do linear, best-MLP accuracy and MDL select alike?)."""
    t = average_rank_table(frame, encoders).set_index("encoder")
    pairs = [("linear", "mlp"), ("linear", "mdl"), ("mlp", "mdl")]
    return pd.DataFrame(
        [
            {
                "methods": f"{a} vs {b}",
                "kendall tau": ranking.kendall_tau(t[f"{a} rank"], t[f"{b} rank"]),
            }
            for a, b in pairs
        ]
    )


# ----------------------------------------------------------------------------- scaling


def scaling_table(frame, encoder_table, encoders: Sequence[str]):
    """Paper Table 1b / Fig. 8: per encoder its parameter count, codelength in
    bits/example averaged over tasks (± sd over tasks of the per-task means
    over orders), average ranks by the three methods and positions."""
    ranks = average_rank_table(frame, encoders).set_index("encoder")
    bits = scores(frame, "codelength [bits/example]", encoders=encoders)
    et = encoder_table.set_index("encoder")
    out = ranks.copy()
    out.insert(0, "parameters", et.loc[out.index, "parameters"].astype(int))
    out.insert(0, "size", et.loc[out.index, "size"])
    out.insert(0, "objective", et.loc[out.index, "objective"])
    out.insert(0, "architecture", et.loc[out.index, "architecture"])
    out.insert(4, "bits/example", bits.mean(axis=0).loc[out.index])
    out.insert(5, "bits/example sd (tasks)", bits.std(axis=0).loc[out.index])
    return out.reset_index()


def scaling_differences(frame, encoder_table, encoders: Sequence[str]):
    """Paired size effects within a family (the figure of Table 1b / Fig. 8).

    A family is one (architecture, objective); its reference is its encoder
    with the fewest parameters among ``encoders``. For encoder e and data
    order s, with T the tasks both e and the reference were run on,

        Δ_s(e) = (1/|T|) Σ_{t ∈ T} [ bits_{e,t,s} − bits_{ref,t,s} ]   (bits/example),

    paired by task and order, so what all encoders share about a task (its
    difficulty: the spread over tasks, which swamps every size effect) and
    about an order cancels. One row per encoder: the mean of Δ_s over orders
    (negative = the larger encoder codes shorter), its sd over orders
    (ddof 1; 0 for the reference), the number of orders and tasks, and the
    reference's own codelength (mean over tasks and orders).
    """
    f = _subset(frame, encoders)
    f = f[f["metric"] == "codelength [bits/example]"]
    if f.empty:
        raise ValueError("frame: no 'codelength [bits/example]' rows for these encoders")
    et = encoder_table.set_index("encoder").loc[list(encoders)]
    bits = f.set_index(["encoder", "task", "seed"])["value"]
    rows = []
    for (arch, obj), g in et.groupby(["architecture", "objective"], sort=True):
        g = g.sort_values("parameters", kind="stable")
        ref = g.index[0]
        b_ref = bits.loc[ref]
        for enc, r in g.iterrows():
            d = (bits.loc[enc] - b_ref).dropna()  # paired by (task, seed)
            per_order = d.groupby(level="seed").mean()
            rows.append(
                {
                    "encoder": enc,
                    "architecture": arch,
                    "objective": obj,
                    "size": r["size"],
                    "parameters": int(r["parameters"]),
                    "reference": ref,
                    "reference bits/example": float(b_ref.mean()),
                    "Δ bits/example": float(per_order.mean()),
                    "Δ sd (orders)": float(per_order.std(ddof=1))
                    if len(per_order) > 1
                    else float("nan"),
                    "orders": int(per_order.size),
                    "tasks": int(d.index.get_level_values("task").nunique()),
                }
            )
    return pd.DataFrame(rows)


def regret_along_n(curves, larger: str, smaller: str):
    """Per task and data size n: cumulative codelength of ``larger`` minus that
    of ``smaller`` (nats; negative = the larger encoder codes shorter), paired
    by data order, mean and sd over orders."""
    a = curves[curves["encoder"] == larger].set_index(["task", "seed", "n"])["cumulative [nats]"]
    b = curves[curves["encoder"] == smaller].set_index(["task", "seed", "n"])["cumulative [nats]"]
    if a.empty or b.empty:
        raise ValueError(f"larger: no curves for {larger!r} or {smaller!r}")
    d = (a - b).dropna().rename("difference [nats]").reset_index()
    g = d.groupby(["task", "n"])["difference [nats]"].agg(["mean", "std"]).reset_index()
    g = g.rename(columns={"mean": "larger − smaller [nats]", "std": "sd [nats]"})
    return g.assign(larger=larger, smaller=smaller)


# ----------------------------------------------------------------------------- readouts


def preferred_readout_table(frame, encoders: Sequence[str] | None = None):
    """Paper Fig. 2: encoder × task, the preferred readout's number of hidden layers
    (0 = linear), the mean over data orders — the per-cell statistic claim d2
    averages; tasks in group order."""
    f = _subset(frame, encoders)
    f = f[f["metric"] == "preferred readout depth"]
    w = f.pivot_table(index="encoder", columns="task", values="value", aggfunc="mean")
    w = w[[t for t in task_order(frame) if t in w.columns]]
    return w.loc[list(encoders)] if encoders is not None else w


def preference_agreement(frame, encoders: Sequence[str] | None = None) -> float:
    """The share of (encoder, task) cells whose data orders all prefer the same depth."""
    f = _subset(frame, encoders)
    f = f[f["metric"] == "preferred readout depth"]
    return float((f.groupby(["encoder", "task"])["value"].nunique() == 1).mean())


def switching_by_group(frame, sizes: dict[str, int], encoders: Sequence[str] | None = None):
    """Per task group: mean ± sd over (encoder, task, order) of the MAP-readout
    switches, of switches per 1,000 examples, and of the preferred readout depth."""
    f = _subset(frame, encoders)
    sw = f[f["metric"] == "readout switches"]
    dp = f[f["metric"] == "preferred readout depth"]
    rows = []
    for g in [g for g in GROUP_ORDER if g in set(f["group"])]:
        s = sw[sw["group"] == g]
        per_k = s["value"] / s["task"].map(sizes) * 1000.0
        d = dp[dp["group"] == g]["value"]
        rows.append(
            {
                "group": g,
                "tasks": s["task"].nunique(),
                "runs": len(s),
                "switches": s["value"].mean(),
                "switches sd": s["value"].std(),
                "per 1k examples": per_k.mean(),
                "per 1k sd": per_k.std(),
                "preferred depth": d.mean(),
                "preferred depth sd": d.std(),
            }
        )
    return pd.DataFrame(rows)
