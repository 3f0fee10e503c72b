"""The data-efficiency study's result: four codes per (domain, order), with tables,
figure, findings and claims."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mdlnb.studies._base import save_files
from mdlnb.studies.data_efficiency import _claims, _plots
from mdlnb.studies.data_efficiency._config import DataEfficiencyConfig
from mdlnb.studies.data_efficiency._measures import SCRATCH, regret_frames
from mdlnb.studies.switching_strategies import spread


@dataclasses.dataclass(frozen=True, eq=False)
class DataEfficiencyResult:
    """What :func:`mdlnb.studies.data_efficiency.run` returns.

    Attributes:
      config: the parameters it ran.
      encoders: ``{encoder name: feature dimension}``, in the config's order.
      domains: ``{task name: "in-domain" or "out-of-domain"}``.
      tasks: ``{task name: its one-line description}``.
      num_classes: ``{task name: C}``.
      runs: one ``(encoder, task, domain, seed, per_step)`` per (encoder, task,
        order); ``per_step`` maps each method to its (N,) per-example loss in nats.
    """

    config: DataEfficiencyConfig
    encoders: Mapping[str, int]
    domains: Mapping[str, str]
    tasks: Mapping[str, str]
    num_classes: Mapping[str, int]
    runs: tuple[tuple[str, str, str, int, Mapping[str, np.ndarray]], ...]

    def setting(self) -> list[tuple[str, str, str]]:
        """The paper's Fig. 3 / App. A.9 setting against this run's (claims page rows)."""
        c = self.config
        sizes = sorted({p["from scratch"].size for *_, p in self.runs})
        return [
            (
                "encoders",
                "BYOL ResNet-50 pretrained on ImageNet; from scratch: ResNet-50",
                ", ".join(f"{e} ({d}-d features)" for e, d in self.encoders.items())
                + f": {c.arch}_{c.arch_size} pretrained on {c.pretrain_size or 'all'} "
                f"{c.pretrain_task} images for {c.pretrain_steps} steps",
            ),
            (
                "tasks",
                "ImageNet (in domain), PatchCamelyon and 18 other VTAB tasks (out)",
                ", ".join(f"{t} ({d})" for t, d in self.domains.items()),
            ),
            (
                "examples per task (N)",
                "1.28 M (ImageNet), 262,144 (PCam)",
                ", ".join(f"{n:,}" for n in sizes),
            ),
            (
                "readouts",
                "linear probe, MLPs of 1–7 hidden layers, fine-tuning, from scratch",
                f"linear probe, MLPs of {', '.join(map(str, c.mlp_layers))} hidden layers of "
                f"{c.mlp_width} units, fine-tuning, from scratch",
            ),
            ("orders", "one", f"{len(c.seeds)} per (encoder, task)"),
        ]

    def frames(self):
        """``(curves, summary)``: :func:`regret_frames` of every (encoder, task, order),
        concatenated, with an ``encoder`` column first."""
        frames = [
            tuple(
                f.assign(encoder=enc)[["encoder", *f.columns]]
                for f in regret_frames(
                    p, task=name, domain=domain, seed=s, points=self.config.points
                )
            )
            for enc, name, domain, s, p in self.runs
        ]
        return (
            pd.concat([c for c, _ in frames], ignore_index=True),
            pd.concat([s for _, s in frames], ignore_index=True),
        )

    def tables(self) -> dict[str, Any]:
        """``{name: DataFrame}`` written as ``data_efficiency_<name>``: ``codelengths``
        (every method per (encoder, task, order): codelength, regret at N, zero crossing)
        and ``regret`` (regret at N per (encoder, domain, task, method), spread over
        orders)."""
        _, summary = self.frames()
        return {
            "codelengths": summary,
            "regret": spread(summary, ["encoder", "domain", "task", "method"], "regret [nats]"),
        }

    def plot_regret(self):
        """Fig. 3: regret to from scratch along n, one panel per (encoder, task) (Figure)."""
        curves, summary = self.frames()
        return _plots.regret(curves, summary, self.domains)

    def figures(self) -> dict[str, Any]:
        return {"regret": self.plot_regret()}

    def describe(self) -> str:
        """The encoders and the streams (Markdown)."""
        lines = [f"- encoder {e}: {d}-d features" for e, d in self.encoders.items()] + [""]
        lines += [
            f"- {self.domains[t]}: {self.tasks[t]}; uniform code log C = "
            f"{math.log(self.num_classes[t]):.3f} nats/example"
            for t in self.tasks
        ]
        return "\n".join(lines)

    def findings(self) -> str:
        """Each method's regret at N (mean ± std over orders) and where its curve
        crosses zero for good, per (encoder, task) (Markdown)."""
        _, summary = self.frames()
        lines = []
        for (enc, task, method), g in summary.groupby(["encoder", "task", "method"], sort=False):
            if method == SCRATCH:
                continue
            cross = g["crossing n"].dropna()
            where = (
                f"crosses zero at n = {', '.join(str(int(c)) for c in cross)}"
                if len(cross)
                else "never crosses zero"
            )
            lines.append(
                f"- {enc}, {task} ({self.domains[task]}), {method}: regret at N "
                f"{g['regret [nats]'].mean():+.1f} ± {g['regret [nats]'].std():.1f} nats "
                f"over {len(g)} orders; {where}"
            )
        return "\n".join(lines)

    def claims(self) -> list:
        """Claims e1 and e2 (:func:`mdlnb.studies.data_efficiency.claims`)."""
        return _claims.claims(self.runs, early=self.config.early)

    def save(
        self, paper_dir: str | Path = "paper", *, prefix: str = "data_efficiency"
    ) -> list[Path]:
        """Write :meth:`tables` (csv + md) and :meth:`figures` (png) as
        ``<prefix>_<name>`` atomically; returns the paths."""
        return save_files(paper_dir, prefix, self.tables(), self.figures())
