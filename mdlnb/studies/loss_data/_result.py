"""The loss-data study's result: the curves, every measure at every n, the winners
and the refined εSC, with tables and figures."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mdlnb.baselines import curves
from mdlnb.studies._base import save_files
from mdlnb.studies.loss_data import _claims
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
      curves: one :class:`mdlnb.baselines.curves.LossDataCurve` per representation.
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
        return pd.DataFrame(
            {
                "representation": list(self.dims),
                "dim": list(self.dims.values()),
                "seconds to build (features cached on disk)": [
                    self.build_seconds[s] for s in self.dims
                ],
            }
        )

    def measures(self):
        """VA, MDL, SDL, εSC of every representation at every n of the grid, each from
        the curve up to n (:func:`mdlnb.baselines.curves.measure_table`), at every ε."""
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
        return table[table["n"] == self.grid[-1]][
            [
                "representation",
                "measure",
                "eps",
                "shown",
                "status",
                "seed mean",
                "seed std",
                "exceeded",
            ]
        ]

    def tables(self) -> dict[str, Any]:
        """``{name: DataFrame}`` written as ``loss_data_<name>``."""
        return {
            "curves": pd.concat([c.frame() for c in self.curves]),
            "measures": self.measures(),
            "rankings": self.rankings(),
            "winner_changes": self.winner_changes(),
            "final": self.final(),
            "esc_refined": self.refined,
            "first_point": self.first_point(),
        }

    def plot_curves(self):
        """The loss-data curves with the loosest ε (Axes)."""
        c = self.config
        return curves.plot(
            list(self.curves),
            self.eps[-1],
            title=f"Fashion-MNIST, MLP 2x{c.probe_width} probe (±1 sd over {c.seeds} seeds)",
        )

    def plot_measures(self):
        """Every measure against n (Fig. 2), SDL and εSC hollow while lower bounds (Figure)."""
        return curves.plot_measures(self.measures(), eps=self.eps[-1].value)[0].figure

    def figures(self) -> dict[str, Any]:
        """``{name: Figure or Axes}`` written as ``loss_data_<name>``."""
        return {"curves": self.plot_curves(), "measures": self.plot_measures()}

    def describe(self) -> str:
        """The pool, the test examples and ε (Markdown)."""
        lines = [
            f"- pool: {self.pool}",
            f"- test: {self.test}",
            f"- eps = {self.eps0.value:.4f} nats: {self.eps0.source}",
            f"- tolerances used: {[round(e.value, 4) for e in self.eps]}",
        ]
        return "\n".join(lines)

    def curve_findings(self) -> str:
        """One line per curve, with the probes it trained and their seconds (Markdown)."""
        return "\n".join(
            f"- {c} ({len(c.sizes) * len(c.seeds)} probes in "
            f"{self.curve_seconds[c.representation]:.0f} s)"
            for c in self.curves
        )

    def flips(self) -> str:
        """The measures whose named winner changed as n grew (Markdown)."""
        changes = self.winner_changes()
        flipped = changes[changes["changed"]]
        names = [
            f"{m}" + ("" if pd.isna(e) else f" (eps {e:.3g})")
            for m, e in zip(flipped["measure"], flipped["eps"])
        ]
        return "measures whose named winner changed as n grew: " + (", ".join(names) or "none")

    def first_point(self) -> pd.DataFrame:
        """At the smallest size n₁, per representation: the examples the probe trained on
        and held out for checkpoint selection, the seeds whose chosen checkpoint is the
        initial one (test loss log C: the readouts start at the uniform code) and the
        test loss and accuracy of the trained checkpoints chosen on the others."""
        n1, f = int(self.grid[0]), float(self.config.early_stopping)
        hold = min(int(math.ceil(f * n1)), 1024) if f > 0 and n1 >= 2 else 0
        rows = []
        for c in self.curves:
            loss, acc = c.loss[:, 0], c.accuracy[:, 0]
            initial = np.abs(loss - math.log(c.num_classes)) < 1e-5
            rows.append(
                {
                    "representation": c.representation,
                    "n": n1,
                    "trained on": n1 - hold,
                    "held out": hold,
                    "seeds": len(loss),
                    "initial chosen": int(initial.sum()),
                    "mean loss [nats]": float(loss.mean()),
                    "trained loss [nats]": float(loss[~initial].mean())
                    if (~initial).any()
                    else float("nan"),
                    "trained accuracy": float(acc[~initial].mean())
                    if (~initial).any()
                    else float("nan"),
                }
            )
        return pd.DataFrame(rows)

    def first_point_findings(self) -> str:
        """Why the curves start where they do against the uniform code's log C, in one
        sentence with this run's numbers (Markdown)."""
        t = self.first_point()
        c = self.curves[0].num_classes
        logc = math.log(c)
        lo, hi = t["mean loss [nats]"].min(), t["mean loss [nats]"].max()
        tol = 1e-5  # float32 losses: the uniform code is log C to within this
        where = (
            "above"
            if lo > logc + tol
            else "below"
            if hi < logc - tol
            else "at"
            if hi - lo < 2 * tol
            else "around"
        )
        span = f"{lo:.2f}" if f"{lo:.2f}" == f"{hi:.2f}" else f"{lo:.2f}–{hi:.2f}"
        head = (
            f"The curves start at {span} nats, {where} the uniform code's "
            f"log {c} = {logc:.2f}: at n = {int(t['n'].iloc[0])} each probe takes "
            f"{self.config.steps} updates on {int(t['trained on'].iloc[0])} examples"
        )
        trained = t[t["initial chosen"] < t["seeds"]]
        if int(t["held out"].iloc[0]) == 0:
            return head + (
                " with no hold-out, so its test loss is that of its last "
                "checkpoint — the loss of what the algorithm returns, which is what "
                "L(A, n) is (SDL paper Sec. 2.1)."
            )
        if trained.empty:
            return head + (
                f" and on every seed the initial, uniform checkpoint wins on the "
                f"{int(t['held out'].iloc[0])} held out ({logc:.2f} nats)."
            )
        return head + (
            f" and picks its checkpoint on the {int(t['held out'].iloc[0])} held out: on "
            f"{int((t['seeds'] - t['initial chosen']).sum())} of {int(t['seeds'].sum())} "
            "(representation, seed) curves a trained checkpoint that beat the uniform code on "
            "them wins, over-confident on the test set (accuracy "
            f"{trained['trained accuracy'].min():.2f}–{trained['trained accuracy'].max():.2f} "
            f"but {trained['trained loss [nats]'].min():.1f}–"
            f"{trained['trained loss [nats]'].max():.1f} nats), and on the others the initial, "
            f"uniform one ({logc:.2f} nats) does — the loss of what the algorithm returns, which "
            "is what L(A, n) is (SDL paper Sec. 2.1), not a defect of the curve; the MDL measure "
            "codes the first block uniformly whatever it says."
        )

    def claims(self) -> list:
        """Claims q1 (VA), q2 (MDL) and check q3 (SDL, εSC) (:mod:`._claims`)."""
        return _claims.claims(list(self.curves), self.grid, list(self.eps))

    def setting(self) -> list[tuple[str, str, str]]:
        """(aspect, the paper's, this run's) rows for the claims page."""
        c = self.config
        reps = ", ".join(f"{s} ({d}-d)" for s, d in self.dims.items())
        return [
            (
                "data",
                "MNIST, evaluation sets of 10–50,000 examples, test set as the population",
                f"Fashion-MNIST, evaluation sets of {int(self.grid[0])}–{int(self.grid[-1]):,} "
                f"examples, {c.test_size:,} test examples",
            ),
            (
                "representations",
                "CIFAR-10 convnet's last hidden layer (784-d), raw pixels, VAE (8-d)",
                reps,
            ),
            (
                "probe",
                "MLP 2 × 512, Adam 1e-4, the same updates at every n, no early stopping",
                f"MLP 2 × {c.probe_width}, Adam {c.learning_rate:g}, {c.steps} updates at every n, "
                f"checkpoint chosen on {c.early_stopping:.0%} of each prefix",
            ),
            (
                "sizes and seeds",
                "20 log-uniform sizes, 8 seeds",
                f"{len(self.grid)} log-uniform sizes, {c.seeds} seeds",
            ),
        ]

    def save(self, paper_dir: str | Path = "paper", *, prefix: str = "loss_data") -> list[Path]:
        """Write :meth:`tables` (csv + md) and :meth:`figures` (png) as
        ``<prefix>_<name>`` atomically; returns the paths. Timings are not written:
        the same run must regenerate identical files."""
        return save_files(paper_dir, prefix, self.tables(), self.figures())
