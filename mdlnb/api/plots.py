"""Figures shared by the notebooks: posterior over readouts, regret curves,
per-expert codelengths, and the one colour per readout depth they all use.

Every function draws on ``ax`` (or a new Axes in seaborn's ``whitegrid``
style) and returns the Axes; none calls ``plt.show``. Codelengths are in
nats unless ``units="bits"`` is asked for; axis labels say which.

**Readout colours** (:data:`DEPTH_COLORS`, :func:`depth_palette`): a readout has
the same colour in every figure, set by its depth — ``linear`` grey, then
``mlp1`` … ``mlp7`` along matplotlib's perceptually ordered ``plasma`` map (dark
blue → purple → red → orange → yellow: deeper is warmer), so neighbours in depth
are distinct and the order reads off the colour. A figure of readouts takes
``pal = plots.depth_palette(readouts)`` (a dict readout → colour; widths of one
depth beyond the first are lighter) and draws in :func:`depth_order`; a depth that
is a number (a mean over orders) takes ``cmap=plots.depth_cmap(max_depth)`` with
``vmin=0, vmax=max_depth``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mdlnb.api._labels import (  # noqa: F401  (re-exported: readers' names in figures)
    encoder_label,
    family_label,
    pair_label,
    size_label,
    task_label,
)
from mdlnb.core._checks import as_array, check_finite, check_int
from mdlnb.core._grid import log_integers

# Imported inside the functions that use them, so that importing this module does not load
# them: matplotlib, seaborn, pandas.

UNITS = {"nats": 1.0, "bits": 1.0 / math.log(2.0)}

_CURVE_GID, _BASELINE_GID = "mdlnb-regret-curve", "mdlnb-regret-baseline"

#: The colour of a readout of depth 0 (``linear``) … 7 (``mlp7``): see the module docstring.
DEPTH_COLORS = (
    "#8c8c8c",
    "#0d0887",
    "#8606a6",
    "#cc4778",
    "#ea7457",
    "#fb9f3a",
    "#fdc627",
    "#f4ed27",
)


def readout_depth(name: str) -> int | None:
    """Hidden layers of a readout name: ``linear`` 0, ``mlp2`` / ``mlp2x64`` 2; None
    for another name."""
    if str(name) == "linear":
        return 0
    found = re.fullmatch(r"mlp(\d+)(?:x(\d+))?", str(name))
    return int(found.group(1)) if found else None


def depth_order(readouts: Sequence[str]) -> list[str]:
    """``readouts`` shallow to deep (within a depth the paper's width 256 first, then by
    width; other names last, in their order)."""

    def key(r: str) -> tuple:
        d = readout_depth(r)
        found = re.fullmatch(r"mlp\d+x(\d+)", str(r))
        w = int(found.group(1)) if found else 256  # the paper's width first, then by width
        return (d is None, d if d is not None else 0, w != 256, w)

    return sorted(dict.fromkeys(readouts), key=key)


def depth_cmap(max_depth: int = len(DEPTH_COLORS) - 1) -> Any:
    """A colormap through :data:`DEPTH_COLORS` ``[0 … max_depth]``, for a depth that is a
    number (a mean over orders, a heatmap cell): with ``vmin=0, vmax=max_depth`` an
    integer depth gets exactly its readout's colour, a mean lies between them."""
    from matplotlib.colors import LinearSegmentedColormap

    max_depth = check_int("max_depth", max_depth, minimum=1)
    colors = [DEPTH_COLORS[min(d, len(DEPTH_COLORS) - 1)] for d in range(max_depth + 1)]
    return LinearSegmentedColormap.from_list(f"mdlnb-depth-{max_depth}", colors)


def depth_palette(readouts: Sequence[str]) -> dict[str, str]:
    """``{readout: colour}``: :data:`DEPTH_COLORS` by depth; a second (third …) width of
    one depth is the same colour lightened; names that are no readout take grey-free
    colours of seaborn's colorblind palette."""
    from matplotlib.colors import to_hex, to_rgb

    out: dict[str, str] = {}
    seen: dict[int, int] = {}
    others = iter(["#0173b2", "#029e73", "#d55e00", "#cc78bc", "#ca9161", "#56b4e9"] * 4)
    for r in depth_order(readouts):
        d = readout_depth(r)
        if d is None:
            out[r] = next(others)
            continue
        k = seen.get(d, 0)
        seen[d] = k + 1
        base = to_rgb(DEPTH_COLORS[min(d, len(DEPTH_COLORS) - 1)])
        mix = min(0.6, 0.3 * k)  # lighter for each further width
        out[r] = to_hex(tuple(c + (1 - c) * mix for c in base))
    return out


