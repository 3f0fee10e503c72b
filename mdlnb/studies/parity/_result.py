"""The parity toy's result: its curves, measures, switching reports, findings and claims."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

from mdlnb.api import output
from mdlnb.baselines import curves
from mdlnb.research import findings
from mdlnb.studies._base import save_files
from mdlnb.studies.parity._claims import parity_claims
from mdlnb.studies.parity._config import ParityConfig

# Imported inside the functions that use them, so that importing this module does not load
# them: pandas, matplotlib.


@dataclasses.dataclass(frozen=True, eq=False)
class ParityResult:
    """What :func:`mdlnb.studies.parity.run` returns.

    Attributes:
      config: the parameters it ran.
      secret: s, (d,) of {0, 1}.
      n_train, n_test: the pool (where curves' prefixes come from) and the held-out
        examples; n: every example (switching codes them all).
      grid: the curves' sizes.
      curve_a, curve_b: the exact algorithms' loss-data curves (count; GF(2)).
      mlp_a, mlp_b: the MLP probes' curves.
      rep_a, rep_b: :class:`mdlnb.Report` of readout switching on A and on B.
      curve_g3: the exact count's curve of claim g3's noisy label (noise rate
        ``config.g3_alpha``; None: ``curve_a``'s, at ``config.alpha``).
    """

    config: ParityConfig
    secret: np.ndarray
    n_train: int
    n_test: int
    n: int
    grid: np.ndarray
    curve_a: Any
    curve_b: Any
    mlp_a: Any
    mlp_b: Any
    rep_a: Any
    rep_b: Any
    curve_g3: Any = None

    # -- what the measures are judged at ---------------------------------------
    @property
    def h_alpha(self) -> float:
        """A's loss floor H(α), nats per example."""
        return curves.binary_entropy(self.config.alpha)

    @property
    def eps(self):
        """The tables' tolerance, ``eps_fraction`` · H(α) (below A's floor)."""
        f = self.config.eps_fraction
        return curves.Epsilon(
            f * self.h_alpha, f"{f} x H(alpha): a predictor must beat the noisy label"
        )

    @property
    def h_alpha_g3(self) -> float:
        """The loss floor of claim g3's noisy label, H(``g3_alpha``) (H(α) without
        :attr:`curve_g3`), nats per example."""
        a = self.config.g3_alpha if self.curve_g3 is not None else self.config.alpha
        return curves.binary_entropy(a)

    @property
    def eps_g3(self):
        """Claim g3's tolerance, ``g3_eps_fraction`` · :attr:`h_alpha_g3`: more than twice
        the noisy label's floor (SDL tight, Alg. 1) and below log 2."""
        f = self.config.g3_eps_fraction
        return curves.Epsilon(
            f * self.h_alpha_g3, f"{f} x H(g3_alpha): both representations' SDL can be tight"
        )

    @property
    def at(self) -> list[int]:
        """The evaluation-set sizes of ``config.at`` within the pool."""
        return [n for n in self.config.at if n <= self.grid[-1]]

    # -- tables ----------------------------------------------------------------
    def measure_table(self, probes: str = "exact"):
        """:func:`mdlnb.baselines.curves.measure_table` of the exact algorithms' (``"exact"``) or
        the MLP probes' (``"mlp"``) curves at :attr:`at`."""
        pair = {"exact": (self.curve_a, self.curve_b), "mlp": (self.mlp_a, self.mlp_b)}
        if probes not in pair:
            raise ValueError(f"probes: expected 'exact' or 'mlp', got {probes!r}")
        return curves.measure_table(list(pair[probes]), self.eps, at=self.at)

    def rankings(self, probes: str = "exact"):
        """Which representation each measure prefers at each n (:func:`mdlnb.baselines.curves.rankings`)."""
        return curves.rankings(self.measure_table(probes))

    def winner_changes(self, probes: str = "exact"):
        """Each measure's winners as n grows (:func:`mdlnb.baselines.curves.winner_changes`)."""
        return curves.winner_changes(self.rankings(probes))

    def switching(self):
        """Readout switching on A and on B: codelength, best single expert, preferred readout."""
        import pandas as pd

        return pd.DataFrame(
            [
                {
                    "representation": name,
                    "switching code [nats]": r.total_nats,
                    "bits / example": r.bits_per_example,
                    "best single expert": r.best_expert,
                    "best expert [nats]": r.best_expert_nats,
                    "preferred readout": r.preferred_readout,
                    "uniform [nats]": r.uniform_nats,
                }
                for name, r in (("A: noisy label", self.rep_a), ("B: raw bits", self.rep_b))
            ]
        )

    def tables(self) -> dict[str, Any]:
        """``{name: DataFrame}`` written as ``parity_<name>``."""
        return {
            "measures": self.measure_table(),
            "rankings": self.rankings(),
            "mlp_measures": self.measure_table("mlp"),
            "switching": self.switching(),
        }

    # -- figures ---------------------------------------------------------------
    def plot_curves(self):
        """The exact algorithms' loss-data curves with ε and VA at n = d (Axes)."""
        c = self.config
        return curves.plot(
            [self.curve_a, self.curve_b],
            self.eps,
            va_at=c.d,
            title=f"parity, d = {c.d}, α = {c.alpha}: loss-data curves "
            f"(±1 sd over {c.seeds} seeds)",
        )

    def plot_mlp_curves(self):
        """The MLP probes' loss-data curves (Axes)."""
        return curves.plot(
            [self.mlp_a, self.mlp_b],
            self.eps,
            title=f"parity, MLP probes ({self.config.mlp_steps} updates per point)",
        )

    def plot_switching_posterior(self):
        """Switching's posterior over readouts along the stream, A and B (Figure)."""
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 2, figsize=(11, 3.6), layout="constrained")
        self.rep_a.plot_posterior(by="readout", ax=axes[0])
        axes[0].set_title("A: noisy label")
        self.rep_b.plot_posterior(by="readout", ax=axes[1])
        axes[1].set_title("B: raw bits")
        return fig

    def figures(self) -> dict[str, Any]:
        """``{name: Figure or Axes}`` written as ``parity_<name>``."""
        return {
            "curves": self.plot_curves(),
            "mlp_curves": self.plot_mlp_curves(),
            "switching_posterior": self.plot_switching_posterior(),
        }

    # -- prose -------------------------------------------------------------------
    def describe(self) -> str:
        """The secret, the split, the sizes and ε (Markdown)."""
        s = self.secret
        return (
            f"secret s = {s.tolist()} (|s| = {s.sum()}), d = {self.config.d}\n\n"
            f"{self.n_train} training examples, {self.n_test} held out; sizes "
            f"{self.grid.tolist()}\n\nH(alpha) = {self.h_alpha:.4f} nats; eps = "
            f"{self.eps.value:.4f} nats ({self.eps.source})"
        )

    def exact_findings(self) -> str:
        """Each measure's winners as n grows, SDL and εSC of A and B, and MDL at each n,
        for the exact algorithms (Markdown)."""
        changes = self.winner_changes().set_index("measure")
        eps = self.eps
        sdl_a, sdl_b = curves.sdl(self.curve_a, eps), curves.sdl(self.curve_b, eps)
        esc_a, esc_b = curves.esc(self.curve_a, eps), curves.esc(self.curve_b, eps)
        lines = [
            f"- {m} as n grows: {changes.loc[m, 'sequence']}" for m in ("VA", "MDL", "SDL", "eSC")
        ]
        lines += [
            f"- SDL: A {sdl_a.value:.1f} nats [{sdl_a.status}], B {sdl_b.value:.1f} nats "
            f"[{sdl_b.status}]",
            f"- eSC: A {esc_a}, B {esc_b} examples",
        ]
        table = self.measure_table()
        mdl = table.query("measure == 'MDL'").pivot(
            index="n", columns="representation", values="value"
        )
        return (
            "\n".join(lines)
            + "\n\nMDL (nats) at each n:\n\n"
            + output.to_markdown(mdl.reset_index(), digits=2)
        )

    def mlp_findings(self) -> str:
        """The MLP probes against the exact algorithms: εSC on B, final accuracy and
        loss, and the loss at the smallest n (Markdown)."""
        eps, a, b = self.eps, self.mlp_a, self.mlp_b
        return "\n".join(
            [
                f"- MLP on B reaches eps at n = {curves.esc(b, eps)} (GF(2) elimination: "
                f"{curves.esc(self.curve_b, eps)}); final held-out accuracy "
                f"{b.accuracy[:, -1].mean():.3f} ± {b.accuracy[:, -1].std(ddof=1):.3f}",
                f"- MLP on A: final loss {a.mean_loss[-1]:.4f} ± {a.std_loss[-1]:.4f} nats "
                f"vs H(alpha) = {self.h_alpha:.4f}",
                f"- MLP on B at n = {self.grid[0]}: {b.mean_loss[0]:.2f} ± {b.std_loss[0]:.2f} nats "
                "(a coin costs log 2 = 0.693)",
            ]
        )

    def winners_compared(self) -> str:
        """Whether the MLP probes show the exact algorithms' flips (Markdown)."""
        return findings.winners_compared(
            self.winner_changes(),
            self.winner_changes("mlp"),
            labels=("exact algorithms", "MLP probes"),
        )

    def switching_findings(self) -> str:
        """Which readout switching weighted most on A and B, the codelengths, and
        whether the MLP readouts hold the posterior on B (Markdown)."""
        a, b = self.rep_a, self.rep_b
        post_b = b.readout_posterior()
        mlp_mass = post_b[post_b["readout"] != "linear"].groupby("t")["probability"].sum()
        return "\n".join(
            [
                f"- switching's most-weighted readout over the stream: {a.preferred_readout} on A, "
                f"{b.preferred_readout} on B (GF(2) elimination needed "
                f"{curves.esc(self.curve_b, self.eps)} examples to reach eps)",
                f"- switching codelength for n = {self.n}: A {a.total_nats:.1f} nats, "
                f"B {b.total_nats:.1f} nats -> at this n it prefers "
                f"{'A' if a.total_nats < b.total_nats else 'B'}",
                "",
                findings.posterior_share(
                    mlp_mass, threshold=0.9, who="MLP readouts", where="the raw bits (B)"
                ),
            ]
        )

    def setting(self) -> list[tuple[str, str, str]]:
        """Whitney et al. 2020's parity toy (Sec. 3.1, Fig. 1) against this run's."""
        c = self.config
        return [
            (
                "task",
                "parity of a d-bit secret's bits; the noisy label is the parity with "
                "noise α (Sec. 3.1)",
                f"d = {c.d}, α = {c.alpha}; {self.n_train:,} training and {self.n_test:,} "
                "held-out examples",
            ),
            (
                "learners",
                "the exact algorithms (counting, GF(2) elimination) and MLP probes",
                f"the same, MLPs of {c.mlp_width} units",
            ),
            ("seeds", "8 per curve", f"{c.seeds} per curve (nested prefixes of permutations)"),
        ]

    def claims(self) -> list:
        """Claims g1–g3 (:func:`mdlnb.studies.parity.parity_claims`) on the exact
        algorithms' curves: g1, g2 on A and B; g3 on :attr:`curve_g3` and B at
        :attr:`eps_g3`, more than twice that noisy label's floor."""
        return parity_claims(
            self.curve_a,
            self.curve_b,
            self.eps_g3,
            at=self.at,
            floor=self.h_alpha_g3,
            g3_quick=self.curve_g3,
        )

    # -- files -------------------------------------------------------------------
    def save(self, paper_dir: str | Path = "paper", *, prefix: str = "parity") -> list[Path]:
        """Write :meth:`tables` (csv + md) and :meth:`figures` (png) as
        ``<prefix>_<name>`` atomically; returns the paths."""
        return save_files(paper_dir, prefix, self.tables(), self.figures())
