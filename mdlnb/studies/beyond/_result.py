"""The study's results: tables, figures, findings and paper files (:class:`BeyondResult`)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from mdlnb.api.plots import log_spaced
from mdlnb.studies._base import save_files
from mdlnb.studies.beyond import _plots as _beyond_plots
from mdlnb.studies.beyond._config import BeyondConfig
from mdlnb.studies.beyond._data import t_interval

# Imported inside the functions that use them, so that importing this module does not load
# them: scikit-learn, SciPy, pandas, matplotlib; mdlnb.encoders (JAX, optax); mdlnb.baselines.transfer
# (SciPy, threadpoolctl).


@dataclasses.dataclass(frozen=True, eq=False)
class BeyondResult:
    """Both parts' measurements.

    Attributes:
      config: the :class:`BeyondConfig` run.
      comparisons: ``{regression task: mdlnb.Comparison}`` (density codes).
      logme: ``{(task, representation): LogME [nats/example]}``.
      feature_dims: ``{(task, representation): D}``.
      calibration_runs: tidy DataFrame, one row per (representation, order):
        ``n``, ``off [nats]``, ``on [nats]``, ``best expert off [nats]``,
        ``best expert on [nats]`` and ``experts shorter`` (of the board).
    """

    config: BeyondConfig
    comparisons: Mapping[str, Any]
    logme: Mapping[tuple[str, str], float]
    feature_dims: Mapping[tuple[str, str], int]
    calibration_runs: Any

    def regression(self):
        """One row per (task, representation), best first: density nats/example and total,
        mean and sd over orders, the paired difference to the best, rank, and LogME
        with its rank (1 = highest evidence)."""
        import pandas as pd

        rows = []
        for task, comp in self.comparisons.items():
            tab = comp.table()
            ev = {e: self.logme[(task, e)] for e in tab["encoder"]}
            order = sorted(ev, key=lambda e: -ev[e])
            for _, t in tab.iterrows():
                e = t["encoder"]
                rows.append(
                    {
                        "task": task,
                        "representation": e,
                        "feature dim": self.feature_dims[(task, e)],
                        "n": comp.n,
                        "orders": int(t["orders"]),
                        "per example [density nats]": t["per example [density nats]"],
                        "per example std [density nats]": t["per example std [density nats]"],
                        "total [nats]": t["total [nats]"],
                        "total std [nats]": t["total std [nats]"],
                        "vs best [nats]": t["vs best [nats]"],
                        "vs best std [nats]": t["vs best std [nats]"],
                        "rank": int(t["rank"]),
                        "orders ranked first": int(t["orders ranked first"]),
                        "LogME [nats/example]": ev[e],
                        "LogME rank": order.index(e) + 1,
                        "readout by data size": t["readout by data size"],
                        "linear or deeper": t["linear or deeper"],
                    }
                )
        return pd.DataFrame(rows)

    def regression_runs(self):
        """Tidy: task, representation, seed, ``total [nats]`` (density code of that order)."""
        import pandas as pd

        frames = []
        for task, comp in self.comparisons.items():
            r = comp.runs[["encoder", "seed", "total [nats]"]].rename(
                columns={"encoder": "representation"}
            )
            r.insert(0, "task", task)
            frames.append(r)
        return pd.concat(frames, ignore_index=True)

    def along_n(self):
        """Tidy: task, representation, n, the cumulative density code after n examples
        divided by n [density nats/example]: ``mean``, ``min``, ``max`` over orders, at
        ≤ ``config.points`` log-spaced n (n = N included)."""
        import pandas as pd

        frames = []
        for task, comp in self.comparisons.items():
            ns = np.unique(np.append(log_spaced(comp.n + 1, self.config.points, start=1), comp.n))
            for e in comp.encoders:
                c = (
                    np.stack(
                        [
                            np.cumsum(np.asarray(comp.per_step_nats[(e, s)], np.float64))
                            for s in comp.seeds
                        ]
                    )[:, ns - 1]
                    / ns
                )
                frames.append(
                    pd.DataFrame(
                        {
                            "task": task,
                            "representation": e,
                            "n": ns,
                            "mean": c.mean(0),
                            "min": c.min(0),
                            "max": c.max(0),
                        }
                    )
                )
        return pd.concat(frames, ignore_index=True)

    def calibration(self):
        """Per representation: the switching code without and with calibration (mean ± sd
        over orders), the paired difference on − off with its 95 % t-interval, in nats
        and bits/example, the same difference for the best single expert, and a verdict
        (``shorter``/``longer`` when the interval excludes 0, else ``no separation``)."""
        import pandas as pd

        rows = []
        for rep, g in self.calibration_runs.groupby("representation", sort=False):
            n = int(g["n"].iloc[0])
            d, h = t_interval(g["on [nats]"] - g["off [nats]"])
            db, hb = t_interval(g["best expert on [nats]"] - g["best expert off [nats]"])
            verdict = "shorter" if d + h < 0 else "longer" if d - h > 0 else "no separation"
            rows.append(
                {
                    "representation": rep,
                    "n": n,
                    "orders": len(g),
                    "off [nats]": g["off [nats]"].mean(),
                    "off std [nats]": g["off [nats]"].std(ddof=1),
                    "on [nats]": g["on [nats]"].mean(),
                    "on std [nats]": g["on [nats]"].std(ddof=1),
                    "on - off [nats]": d,
                    "on - off 95% half-width [nats]": h,
                    "on - off [bits/example]": d / math.log(2) / n,
                    "best expert on - off [nats]": db,
                    "best expert on - off 95% half-width [nats]": hb,
                    "experts shorter": g["experts shorter"].mean(),
                    "experts": int(g["experts"].iloc[0]),
                    "switching code": verdict,
                }
            )
        return pd.DataFrame(rows)

    def tables(self) -> dict[str, Any]:
        """``{name: DataFrame}`` of the paper files (``beyond_<name>``)."""
        return {
            "regression": self.regression(),
            "regression_summary": self.regression_summary(),
            "regression_runs": self.regression_runs(),
            "regression_along_n": self.along_n(),
            "calibration": self.calibration(),
            "calibration_runs": self.calibration_runs,
        }

    def plot_regression(self):
        """Per regression task: cumulative density nats per example along n, mean over
        orders (line) and min–max (band), per representation, log x
        (:func:`mdlnb.studies.beyond._plots.regression`)."""
        return _beyond_plots.regression(self)

    def plot_calibration(self):
        """Per representation: on − off per order (dots) and the mean with its 95 %
        t-interval (bar), for the switching code and for the best single expert."""
        return _beyond_plots.calibration(self)

    def regression_summary(self):
        """:meth:`regression` for reading: rounded ``mean ± sd`` cells, representations
        and units in words (:func:`mdlnb.studies.beyond._plots.summary`); the note under
        it is ``.attrs["note"]``."""
        return _beyond_plots.summary(self)

    def figures(self) -> dict[str, Any]:
        """``{name: Figure}`` of the paper files (``beyond_<name>.png``)."""
        return {
            "regression_codelengths": self.plot_regression(),
            "calibration": self.plot_calibration(),
        }

    def findings(self) -> str:
        """Markdown, computed from the tables: per regression task the MDL order with its
        spread and whether LogME orders the representations alike; per representation
        calibration's paired change with its interval."""
        from scipy import stats

        lines = []
        reg = self.regression()
        for task, g in reg.groupby("task", sort=False):
            g = g.sort_values("rank")
            order = " < ".join(
                f"{r.representation} ({r['per example [density nats]']:.3f} ± "
                f"{r['per example std [density nats]']:.3f})"
                for _, r in g.iterrows()
            )
            tau = stats.kendalltau(g["rank"], g["LogME rank"]).statistic
            same = list(g["representation"]) == list(g.sort_values("LogME rank")["representation"])
            b, s = g.iloc[0], g.iloc[1]
            evidence = ", ".join(
                f"{r.representation} {r['LogME [nats/example]']:+.3f}"
                for _, r in g.sort_values("LogME rank").iterrows()
            )
            unbounded = [
                r.representation
                for _, r in g.iterrows()
                if not np.isfinite(r["LogME [nats/example]"])
            ]
            if unbounded:
                evidence += (
                    f"; unbounded for {', '.join(unbounded)}: its features fit the "
                    "targets exactly, LogME cannot rank it"
                )
            lines.append(
                f"* **{task}** (N = {int(b['n'])}, {int(b['orders'])} orders), density "
                f"nats/example, mean ± sd over orders: {order}. {b['representation']} is "
                f"shortest in {int(b['orders ranked first'])}/{int(b['orders'])} orders, "
                f"{s['vs best [nats]']:.1f} ± {s['vs best std [nats]']:.1f} nats ahead of "
                f"{s['representation']} (paired). LogME's regression evidence "
                + (
                    "orders them the same way"
                    if same
                    else f"orders them differently (Kendall τ = {tau:+.2f})"
                )
                + f" ({evidence} nats/example)."
            )
        cal = self.calibration()
        for _, r in cal.iterrows():
            word = {
                "shorter": "the interval excludes zero: shorter",
                "longer": "the interval excludes zero: longer",
                "no separation": "the interval includes zero",
            }[r["switching code"]]
            lines.append(
                f"* **Calibration, {self.config.calibration_task} {r['representation']}** (N = "
                f"{int(r['n'])}, {int(r['orders'])} orders, `{self.config.calibration_protocol}` "
                f"board): `calibrate=True` changed the switching code by "
                f"{r['on - off [nats]']:+.1f} ± {r['on - off 95% half-width [nats]']:.1f} nats "
                f"(on − off, mean ± 95 % t half-width; {r['on - off [bits/example]']:+.4f} "
                f"bits/example; {word}), the best single expert's by "
                f"{r['best expert on - off [nats]']:+.1f} ± "
                f"{r['best expert on - off 95% half-width [nats]']:.1f} nats; "
                f"{r['experts shorter']:.1f} of {int(r['experts'])} experts shorter on average."
            )
        helps = (cal["switching code"] == "shorter").sum()
        hurts = (cal["switching code"] == "longer").sum()
        lines.append(
            f"* Calibration shortened the switching code significantly on {helps} of "
            f"{len(cal)} representations and lengthened it on {hurts}"
            + (
                ": it helps here."
                if helps and not hurts
                else ": it does not help consistently here."
                if helps or hurts
                else ": no separation from zero here."
            )
        )
        return "\n".join(lines)

    def save(self, paper_dir: Any, prefix: str = "beyond") -> list:
        """The tables (CSV + Markdown) and figures (PNG) as ``<prefix>_<name>``."""
        return save_files(paper_dir, prefix, self.tables(), self.figures())
