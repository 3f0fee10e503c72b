"""Which layer of an encoder codes the labels shortest, and from how many examples on?

The logic behind ``notebooks/layers.py``. For one encoder, some of its layers
(:func:`mdlnb.encoders.layers`) and a few tasks, :func:`run` calls
:func:`mdlnb.compare` once per task: every layer's pooled features coded by
MDL with readout switching under one protocol, over the same ``S`` data
orders (paired). :class:`LayersResult` turns the comparisons into

* ``table()``: per (task, layer) the codelength, mean and std over orders,
  the paired difference to the encoder's own features (its last layer) and
  to the best layer, the rank, how many orders rank it first, the preferred
  readout;
* ``along_n(points)``: per (task, layer, n) the cumulative codelength minus
  the reference layer's on the same stream, mean/std/min/max over orders —
  which layer is ahead after n examples;
* ``leaders()``: per task, the layer ahead (lowest mean cumulative codelength)
  at each n of the grid, and the n from which the final best layer stays ahead;
* ``findings()``: the prose of the notebook, computed from the above;
* ``plot()``: bits/example ± sd per layer, and the paired difference along n.

:class:`LayersConfig` holds the notebook's parameters and their defaults: an
ImageNet EfficientNet-Lite and, optionally, one self-pretrained ViT (a
committed artifact of :mod:`mdlnb.studies.pretraining`), on one task per
mini-VTAB group (natural, specialized, structured). :func:`run_config` runs
both on the same tasks, orders and protocol and returns a :class:`LayersStudy`
(:func:`run` takes one encoder and tasks directly).

No paper states which layer of EfficientNet-Lite or of these small ViTs codes
these tasks best, so the notebook reports findings with their spread, not claims.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mdlnb import data, report
from mdlnb.plots import log_spaced
from mdlnb.studies._base import StudyConfig

# Imported inside the functions that use them, so that importing this module does not load
# them: pandas, matplotlib, seaborn; mdlnb.studies.transferability._encoders and
# mdlnb._compare (JAX, optax, pandas); mdlnb.encoders (JAX, optax).


@dataclasses.dataclass(frozen=True)
class LayersConfig(StudyConfig):
    """Parameters of the layers study; the defaults are the CPU run of ``make reproduce``.

    Attributes:
      variant, resolution: EfficientNet-Lite variant (0, 1, 2) and input pixels
        (native 224; small is fast).
      task_names: tasks (:func:`mdlnb.data.names`), one per mini-VTAB group
        (natural, specialized, structured).
      size: examples per task (stratified subsample; None: all).
      which: layers, input to output (:func:`mdlnb.encoders.layer_names`).
      pooling: ``"mean"`` or ``"max"`` over positions.
      seeds: data orders, the same for every layer (paired; ≥ 3).
      protocol: board, B, switching (a preset name of :func:`mdlnb.compare`).
      points: log-spaced n of the curves.
      vit: a second encoder, a committed self-pretrained ViT as the
        transferability study spells it (``"<objective>:vit_<size>:trained"``,
        :func:`mdlnb.studies.transferability.parse_encoder`; its artifact in
        ``artifacts/encoders``), compared on the same tasks, orders and protocol;
        None: none.
      vit_which: its layers, input to output (``embed``, ``block0`` …).
    """

    variant: int = 0
    resolution: int = 64
    task_names: Sequence[str] = ("digits", "sci_patches", "dsprites_location")
    size: int | None = 800
    which: Sequence[str] = ("stage2", "stage4", "stage6", "head")
    pooling: str = "mean"
    seeds: Sequence[int] = (0, 1, 2)
    protocol: Any = "small"
    points: int = 60
    vit: str | None = "supervised:vit_S:trained"
    vit_which: Sequence[str] = ("embed", "block0", "block1")

    def __post_init__(self):
        for name in ("task_names", "which", "seeds", "vit_which"):
            value = getattr(self, name)
            if isinstance(value, str) or not isinstance(value, Sequence) or not value:
                raise ValueError(f"{name}: expected a non-empty list, got {value!r}")
            object.__setattr__(self, name, tuple(value))
        if self.pooling not in ("mean", "max"):
            raise ValueError(f"pooling: expected 'mean' or 'max', got {self.pooling!r}")
        if self.vit is not None:
            spec = self.vit_spec()
            if spec.arch != "vit" or not spec.trained:
                raise ValueError(
                    f"vit: expected a committed ViT '<objective>:vit_<size>:trained', "
                    f"got {self.vit!r}"
                )

    def vit_spec(self):
        """The parsed ``vit`` (:class:`mdlnb.studies.transferability.EncoderSpec`)."""
        from mdlnb.studies.transferability._encoders import parse_encoder

        if not isinstance(self.vit, str):
            raise ValueError(f"vit: expected a string or None, got {self.vit!r}")
        try:
            return parse_encoder(self.vit)
        except ValueError as e:
            raise ValueError(f"vit: {e}") from None

    def vit_encoder(self):
        """The committed ViT (checked against its SHA-256), or None when ``vit`` is None."""
        if self.vit is None:
            return None
        from mdlnb.studies.transferability._encoders import build_encoder

        return build_encoder(self.vit_spec())

    def encoder(self):
        """The EfficientNet-Lite encoder (real weights)."""
        from mdlnb.encoders import efficientnet_lite

        return efficientnet_lite(self.variant, resolution=self.resolution)

    def tasks(self) -> list:
        """The tasks, each a stratified subsample of ``size`` examples (seed 0)."""
        return [data.load(name, size=self.size, seed=0) for name in self.task_names]


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

        report.save_table(self.table(), f"{prefix}_table", paper_dir)
        report.save_table(self.runs(), f"{prefix}_runs", paper_dir)
        report.save_table(self.along_n(points), f"{prefix}_along_n", paper_dir)
        report.save_table(self.leaders(points), f"{prefix}_leaders", paper_dir)
        fig = self.plot(points)
        report.save_figure(fig, f"{prefix}_codelengths", paper_dir)
        plt.close(fig)


def run(
    encoder: Any,
    tasks: Sequence[Any],
    *,
    which: Sequence[str | int] | None = None,
    pooling: str = "mean",
    seeds: Sequence[int] = (0, 1, 2),
    protocol: Any = "small",
    progress: bool | None = None,
    cache: bool = True,
) -> LayersResult:
    """Compare ``which`` layers of ``encoder`` on each of ``tasks`` (Tasks of images),
    paired over ``seeds`` (≥ 3 orders), under ``protocol`` (:func:`mdlnb.compare`).
    ``progress``: as :func:`mdlnb.compare`'s, for each task's comparison (``None``,
    the default: a bar where someone watches a long run, one line per run in batch
    mode)."""
    from mdlnb._compare import compare
    from mdlnb.encoders import layer_names, layers

    encs = layers(encoder, which, pooling=pooling)
    labels = tuple(
        e.meta["layer"] + ("" if pooling == "mean" else f"[{pooling}]") for e in encs.values()
    )
    if len(labels) < 2:
        raise ValueError(f"which: need at least 2 layers to compare, got {list(labels)}")
    own = layer_names(encoder)[-1] + ("" if pooling == "mean" else f"[{pooling}]")
    reference = own if own in labels else labels[-1]
    comps = {}
    for task in tasks:
        if task.name in comps:
            raise ValueError(f"tasks: {task.name!r} given twice")
        comps[task.name] = compare(
            encs, task, protocol=protocol, seeds=seeds, progress=progress, cache=cache
        )
    dims = {lab: e.feature_dim for lab, e in zip(labels, encs.values())}
    return LayersResult(
        encoder=encoder.name,
        layers=labels,
        reference=reference,
        comparisons=comps,
        feature_dims=dims,
    )


@dataclasses.dataclass(frozen=True, eq=False)
class LayersStudy:
    """The study's two results on the same tasks, orders and protocol.

    Attributes:
      lite: the EfficientNet-Lite layers (:class:`LayersResult`).
      vit: the self-pretrained ViT's layers, or None when the config has no ViT.
    """

    lite: LayersResult
    vit: LayersResult | None = None

    def results(self) -> dict[str, LayersResult]:
        """``{file prefix: result}``: ``layers`` for the Lite, ``layers_vit`` for the ViT."""
        return {"layers": self.lite, **({"layers_vit": self.vit} if self.vit is not None else {})}

    def findings(self) -> str:
        """Markdown: one section per encoder (:meth:`LayersResult.findings`)."""
        return "\n\n".join(f"**{r.encoder}**\n\n{r.findings()}" for r in self.results().values())

    def save(self, paper_dir: Any, points: int = 60) -> None:
        """Each result's files under its prefix (:meth:`results`)."""
        for prefix, r in self.results().items():
            r.save(paper_dir, prefix=prefix, points=points)


def run_config(
    config: LayersConfig | None = None, *, progress: bool | None = False, cache: bool = True
) -> LayersStudy:
    """:func:`run` with the encoders, tasks and settings of ``config`` (default: the CPU
    run): the EfficientNet-Lite and, unless ``config.vit`` is None, the ViT, on the
    same tasks, orders and protocol."""
    config = config or LayersConfig()
    if not isinstance(config, LayersConfig):
        raise ValueError(f"config: expected a LayersConfig, got {type(config).__name__}")
    tasks = config.tasks()
    kw = dict(
        pooling=config.pooling,
        seeds=list(config.seeds),
        protocol=config.protocol,
        progress=progress,
        cache=cache,
    )
    lite = run(config.encoder(), tasks, which=list(config.which), **kw)
    vit = config.vit_encoder()
    return LayersStudy(
        lite=lite, vit=None if vit is None else run(vit, tasks, which=list(config.vit_which), **kw)
    )


#: The study's config class, under the name every study package uses (mdlnb.studies).
Config = LayersConfig
