"""What a :class:`mdlnb.Report` shows: its one-row summary, its printout, its HTML,
and the table of codelengths of its loss matrix under several codes.

Functions of a report (read through its public attributes only), so the report
module keeps the numbers and this one the words. Codelengths are in nats
unless a column or line names bits.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from mdlnb import switching
from mdlnb.api import preference
from mdlnb.core._units import LN2
from mdlnb.infra import _warnings
from mdlnb.switching.strategies import strategy_label


def codelength_table(report: Any, strategies: Sequence[Any] | None = None) -> pd.DataFrame:
    """:meth:`mdlnb.Report.codelength_table`: one row per code (the switching
    strategies, default six; the best single expert; the uniform code)."""
    if strategies is None:
        strategies = [
            switching.BayesianMixture(),
            switching.ElementwiseMixture(),
            switching.FixedShare(m=2.0),
            switching.FixedShare(m=11.0),
            switching.SwitchDistribution(),
            switching.RunLength(),
        ]
    runs = [report.with_strategy(st) for st in strategies]
    codes = [(strategy_label(r.strategy), r.total_nats) for r in runs]
    codes += [
        (f"best single expert ({report.best_expert})", report.best_expert_nats),
        (
            "untrained readout (prefix Gaussian)"
            if report.kind == "regression"
            else "uniform (N log C)",
            report.uniform_nats,
        ),
    ]
    how = [how_it_codes(r.strategy, len(report.expert_names)) for r in runs] + [
        "the one expert with the shortest code, picked after seeing all the data: no code "
        "pays for that choice, so it is a yardstick, not a code",
        "the targets' own Gaussian, features unused"
        if report.kind == "regression"
        else "log C nats per example: what knowing nothing costs",
    ]
    if report.kind == "regression":  # density codes: nats only, the caveat in the column name
        return pd.DataFrame(
            {
                "code": [c for c, _ in codes],
                "total [density nats]": [v for _, v in codes],
                "per example [density nats]": [v / report.n for _, v in codes],
                "vs best expert [nats]": [v - report.best_expert_nats for _, v in codes],
                "how it codes": how,
            }
        )
    return pd.DataFrame(
        {
            "code": [c for c, _ in codes],
            "total [nats]": [v for _, v in codes],
            "total [bits]": [v / LN2 for _, v in codes],
            "per example [bits]": [v / LN2 / report.n for _, v in codes],
            "vs best expert [nats]": [v - report.best_expert_nats for _, v in codes],
            "how it codes": how,
        }
    )


def how_it_codes(strategy: Any, k: int) -> str:
    """One sentence on how a switching strategy codes the stream with K = ``k`` experts
    (paper App. A.6), for a table's reader."""
    name = type(strategy).__name__
    if name == "BayesianMixture":
        return (
            f"bets on one expert for the whole stream and learns which: at most "
            f"log K = {np.log(k):.1f} nats above the best expert, but slow to follow a "
            "better expert that only becomes better later"
        )
    if name == "ElementwiseMixture":
        return (
            f"codes every example with the plain average of the K = {k} experts' "
            "predictions; its weights never learn which expert is good, so the poor "
            "ones dilute every prediction, and its excess over the best expert grows "
            "with N"
        )
    if name == "FixedShare":
        m = getattr(strategy, "m", None)
        if m is not None:
            return (
                f"a Bayesian mixture that may move to another expert, about m − 1 = "
                f"{m - 1:g} time{'s' if m != 2 else ''} over the stream (rate (m − 1)/t)"
            )
        return "a Bayesian mixture that moves to another expert at a constant rate α"
    if name == "SwitchDistribution":
        return (
            "switches expert at times drawn from a heavy-tailed prior (Koolen & de "
            "Rooij 2008): few switches, at any n"
        )
    if name == "RunLength":
        return (
            "switches expert after runs whose lengths follow a prior: a switch costs "
            "less the longer the current run"
        )
    return name


def preference_text(report: Any) -> str:
    """The printout's readout line: the preferred readout per decade of examples seen
    (one order) and the whole-run average."""
    if not report.trained:
        return "none: no readout trained"
    ro, mass = preference.whole_run_preference(report)
    bins = report.readout_preference(per_decade=1).table
    by_size = " | ".join(
        f"[{r.n_from:,},{r.n_to:,}) {r.readout} {r.mass:.2f}" for r in bins.itertuples(index=False)
    )
    return (
        f"{by_size}  (mean posterior by examples seen; one order, stability across "
        f"orders unchecked: mdlnb.readout_preference([reports of several seeds]); "
        f"whole-run average {ro} {mass:.2f})"
    )


