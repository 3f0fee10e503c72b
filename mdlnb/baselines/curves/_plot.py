"""The loss-data figure (SDL paper Fig. 1–2): curves with spread bands on a log-n axis, ε, measures."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mdlnb.baselines.curves._data import LossDataCurve
from mdlnb.baselines.curves._measures import as_eps, esc

# Imported inside the functions that use them, so that importing this module does not load
# them: matplotlib, seaborn.


def plot(
    curves: Sequence[LossDataCurve],
    eps: Any = None,
    *,
    ax: Any = None,
    band: str = "std",
    mark_esc: bool = True,
    shade_sdl: bool = True,
    va_at: int | None = None,
    title: str | None = None,
) -> Any:
    """Mean loss (nats) against n on a log axis, a ±1 sd (or min–max) band over seeds
    (clipped at 0: log-losses are non-negative).

    With ``eps``: the line y = ε; each curve's SDL drawn as the shaded area between
    its left-edge step function and ε (Fig. 1 middle); its εSC as a vertical tick
    at the first n with L ≤ ε. ``va_at``: a vertical line at that n (VA is where
    the curves cross it, Fig. 1 left)."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    curves = list(curves) if not isinstance(curves, LossDataCurve) else [curves]
    if not curves or not all(isinstance(c, LossDataCurve) for c in curves):
        raise ValueError("curves: must be a LossDataCurve or a non-empty list of them")
    if band not in ("std", "minmax"):
        raise ValueError(f"band: must be 'std' or 'minmax', got {band!r}")
    if ax is None:
        with sns.axes_style("whitegrid"):
            _, ax = plt.subplots(figsize=(6.4, 4.0), layout="constrained")
    e = None if eps is None else as_eps(eps)
    colors = sns.color_palette("colorblind", len(curves))
    for c, col in zip(curves, colors):
        n, mu = c.sizes, c.mean_loss
        lo, hi = (
            (mu - c.std_loss, mu + c.std_loss)
            if band == "std"
            else (c.loss.min(axis=0), c.loss.max(axis=0))
        )
        ax.plot(n, mu, "-o", ms=3, color=col, label=c.representation)
        ax.fill_between(n, np.maximum(lo, 0.0), hi, color=col, alpha=0.2, linewidth=0)
        if e is not None and shade_sdl:
            ax.fill_between(
                n,
                np.maximum(mu, e.value),
                e.value,
                step="post",
                color=col,
                alpha=0.12,
                hatch="//",
                linewidth=0,
            )
        if e is not None and mark_esc:
            s = esc(c, e)
            if not s.exceeded:
                ax.axvline(s.n, color=col, ls=":", lw=1.2)
    if e is not None:
        ax.axhline(e.value, color="k", ls="--", lw=1, label=f"ε = {e.value:.3g} nats")
    if va_at is not None:
        ax.axvline(va_at, color="grey", ls="-.", lw=1, label=f"VA / MDL at n = {va_at}")
    ax.set_xscale("log")
    ax.set_xlabel("evaluation-set size n (examples)")
    ax.set_ylabel("held-out loss [nats / example]")
    ax.legend(
        handles=[
            *ax.get_legend_handles_labels()[0],
            *_key(
                band, e is not None and shade_sdl, e is not None and mark_esc, len(curves[0].loss)
            ),
        ],
        fontsize="small",
    )
    if title:
        ax.set_title(title)
    return ax


def _key(band: str, sdl: bool, esc_ticks: bool, seeds: int | None) -> list:
    """Legend entries, in grey, for what the curves' colours repeat: the band, the
    hatched SDL area and the dotted εSC line."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    spread = "±1 sd" if band == "std" else "min–max"
    over = f" over {seeds} seeds" if seeds else " over seeds"
    out = [Patch(facecolor="0.5", alpha=0.25, linewidth=0, label=f"band: {spread}{over}")]
    if sdl:
        out.append(
            Patch(
                facecolor="0.5",
                alpha=0.12,
                hatch="//",
                linewidth=0,
                label="hatched: SDL, the area above ε",
            )
        )
    if esc_ticks:
        out.append(
            Line2D([], [], color="0.4", ls=":", lw=1.2, label="dotted: εSC, first n with loss ≤ ε")
        )
    return out


def plot_measures(table, *, eps: float | None = None, axes: Any = None) -> Any:
    """SDL paper Fig. 2 (bottom): VA, MDL, SDL and εSC against the evaluation-set size n.

    ``table`` is :func:`mdlnb.baselines.curves.measure_table`'s output. One line per
    representation; SDL/εSC points that are only lower bounds are drawn hollow
    (εSC "> n" at n itself). ``eps`` picks one ε when the table holds several.
    Returns the array of four Axes."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    for col in ("representation", "measure", "n", "eps", "value", "status"):
        if col not in getattr(table, "columns", []):
            raise ValueError(f"table: missing column {col!r}; pass measure_table's output")
    t = table
    if eps is None:
        levels = sorted(t["eps"].dropna().unique())
        eps = levels[0] if levels else None
    if axes is None:
        with sns.axes_style("whitegrid"):
            _, axes = plt.subplots(1, 4, figsize=(15, 3.4), layout="constrained")
    reps = list(dict.fromkeys(t["representation"]))
    colors = dict(zip(reps, sns.color_palette("colorblind", len(reps))))
    titles = {
        "VA": "VA: loss at n [nats]",
        "MDL": "MDL(n) [nats]",
        "SDL": f"SDL, ε = {eps:.3g} [nats]" if eps is not None else "SDL",
        "eSC": f"εSC, ε = {eps:.3g} [examples]" if eps is not None else "εSC",
    }
    for ax, measure in zip(axes, ("VA", "MDL", "SDL", "eSC")):
        g = t[t["measure"] == measure]
        if measure in ("SDL", "eSC"):
            g = g[np.isclose(g["eps"], eps)] if eps is not None else g.iloc[0:0]
        for rep in reps:
            r = g[g["representation"] == rep].sort_values("n")
            if r.empty:
                continue
            y = r["value"].to_numpy(float)
            if measure == "eSC":
                y = np.where(np.isinf(y), r["n"].to_numpy(float), y)
            final = (r["status"] != "lower bound").to_numpy()
            ax.plot(r["n"], y, "-", color=colors[rep], label=rep)
            ax.scatter(r["n"][final], y[final], color=colors[rep], s=18, zorder=3)
            ax.scatter(
                r["n"][~final], y[~final], facecolors="none", edgecolors=colors[rep], s=18, zorder=3
            )
        ax.set_xscale("log")
        if measure in ("MDL", "eSC"):
            ax.set_yscale("log")
        elif measure == "SDL":
            ax.set_yscale("symlog", linthresh=1.0)
        ax.set_title(titles[measure], fontsize="medium")
        ax.set_xlabel("evaluation-set size n")
    axes[0].legend(fontsize="small")
    axes[-1].annotate(
        "hollow: lower bound", xy=(0.02, 0.02), xycoords="axes fraction", fontsize="small"
    )
    return axes
