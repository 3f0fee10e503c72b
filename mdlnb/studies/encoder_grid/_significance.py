"""Is a ranking of encoders more than noise? The significance tables the notebooks
show beside the rank tables of :mod:`._tables`.

Across tasks, Demšar (2006) as the paper (Sec. 4): Friedman's χ²_F and the
Iman–Davenport F_F (:func:`friedman_table`), and the Nemenyi critical difference
q_α √(k(k+1)/(6N)) with the correct q for k encoders beside the paper's printed
thresholds (:func:`cd_table`; :mod:`mdlnb.research.ranking`). Across data orders, App.
A.7: each encoder's codelength sd over orders against the gap to its
neighbours in the ranking (:func:`permutation_variance`,
:func:`permutation_summary`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from mdlnb.research import ranking
from mdlnb.studies.encoder_grid._tables import GROUP_ORDER, METHODS, _subset, scores, task_order

#: Paper App. A.7: ResNet-50 SUP on Cifar100, 5 permutations, and the encoders
#: ranked immediately above and below it (nats).
PAPER_PERMUTATION = {"mean": 55906.0, "std": 134.0, "above": 50969.0, "below": 60549.0, "orders": 5}


#: Fewest tasks for which the Friedman, Iman–Davenport and Nemenyi statistics are reported.
MIN_TASKS = 3


def friedman_table(
    frame, encoders: Sequence[str], *, methods: Sequence[str] = tuple(METHODS), groups: bool = True
):
    """Friedman χ²_F (k − 1 d.o.f.) and Iman–Davenport F_F with p-values, per
    method, over all tasks and (``groups``) within each task group.

    With fewer than :data:`MIN_TASKS` tasks both are undefined (Demšar 2006: the
    χ² approximation needs N > 10 or so; with N = 2 the Iman–Davenport F is a
    ratio of two rank sums that is large by construction): the row keeps N and
    k, the statistics are NaN and ``note`` says why."""
    scopes = [None] + ([g for g in GROUP_ORDER if g in set(frame["group"])] if groups else [])
    rows = []
    for scope in scopes:
        for m in methods:
            metric, _ = METHODS[m]
            s = scores(frame, metric, encoders=encoders, group=scope)
            if len(s) == 0:
                continue
            if len(s) < MIN_TASKS:
                rows.append(
                    {
                        "tasks": scope or "all",
                        "method": m,
                        "N": len(s),
                        "k": s.shape[1],
                        "chi2_F": np.nan,
                        "p": np.nan,
                        "F_F": np.nan,
                        "p (F_F)": np.nan,
                        "note": f"undefined: {len(s)} tasks (< {MIN_TASKS})",
                    }
                )
                continue
            r = ranking.friedman(s)
            rows.append(
                {
                    "tasks": scope or "all",
                    "method": m,
                    "N": r.n_datasets,
                    "k": r.n_methods,
                    "chi2_F": r.statistic,
                    "p": r.pvalue,
                    "F_F": r.iman_davenport,
                    "p (F_F)": r.iman_davenport_pvalue,
                    "note": "",
                }
            )
    return pd.DataFrame(rows)


def cd_table(frame, encoders: Sequence[str], *, alpha: float = 0.10, paper: str = "objectives"):
    """Nemenyi critical differences for this study's (k encoders, N tasks) over
    all tasks and per group, with the correct q_α; beside them the paper's
    printed threshold and the correct CD for the paper's own (r, N)
    (:func:`mdlnb.research.ranking.cd_thresholds_report`; ``paper`` = ``"objectives"``
    (Table 1a, Table 2) or ``"scaling"`` (Table 1b))."""
    if paper not in ("objectives", "scaling"):
        raise ValueError(f"paper: must be 'objectives' or 'scaling', got {paper!r}")
    ref = ranking.cd_thresholds_report(alpha)
    # rows of cd_thresholds_report: Table 1a (r 6, N 19), Table 1b (12, 19), Table 2 natural
    # (6, 7), specialized (6, 4; printed 2.92) and structured (6, 8; printed 4.13)
    paper_rows = (
        {"all": 0, "natural": 2, "specialized": 3, "structured": 4}
        if paper == "objectives"
        else {"all": 1}
    )
    k = len(encoders)
    rows = []
    for scope in ["all"] + [g for g in GROUP_ORDER if g in set(frame["group"])]:
        n = int(_subset(frame, encoders, group=None if scope == "all" else scope)["task"].nunique())
        q = ranking.nemenyi_q(k, alpha)
        cd = ranking.nemenyi_cd(k, n, alpha)
        note = (
            f"undefined: {n} tasks (< {MIN_TASKS})"
            if n < MIN_TASKS
            else f"undefined: CD beyond the largest possible rank difference k − 1 = {k - 1}"
            if cd > k - 1
            else ""
        )
        row = {
            "tasks": scope,
            "k": k,
            "N": n,
            "alpha": alpha,
            "q": q,
            "CD": np.nan if note else cd,
            "note": note,
        }
        if scope in paper_rows:
            pr = ref.iloc[paper_rows[scope]]
            row.update(
                {
                    "paper r": int(pr["r"]),
                    "paper N": int(pr["N"]),
                    "paper printed": float(pr["paper_cd"]),
                    "paper q (stated)": 3.12,
                    "correct q (paper r)": float(pr["q"]),
                    "correct CD (paper r, N)": float(pr["cd"]),
                }
            )
        rows.append(row)
    return pd.DataFrame(rows)


def permutation_variance(frame, encoders: Sequence[str]):
    """App. A.7 per task: each encoder's codelength mean and sd over data orders
    (nats), and the gap to its neighbours in the ranking by mean codelength;
    ``sd / gap`` < 1 means the order noise is smaller than the difference
    that decides the rank. Paper: 55,906 ± 134 nats, neighbours 50,969 and
    60,549 (sd / gap = 0.027)."""
    f = _subset(frame, encoders)
    f = f[f["metric"] == "codelength [nats]"]
    rows = []
    for task in task_order(f):
        g = f[f["task"] == task].groupby("encoder")["value"].agg(["mean", "std", "count"])
        g = g.sort_values("mean")
        means = g["mean"].to_numpy()
        for i, (enc, r) in enumerate(g.iterrows()):
            above = means[i] - means[i - 1] if i > 0 else np.nan
            below = means[i + 1] - means[i] if i + 1 < len(means) else np.nan
            gap = np.nanmin([above, below]) if len(means) > 1 else np.nan
            rows.append(
                {
                    "task": task,
                    "encoder": enc,
                    "rank": i + 1,
                    "orders": int(r["count"]),
                    "mean [nats]": r["mean"],
                    "sd [nats]": r["std"],
                    "gap above [nats]": above,
                    "gap below [nats]": below,
                    "sd / nearest gap": r["std"] / gap if gap and gap > 0 else np.nan,
                }
            )
    return pd.DataFrame(rows)


def permutation_summary(variance):
    """Median and maximum of ``sd / nearest gap`` and the share of (task, encoder)
    cells where it is below 1, next to the paper's one measurement."""
    r = variance["sd / nearest gap"].dropna()
    p = PAPER_PERMUTATION
    paper_ratio = p["std"] / min(p["mean"] - p["above"], p["below"] - p["mean"])
    return pd.DataFrame(
        [
            {
                "source": "this run",
                "cells": len(r),
                "orders": int(variance["orders"].min()),
                "median sd / gap": float(r.median()),
                "max sd / gap": float(r.max()),
                "share sd < gap": float((r < 1).mean()),
            },
            {
                "source": "paper App. A.7 (ResNet-50 SUP, Cifar100)",
                "cells": 1,
                "orders": p["orders"],
                "median sd / gap": paper_ratio,
                "max sd / gap": paper_ratio,
                "share sd < gap": 1.0,
            },
        ]
    )
