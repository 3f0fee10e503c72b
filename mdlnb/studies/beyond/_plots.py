"""Figures and the reader's table of :mod:`mdlnb.studies.beyond`, in words a reader
knows: representations named in full, the unit spelled out, every line and band
in a legend, readout colours by depth (:func:`mdlnb.api.plots.depth_palette`).

The density codelength −Σ log p(y_t | …) is in nats of a probability *density*:
comparable between representations of the same targets (one panel), never across
panels or with the codes of class labels (:mod:`mdlnb.core._targets`).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from mdlnb.api.plots import encoder_label, task_label
from mdlnb.studies.beyond._data import t_interval

# Imported inside the functions that use them: matplotlib, pandas.

#: Readers' names of the regression tasks.
TASKS = {
    "diabetes": "diabetes: disease progression of 442 patients",
    "dsprites_x_reg": "dSprites: horizontal position of the shape",
    "dsprites_y_reg": "dSprites: vertical position of the shape",
    "dsprites_orientation_reg": "dSprites: orientation of the shape",
}

_STAGE = re.compile(r"lite(\d)@(\d+)/(\w+)")


def representation_label(name: str) -> str:
    """A reader's name for a representation of :func:`regression_representations`:
    ``"lite0@64/stage5"`` → ``"EfficientNet-Lite0 stage 5 features (64 px input)"``,
    ``"pixels8x8"`` → ``"pixels averaged to 8×8"``, ``"pca2"`` → ``"top 2 principal
    components"``; the rest (``"features"``, ``"noise"``) spelled out."""
    found = _STAGE.fullmatch(name)
    if found:
        v, px, layer = found.groups()
        where = (
            f"stage {layer[5:]}"
            if layer.startswith("stage")
            else "head"
            if layer == "head"
            else layer
        )
        return f"EfficientNet-Lite{v} {where} features ({px} px input)"
    grid = re.fullmatch(r"pixels(\d+)x(\d+)", name)
    if grid:
        return f"pixels averaged to {grid.group(1)}×{grid.group(2)}"
    pca = re.fullmatch(r"pca(\d+)", name)
    if pca:
        return f"top {pca.group(1)} principal components"
    return {"features": "the 10 clinical features", "noise": "Gaussian noise (no information)"}.get(
        name, name
    )


def summary(result: Any):
    """:meth:`BeyondResult.regression` for reading: one row per representation, each
    quantity one rounded cell (mean ± sd over orders), named in words."""
    import pandas as pd

    tab = result.regression()
    orders = int(tab["orders"].iloc[0]) if len(tab) else 0
    rows = [
        {
            "task": r["task"],
            "representation": representation_label(r["representation"]),
            "D": int(r["feature dim"]),
            "density code [nats/example]": f"{r['per example [density nats]']:.3f} ± "
            f"{r['per example std [density nats]']:.3f}",
            "vs best [nats] (paired)": (
                "0"
                if r["vs best [nats]"] == 0
                else f"{r['vs best [nats]']:+,.1f} ± {r['vs best std [nats]']:,.1f}"
            ),
            "MDL rank": int(r["rank"]),
            "LogME [nats/example]": f"{r['LogME [nats/example]']:+.2f}",
            "LogME rank": int(r["LogME rank"]),
            "linear or deeper": r["linear or deeper"],
        }
        for _, r in tab.iterrows()
    ]
    out = pd.DataFrame(rows)
    out.attrs["note"] = (
        f"mean ± sd over {orders} orders; density code: −log p(y) in nats "
        "of a density, comparable within one task only; LogME: Bayesian "
        "linear regression's evidence, higher is better"
    )
    return out


def regression(result: Any):
    """Per regression task (one panel each): the cumulative density code divided by n
    along the stream, mean over orders (line) and min–max (band), per representation,
    log x. Returns the Figure."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    cur = result.along_n()
    tasks = list(result.comparisons)
    fig, axes = plt.subplots(
        1, len(tasks), figsize=(6.2 * len(tasks), 4.4), squeeze=False, layout="constrained"
    )
    colors = ["#0173b2", "#de8f05", "#7f7f7f"]  # colorblind blue, orange; noise grey
    for ax, task in zip(axes[0], tasks):
        c = cur[cur["task"] == task]
        orders = len(result.comparisons[task].seeds)
        for e, col in zip(result.comparisons[task].encoders, colors * 3):
            h = c[c["representation"] == e]
            ax.plot(
                h["n"],
                h["mean"],
                color=col,
                label=f"{representation_label(e)} (LogME {result.logme[(task, e)]:+.2f})",
            )
            ax.fill_between(h["n"], h["min"], h["max"], color=col, alpha=0.18, linewidth=0)
        handles = [
            *ax.get_legend_handles_labels()[0],
            Patch(
                facecolor="0.5",
                alpha=0.25,
                linewidth=0,
                label=f"band: min–max over {orders} orders; line: their mean",
            ),
        ]
        ax.legend(handles=handles, fontsize=7.5, loc="upper right")
        ax.set(
            xscale="log",
            xlabel="examples coded, n",
            ylabel="density code so far / n\n[nats per example, −log p(y) of a density]",
            title=TASKS.get(task, task_label(task)),
        )
        ax.title.set_fontsize(10)
    fig.suptitle(
        "Regression: density codelength along the stream (lower is better; "
        "compare within a panel only)",
        fontsize=10,
    )
    return fig


def calibration(result: Any):
    """Per representation: calibrated − plain per order (dots) and the mean with its
    95 % t-interval (bar), for the switching code and for the best single expert.
    Returns the Figure."""
    import matplotlib.pyplot as plt

    runs, tab = result.calibration_runs, result.calibration().set_index("representation")
    fig, ax = plt.subplots(figsize=(7.5, 3.8), layout="constrained")
    reps = list(tab.index)
    for j, (what, on, off, col) in enumerate(
        [
            ("switching code", "on [nats]", "off [nats]", "#0173b2"),
            ("best single expert", "best expert on [nats]", "best expert off [nats]", "#de8f05"),
        ]
    ):
        for i, rep in enumerate(reps):
            g = runs[runs["representation"] == rep]
            x = i + (j - 0.5) * 0.3
            ax.scatter(
                np.full(len(g), x),
                g[on] - g[off],
                color=col,
                s=14,
                alpha=0.6,
                label=f"{what}: one order" if i == 0 else None,
            )
            m, h = t_interval(g[on] - g[off])
            ax.errorbar(
                [x + 0.05],
                [m],
                yerr=[h],
                color=col,
                fmt="o",
                capsize=4,
                label=f"{what}: mean ± 95 % t-interval" if i == 0 else None,
            )
    ax.axhline(0.0, color="0.3", lw=0.8)
    ax.set_xticks(range(len(reps)), [encoder_label(r) for r in reps])
    ax.set(
        ylabel="calibrated − plain [nats]\n(below 0: calibration shortens the code)",
        title=f"{task_label(result.config.calibration_task)}: what calibration changes, per order",
    )
    ax.title.set_fontsize(10)
    ax.legend(fontsize=7.5, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    return fig