def _axes(ax: Any = None, figsize: tuple[float, float] = (6.4, 3.6)) -> Any:
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt
    import seaborn as sns

    with sns.axes_style("whitegrid"):
        _, ax = plt.subplots(figsize=figsize, layout="constrained")
    return ax


def _unit_scale(units: str) -> float:
    if units not in UNITS:
        raise ValueError(f"units: must be one of {sorted(UNITS)}, got {units!r}")
    return UNITS[units]


def log_spaced(n: int, max_points: int, start: int = 1) -> np.ndarray:
    """At most ``max_points`` distinct integers in ``[start, n)``, log-spaced, always
    including both ends (for plotting long curves on a log axis)."""
    if n - start <= max_points:
        return np.arange(start, n)
    # log-spacing of (i + 1), so that start = 0 is allowed
    idx = log_integers(start + 1, n, max_points) - 1
    return np.unique(np.clip(idx, start, n - 1))


def place_labels(
    ax: Any,
    points: Sequence[tuple[float, float]],
    labels: Sequence[str],
    *,
    fontsize: float = 8.0,
    color: Any = None,
) -> list:
    """Annotate each point (data coordinates) with its label so that no two labels
    overlap: each label takes the first free spot, nearest first — right-above,
    right-below, left-above, left-below the point, then further up or down by
    whole line heights — preferring spots inside the axes. Call it after the
    axes' limits, scales and inversions are final. Returns the Annotations."""
    from matplotlib.transforms import Bbox

    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    frame_box = ax.get_window_extent(renderer)
    line = fontsize * 1.25
    spots = [(dx, dy) for k in range(8) for dy in (3 + k * line, -3 - k * line) for dx in (5, -5)]
    placed, out = [], []
    # what is drawn already: the lines, markers and error bars, sampled along each segment
    r = 4.0 * fig.dpi / 72.0  # 4 points around each sample
    for xy in _drawn_paths(ax):
        for (x0, y0), (x1, y1) in zip(xy[:-1], xy[1:]):
            steps = max(1, int(np.hypot(x1 - x0, y1 - y0) / r))
            for f in np.linspace(0.0, 1.0, steps + 1):
                x, y = x0 + f * (x1 - x0), y0 + f * (y1 - y0)
                placed.append(Bbox.from_extents(x - r, y - r, x + r, y + r))
        if len(xy) == 1:
            placed.append(Bbox.from_extents(xy[0][0] - r, xy[0][1] - r, xy[0][0] + r, xy[0][1] + r))
    colors = color if isinstance(color, (list, tuple)) else [color] * len(labels)
    for (x, y), text, c in zip(points, labels, colors):
        ann = ax.annotate(
            text, (x, y), textcoords="offset points", xytext=spots[0], fontsize=fontsize, color=c
        )
        best = None
        for dx, dy in spots:
            ann.set_position((dx, dy))
            ann.set_ha("left" if dx > 0 else "right")
            ann.set_va("bottom" if dy > 0 else "top")
            box = ann.get_window_extent(renderer).expanded(1.05, 1.1)
            if any(box.overlaps(b) for b in placed):
                continue
            inside = (
                box.x0 >= frame_box.x0
                and box.x1 <= frame_box.x1
                and box.y0 >= frame_box.y0
                and box.y1 <= frame_box.y1
            )
            if inside:
                best = (dx, dy, box)
                break
            best = best or (dx, dy, box)
        dx, dy, box = best if best is not None else (*spots[0], None)
        ann.set_position((dx, dy))
        ann.set_ha("left" if dx > 0 else "right")
        ann.set_va("bottom" if dy > 0 else "top")
        placed.append(ann.get_window_extent(renderer).expanded(1.05, 1.1))
        out.append(ann)
    return out


def _drawn_paths(ax: Any) -> list[np.ndarray]:
    """Display coordinates of the finite vertices of every line (and line
    collection: error bars) on ``ax``, one array per path."""
    paths = []
    for ln in ax.lines:
        xy = ln.get_transform().transform(np.asarray(ln.get_xydata(), float))
        paths.append(xy[np.isfinite(xy).all(axis=1)])
    for coll in ax.collections:
        if hasattr(coll, "get_segments"):
            for seg in coll.get_segments():
                xy = coll.get_transform().transform(np.asarray(seg, float))
                paths.append(xy[np.isfinite(xy).all(axis=1)])
    return [p for p in paths if len(p)]


