"""CLID Table 3 on the encoder grid: in-domain accuracy, alone and joined with CLID by the
rank product, as predictors of out-of-domain transfer (claims p4, p5).

Lu et al. 2022 (arXiv:2206.01251) Sec. 3.5, Table 3: 28 ImageNet checkpoints, 7
out-of-domain tasks; per task, Kendall τ between a predictor's ranking of the
checkpoints and their transfer accuracy. ImageNet top-1 alone gives τ 0.71 on average;
the *joint rank product* r_joint = √(r_pred · r_img) of CLID's ranks and ImageNet
accuracy's gives 0.74. Here the checkpoints are the committed encoders (the
pretraining study's artifacts, each at its chosen step), "ImageNet accuracy" is their
linear-probe accuracy on the held-out Fashion-MNIST split (the pretraining data), CL,
TwoNN ID and CLID are the pretraining study's (on the first 2,000 held-out images; CLID
min–max normalised across the encoders compared), and the transfer tasks are the grid's
tasks outside the pretraining domain, scored by their linear-probe accuracy (mean over
data orders). Rules and paper values fixed before any run:

* (p4) *in-domain accuracy predicts transfer*: the mean over out-of-domain tasks of
  τ_b(in-domain accuracy, task accuracy); percentile bootstrap over tasks. Paper
  (Table 3, "Imagenet" column, average): 0.71.
* (p5) *joining CLID improves the prediction*: the mean over tasks of τ_b(−r_joint,
  task accuracy) − τ_b(in-domain accuracy, task accuracy), paired by task; percentile
  bootstrap over tasks. Paper (Table 3, average): 0.74 − 0.71 = 0.03.

Tasks are the units; the encoders are the same on every task, so the interval speaks for
these encoders, not for encoders in general (CLID's checkpoints are the same on every
task too).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mdlnb.baselines import labelfree
from mdlnb.research import claims as C
from mdlnb.research import ranking
from mdlnb.studies.encoder_grid import _tables

#: CLID Table 3, average over its 7 out-of-domain tasks: Kendall τ with transfer accuracy.
TABLE_3_AVG = {"imagenet": 0.71, "clid": 0.74}
#: CLID Table 2 (no labels), average: CLID alone.
TABLE_2_CLID_AVG = 0.70
#: Suffix of the grid's encoder strings for the committed artifacts.
TRAINED = ":trained"


def matched(frame, across):
    """The rows of ``across`` (the pretraining result's :meth:`across_models`: ``encoder``
    as ``objective:arch_size``) whose artifact the grid ran (``<encoder>:trained``), with
    the grid's encoder string as ``grid encoder`` and CLID recomputed across them."""
    need = {"encoder", "probe_accuracy", "cluster_learnability", "twonn_id"}
    if not need <= set(across.columns):
        raise ValueError(f"across: needs columns {sorted(need)}, got {sorted(across.columns)}")
    grid = set(frame["encoder"])
    m = across[(across["encoder"] + TRAINED).isin(grid)].copy()
    m["grid encoder"] = m["encoder"] + TRAINED
    m = m.sort_values("grid encoder").reset_index(drop=True)
    if len(m) >= 1:
        m["clid"] = labelfree.clid(m["cluster_learnability"].to_numpy(), m["twonn_id"].to_numpy())
    return m


def _tau(x, y) -> float:
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return float(ranking.kendall_tau(x, y))


