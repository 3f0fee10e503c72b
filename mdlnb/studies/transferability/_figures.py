"""The study's figures: mean τ per metric (one panel per zoo) and PACTran Fig. 1
(each metric against the fine-tuned test error, one panel per metric)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mdlnb.research.ranking import kendall_tau
from mdlnb.studies.transferability._metrics import display_name, metric_order, metric_sign


def tau_bars(table: Any, *, title: str = "") -> Any:
    """Mean τ over tasks per metric and N/K, error bars the two-stage bootstrap interval,
    one panel per zoo (``table``: :func:`._tables.table_1`). Returns the Figure."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    zoos = list(dict.fromkeys(table["zoo"]))
    ratios = sorted(int(c[4:]) for c in table.columns if c.startswith("N/K="))
    if not zoos:  # no zoo had the checkpoints τ needs: a figure that says so, not an error
        fig, ax = plt.subplots(figsize=(7.0, 1.5))
        ax.text(0.5, 0.5, "no zoo has enough checkpoints for Kendall τ", ha="center", va="center")
        ax.set_axis_off()
        ax.set_title(title)
        return fig
    fig, axes = plt.subplots(
        len(zoos),
        1,
        figsize=(max(7.0, 0.42 * table["metric"].nunique()), 3.6 * len(zoos)),
        squeeze=False,
    )
    width = 0.8 / max(len(ratios), 1)
    for ax, zoo in zip(axes[:, 0], zoos):
        g = table[table["zoo"] == zoo].reset_index(drop=True)
        x = np.arange(len(g))
        for i, (r, color) in enumerate(zip(ratios, sns.color_palette("viridis", len(ratios)))):
            m = g[f"N/K={r}"].to_numpy(float)
            err = np.vstack(
                [m - g[f"lo N/K={r}"].to_numpy(float), g[f"hi N/K={r}"].to_numpy(float) - m]
            )
            ax.bar(
                x + (i - (len(ratios) - 1) / 2) * width,
                m,
                width,
                yerr=np.nan_to_num(err),
                color=color,
                label=f"N/K = {r}",
                error_kw={"elinewidth": 0.8, "capsize": 1.5},
            )
        ax.axhline(0.0, color="0.3", lw=0.8)
        ax.set_ylim(-1.05, 1.05)
        ax.set_xticks(x, [display_name(m) for m in g["metric"]], rotation=60, ha="right")
        ax.set_ylabel("Kendall τ vs accuracy")
        ax.set_title(
            f"{zoo}: {int(g['encoders'].max())} checkpoints, {int(g['tasks'].max())} "
            f"tasks (95 % two-stage bootstrap over tasks and subsamples)"
        )
        ax.legend(fontsize="small", ncols=len(ratios))
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def figure_1(
    scores: Any,
    truth: Any,
    *,
    zoo: str,
    task: str,
    ratio: int,
    readout: str = "finetune",
    families: dict | None = None,
) -> Any:
    """PACTran Fig. 1: per metric, each checkpoint's value (mean over the subsamples at
    N/K = ``ratio``, with its own sign) against its fine-tuned test error on ``task``,
    one panel per metric, τ in the title; points coloured by ``families`` (encoder →
    pretraining objective). Returns the Figure."""
    import matplotlib.pyplot as plt

    s = scores[(scores["zoo"] == zoo) & (scores["task"] == task) & (scores["ratio"] == ratio)]
    mean = s.groupby(["metric", "encoder"])["value"].mean()
    acc = truth[(truth["readout"] == readout) & (truth["task"] == task)].set_index("encoder")[
        "accuracy"
    ]
    metrics = [
        m for m in metric_order(s["metric"].unique()) if mean[m].index.isin(acc.index).sum() > 2
    ]
    cols = 5
    rows = -(-len(metrics) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.0 * cols, 2.6 * rows), squeeze=False)
    fams = families or {}
    palette = {f: plt.cm.tab10(i) for i, f in enumerate(sorted(set(fams.values())))}
    for ax, m in zip(axes.flat, metrics):
        v = mean[m]
        v = v[v.index.isin(acc.index) & np.isfinite(v.to_numpy(float))]
        err = 1.0 - acc[v.index].to_numpy(float)
        c = [palette.get(fams.get(e), "0.3") for e in v.index]
        ax.scatter(v.to_numpy(float), err, s=12, c=c)
        x = metric_sign(m) * v.to_numpy(float)
        tau = kendall_tau(x, -err) if np.ptp(x) and np.ptp(err) else 0.0
        ax.set_title(f"{display_name(m)} (τ = {tau:.2f})", fontsize=9)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(metrics) :]:
        ax.axis("off")
    for ax in axes[:, 0]:
        ax.set_ylabel("fine-tuned test error")
    handles = [
        plt.Line2D([], [], marker="o", ls="", color=col, label=f) for f, col in palette.items()
    ]
    if handles:
        fig.legend(handles=handles, loc="lower right", fontsize=8)
    fig.suptitle(
        f"PACTran Fig. 1 on {task} ({zoo} zoo, N/K = {ratio}): metric value vs "
        f"fine-tuned test error, one point per checkpoint"
    )
    fig.tight_layout()
    return fig
