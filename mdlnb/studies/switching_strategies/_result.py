"""The switching study's result: every (pair, order)'s frames, with its tables,
figures, findings and claims."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mdlnb.studies import _setting
from mdlnb.studies._base import save_files
from mdlnb.studies.switching_strategies import _claims, _plots
from mdlnb.studies.switching_strategies import _tables as T
from mdlnb.studies.switching_strategies._config import SwitchingConfig
from mdlnb.studies.switching_strategies._pair import PairResult, final_codelengths, gather


@dataclasses.dataclass(frozen=True, eq=False)
class SwitchingResult:
    """What :func:`mdlnb.studies.switching_strategies.run` returns.

    Attributes:
      config: the parameters it ran.
      results: one :class:`PairResult` per (pair, order), pairs in the config's
        order, orders within a pair.
      dims: ``{pair: D}``, the feature dimension of each pair's task.
    """

    config: SwitchingConfig
    results: tuple[PairResult, ...]
    dims: Mapping[str, int]

    @property
    def num_experts(self) -> int:
        return self.results[0].num_experts

    @property
    def num_classes(self) -> int:
        return self.results[0].num_classes

    def gather(self, frame: str):
        """One frame (``regret``, ``sensitivity``, ``bound``, ``sequence``, ``switches``)
        over every (pair, order), with ``pair`` and ``seed`` columns first."""
        return gather(self.results, frame)

    # -- tables --------------------------------------------------------------
    def tables(self) -> dict[str, Any]:
        """The paper tables, ``{name: DataFrame}`` (written as ``switching_<name>``):
        ``codelengths`` (every strategy at n = N per pair and order), ``final_regret``,
        ``sensitivity``, ``sequence`` (regret to the best ≤ s-switch sequence),
        ``frequency`` (changes of the favourite readout)."""
        return {
            "codelengths": final_codelengths(self.results),
            "final_regret": T.final_regret(self.results),
            "sensitivity": T.sensitivity_spread(self.results),
            "sequence": gather(self.results, "sequence"),
            "frequency": T.frequency(self.results),
        }

    # -- figures -------------------------------------------------------------
    def plot_regret(self):
        """Fig. 5: regret of each strategy to fixed share along n (Figure)."""
        return _plots.regret(self.results)

    def plot_sensitivity(self):
        """Fixed share's regret against m and a constant α (Figure)."""
        return _plots.sensitivity(self.results)

    def plot_bound(self):
        """Regret to the best single expert against the never-switch cost (Figure)."""
        return _plots.bound(self.results)

    def figures(self) -> dict[str, Any]:
        """``{name: Figure}`` written as ``switching_<name>``."""
        return {
            "regret": self.plot_regret(),
            "sensitivity": self.plot_sensitivity(),
            "bound": self.plot_bound(),
        }

    # -- prose and verdicts --------------------------------------------------
    def describe(self) -> str:
        """The board and the pairs, one line each (Markdown)."""
        pairs = ", ".join(f"{p} (N = {n}, D = {self.dims[p]})" for p, n in self._sizes().items())
        return (
            f"{self.num_experts} experts; pairs: {pairs}\n\norders: "
            f"{list(self.config.seeds)}; uniform code log C = "
            f"{math.log(self.num_classes):.3f} nats per example"
        )

    def setting(self) -> list[tuple[str, str, str]]:
        """The paper's App. A.6 setting against this run's (rows for the claims page)."""
        c = self.config
        return [
            (
                "encoder × task",
                "BYOL ResNet-50 on ImageNet (one pair, Fig. 5)",
                f"{len(c.pairs)} pairs: {', '.join(c.pairs)}",
            ),
            (
                "examples per task (N)",
                "1.28 M (ImageNet)",
                _setting.fmt_range(self._sizes().values()),
            ),
            (
                "readouts",
                _setting.PAPERS["readout"]["readouts"],
                f"{self.num_experts} experts: linear and MLPs of 1–{c.max_hidden_layers} hidden "
                f"layers of {c.width} units",
            ),
            ("orders", "one", f"{len(c.seeds)} per pair"),
        ]

    def _sizes(self) -> dict[str, int]:
        return {r.pair: r.n for r in self.results}

    def regret_findings(self) -> str:
        """The mixtures' and the switch distribution's regret to fixed share at n = N
        (mean ± std over orders), one line per pair (Markdown)."""
        table = T.final_regret(self.results).set_index(["pair", "strategy"])
        lines = []
        for pair in self._sizes():
            b = table.loc[(pair, "Bayesian mixture")]
            s = table.loc[(pair, "switch distribution")]
            lines.append(
                f"- {pair}: Bayesian mixture {b['mean']:+.1f} ± {b['std']:.1f} nats "
                f"behind fixed share, switch distribution {s['mean']:+.1f} ± "
                f"{s['std']:.1f} (mean ± std over {int(b['count'])} orders)"
            )
        return "\n".join(lines)

    def bound_findings(self) -> str:
        """Fixed share's regret to the best ≤ (m − 1)-switch sequence against the
        A.1 bound, one line per pair (Markdown)."""
        seq = gather(self.results, "sequence")
        last = seq[seq["switches"] == seq["switches"].max()]
        s = T.spread(last, ["pair"], "regret [nats]").set_index("pair")
        bound = last.groupby("pair")["bound [nats]"].first()
        switches = int(seq["switches"].max())
        return "\n".join(
            f"- {pair}: regret to the best ≤{switches}-switch sequence "
            f"{s.loc[pair, 'mean']:.1f} ± {s.loc[pair, 'std']:.1f} nats vs bound "
            f"{bound.loc[pair]:.1f} nats"
            for pair in self._sizes()
        )

    def switching_findings(self) -> str:
        """How often the favourite readout changes, and how much posterior mass moves
        per step (total variation), one line per pair (Markdown)."""
        freq = T.frequency(self.results).set_index("pair")
        tv = T.tv_spread(self.results).set_index("pair")
        return "\n".join(
            f"- {pair}: the favourite readout changes {freq.loc[pair, 'mean']:.0f} "
            f"± {freq.loc[pair, 'std']:.0f} times over N = {n}; mean TV between "
            f"consecutive posteriors {tv.loc[pair, 'mean']:.3f} (max "
            f"{tv.loc[pair, 'max']:.3f})"
            for pair, n in self._sizes().items()
        )

    def claims(self) -> list:
        """Claims (b1, b2, c1, c2), decided on every (pair, order)."""
        return _claims.claims(self.results)

    # -- files ---------------------------------------------------------------
    def save(self, paper_dir: str | Path = "paper", *, prefix: str = "switching") -> list[Path]:
        """Write :meth:`tables` (csv + md) and :meth:`figures` (png) as
        ``<prefix>_<name>`` atomically; returns the paths."""
        return save_files(paper_dir, prefix, self.tables(), self.figures())
