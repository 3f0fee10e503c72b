"""One encoder's layers on the tasks: tables, the race along n, leaders, findings and
figures (:class:`LayersResult`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from mdlnb.api import output
from mdlnb.api.plots import log_spaced

# Imported inside the functions that use them, so that importing this module does not load
# them: pandas, matplotlib, seaborn; mdlnb.studies.transferability._encoders and
# mdlnb.api._compare (JAX, optax, pandas); mdlnb.encoders (JAX, optax).


@dataclasses.dataclass(frozen=True, eq=False)
class LayersResult:
    """Comparisons of an encoder's layers on several tasks.

    Attributes:
      encoder: the source encoder's name.
      layers: the layer labels compared (``"stage3"`` …), input to output.
      reference: the layer the paired differences refer to (the encoder's own
        features: its last layer, when it is among ``layers``; else the last given).
      comparisons: ``{task name: mdlnb.Comparison}``; its encoder names are
        ``"<encoder>/<layer>"``.
      feature_dims: ``{layer: D}``.
    """

    encoder: str
    layers: tuple[str, ...]
    reference: str
    comparisons: Mapping[str, Any]
    feature_dims: Mapping[str, int]

    def _name(self, layer: str) -> str:
        return f"{self.encoder}/{layer}"

    @property
    def seeds(self) -> tuple[int, ...]:
        return next(iter(self.comparisons.values())).seeds

    def runs(self):
        """Tidy: task, layer, seed, ``total [nats]``, ``per example [bits]``, ``vs
        reference [nats]`` (paired: the same order's codelength of the reference layer)."""
        import pandas as pd

        frames = []
        for task, comp in self.comparisons.items():
            r = comp.runs.copy()
            r.insert(0, "task", task)
            r.insert(1, "layer", r.pop("encoder").str.slice(len(self.encoder) + 1))
            ref = r[r["layer"] == self.reference].set_index("seed")["total [nats]"]
            r["vs reference [nats]"] = r["total [nats]"] - r["seed"].map(ref)
            frames.append(r)
        return pd.concat(frames, ignore_index=True)

    def table(self):
        """One row per (task, layer), best first within a task; std over orders (ddof 1)."""
        import pandas as pd

        runs = self.runs()
        rows = []
        for task, comp in self.comparisons.items():
            tab = comp.table().set_index("encoder")
            for layer in self.layers:
                t = tab.loc[self._name(layer)]
                d = runs.loc[
                    (runs["task"] == task) & (runs["layer"] == layer), "vs reference [nats]"
                ]
                rows.append(
                    {
                        "task": task,
                        "layer": layer,
                        "feature dim": self.feature_dims[layer],
                        "n": comp.n,
                        "orders": len(comp.seeds),
                        "per example [bits]": t["per example [bits]"],
                        "per example std [bits]": t["per example std [bits]"],
                        "total [nats]": t["total [nats]"],
                        "total std [nats]": t["total std [nats]"],
                        f"vs {self.reference} [nats]": d.mean(),
                        f"vs {self.reference} std [nats]": d.std(ddof=1),
                        "vs best [nats]": t["vs best [nats]"],
                        "vs best std [nats]": t["vs best std [nats]"],
                        "rank": int(t["rank"]),
                        "orders ranked first": int(t["orders ranked first"]),
                        "readout by data size": t["readout by data size"],
                    }
                )
        df = pd.DataFrame(rows)
        return df.sort_values(["task", "rank", "layer"], kind="stable").reset_index(drop=True)

    def along_n(self, points: int = 60):
        """Tidy: task, layer, n, ``mean``/``std``/``min``/``max`` over orders of the
        cumulative codelength after n examples minus the reference layer's [nats],
        at ≤ ``points`` log-spaced n (always including n = N)."""
        import pandas as pd

        frames = []
        for task, comp in self.comparisons.items():
            ns = np.unique(np.append(log_spaced(comp.n + 1, points, start=1), comp.n))
            for layer in self.layers:
                d = np.stack(
                    [
                        np.cumsum(
                            comp.per_step_nats[(self._name(layer), s)]
                            - comp.per_step_nats[(self._name(self.reference), s)]
                        )
                        for s in comp.seeds
                    ]
                )[:, ns - 1]
                frames.append(
                    pd.DataFrame(
                        {
                            "task": task,
                            "layer": layer,
                            "n": ns,
                            "mean": d.mean(0),
                            "std": d.std(0, ddof=1),
                            "min": d.min(0),
                            "max": d.max(0),
                        }
                    )
                )
        return pd.concat(frames, ignore_index=True)

    def leaders(self, points: int = 60):
        """Per task: ``best`` (lowest mean codelength at N), ``from n`` (the smallest n of
        the grid from which ``best`` has the lowest mean cumulative codelength at every
        later grid point), ``leader at n`` (the layer ahead at each grid n, as text;
        ``tie`` where the two lowest are within 1e-6 nats, as on the first batch,
        which every layer codes with the uniform code)."""
        import pandas as pd

        cur = self.along_n(points)
        rows = []
        for task, g in cur.groupby("task", sort=False):
            wide = g.pivot(index="n", columns="layer", values="mean")[list(self.layers)]
            vals = np.sort(wide.to_numpy(), axis=1)
            tie = vals[:, 1] - vals[:, 0] <= 1e-6  # e.g. the uniformly coded first batch
            lead = wide.idxmin(axis=1).where(~tie, "tie")
            best = lead.iloc[-1]
            behind = np.flatnonzero(lead.to_numpy() != best)
            start = wide.index[behind[-1] + 1] if len(behind) else wide.index[0]
            changes = lead[lead != lead.shift()]
            rows.append(
                {
                    "task": task,
                    "best": best,
                    "from n": int(start),
                    "leader at n": ", ".join(f"{v} from n = {k}" for k, v in changes.items()),
                }
            )
        return pd.DataFrame(rows)

    def findings(self) -> str:
        """Markdown: per task the ranking with its spread and when the best layer took the lead."""
        tab, lead, runs = self.table(), self.leaders().set_index("task"), self.runs()
        ref = self.reference
        lines = []
        for task, g in tab.groupby("task", sort=False):
            b = g.iloc[0]
            order = " < ".join(
                f"{r.layer} ({r['per example [bits]']:.3f} ± {r['per example std [bits]']:.3f})"
                for _, r in g.iterrows()
            )
            s = int(b["orders"])
            txt = (
                f"* **{task}** (N = {int(b['n'])}, {s} orders): bits/example, mean ± sd over "
                f"orders: {order}. Best: **{b['layer']}**, ranked first in "
                f"{int(b['orders ranked first'])}/{s} orders"
            )
            second = g.iloc[1] if len(g) > 1 else None
            if second is not None:
                r = runs[runs["task"] == task].pivot(
                    index="seed", columns="layer", values="total [nats]"
                )
                ahead = int((r[b["layer"]] < r[second["layer"]]).sum())
                txt += (
                    f"; the runner-up {second['layer']} is {second['vs best [nats]']:+.1f} ± "
                    f"{second['vs best std [nats]']:.1f} nats behind (paired difference, "
                    f"mean ± sd; {b['layer']} shorter in {ahead}/{s} orders"
                    + (", not a separation" if ahead < s else "")
                    + ")"
                )
            if b["layer"] != ref and (second is None or second["layer"] != ref):
                txt += (
                    f"; versus the encoder's own features ({ref}) {b[f'vs {ref} [nats]']:+.1f} ± "
                    f"{b[f'vs {ref} std [nats]']:.1f} nats"
                )
            txt += (
                f". Along the stream (mean over orders) {b['layer']} leads from n = "
                f"{lead.loc[task, 'from n']} on ({lead.loc[task, 'leader at n']})."
            )
            lines.append(txt)
        return "\n".join(lines)

    def plot(self, points: int = 60):
        """Per task a row: (left) bits/example, mean ± sd over orders, per layer;
        (right) cumulative codelength minus the reference layer's along n, mean
        (line) and min–max over orders (band), log x."""
        import matplotlib.pyplot as plt
        import seaborn as sns

        tab, cur = self.table(), self.along_n(points)
        tasks = list(self.comparisons)
        fig, axes = plt.subplots(
            len(tasks),
            2,
            figsize=(11, 3.6 * len(tasks)),
            squeeze=False,
            gridspec_kw={"width_ratios": [1, 1.6]},
        )
        pal = dict(zip(self.layers, sns.color_palette("viridis", len(self.layers))))
        for (a0, a1), task in zip(axes, tasks):
            g = tab[tab["task"] == task].set_index("layer").loc[list(self.layers)]
            a0.bar(
                range(len(g)),
                g["per example [bits]"],
                yerr=g["per example std [bits]"],
                color=[pal[x] for x in g.index],
                capsize=3,
            )
            a0.set_xticks(range(len(g)), g.index, rotation=30)
            a0.set(
                ylabel="bits / example",
                title=f"{task}: codelength, ±1 sd over {int(g['orders'].iloc[0])} orders",
            )
            lo = float((g["per example [bits]"] - g["per example std [bits]"]).min())
            a0.set_ylim(bottom=max(0.0, lo - 0.1 * abs(lo)))
            c = cur[cur["task"] == task]
            for layer in self.layers:
                h = c[c["layer"] == layer]
                a1.plot(h["n"], h["mean"], color=pal[layer], label=layer)
                a1.fill_between(h["n"], h["min"], h["max"], color=pal[layer], alpha=0.2)
            a1.axhline(0.0, color="0.3", lw=0.8)
            a1.set(
                xscale="log",
                xlabel="examples coded n",
                ylabel=f"cumulative − {self.reference} [nats]",
                title=f"{task}: paired difference to {self.reference} (band: min–max)",
            )
            a1.legend(fontsize=8)
        fig.tight_layout()
        return fig

    def save(self, paper_dir: Any, prefix: str = "layers", points: int = 60) -> None:
        """``<prefix>_table``, ``<prefix>_runs``, ``<prefix>_along_n`` (CSV + Markdown),
        ``<prefix>_leaders`` and the figure ``<prefix>_codelengths.png``."""
        import matplotlib.pyplot as plt

        output.save_table(self.table(), f"{prefix}_table", paper_dir)
        output.save_table(self.runs(), f"{prefix}_runs", paper_dir)
        output.save_table(self.along_n(points), f"{prefix}_along_n", paper_dir)
        output.save_table(self.leaders(points), f"{prefix}_leaders", paper_dir)
        fig = self.plot(points)
        output.save_figure(fig, f"{prefix}_codelengths", paper_dir)
        plt.close(fig)
