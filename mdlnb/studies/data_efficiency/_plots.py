"""The data-efficiency study's figure (paper Fig. 3): regret to from scratch along n."""

from __future__ import annotations

from collections.abc import Mapping

from mdlnb.api import plots
from mdlnb.studies.data_efficiency._measures import METHODS
from mdlnb.studies.switching_strategies import spread

# Imported inside the functions that use them, so that importing this module does not load
# them: matplotlib.


def regret(curves, summary, domains: Mapping[str, str]):
    """One panel per (encoder, task): each method's cumulative loss minus from scratch's
    along n (line: mean over orders, band: min–max; a dot where an order's curve crosses
    zero for good). ``curves``/``summary``: the frames of
    :func:`~mdlnb.studies.data_efficiency._measures.regret_frames`, concatenated, with an
    ``encoder`` column; ``domains``: task → "in-domain"/"out-of-domain" (column order)."""
    import matplotlib.pyplot as plt

    encoders, tasks = list(dict.fromkeys(curves["encoder"])), list(domains)
    fig, axes = plt.subplots(
        len(encoders),
        len(tasks),
        figsize=(4.2 * len(tasks), 3.4 * len(encoders)),
        squeeze=False,
        sharex=True,
    )
    stats = spread(curves, ["encoder", "task", "method", "n"], "regret [nats]")
    colours = dict(zip(METHODS, plt.get_cmap("tab10").colors))
    for i, enc in enumerate(encoders):
        for j, task in enumerate(tasks):
            ax, g = axes[i, j], stats[(stats["encoder"] == enc) & (stats["task"] == task)]
            for method in METHODS:
                h, colour = g[g["method"] == method], colours[method]
                ax.plot(h["n"], h["mean"], label=method, color=colour)
                ax.fill_between(h["n"], h["min"], h["max"], alpha=0.2, color=colour)
                at = (
                    (summary["encoder"] == enc)
                    & (summary["task"] == task)
                    & (summary["method"] == method)
                )
                for x in summary.loc[at, "crossing n"].dropna():
                    ax.plot([x], [0], "o", color=colour)
            ax.axhline(0, color="k", lw=0.5)
            ax.set(xscale="log", title=f"{enc}\n{plots.task_label(task)} ({domains[task]})")
            ax.title.set_fontsize(9)
            if i == len(encoders) - 1:
                ax.set_xlabel("examples n")
            if j == 0:
                ax.set_ylabel("cumulative loss − from scratch [nats]")
    axes[0, 0].legend(
        fontsize=8, title="band: min–max over orders; dot: crossing", title_fontsize=7
    )
    fig.tight_layout()
    return fig
