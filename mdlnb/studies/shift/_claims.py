"""The shift study's claims (r1, r2), with rules fixed before the run.

Li, Bornschein & Hutter 2023, arXiv:2302.09579, App. A.7 and Table 11 (with App. A.2,
Fig. 4): on the VTAB tasks whose train and test splits differ in distribution, coding
the original train split instead of the reshuffled one changes the codelength per
example ("colour coded if the codelength changes more than 1e-2"), "however, the
overall rank of the pre-training method doesn't seem to be affected ... the effect of
the shift is similar to all pre-training methods". The paper's effects are computed
from its Tables 10 and 11 (:mod:`._paper`); the units here are the (task, draw)
pairs, independent procedural draws each coded by every encoder:

* (r1) per unit, the mean over encoders of the original split's codelength per example
  (the mean of both halves as the train split, :mod:`._tables`) minus the reshuffled
  split's, nats; t interval over units; the claimed side is the paper's: shorter
  (−0.0275, the mean of Table 11 − Table 10 over the four shifted tasks and six
  encoders; "changes" without a sign would be decided by |Δ|, which noise alone
  makes positive).
* (r2) Kendall τ-b between the encoders' average ranks over the units under the
  original and under the reshuffled split (the paper's statistic: its average-rank
  orders); percentile bootstrap over units; against 0 (unrelated orders), the
  paper's 1 (Tables 10 and 11 give the same order on the four shifted tasks; 0.966
  over all 18).
"""

from __future__ import annotations

import pandas as pd

from mdlnb.research import claims as C
from mdlnb.studies.shift import _paper as P
from mdlnb.studies.shift import _tables as T

_ANCHOR = "Li et al. 2023 App. A.7, Table 11 (and App. A.2, Fig. 4)"
_VERSION = "original (both splits)"


def _units_text(runs: pd.DataFrame) -> str:
    tasks = ", ".join(
        f"{t} shifted in {f}"
        for t, f in runs[["task", "factor"]].drop_duplicates().itertuples(index=False)
    )
    k, s, e = runs["task"].nunique(), runs["seed"].nunique(), runs["encoder"].nunique()
    return (
        f"{k} task{'s' * (k != 1)} ({tasks}) × {s} draw{'s' * (s != 1)}, each coded by {e} encoders"
    )


def claims(runs: pd.DataFrame, *, resamples: int = 2000) -> list:
    """Claims r1 and r2 (module docstring) on the study's ``runs`` frame."""
    u = T.units(runs)
    x = u.loc[u["version"] == _VERSION, "minus reshuffled [nats]"].to_numpy()
    cells = T.differences(runs)
    cells = cells[cells["version"] == _VERSION]
    units = _units_text(runs)
    d = C.t_effect(x, paper_effect=P.difference(), side="below", unit="units")
    r1 = C.Claim.decided(
        "r1",
        "Coding a task's original (shifted) train split instead of a reshuffled one "
        "changes the codelength per example.",
        _ANCHOR,
        f"original − reshuffled {P.difference():+.4f} nats/example, the mean of Table 11 − "
        "Table 10 over the four tasks App. A.2 finds shifted and the six encoders of Table 11 "
        "(shorter on every encoder on 3 of the 4 tasks)",
        "per unit (task, draw), the mean over encoders of the original split's codelength per "
        "example (mean of either half as the train split) minus the reshuffled split's, nats "
        f"({units}); t interval over units",
        d,
        effect="original − reshuffled [nats/example]",
        our_value=f"{d.detail}; |Δ| > 0.01 on {cells['beyond 0.01'].mean():.0%} of the "
        f"{len(cells)} (unit, encoder) cells",
    )
    groups = T.unit_matrices(runs, _VERSION)
    d = C.bootstrap_effect(
        groups, T.rank_tau, paper_effect=P.tau(), unit="units", resamples=resamples
    )
    r2 = C.Claim.decided(
        "r2",
        "The shift leaves the encoders' overall ranking unchanged.",
        _ANCHOR,
        f"Kendall τ {P.tau():.3g} between the average-rank orders of Table 10 and Table 11 "
        f"on the four shifted tasks ({P.TAU_ALL_TASKS} over all 18 tasks)",
        "Kendall τ-b between the encoders' average ranks over the units under the original "
        f"split (mean of either half as the train split) and under the reshuffled split "
        f"({units}); percentile bootstrap over units, against 0 (unrelated orders)",
        d,
        effect="Kendall τ, original vs reshuffled ranking",
    )
    return [r1, r2]
