"""The data-efficiency study's figure (paper Fig. 3): regret to from scratch along n."""

from __future__ import annotations

from typing import Mapping

from mdlnb import plots
from mdlnb.studies.data_efficiency._measures import METHODS
from mdlnb.studies.switching import spread

# Imported inside the functions that use them, so that importing this module does not load
# them: matplotlib.


def regret(curves, summary, task_names: Mapping[str, str]):
    """One panel per domain: each method's cumulative loss minus from scratch's along n
    (line: mean over orders, band: min–max; a dot where an order's curve crosses zero
    for good). ``curves``/``summary``: the frames of
    :func:`~mdlnb.studies.data_efficiency._measures.regret_frames`, concatenated."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, (domain, g) in zip(axes, spread(curves, ["domain", "method", "n"],
                                            "regret [nats]").groupby("domain")):
        for method in METHODS:
            h = g[g["method"] == method]
            line, = ax.plot(h["n"], h["mean"], label=method)
            ax.fill_between(h["n"], h["min"], h["max"], alpha=0.2, color=line.get_color())
            for x in summary.loc[(summary["domain"] == domain) & (summary["method"] == method),
                                 "crossing n"].dropna():
                ax.plot([x], [0], "o", color=line.get_color())
        ax.axhline(0, color="k", lw=0.5)
        ax.set(xscale="log", xlabel="examples n", ylabel="cumulative loss − from scratch [nats]",
               title=f"{domain}: {plots.task_label(task_names[domain])}")
    axes[0].legend()
    return fig
