"""The switching study's figures (paper Fig. 5; App. A.1): lines are means over
orders, bands min–max. Each returns the matplotlib Figure."""

from __future__ import annotations

from collections.abc import Sequence

from mdlnb.api import plots
from mdlnb.studies.switching_strategies import _tables as T
from mdlnb.studies.switching_strategies._pair import PairResult

# Imported inside the functions that use them, so that importing this module does not load
# them: matplotlib.


def _panels(results: Sequence[PairResult]):
    import matplotlib.pyplot as plt

    n = len(dict.fromkeys(r.pair for r in results))
    return plt.subplots(1, n, figsize=(5.5 * n, 4), squeeze=False)


def regret(results: Sequence[PairResult]):
    """Each strategy's cumulative codelength minus fixed share's along n, one panel per pair."""
    fig, axes = _panels(results)
    for ax, (pair, g) in zip(axes[0], T.regret_spread(results).groupby("pair")):
        for strat, h in g.groupby("strategy", sort=False):
            ax.plot(h["n"], h["mean"], label=strat)
            ax.fill_between(h["n"], h["min"], h["max"], alpha=0.2)
        ax.set(
            xscale="log",
            xlabel="examples n",
            ylabel="regret to fixed share [nats]",
            title=plots.pair_label(pair),
        )
        ax.axhline(0, color="k", lw=0.5)
    axes[0][0].legend()
    return fig


def sensitivity(results: Sequence[PairResult]):
    """Fixed share's regret to the best single expert against m and against a constant α."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for ax, (rate, g) in zip(axes, T.sensitivity_spread(results).groupby("rate", sort=False)):
        for pair, h in g.groupby("pair"):
            ax.errorbar(
                h["value"],
                h["mean"],
                yerr=h["std"].fillna(0),
                marker="o",
                label=plots.pair_label(pair),
            )
        ax.set(xscale="log", xlabel=rate, ylabel="regret to best single expert [nats]")
        ax.axhline(0, color="k", lw=0.5)
    axes[0].legend()
    return fig


def bound(results: Sequence[PairResult]):
    """Fixed share's regret to the best single expert along n and the never-switch cost."""
    fig, axes = _panels(results)
    for ax, (pair, g) in zip(axes[0], T.bound_spread(results).groupby("pair")):
        ax.plot(g["n"], g["mean"], label="fixed share − best single expert")
        ax.fill_between(g["n"], g["min"], g["max"], alpha=0.2)
        ax.plot(g["n"], g["bound [nats]"], "k--", label="never-switch cost (bound)")
        ax.set(xscale="log", xlabel="examples n", ylabel="nats", title=plots.pair_label(pair))
        ax.axhline(0, color="k", lw=0.5)
    axes[0][0].legend()
    return fig
