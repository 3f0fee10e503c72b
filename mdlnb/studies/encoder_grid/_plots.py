"""Figures of the encoder study (seaborn/matplotlib), each from a table of :mod:`._tables`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mdlnb.api import plots
from mdlnb.api.plots import (
    depth_cmap,
    encoder_label,
    family_label,
    place_labels,
    size_label,
    task_label,
)
from mdlnb.research import ranking
from mdlnb.studies.encoder_grid import _tables


def cd_diagrams(
    frame,
    encoders: Sequence[str],
    *,
    alpha: float = 0.10,
    methods: Sequence[str] = tuple(_tables.METHODS),
    group: str | None = None,
    title: str = "",
):
    """One Nemenyi CD diagram per method (paper Fig. 6/7 summarised), correct q_α.
    Returns the Figure."""
    import matplotlib.pyplot as plt

    rf = _tables.rank_frame(frame, encoders=encoders, group=group, methods=methods)
    n = rf["task"].nunique()
    cd = ranking.nemenyi_cd(len(encoders), n, alpha)
    fig, axes = plt.subplots(len(methods), 1, figsize=(9, 2.2 * len(methods) + 0.6))
    axes = np.atleast_1d(axes)
    for ax, m in zip(axes, methods):
        avg = rf[rf["method"] == m].groupby("encoder")["rank"].mean()
        ranking.plot_cd(
            avg, cd, ax=ax, title=f"{m} ({title or group or 'all tasks'}, N={n}, α={alpha:g})"
        )
    fig.tight_layout()
    return fig


def rank_boxes(frame, encoders: Sequence[str], *, group: str | None = None):
    """Paper Fig. 6: per-task ranks as box plots per encoder and method, the mean
    as a red dot. Returns the Axes."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    rf = _tables.rank_frame(frame, encoders=encoders, group=group)
    order = list(_tables.average_rank_table(frame, encoders, group=group)["encoder"])
    fig, ax = plt.subplots(figsize=(max(7.0, 1.1 * len(encoders)), 3.8))
    sns.boxplot(
        data=rf,
        x="encoder",
        y="rank",
        hue="method",
        order=order,
        ax=ax,
        palette="Set2",
        fliersize=2,
    )
    sns.pointplot(
        data=rf,
        x="encoder",
        y="rank",
        hue="method",
        order=order,
        ax=ax,
        estimator="mean",
        errorbar=None,
        dodge=0.53,
        linestyle="none",
        palette=["red"] * rf["method"].nunique(),
        markers="o",
        legend=False,
    )
    ax.set_ylabel("rank per task (1 = best)")
    ax.set_xlabel("")
    ax.tick_params(axis="x", rotation=30)
    ax.set_title(f"ranks over {rf['task'].nunique()} tasks ({group or 'all'}); red dot: mean")
    return ax


