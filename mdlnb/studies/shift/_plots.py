"""The shift study's figures, each from a table of :mod:`._tables`; each returns the Figure."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mdlnb.api.plots import encoder_label, task_label
from mdlnb.studies.shift import _paper as P
from mdlnb.studies.shift import _tables as T


def effects(runs: pd.DataFrame):
    """Per encoder, ``version − reshuffled`` (nats per example) of every (task, draw): the
    original split (left) and the train-then-test stream (right), one colour per task;
    the grey band is Table 11's ±0.01, the dashed line the paper's mean (r1)."""
    import matplotlib.pyplot as plt

    d = T.differences(runs)
    encs = list(dict.fromkeys(d["encoder"]))
    tasks = list(dict.fromkeys(d["task"]))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for ax, version in zip(axes, T.RANKED):
        part = d[d["version"] == version]
        for k, task in enumerate(tasks):
            g = part[part["task"] == task]
            x = np.array([encs.index(e) for e in g["encoder"]]) + (k - (len(tasks) - 1) / 2) * 0.2
            ax.scatter(
                x,
                g["minus reshuffled [nats]"],
                s=16,
                color=f"C{k}",
                label=f"{task_label(task)} (shifted in {g['factor'].iloc[0]})",
            )
        ax.axhspan(-P.THRESHOLD, P.THRESHOLD, color="0.85", zorder=0)
        ax.axhline(0, color="k", lw=0.6)
        ax.axhline(
            P.difference(),
            color="k",
            ls="--",
            lw=0.8,
            label=f"paper's mean on its shifted tasks ({P.difference():+.3f})",
        )
        ax.set_xticks(range(len(encs)), [encoder_label(e) for e in encs], rotation=35, ha="right")
        ax.set_title(f"{version} − reshuffled")
    axes[0].set_ylabel("codelength difference [nats/example]")
    axes[0].legend(fontsize=7, loc="best")
    fig.tight_layout()
    return fig


def ranks(runs: pd.DataFrame):
    """Each encoder's average rank (1 = shortest code) over the units under the reshuffled
    split, the original split and the train-then-test stream, joined by lines: crossing
    lines are the ranking changes r2 counts."""
    import matplotlib.pyplot as plt

    r = T.ranks(runs)
    cols = ["reshuffled", *T.RANKED]
    fig, ax = plt.subplots(figsize=(8.5, 4.2))
    for i, row in r.iterrows():
        ys = [row[f"{c} rank"] for c in cols]
        ax.plot(
            range(len(cols)), ys, marker="o", color=f"C{i}", label=encoder_label(row["encoder"])
        )
    ax.set_xticks(range(len(cols)), cols)
    ax.invert_yaxis()
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    ax.set_ylabel("average rank over (task, draw) units (1 = shortest)")
    fig.tight_layout()
    return fig


def along_n(curves: pd.DataFrame, size: int):
    """Cumulative codelength minus the reshuffled split's along the stream, per task: the
    original split and the train-then-test stream, mean (line) and min–max (band) over
    draws × encoders; the dotted line marks n = N/2, where the train-then-test stream
    turns (about) from one half of the factor to the other."""
    import matplotlib.pyplot as plt

    a = T.along_n(curves)
    tasks = list(dict.fromkeys(a["task"]))
    fig, axes = plt.subplots(1, len(tasks), figsize=(4.2 * len(tasks), 3.6), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        for k, (version, g) in enumerate(a[a["task"] == task].groupby("version", sort=False)):
            ax.plot(g["n"], g["mean"], color=f"C{k}", label=f"{version} − reshuffled")
            ax.fill_between(g["n"], g["min"], g["max"], color=f"C{k}", alpha=0.2)
        ax.axhline(0, color="k", lw=0.6)
        ax.axvline(size / 2, color="k", ls=":", lw=0.8)
        ax.set(xlabel="examples coded n", title=task_label(task))
    axes[0][0].set_ylabel("cumulative difference [nats]")
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    return fig
