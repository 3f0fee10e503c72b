"""The views of a :class:`~mdlnb.api._comparison.Comparison`: the table as ``print``
shows it (one "mean ± sd" cell per quantity) and its figure (codelength per
encoder; the cumulative paired difference to the best along the stream).

Both read the comparison's own tables (:meth:`Comparison.table`,
:meth:`Comparison.cumulative_difference`) and compute nothing new.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from mdlnb.api.plots import log_spaced

if TYPE_CHECKING:
    from mdlnb.api._comparison import Comparison

# Imported inside the functions that use them, so that importing this module does not load
# them: matplotlib, seaborn.


def plot(cmp: Comparison, *, max_points: int = 200):
    """One figure: (left) bits/example, mean ± std over orders; (right) the
    cumulative paired difference to the best encoder along the stream,
    mean ± std over orders, log x. Returns the Figure."""
    import matplotlib.pyplot as plt  # plotting libraries load on the first plot only
    import seaborn as sns

    tab = cmp.table()
    fig, (a0, a1) = plt.subplots(1, 2, figsize=(11, 3.8), gridspec_kw={"width_ratios": [1, 1.6]})
    pal = dict(zip(tab["encoder"], sns.color_palette("colorblind", len(tab))))
    sns.barplot(
        data=cmp.runs,
        x="encoder",
        y=f"per example [{cmp.per_example_unit}]",
        order=list(tab["encoder"]),
        hue="encoder",
        palette=pal,
        errorbar="sd",
        ax=a0,
        legend=False,
    )
    a0.set_xlabel("")
    a0.set_title(f"{cmp.task_name}: codelength, ±1 sd over {len(cmp.seeds)} orders")
    a0.tick_params(axis="x", rotation=30)
    cum = cmp.cumulative_difference()
    cum = cum[cum["t"].isin(log_spaced(cmp.n + 1, max_points, start=1))]
    sns.lineplot(
        data=cum,
        x="t",
        y="vs best [nats]",
        hue="encoder",
        palette=pal,
        errorbar="sd",
        ax=a1,
        hue_order=list(tab["encoder"]),
    )
    a1.axhline(0.0, color="0.3", lw=0.8)
    a1.set_xscale("log")
    a1.set_xlabel("examples coded")
    a1.set_title(f"paired difference to {cmp.best} (cumulative), ±1 sd")
    fig.tight_layout()
    return fig


def display_table(cmp: Comparison):
    """:meth:`table` as text, one "mean ± sd" cell per quantity: what ``print`` shows."""
    tab = cmp.table()
    s = len(cmp.seeds)

    def crossing(r) -> str:
        if r["encoder"] == tab["encoder"].iloc[0]:
            return "—"
        k = int(r["orders with a sign change"])
        if k == 0:
            return "never"
        sd = r["last sign change std [n]"]
        spread = "" if np.isnan(sd) else f" ± {sd:,.0f}"
        return f"n ≈ {r['last sign change [n]']:,.0f}{spread} ({k}/{s} orders)"

    def pm(r, col: str, fmt: str, sd: str = ",.1f") -> str:
        return f"{r[f'{col} [{unit(col)}]']:{fmt}} ± {r[f'{col} std [{unit(col)}]']:{sd}}"

    def unit(col: str) -> str:
        return cmp.per_example_unit if col == "per example" else "nats"

    rows = [
        {
            "encoder": r["encoder"],
            f"per example [{cmp.per_example_unit}]": pm(r, "per example", ".3f", ".3f"),
            "total [nats]": pm(r, "total", ",.1f"),
            "vs best [nats] (paired)": "0" if i == 0 else pm(r, "vs best", "+,.1f"),
            "best single expert [nats]": pm(r, "best expert", ",.1f"),
            "vs best changes sign": crossing(r),
            "rank": int(r["rank"]),
            "orders first": f"{int(r['orders ranked first'])}/{s}",
            "readout by data size": r["readout by data size"],
            "linear or deeper": r["linear or deeper"],
        }
        for i, (_, r) in enumerate(tab.iterrows())
    ]
    return pd.DataFrame(rows)