def scaling(table, differences):
    """Paper Fig. 8 / Table 1b against parameter count, one line per (architecture,
    objective) family, in readers' names (:func:`mdlnb.api.plots.family_label`).

    Left: the paired difference to the family's smallest encoder
    (:func:`._tables.scaling_differences`: bits/example, mean over tasks, per
    order; error bars ± sd over orders; below 0 the larger encoder codes
    shorter). The spread over tasks, which is task difficulty and is shared by
    every encoder, does not enter. Right: average MDL rank over tasks (1 = best).
    Each point is labelled with its size, no two labels overlapping. Returns the
    Figure."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    key = ["architecture", "objective"]
    fams = sorted({tuple(k) for k in table[key].to_numpy()})
    pal = dict(zip(fams, sns.color_palette("colorblind")))
    fig, (a0, a1) = plt.subplots(1, 2, figsize=(12, 5.0))
    n_tasks = int(differences["tasks"].max())
    n_orders = int(differences["orders"].max())
    points = {a0: [], a1: []}
    for fam in fams:
        d = differences[
            (differences["architecture"] == fam[0]) & (differences["objective"] == fam[1])
        ].sort_values("parameters")
        t = table[(table["architecture"] == fam[0]) & (table["objective"] == fam[1])].sort_values(
            "parameters"
        )
        ref = d.iloc[0]
        label = (
            f"{family_label(*fam)} (vs {size_label(fam[0], ref['size'])}: "
            f"{ref['reference bits/example']:.3f} bits/example)"
        )
        a0.errorbar(
            d["parameters"],
            d["Δ bits/example"],
            yerr=d["Δ sd (orders)"].fillna(0.0),
            marker="o",
            capsize=3,
            label=label,
            color=pal[fam],
        )
        a1.plot(
            t["parameters"], t["mdl rank"], marker="o", label=family_label(*fam), color=pal[fam]
        )
        for ax, frame, col in ((a0, d, "Δ bits/example"), (a1, t, "mdl rank")):
            points[ax] += [
                ((p, v), size_label(fam[0], sz), pal[fam])
                for p, v, sz in zip(frame["parameters"], frame[col], frame["size"])
            ]
    a0.axhline(0.0, color="0.3", lw=0.8)
    for ax in (a0, a1):
        ax.set_xscale("log")
        ax.set_xlabel("encoder parameters")
        ax.margins(x=0.12, y=0.15)
    a0.set_ylabel("Δ codelength to the family's smallest\n[bits/example]")
    a0.set_title(
        f"Paired difference to the smallest encoder of each family\n"
        f"(mean over {n_tasks} tasks; ± sd over {n_orders} data orders; "
        "below 0: larger codes shorter)",
        fontsize=10,
    )
    a1.set_ylabel("average MDL rank (1 = best)")
    a1.set_title(
        f"Average MDL rank over {n_tasks} tasks\n({len(table)} encoders ranked per task)",
        fontsize=10,
    )
    a1.invert_yaxis()
    for ax in (a0, a1):  # below the axes: covers no point
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16))
    fig.tight_layout()
    for ax, pts in points.items():  # after the layout: the labels' places are final
        place_labels(
            ax, [p for p, _, _ in pts], [lab for _, lab, _ in pts], color=[c for _, _, c in pts]
        )
    return fig


#: One colour per task group, in every figure of the encoder study.
GROUP_COLOURS = {"natural": "#1b9e77", "specialized": "#d95f02", "structured": "#7570b3"}


def regret(regret_frame, *, groups: dict[str, str], ax: Any = None):
    """Cumulative codelength of the larger encoder minus the smaller along n (nats): one
    thin line per task, coloured by its group (``groups``: task → group), and a thick
    line per group, the mean over its tasks. Returns the Axes."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 3.8))
    col = "larger − smaller [nats]"
    for task, g in regret_frame.groupby("task", sort=False):
        ax.plot(g["n"], g[col], color=GROUP_COLOURS[groups[task]], lw=0.8, alpha=0.45)
    means = (
        regret_frame.assign(group=regret_frame["task"].map(groups))
        .groupby(["group", "n"], sort=True)[col]
        .mean()
        .reset_index()
    )
    for group, g in means.groupby("group", sort=False):
        ax.plot(g["n"], g[col], color=GROUP_COLOURS[group], lw=2.5)
    ax.axhline(0, color="0.3", lw=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("examples coded n")
    ax.set_ylabel("cumulative codelength difference [nats]")
    r = regret_frame.iloc[0]
    ax.set_title(
        f"{encoder_label(str(r['larger']))} minus {encoder_label(str(r['smaller']))}\n"
        "below 0: the larger encoder has coded the labels in fewer nats",
        fontsize=10,
    )
    present = [g for g in GROUP_COLOURS if g in set(groups[t] for t in regret_frame["task"])]
    handles = [
        Line2D([], [], color=GROUP_COLOURS[g], lw=2.5, label=f"{g} (mean)") for g in present
    ] + [Line2D([], [], color="0.5", lw=0.8, label="one task")]
    ax.legend(handles=handles, fontsize=8, loc="lower left")
    return ax


def preference_heatmap(
    table, groups: dict[str, str], *, orders: int | None = None, agreement: float | None = None
):
    """Paper Fig. 2: preferred readout depth per (encoder, task) — the mean over data
    orders, annotated to one decimal — tasks grouped by task group (labels on top).
    ``orders``, ``agreement``: the number of orders and the share of cells where they all
    agree, for the title. Returns the Axes."""
    import matplotlib.pyplot as plt
    import numpy as np
    import seaborn as sns

    fig, ax = plt.subplots(figsize=(1.0 * table.shape[1] + 3, 0.45 * table.shape[0] + 1.9))

    values = np.asarray(table, dtype=float)
    top = int(np.ceil(max(1.0, float(np.nanmax(values))))) if np.isfinite(values).any() else 1
    # the readouts' own colours (mdlnb.api.plots.DEPTH_COLORS): a whole depth is its readout's
    sns.heatmap(
        table,
        annot=True,
        fmt=".1f",
        cmap=depth_cmap(top),
        vmin=0.0,
        vmax=top,
        ax=ax,
        cbar_kws={"label": "hidden layers (0 = linear), mean over orders"},
    )
    ax.set_yticklabels([encoder_label(str(e)) for e in table.index], rotation=0)
    ax.set_xticklabels([task_label(str(c)) for c in table.columns])
    cols = list(table.columns)
    for i in range(1, len(cols)):
        if groups[cols[i]] != groups[cols[i - 1]]:
            ax.axvline(i, color="white", lw=3)
    start = 0
    for i in range(1, len(cols) + 1):
        if i == len(cols) or groups[cols[i]] != groups[cols[start]]:
            ax.text(
                (start + i) / 2, -0.3, groups[cols[start]], ha="center", va="bottom", fontsize=9
            )
            start = i
    ax.set_xlabel("")
    ax.set_ylabel("")
    sub = (f"mean over {orders} data orders" if orders else "mean over data orders") + (
        f"; all orders agree in {agreement:.0%} of cells" if agreement is not None else ""
    )
    ax.set_title(
        "preferred readout depth, argmax of the time-averaged posterior "
        f"(0 = linear, h = MLP with h hidden layers)\n{sub}",
        pad=30,
    )
    return ax


def posteriors(posterior, pairs: Sequence[tuple[str, str]], *, seed: int = 0):
    """Paper Fig. 9: stacked posterior over readouts along t for a few (encoder,
    task) pairs, averaged in log-spaced bins. Returns the Figure."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(pairs), figsize=(4.2 * len(pairs), 3.4), squeeze=False)
    readouts = plots.depth_order(posterior["readout"])  # one colour per depth, everywhere
    pal = plots.depth_palette(readouts)
    for ax, (enc, task) in zip(axes[0], pairs):
        p = posterior[
            (posterior["encoder"] == enc)
            & (posterior["task"] == task)
            & (posterior["seed"] == seed)
        ]
        if p.empty:
            raise ValueError(f"pairs: no posterior for {(enc, task)} at seed {seed}")
        w = p.pivot_table(index="t_end", columns="readout", values="probability")
        w = w[[r for r in readouts if r in w.columns]]
        ax.stackplot(
            w.index,
            w.T.to_numpy(),
            labels=list(w.columns),
            colors=[pal[r] for r in w.columns],
            step="pre",
        )
        ax.set_xscale("log")
        ax.set_ylim(0, 1)
        ax.set_xlabel("examples seen t")
        ax.set_title(f"{encoder_label(enc)}\non {task_label(task)}", fontsize=9)
    axes[0][0].set_ylabel("p(readout | D<t)")
    axes[0][-1].legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    return fig


def switching(frame, sizes: dict[str, int]):
    """MAP-readout switches per 1,000 examples by task group (each dot one
    encoder × task × order). Returns the Axes."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    f = frame[frame["metric"] == "readout switches"]
    f = f.assign(
        **{
            "switches per 1k examples": f["value"] / f["task"].map(sizes) * 1000.0,
            "task": f["task"].map(lambda t: task_label(str(t))),
        }
    )
    order = [g for g in _tables.GROUP_ORDER if g in set(f["group"])]
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    sns.boxplot(
        data=f,
        x="group",
        y="switches per 1k examples",
        order=order,
        ax=ax,
        color="0.85",
        fliersize=0,
    )
    # a swarm, not a jittered strip: the strip's jitter draws from NumPy's global
    # random state, so the same run gave different PNG bytes
    sns.swarmplot(
        data=f,
        x="group",
        y="switches per 1k examples",
        order=order,
        ax=ax,
        hue="task",
        size=2.5,
        warn_thresh=1.0,
    )
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    ax.set_xlabel("")
    return ax
