"""The shift study's result: every run's codelength and cumulative code, with the
tables, figures, findings, claims and setting of the notebook ``shift``."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pandas as pd

from mdlnb.api.plots import encoder_label
from mdlnb.studies._base import save_files
from mdlnb.studies._setting import PAPERS, board_text, fmt_range
from mdlnb.studies.shift import _claims, _plots
from mdlnb.studies.shift import _paper as P
from mdlnb.studies.shift import _tables as T
from mdlnb.studies.shift._config import ShiftConfig


@dataclasses.dataclass(frozen=True, eq=False)
class ShiftResult:
    """What :func:`mdlnb.studies.shift.run` returns.

    Attributes:
      config: the parameters it ran.
      runs: one row per (task, draw, encoder, stream): ``n``, ``num_classes``, ``from
        train split`` (examples of split A in the stream), ``codelength [nats]``, ``per
        example [nats]`` (:data:`mdlnb.studies.shift.RUN_COLUMNS`).
      curves: the cumulative codelength of every run at ``config.points`` positions.
      encoders: one row per encoder (parameters, feature dimension, pretraining steps).
      cached_units: units read from the cache rather than computed — shown, never written.
      seconds: wall time of :func:`run` — shown, never written.
    """

    config: ShiftConfig
    runs: pd.DataFrame
    curves: pd.DataFrame
    encoders: pd.DataFrame
    cached_units: int
    seconds: float

    # -- tables --------------------------------------------------------------
    def differences(self) -> pd.DataFrame:
        """Every (task, draw, encoder, version): ``version − reshuffled``, nats per example."""
        return T.differences(self.runs)

    def summary(self) -> pd.DataFrame:
        """Per version: mean difference with its t interval over units, share of cells
        beyond 0.01, Kendall τ of the rankings with its bootstrap interval."""
        return T.summary(self.runs, resamples=self.config.resamples)

    def ranks(self) -> pd.DataFrame:
        """Each encoder's average rank and mean codelength under each ranked version."""
        return T.ranks(self.runs)

    def tables(self) -> dict[str, Any]:
        """``{name: DataFrame}`` written as ``shift_<name>``: ``runs``, ``differences``,
        ``units`` (per (task, draw), the mean over encoders), ``summary``, ``ranks``,
        ``along_n``, ``paper`` (the cells of the paper's Tables 10 and 11 on its shifted
        tasks) and ``encoders``."""
        return {
            "runs": self.runs,
            "differences": self.differences(),
            "units": T.units(self.runs),
            "summary": self.summary(),
            "ranks": self.ranks(),
            "along_n": T.along_n(self.curves),
            "paper": P.table(),
            "encoders": self.encoders,
        }

    # -- figures -------------------------------------------------------------
    def plot_effects(self):
        """Per encoder and unit, original − reshuffled and train-then-test − reshuffled."""
        return _plots.effects(self.runs)

    def plot_ranks(self):
        """The encoders' average ranks under each version (r2's orders)."""
        return _plots.ranks(self.runs)

    def plot_along_n(self):
        """The cumulative codelength difference to the reshuffled split along the stream."""
        return _plots.along_n(self.curves, self.config.size)

    def figures(self) -> dict[str, Any]:
        """``{name: Figure}`` written as ``shift_<name>``."""
        return {
            "effects": self.plot_effects(),
            "ranks": self.plot_ranks(),
            "along_n": self.plot_along_n(),
        }

    # -- prose, verdicts, setting -------------------------------------------
    def describe(self) -> str:
        """The tasks, the splits and the encoders, one line each (Markdown)."""
        c = self.config
        lines = []
        for (task, factor), g in self.runs.groupby(["task", "factor"], sort=False):
            share = g.loc[g["stream"] == "reshuffled", "from train split"] / c.size
            lines.append(
                f"- {task}, shifted in `{factor}`: {g['seed'].nunique()} draws of "
                f"2 × {c.size} examples, {int(g['num_classes'].iloc[0])} classes; the "
                f"reshuffled split holds {share.mean():.0%} of split A on average"
            )
        lines.append(
            f"- σ = {c.shift:g} of the original train split lies below the factor's "
            "median; encoders: " + ", ".join(self.encoders["encoder"])
        )
        return "\n".join(lines)

    def findings(self) -> str:
        """The differences and the rank agreement, one line per version (Markdown)."""
        s = self.summary().set_index("version")
        out = []
        for v, what in T.VERSIONS.items():
            r = s.loc[v]
            line = (
                f"- **{v}** ({what}): {r['minus reshuffled [nats]']:+.4f} nats/example "
                f"against the reshuffled split, 95 % t interval [{r['ci low']:+.4f}, "
                f"{r['ci high']:+.4f}] over {int(r['units'])} units; |Δ| > 0.01 on "
                f"{r['cells beyond 0.01']:.0%} of the (unit, encoder) cells"
            )
            if v in T.RANKED:
                line += (
                    f"; Kendall τ of the average-rank orders {r['tau']:.3f} (95 % "
                    f"bootstrap [{r['tau low']:.3f}, {r['tau high']:.3f}])"
                )
            out.append(line)
        return "\n".join(out)

    def claims(self) -> list:
        """Claims r1 and r2 (:mod:`mdlnb.studies.shift._claims`)."""
        return _claims.claims(self.runs, resamples=self.config.resamples)

    def setting(self) -> list[tuple[str, str, str]]:
        """(aspect, the paper's, this run's) rows for the claims page."""
        c = self.config
        e = self.encoders
        params = fmt_range(e["parameters"], "parameters")
        objectives = ", ".join(encoder_label(x).partition(", ")[2] or x for x in e["encoder"])
        tasks = ", ".join(
            f"{t} in {f}"
            for t, f in self.runs[["task", "factor"]].drop_duplicates().itertuples(index=False)
        )
        return [
            (
                "shifted tasks",
                "4 VTAB tasks (PatchCamelyon, DMLab, KittiDistance, "
                "SmallNORBAzimuth), 6,770–294,912 examples, their own train/test splits",
                f"{len(c.tasks)} procedural tasks split by a nuisance factor ({tasks}), σ = "
                f"{c.shift:g}; {len(c.seeds)} independent draws each, N = {c.size:,} per split",
            ),
            (
                "encoders",
                "6: ResNet-50 SUP/SimCLR/BYOL, ViT-B/16 SUP/DINO/MAE, ImageNet",
                f"{len(e)} ViTs of {params} pretrained on Fashion-MNIST ({objectives})",
            ),
            (
                "readouts",
                f"{PAPERS['readout']['readouts']}; {PAPERS['readout']['protocol']}",
                f"protocol {c.protocol!r}: {board_text(c.protocol)}",
            ),
            (
                "versions",
                "original train split vs reshuffled (App. A.2), one order each",
                "either half as the train split vs reshuffled, plus the reshuffled examples in "
                "train-then-test order; one order per draw and version",
            ),
        ]

    # -- files ---------------------------------------------------------------
    def save(self, paper_dir: str | Path = "paper", *, prefix: str = "shift") -> list[Path]:
        """Write :meth:`tables` (csv + md) and :meth:`figures` (png) as ``<prefix>_<name>``
        atomically; returns the paths."""
        return save_files(paper_dir, prefix, self.tables(), self.figures())