def summary(report: Any) -> pd.DataFrame:
    """:meth:`mdlnb.Report.summary`: one row, units in the column names."""
    if report.trained:
        ro, mass = preference.whole_run_preference(report)
    else:
        ro, mass = "none (no readout trained)", float("nan")
    if report.kind == "regression":  # density codelengths: per example, nats, the caveat
        return pd.DataFrame(
            [
                {
                    "task": report.task_name,
                    "kind": "regression",
                    "N": report.n,
                    "P": int(report.target.get("dims", 0)),
                    "K": len(report.expert_names),
                    "strategy": strategy_label(report.strategy),
                    "total [density nats]": report.total_nats,
                    "per example [density nats]": report.nats_per_example,
                    "untrained readout [density nats]": report.uniform_nats,
                    "best expert": report.best_expert,
                    "best expert [density nats]": report.best_expert_nats,
                    "regret vs best expert [nats]": report.regret_nats,
                    "regret bound [nats]": report.regret_bound_nats,
                    "whole-run readout (one order)": ro,
                    "whole-run readout mass": mass,
                    "warnings": len(report.warnings),
                    "caveat": "up to -log(delta) nats per example and output (target quantisation)",
                }
            ]
        )
    return pd.DataFrame(
        [
            {
                "task": report.task_name,
                "N": report.n,
                "C": report.num_classes,
                "K": len(report.expert_names),
                "strategy": strategy_label(report.strategy),
                "total [nats]": report.total_nats,
                "total [bits]": report.total_bits,
                "per example [nats]": report.nats_per_example,
                "per example [bits]": report.bits_per_example,
                "uniform [nats]": report.uniform_nats,
                "best expert": report.best_expert,
                "best expert [nats]": report.best_expert_nats,
                "regret vs best expert [nats]": report.regret_nats,
                "regret bound [nats]": report.regret_bound_nats,
                "whole-run readout (one order)": ro,
                "whole-run readout mass": mass,
                "warnings": len(report.warnings),
            }
        ]
    )


def text(report: Any) -> str:
    """``str(report)``: the score first, then what to compare it with, the readout,
    pruning and the warnings. A regression report: :func:`text_regression`."""
    r = report
    if r.kind == "regression":
        return text_regression(r)
    lines = [
        f"MDL report: task {r.task_name!r}, N={r.n}, C={r.num_classes}, "
        f"K={len(r.expert_names)} experts, {strategy_label(r.strategy)}",
        f"  switching code : {r.total_nats:,.1f} nats = {r.total_bits:,.1f} bits "
        f"({r.bits_per_example:.4f} bits/example)  <- the score: rank encoders by this",
        f"  best expert    : {r.best_expert_nats:,.1f} nats ({r.best_expert}; picked in "
        "hindsight, for comparison)",
        f"  regret vs best : {r.regret_nats:+,.1f} nats (guaranteed <= "
        f"{r.regret_bound_nats:+,.1f}: the prior's cost)",
        f"  prior's cost   : {r.prior_cost_line()}",
        f"  uniform code   : {r.uniform_nats:,.1f} nats",
        f"  readout        : {preference_text(r)}",
    ]
    if r.prune:
        p = r.prune
        lines.append(
            f"  pruned board   : {p['num_pruned']} of {len(r.expert_names)} experts "
            f"pruned (posterior < {p['threshold']:g} for {p['window']:,} examples); "
            f"{p['expert_updates']:,} of {p['expert_updates_unpruned']:,} "
            f"expert-updates ({p['updates_ratio']:.1f}x fewer)"
        )
    lines += [f"  warning        : {w}" for w in r.warnings]
    _warnings.printed(r.warnings)  # shown here: not again at the end of the cell
    return "\n".join(lines)


def text_regression(report: Any) -> str:
    """``str(report)`` of a regression report: density codelengths in nats, the
    untrained readout's code, and the units' caveat (the targets' quantisation)."""
    r = report
    p = int(r.target.get("dims", 0))
    lines = [
        f"MDL report (regression, density codelengths): task {r.task_name!r}, N={r.n}, "
        f"P={p} targets, K={len(r.expert_names)} experts, {strategy_label(r.strategy)}",
        f"  switching code : {r.total_nats:,.1f} nats ({r.nats_per_example:.4f} "
        "nats/example)  <- the score: rank representations of these targets by this",
        f"  best expert    : {r.best_expert_nats:,.1f} nats ({r.best_expert}; picked in "
        "hindsight, for comparison)",
        f"  regret vs best : {r.regret_nats:+,.1f} nats (guaranteed <= "
        f"{r.regret_bound_nats:+,.1f}: the prior's cost)",
        f"  untrained code : {r.uniform_nats:,.1f} nats (prefix Gaussian, features unused)",
        f"  readout        : {preference_text(r)}",
        "  units          : -log p(y), a density: a codelength only up to the targets' "
        "quantisation, -log(delta) nats per example and output; not comparable with "
        "classification codelengths",
    ]
    lines += [f"  warning        : {w}" for w in r.warnings]
    _warnings.printed(r.warnings)
    return "\n".join(lines)


def html_text(report: Any) -> str:
    """The notebook's rich display: a heading and the summary table."""
    head = html.escape(f"MDL report: {report.task_name} ({strategy_label(report.strategy)})")
    return f"<div><b>{head}</b>{summary(report).to_html(index=False, float_format='%.4g')}</div>"
