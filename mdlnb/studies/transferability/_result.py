"""The study's result: tidy frames, the paper tables with their spreads, the findings
as Markdown computed from the numbers, and an atomic writer for ``paper/``."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mdlnb.studies.transferability._config import TransferabilityConfig
from mdlnb.studies.transferability._kendall import (
    average_table,
    differences,
    mean_over_tasks,
    per_task_table,
)
from mdlnb.studies.transferability._metrics import STATIC, metric_order

SOURCE_METRICS = ("leep", "nce", "pactran_dirichlet", "pactran_gamma")
_NAMES = {
    "leep": "LEEP",
    "nleep": "N-LEEP",
    "nce": "NCE",
    "hscore": "H-score",
    "regularized_hscore": "Ledoit–Wolf H-score",
    "logme": "LogME",
    "pactran_dirichlet": "PT-Dir",
    "pactran_gamma": "PT-Gam",
    "n_pactran_dirichlet": "N-PT-Dir",
    "n_pactran_gamma": "N-PT-Gam",
    "pactran_gaussian": "PT-Gauss",
    "linear": "LINEAR",
    "linear_valid": "LINEAR-VALID",
    "pactran_gaussian_grid": "PT-Gauss-grid",
    "linear_grid": "LINEAR-grid",
    "mdl": "MDL",
    "cl": "CL",
    "twonn_id": "TwoNN ID",
    "clid": "CLID",
    "rankme": "RankMe",
    "sfda": "SFDA",
    "gbc": "GBC",
    "parc": "PARC",
    "transrate": "TransRate",
    "ncti": "NCTI",
    "etran": "ETran",
    "params": "#params (static)",
    "source_accuracy": "ImageNet top-1 (static)",
}


def display_name(metric: str) -> str:
    """The papers' name of a metric (``"linear_valid"`` → ``"LINEAR-VALID"``)."""
    return _NAMES.get(metric, metric)