def posterior_area(
    frame: Any,
    *,
    by: str = "readout",
    ax: Any = None,
    log_x: bool = True,
    max_points: int = 400,
    palette: str = "viridis",
    title: str | None = None,
) -> Any:
    """Stacked area of the posterior p(readout | D_<t) against examples seen (paper Fig. 1/9).

    Args:
      frame: tidy DataFrame with columns ``t`` (examples seen), ``by`` (group
        label, e.g. ``"readout"`` or ``"expert"``) and ``probability``; rows of
        a given ``t`` must sum to 1.
      by: the grouping column; one area per distinct value, in order of appearance —
        readouts (``by="readout"``, or values that are all readout names) shallow
        to deep from the bottom, coloured by :func:`depth_palette`.
      log_x: log-scaled x axis (``t = 0``, the prior, is then dropped).
      max_points: at most this many values of ``t`` are drawn (log-spaced).
    """
    import pandas as pd
    import seaborn as sns

    for col in ("t", by, "probability"):
        if col not in frame.columns:
            raise ValueError(f"frame: missing column {col!r} (has {list(frame.columns)})")
    max_points = check_int("max_points", max_points, minimum=2)
    groups = list(pd.unique(frame[by]))
    readouts = by == "readout" or all(readout_depth(g) is not None for g in groups)
    if readouts:  # linear at the bottom, the deepest on top, one colour per depth
        groups = depth_order(groups)
    wide = frame.pivot_table(
        index="t", columns=by, values="probability", aggfunc="sum", observed=True
    )[groups].sort_index()
    if log_x:
        wide = wide[wide.index > 0]
    if len(wide) > max_points:
        wide = wide.iloc[log_spaced(len(wide), max_points, start=0)]
    ax = _axes(ax)
    pal = depth_palette(groups) if readouts else None
    colors = [pal[g] for g in groups] if pal else sns.color_palette(palette, len(groups))
    ax.stackplot(
        wide.index.to_numpy(),
        wide.to_numpy().T,
        labels=[str(g) for g in groups],
        colors=colors,
        linewidth=0,
    )
    if log_x:
        ax.set_xscale("log")
    ax.set_xlim(wide.index.min(), wide.index.max())
    ax.set_ylim(0.0, 1.0)
    ax.set_xlabel("examples seen")
    ax.set_ylabel(f"posterior p({by} | data)")
    handles, labels = ax.get_legend_handles_labels()  # top of the legend = top of the stack
    ax.legend(
        handles[::-1],
        labels[::-1],
        loc="center left",
        bbox_to_anchor=(1.0, 0.5),
        frameon=False,
        title=by,
    )
    if title:
        ax.set_title(title)
    return ax


def regret(
    curves: Mapping[str, Any],
    baseline: Any,
    *,
    baseline_label: str = "baseline",
    ax: Any = None,
    units: str = "nats",
    log_x: bool = True,
    max_points: int = 2000,
) -> Any:
    """Cumulative codelength difference Σ_{s≤t} (ℓ_s − ℓ^baseline_s) against t (paper Fig. 3/5).

    Args:
      curves: name → per-step losses (N,) in nats, e.g. ``SwitchResult.per_step_nats``
        or a column of a loss matrix.
      baseline: per-step losses (N,) in nats of the comparator.
      units: ``"nats"`` or ``"bits"`` on the y axis.

    One line per curve plus a dashed zero line (the baseline). Below zero means
    shorter than the baseline. Called again on the same ``ax`` (overlaying
    curves), new curves take the next colours of the palette and the zero
    line is drawn once; a different baseline is added to its legend entry.
    """
    import seaborn as sns

    scale = _unit_scale(units)
    base = check_finite(as_array(baseline, "baseline", ndim=1, dtype=np.float64), "baseline")
    if not curves:
        raise ValueError("curves: is empty")
    ax = _axes(ax)
    drawn = [ln for ln in ax.get_lines() if ln.get_gid() == _CURVE_GID]
    palette = sns.color_palette("tab10", 10)
    colors = [palette[(len(drawn) + i) % len(palette)] for i in range(len(curves))]
    idx = log_spaced(len(base) + 1, max_points, start=1)
    for color, (name, c) in zip(colors, curves.items()):
        c = check_finite(
            as_array(c, f"curves[{name!r}]", ndim=1, dtype=np.float64), f"curves[{name!r}]"
        )
        if c.shape != base.shape:
            raise ValueError(
                f"curves[{name!r}]: length {len(c)} differs from baseline's {len(base)}"
            )
        cum = np.cumsum(c - base) * scale
        ax.plot(idx, cum[idx - 1], label=str(name), color=color, gid=_CURVE_GID)
    zero = [ln for ln in ax.get_lines() if ln.get_gid() == _BASELINE_GID]
    label = f"baseline: {baseline_label}"
    if not zero:
        ax.axhline(0.0, color="0.3", linestyle="--", linewidth=1.0, label=label, gid=_BASELINE_GID)
    elif baseline_label not in zero[0].get_label().removeprefix("baseline: ").split(" / "):
        zero[0].set_label(f"{zero[0].get_label()} / {baseline_label}")
    if log_x:
        ax.set_xscale("log")
    ax.set_xlabel("examples coded")
    ax.set_ylabel(f"cumulative regret [{units}]")
    ax.legend(frameon=False)
    return ax