def transfer_table(frame, across, *, in_domain: Sequence[str]):
    """Per out-of-domain task (the grid's tasks not in ``in_domain``): Kendall τ_b across
    the matched encoders (:func:`matched`) between their linear-probe accuracy on the
    task and each predictor: ``in-domain accuracy``, ``CLID``, ``joint`` (−rank product of
    CLID and in-domain accuracy, :func:`mdlnb.research.ranking.rank_product`); ``joint − in-domain``;
    NaN where the task's accuracy ties every encoder or fewer than 3 encoders match (no
    encoder matched: one row per task, ``encoders`` 0, no τ)."""
    import pandas as pd

    m = matched(frame, across)
    encs = list(m["grid encoder"])
    cols = ["task", "group", "encoders", "in-domain accuracy", "CLID", "joint", "joint − in-domain"]
    groups = frame.drop_duplicates("task").set_index("task")["group"]
    tasks = [t for t in _tables.task_order(frame) if t not in set(in_domain)]
    if len(m) < 1:  # no committed encoder in the grid: the tasks, without τ
        return pd.DataFrame(
            [{"task": t, "group": groups[t], "encoders": 0} for t in tasks], columns=cols
        )
    acc = _tables.scores(frame, "linear accuracy", encoders=encs)
    joint = -ranking.rank_product([m["clid"].to_numpy(), m["probe_accuracy"].to_numpy()])
    rows = []
    for task in [t for t in tasks if t in acc.index]:
        y = acc.loc[task, encs].to_numpy(float)
        t_in, t_joint = _tau(m["probe_accuracy"], y), _tau(joint, y)
        rows.append(
            {
                "task": task,
                "group": groups[task],
                "encoders": len(encs),
                "in-domain accuracy": t_in,
                "CLID": _tau(m["clid"], y),
                "joint": t_joint,
                "joint − in-domain": t_joint - t_in,
            }
        )
    return pd.DataFrame(rows, columns=cols)


def transfer_claims(frame, across, *, in_domain: Sequence[str], alpha: float = 0.05) -> list:
    """Claims (p4) and (p5) (module docstring); ``alpha``: 1 − the intervals' level."""
    t = transfer_table(frame, across, in_domain=in_domain)
    k = int(t["encoders"].max()) if len(t) else 0
    level = 1 - alpha
    out = []
    for cid, col, paper in (
        ("p4", "in-domain accuracy", TABLE_3_AVG["imagenet"]),
        ("p5", "joint − in-domain", TABLE_3_AVG["clid"] - TABLE_3_AVG["imagenet"]),
    ):
        v = t[col].dropna().to_numpy(float) if len(t) else np.array([])
        d = C.bootstrap_effect(list(v), np.mean, paper_effect=paper, level=level, unit="tasks")
        dropped = len(t) - len(v)
        beside = (
            f"; CLID alone (CLID Table 2, paper 0.70): mean τ {t['CLID'].mean():.3g}"
            if t["CLID"].notna().any()
            else ""
        )
        note = (
            "; no committed encoder in the grid"
            if k == 0
            else f"; {dropped} task(s) without τ (accuracy tied across encoders) left out"
            if dropped
            else ""
        )
        if cid == "p4":
            out.append(
                C.Claim.decided(
                    cid,
                    "Accuracy in the pretraining domain predicts the ranking of encoders on "
                    "out-of-domain tasks.",
                    "Lu et al. 2022 Sec. 3.5, Table 3",
                    "mean Kendall τ 0.71 between ImageNet top-1 and transfer accuracy over 7 "
                    "out-of-domain tasks, 28 checkpoints (Table 3)",
                    f"per out-of-domain task, Kendall τ_b across {k} committed encoders between "
                    "their held-out Fashion-MNIST probe accuracy and their linear-probe accuracy "
                    "on the task; effect: mean over tasks; percentile bootstrap over tasks",
                    d,
                    effect="τ(in-domain accuracy, transfer accuracy)",
                    our_value=d.detail + note + beside,
                )
            )
        else:
            out.append(
                C.Claim.decided(
                    cid,
                    "Joining CLID to in-domain accuracy by the rank product predicts transfer "
                    "better than in-domain accuracy alone.",
                    "Lu et al. 2022 Sec. 3.5, Table 3",
                    "mean τ 0.74 (joint rank product of CLID and ImageNet top-1) against 0.71 "
                    "(ImageNet top-1 alone) over 7 out-of-domain tasks: +0.03",
                    f"per out-of-domain task, τ_b(−√(r_CLID · r_acc), task accuracy) − τ_b(in-domain "
                    f"accuracy, task accuracy) across {k} committed encoders (CLID min–max "
                    "normalised across them); effect: mean over tasks; percentile bootstrap over "
                    "tasks",
                    d,
                    effect="Δτ(joint − in-domain accuracy)",
                    our_value=d.detail + note,
                )
            )
    return out