@dataclasses.dataclass(frozen=True)
class TransferabilityResult:
    """Output of :func:`run`.

    Attributes:
      config: the configuration.
      scores: tidy scores (encoder, task, ratio, n, repeat, metric, value, oriented).
      grid_choice: knob chosen for each grid metric per (task, ratio, repeat), or None.
      truth: ground truth (encoder, task, readout, model, accuracy, val_loss [nats]).
      tau: Kendall τ per (task, ratio, metric) with its spread over repeats
        (:func:`kendall_table`).
      encoders: per encoder its provenance (meta) and whether it has a source classifier.
      seconds: wall-clock time per stage (not written to ``paper/``: it changes every run).
    """

    config: TransferabilityConfig
    scores: Any
    grid_choice: Any
    truth: Any
    tau: Any
    encoders: Any
    seconds: Mapping[str, float]

    def summary(self):
        """Mean τ over tasks with its 95 % interval, metric × N/K (:func:`average_table`)."""
        return average_table(self.tau)

    def per_task(self):
        """τ per task, mean and standard deviation over repeats (:func:`per_task_table`)."""
        return per_task_table(self.tau)

    def truth_table(self):
        """Ground-truth accuracy, encoder × task, for ``config.truth``."""
        t = self.truth[self.truth["readout"] == self.config.truth]
        return t.pivot_table(index="encoder", columns="task", values="accuracy").reset_index()

    def differences(self, reference):
        """This run's :meth:`summary` against another (e.g. the committed paper table),
        difference by difference, flagged beyond the combined 95 % half-widths."""
        return differences(self.summary(), reference)

    def compare_saved(self, paper_dir: str | Path = "paper", *, prefix: str = "transferability"):
        """:meth:`differences` against the ``<prefix>_kendall.csv`` already in
        ``paper_dir`` (an earlier run, e.g. the committed one); None if there is none."""
        import pandas as pd

        path = Path(paper_dir) / f"{prefix}_kendall.csv"
        return self.differences(pd.read_csv(path)) if path.exists() else None

    def findings(self) -> str:
        """What this run found, as Markdown bullets; every number is computed here."""
        long = mean_over_tasks(self.tau)
        if long.empty:
            return "* No Kendall τ could be computed (fewer than 2 encoders with values).\n"
        fmt = lambda r: f"{r.tau:.2f} ± {r.ci:.2f}"  # noqa: E731
        lines = []
        ratios = sorted(long["ratio"].unique())
        for ratio in ratios:
            g = long[long["ratio"] == ratio].sort_values("tau", ascending=False)
            top = g.iloc[0]
            tied = [r for r in g.iloc[1:].itertuples() if r.tau + r.ci >= top.tau - top.ci]
            nxt = ", ".join(
                f"{display_name(r.metric)} ({fmt(r)})" for r in g.iloc[1:4].itertuples()
            )
            lines.append(
                f"* N/K = {ratio}: highest mean τ {display_name(top.metric)} ({fmt(top)}), then "
                f"{nxt}. Intervals overlapping the top one: {len(tied)} of {len(g) - 1} other "
                f"metrics"
                + (f" ({', '.join(display_name(r.metric) for r in tied)})" if tied else "")
                + "."
            )
        if "mdl" in set(long["metric"]):
            ranks = []
            for ratio in ratios:
                g = long[long["ratio"] == ratio].sort_values("tau", ascending=False)
                pos = list(g["metric"]).index("mdl")
                ranks.append(f"N/K = {ratio}: {fmt(g.iloc[pos])}, rank {pos + 1} of {len(g)}")
            lines.append("* MDL codelength: " + "; ".join(ranks) + ".")
        src = long[long["metric"].isin(SOURCE_METRICS)]
        if not src.empty:
            e = int(src["encoders"].min())
            names = ", ".join(display_name(m) for m in SOURCE_METRICS if m in set(src["metric"]))
            lines.append(
                f"* Source-classifier metrics ({names}), "
                f"over the {e} encoders with a source classifier (τ in steps of "
                f"{4 / (e * (e - 1)):.2f} per subsample): mean τ from {src['tau'].min():.2f} "
                f"to {src['tau'].max():.2f}."
            )
        for a, b in (("hscore", "regularized_hscore"), ("cl", "clid"), ("twonn_id", "clid")):
            pa, pb = long[long["metric"] == a], long[long["metric"] == b]
            if not pa.empty and not pb.empty:
                per = "; ".join(
                    f"N/K = {r}: {fmt(pa[pa.ratio == r].iloc[0])} vs "
                    f"{fmt(pb[pb.ratio == r].iloc[0])}"
                    for r in ratios
                    if r in set(pa.ratio) and r in set(pb.ratio)
                )
                lines.append(f"* {display_name(a)} vs {display_name(b)}: {per}.")
        static = long[long["metric"] == "params"]
        if not static.empty:
            est = long[~long["metric"].isin(STATIC)]
            parts = []
            for ratio in ratios:
                p, e = static[static.ratio == ratio], est[est.ratio == ratio]
                if p.empty or e.empty:
                    continue
                p, top = p.iloc[0], e.sort_values("tau", ascending=False).iloc[0]
                verdict = (
                    "beats every estimator"
                    if p.tau - p.ci > top.tau + top.ci
                    else "is beaten by " + display_name(top.metric)
                    if top.tau - top.ci > p.tau + p.ci
                    else "is not separable from the best estimator, " + display_name(top.metric)
                )
                parts.append(f"N/K = {ratio}: {fmt(p)}, {verdict} ({fmt(top)})")
            lines.append(
                "* Static baseline, rank by parameter count (no data at all): "
                + "; ".join(parts)
                + "."
            )
        m = len(self.config.encoders)
        lines.append(
            f"* Resolution: with {m} encoders one swapped pair moves a subsample's τ by "
            f"{4 / (m * (m - 1)):.3f}; intervals are 95 % over the "
            f"{self.config.repeats} subsamples of each of {len(self.config.tasks)} "
            f"tasks (tasks fixed)."
        )
        return "\n".join(lines) + "\n"

    def claims(self) -> list:
        """The claims (h1–h4: PACTran Table 1; i1–i3: CLID Tables 1–2), each
        decided by its rule on paired per-subsample τ (:mod:`._claims`)."""
        from mdlnb.studies.transferability._claims import claims

        return claims(self)

    def plot(self, *, ax: Any = None, title: str | None = None) -> Any:
        """Mean τ over tasks per metric and N/K, error bars the 95 % intervals
        (:func:`mdlnb.plots.kendall_bars`). Returns the Axes."""
        from mdlnb import plots

        if title is None:
            title = f"{len(self.config.tasks)} tasks, ground truth: {self.config.truth} readout"
        long = mean_over_tasks(self.tau)
        return plots.kendall_bars(
            long, order=metric_order(long["metric"].unique()), ax=ax, title=title
        )

    def save(
        self, paper_dir: str | Path = "paper", *, prefix: str = "transferability"
    ) -> list[Path]:
        """Write tables (csv + md) and the τ figure to ``paper_dir`` atomically; the same
        result always gives byte-identical files (:mod:`mdlnb.report`)."""
        import matplotlib.pyplot as plt

        from mdlnb import report

        paths = []
        for name, df, digits in (
            ("kendall", self.summary(), 3),
            ("kendall_per_task", self.per_task(), 3),
            ("kendall_tidy", self.tau, 4),
            ("truth", self.truth_table(), 4),
            ("encoders", self.encoders, 4),
            ("scores", self.scores, 5),
        ):
            paths += report.save_table(df, f"{prefix}_{name}", paper_dir, digits=digits)
        ax = self.plot()
        paths.append(report.save_figure(ax.figure, f"{prefix}_kendall", paper_dir))
        plt.close(ax.figure)
        return paths
