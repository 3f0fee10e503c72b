"""The study's result: tidy frames, the papers' tables with their intervals, the findings
as Markdown computed from the numbers, the setting, and an atomic writer for ``paper/``."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mdlnb.api import output
from mdlnb.studies.transferability import _claims, _figures, _findings, _kendall, _power, _tables
from mdlnb.studies.transferability._config import TransferabilityConfig
from mdlnb.studies.transferability._metrics import display_name  # noqa: F401 (re-exported)


@dataclasses.dataclass(frozen=True)
class TransferabilityResult:
    """Output of :func:`run`.

    Attributes:
      config: the configuration.
      scores: tidy scores (zoo, encoder, task, ratio, n, repeat, metric, value, oriented).
      grid_choice: knob chosen for each grid metric per (zoo, task, ratio, repeat), or None.
      truth: ground truth (zoo, encoder, task, readout ∈ {finetune, probe, best}, model,
        accuracy, val_loss [nats]).
      tau: Kendall τ per (zoo, task, ratio, metric) with its spread over repeats.
      per_repeat: Kendall τ per (zoo, task, ratio, metric, repeat).
      noise: per (zoo, task), checkpoint pairs whose fine-tuned accuracies differ beyond
        binomial noise (McNemar, 5 %).
      full_label_free: label-free scores on each task's whole training split, or None.
      source: label-free scores on the pretraining data beside the source accuracy.
      encoders: per encoder its zoo, provenance and source classifier.
      seconds: wall-clock time per stage (not written to ``paper/``: it changes every run).
    """

    config: TransferabilityConfig
    scores: Any
    grid_choice: Any
    truth: Any
    tau: Any
    per_repeat: Any
    noise: Any
    full_label_free: Any
    source: Any
    encoders: Any
    seconds: Mapping[str, float]

    def summary(self):
        """PACTran Table 1 (and Table 7: one feature size per zoo): mean τ over tasks
        per (zoo, metric) and N/K with its two-stage bootstrap interval."""
        return _tables.table_1(
            self.per_repeat, resamples=self.config.resamples, seed=self.config.seed
        )

    def grid_choices(self):
        """How often each knob of a grid metric was chosen, per (zoo, metric, knob) over
        tasks, N/K and subsamples (None when no grid metric ran)."""
        if self.grid_choice is None:
            return None
        return (
            self.grid_choice.groupby(["zoo", "metric", "knob"])
            .size()
            .rename("times chosen")
            .reset_index()
        )

    def per_task(self):
        """τ per task, mean and standard deviation over repeats (PACTran Tables 4–6)."""
        return _kendall.per_task_table(self.tau)

    def truth_table(self):
        """Fine-tuned and frozen-probe test accuracy per (zoo, encoder, task)."""
        return _tables.truth_table(self.truth)

    def clid_table_1(self):
        """CLID Table 1: label-free predictors on the source data vs source accuracy."""
        return _tables.clid_table_1(self.source)

    def clid_table_2(self):
        """CLID Table 2: per task, τ of each label-free predictor with the ground truth."""
        if self.full_label_free is None:
            import pandas as pd

            return pd.DataFrame(columns=["zoo", "predictor", "Avg"])
        return _tables.clid_table_2(self.full_label_free, self.truth, readout=self.config.truth)

    def fig1_task(self) -> tuple[str, str]:
        """``(zoo, task)`` of PACTran Fig. 1: the largest zoo, and its task whose
        ground-truth accuracies spread the most across checkpoints."""
        t = self.truth[self.truth["readout"] == self.config.truth]
        zoo = t.groupby("zoo")["encoder"].nunique().idxmax()
        return zoo, t[t["zoo"] == zoo].groupby("task")["accuracy"].std().idxmax()

    def figure_1(self, task: str | None = None, zoo: str | None = None):
        """PACTran Fig. 1 (:func:`._figures.figure_1`) at the largest N/K."""
        z, t = self.fig1_task()
        fams = dict(zip(self.encoders["encoder"], self.encoders["family"]))
        return _figures.figure_1(
            self.scores,
            self.truth,
            zoo=zoo or z,
            task=task or t,
            ratio=max(self.config.ratios),
            readout=self.config.truth,
            families=fams,
        )

    def differences(self, reference):
        """This run's per-subsample-noise table against another, difference by difference."""
        return _kendall.differences(_kendall.average_table(self.tau), reference)

    def compare_saved(self, paper_dir: str | Path = "paper", *, prefix: str = "transferability"):
        """:meth:`differences` against the ``<prefix>_kendall_noise.csv`` in ``paper_dir``
        (an earlier run of this layout); None if there is none."""
        import pandas as pd

        path = Path(paper_dir) / f"{prefix}_kendall_noise.csv"
        return self.differences(pd.read_csv(path)) if path.exists() else None

    def findings(self) -> str:
        """What this run found, as Markdown bullets (:mod:`._findings`)."""
        return _findings.findings(self)

    def setting(self) -> list[tuple[str, str, str]]:
        """PACTran's setting against this run's (claims page rows)."""
        return _findings.setting(self)

    def claims(self) -> list:
        """The claims h1–h4 (PACTran Table 1) and i1–i3 (CLID Tables 1–2) (:mod:`._claims`)."""
        return _claims.claims(self)

    def plot(self) -> Any:
        """Mean τ per metric and N/K with the intervals, one panel per zoo (a Figure)."""
        return _figures.tau_bars(self.summary(), title=f"ground truth: {self.config.truth}")

    def tables(self) -> dict[str, tuple[Any, int]]:
        """``{name: (DataFrame, digits)}`` written as ``transferability_<name>``."""
        return {
            "kendall": (self.summary(), 3),
            "kendall_noise": (_kendall.average_table(self.tau), 3),
            "kendall_per_task": (self.per_task(), 3),
            "kendall_tidy": (self.tau, 4),
            "truth": (self.truth_table(), 4),
            "truth_noise": (self.noise, 4),
            "clid_table1": (self.clid_table_1(), 3),
            "clid_table2": (self.clid_table_2(), 3),
            "power": (
                _power.plan(
                    encoders=int(self.encoders.groupby("zoo").size().max()),
                    tasks=len(self.config.tasks),
                ),
                4,
            ),
            "encoders": (self.encoders, 4),
            "scores": (self.scores, 5),
        }

    def save(
        self, paper_dir: str | Path = "paper", *, prefix: str = "transferability"
    ) -> list[Path]:
        """Write tables (csv + md) and figures to ``paper_dir`` atomically; the same result
        always gives byte-identical files (:mod:`mdlnb.api.output`)."""
        import matplotlib.pyplot as plt

        paths = []
        for name, (df, digits) in self.tables().items():
            paths += output.save_table(df, f"{prefix}_{name}", paper_dir, digits=digits)
        for name, fig in (("kendall", self.plot()), ("figure1", self.figure_1())):
            paths.append(output.save_figure(fig, f"{prefix}_{name}", paper_dir))
            plt.close(fig)
        return paths
