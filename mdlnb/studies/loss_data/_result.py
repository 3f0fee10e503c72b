"""The loss-data study's result: the curves, every measure at every n, the winners
and the refined εSC, with tables and figures."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from mdlnb import curves
from mdlnb.studies._base import save_files
from mdlnb.studies.loss_data._config import LossDataConfig


@dataclasses.dataclass(frozen=True, eq=False)
class LossDataResult:
    """What :func:`mdlnb.studies.loss_data.run` returns.

    Attributes:
      config: the parameters it ran.
      pool, test: one-line descriptions of the evaluation pool and the test examples.
      dims: ``{representation: D}``.
      build_seconds, curve_seconds: ``{representation: s}`` to build its features
        (cached on disk) and to train its curve — shown, never written.
      eps0: ε from the large raw-pixel probe (Sec. 4.3); eps: ε × ``eps_scales``.
      grid: the evaluation-set sizes.
      curves: one :class:`mdlnb.curves.LossDataCurve` per representation.
      refined: εSC on the grid and after Alg. 2, one row per representation.
    """

    config: LossDataConfig
    pool: str
    test: str
    dims: Mapping[str, int]
    build_seconds: Mapping[str, float]
    curve_seconds: Mapping[str, float]
    eps0: Any
    eps: tuple
    grid: np.ndarray
    curves: tuple
    refined: Any

    def representations(self):
        """Each representation's dimension and the seconds to build it."""
        return pd.DataFrame({"representation": list(self.dims), "dim": list(self.dims.values()),
                             "seconds to build (features cached on disk)":
                                 [self.build_seconds[s] for s in self.dims]})

    def measures(self):
        """VA, MDL, SDL, εSC of every representation at every n of the grid, each from
        the curve up to n (:func:`mdlnb.curves.measure_table`), at every ε."""
        return curves.measure_table(list(self.curves), list(self.eps), at=self.grid)

    def rankings(self):
        """Each measure's winner at each n; a VA/MDL winner must beat the seed spread."""
        return curves.rankings(self.measures(), spread=True)

    def winner_changes(self):
        """Each measure's winners as n grows, and whether it changed."""
        return curves.winner_changes(self.rankings())

    def final(self):
        """Every measure at the largest n, with its spread over seeds."""
        table = self.measures()
        return table[table["n"] == self.grid[-1]][["representation", "measure", "eps", "shown",
                                                    "status", "seed mean", "seed std",
                                                    "exceeded"]]

    def tables(self) -> dict[str, Any]:
        """``{name: DataFrame}`` written as ``loss_data_<name>``."""
        return {"curves": pd.concat([c.frame() for c in self.curves]),
                "measures": self.measures(), "rankings": self.rankings(),
                "winner_changes": self.winner_changes(), "final": self.final(),
                "esc_refined": self.refined}

    def plot_curves(self):
        """The loss-data curves with the loosest ε (Axes)."""
        c = self.config
        return curves.plot(list(self.curves), self.eps[-1],
                           title=f"Fashion-MNIST, MLP 2x{c.probe_width} probe (±1 sd over "
                                 f"{c.seeds} seeds)")

    def plot_measures(self):
        """Every measure against n (Fig. 2), SDL and εSC hollow while lower bounds (Figure)."""
        return curves.plot_measures(self.measures(), eps=self.eps[-1].value)[0].figure

    def figures(self) -> dict[str, Any]:
        """``{name: Figure or Axes}`` written as ``loss_data_<name>``."""
        return {"curves": self.plot_curves(), "measures": self.plot_measures()}

    def describe(self) -> str:
        """The pool, the test examples and ε (Markdown)."""
        lines = [f"- pool: {self.pool}", f"- test: {self.test}",
                 f"- eps = {self.eps0.value:.4f} nats: {self.eps0.source}",
                 f"- tolerances used: {[round(e.value, 4) for e in self.eps]}"]
        return "\n".join(lines)

    def curve_findings(self) -> str:
        """One line per curve, with the probes it trained and their seconds (Markdown)."""
        return "\n".join(f"- {c} ({len(c.sizes) * len(c.seeds)} probes in "
                         f"{self.curve_seconds[c.representation]:.0f} s)" for c in self.curves)

    def flips(self) -> str:
        """The measures whose named winner changed as n grew (Markdown)."""
        changes = self.winner_changes()
        flipped = changes[changes["changed"]]
        names = [f"{m}" + ("" if pd.isna(e) else f" (eps {e:.3g})")
                 for m, e in zip(flipped["measure"], flipped["eps"])]
        return "measures whose named winner changed as n grew: " + (", ".join(names) or "none")

    def save(self, paper_dir: str | Path = "paper", *, prefix: str = "loss_data") -> list[Path]:
        """Write :meth:`tables` (csv + md) and :meth:`figures` (png) as
        ``<prefix>_<name>`` atomically; returns the paths. Timings are not written:
        the same run must regenerate identical files."""
        return save_files(paper_dir, prefix, self.tables(), self.figures())