def codelengths(
    totals: Mapping[str, float] | Any,
    *,
    n: int | None = None,
    reference: Mapping[str, float] | None = None,
    ax: Any = None,
    units: str = "bits",
    top: int | None = None,
) -> Any:
    """Horizontal bars of per-expert codelengths (nats in), shortest at the top.

    Args:
      totals: name → total codelength in nats (e.g. ``LossMatrix.totals()``).
      n: if given, plot per-example codelengths (divide by ``n``).
      reference: name → total nats drawn as vertical lines (e.g. the
        switching code, the uniform code ``N log C``).
      units: ``"bits"`` or ``"nats"``.
      top: show only the ``top`` shortest.
    """
    import pandas as pd
    import seaborn as sns

    scale = _unit_scale(units) / (n if n else 1)
    s = pd.Series(totals, dtype=np.float64).sort_values()
    if s.empty:
        raise ValueError("totals: is empty")
    if top is not None:
        s = s.iloc[:top]
    ax = _axes(ax, figsize=(6.4, 0.25 * len(s) + 1.2))
    ax.barh(np.arange(len(s)), s.to_numpy() * scale, color=sns.color_palette("crest", len(s)))
    ax.set_yticks(np.arange(len(s)), [str(i) for i in s.index])
    ax.invert_yaxis()
    for color, (name, v) in zip(
        sns.color_palette("tab10", len(reference or {})), (reference or {}).items()
    ):
        ax.axvline(v * scale, color=color, linestyle="--", label=str(name))
    if reference:  # outside the axes, right of the bars: it never covers one
        ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    ax.set_xlabel(f"codelength [{units}{' per example' if n else ''}]")
    return ax


def kendall_bars(
    frame: Any,
    *,
    order: Sequence[str] | None = None,
    ax: Any = None,
    title: str | None = None,
    palette: str = "viridis",
    ci_label: str = "95 % interval",
) -> Any:
    """Mean Kendall τ per metric (bars), one bar per N/K (hue), with error bars.

    Args:
      frame: tidy DataFrame with columns ``metric``, ``ratio``, ``tau`` and
        ``ci`` (half-width of the interval drawn; e.g. the 95 % interval of
        :func:`mdlnb.studies.transferability.mean_over_tasks`).
      order: metrics on the x axis, in this order (default: order of appearance).
      ci_label: what the error bars are, for the y label.

    With a column ``encoders`` (how many encoders each τ is over), the title ends
    with that count, taken from the rows plotted.
    """
    import seaborn as sns

    for col in ("metric", "ratio", "tau", "ci"):
        if col not in frame:
            raise ValueError(f"frame: needs a column {col!r}; has {list(frame.columns)}")
    names = list(dict.fromkeys(frame["metric"])) if order is None else list(order)
    ratios = sorted(frame["ratio"].unique())
    ax = _axes(ax, figsize=(max(6.0, 0.55 * len(names)), 3.8))
    width = 0.8 / max(len(ratios), 1)
    x = np.arange(len(names))
    for i, (ratio, color) in enumerate(zip(ratios, sns.color_palette(palette, len(ratios)))):
        g = frame[frame["ratio"] == ratio].set_index("metric").reindex(names)
        ax.bar(
            x + (i - (len(ratios) - 1) / 2) * width,
            g["tau"].to_numpy(float),
            width,
            yerr=g["ci"].to_numpy(float),
            color=color,
            label=f"N/K = {ratio}",
            error_kw={"elinewidth": 0.8, "capsize": 1.5},
        )
    ax.axhline(0.0, color="0.3", lw=0.8)
    ax.set_ylim(-1.05, 1.05)
    ax.set_xticks(x, names, rotation=60, ha="right")
    ax.set_ylabel(f"Kendall τ vs accuracy\n(error bars: {ci_label})")
    ax.legend(fontsize="small", ncols=len(ratios))
    if "encoders" in frame:  # count from the table actually plotted
        ne = sorted({int(frame["encoders"].min()), int(frame["encoders"].max())})
        title = ", ".join(t for t in (title, f"τ over {'–'.join(map(str, ne))} encoders") if t)
    if title:
        ax.set_title(title)
    return ax
