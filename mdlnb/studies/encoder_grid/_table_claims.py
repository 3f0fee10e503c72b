"""Table 1a's pairwise claims (n1–n7) and Table 2's group claims (o1–o4), decided on the
encoder study's per-task MDL ranks.

Li, Bornschein & Hutter 2023 (arXiv:2302.09579) rank r = 6 ImageNet encoders by their
MDL codelength on each of 19 VTAB tasks (1 = shortest code) and compare average ranks
(Sec. 4, Table 1a, Table 2, Fig. 6–7). Their statements are read here as effects on the
paper's own statistic, the difference of average MDL ranks, with the paper's value taken
from its tables before any run (:data:`PAIRS`, :func:`paper_pair_effect`,
:func:`paper_group_effect`):

* (n1–n4) *A outperforms B* (Sec. 4: BYOL beats SUP and SimCLR on ResNet-50, DINO beats
  SUP and MAE on ViT/B16): per task, rank(B) − rank(A); the effect is its mean over tasks
  (the average-rank difference); percentile bootstrap over tasks. Paper: Table 1a's
  average-rank difference (1.89, 1.68, 2.27, 1.90).
* (n5–n7) *A and B do not differ significantly* (SimCLR vs SUP, MAE vs SUP, DINO vs
  BYOL, "slightly better but not significant"): the same statistic against the paper's
  small difference (0.21, 0.37, 0.64); the claim is on its *size* — "larger" contradicts
  it, "consistent" or "smaller" supports it.
* (o1) *self-supervised encoders beat supervised ones on structured tasks* (Table 2,
  Fig. 7, App. A.8): per structured task, mean rank of the supervised encoders minus
  mean rank of the self-supervised ones (SimCLR, BYOL, DINO, MAE); t interval over the
  group's tasks. Paper (Table 2): 5.25 − 2.63 = 2.63.
* (o2) *…while supervised encoders do decently on natural tasks*: the same per-task
  difference, structured tasks minus natural tasks; Welch interval. Paper: 2.63 −
  (−0.21) = 2.83.
* (o3) *MAE suffers on natural tasks compared to the other methods*: per natural task,
  rank(MAE) minus the mean rank of the other objectives of the table (supervised,
  SimCLR, BYOL, DINO); t interval. Paper: 5.71 − 3.06 = 2.65.
* (o4) *MAE generalises well with dataset shift*: that per-task difference on natural
  tasks minus on the shifted ones (specialized and structured pooled); Welch interval.
  Paper (groups pooled by their 4 and 8 tasks): 2.65 − (−1.00) = 3.65.

A rank difference grows with the number of encoders ranked (its largest value is k − 1),
so the paper's values (r = 6) are restated on this run's rank range: × (k − 1)/(r − 1).
The paper pairs encoders within a backbone (ResNet-50 or ViT/B16); a run whose encoders
share one backbone pairs the same objectives on it. An objective missing from the
encoders, or present more than once with none on the paper's backbone, leaves its claims
without an interval (direction and size undetermined), and the claim says why.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mdlnb.research import claims as C
from mdlnb.research import ranking
from mdlnb.studies.encoder_grid import _paper, _significance, _tables

#: Encoders of Table 1a and Table 2.
PAPER_R = 6
#: Tasks per VTAB group in Table 2 (natural, specialized, structured).
PAPER_GROUP_TASKS = {"natural": 7, "specialized": 4, "structured": 8}
#: (objective, the paper's backbone) → the row of :data:`._paper.TABLE_1A`.
PAPER_ROWS = {
    ("dino", "vit"): "ViT/B16 DINO",
    ("byol", "resnet"): "ResNet-50 BYOL",
    ("mae", "vit"): "ViT/B16 MAE",
    ("supervised", "vit"): "ViT/B16 SUP",
    ("simclr", "resnet"): "ResNet-50 SimCLR",
    ("supervised", "resnet"): "ResNet-50 SUP",
}
#: Table 1a's pairwise statements (Sec. 4): id → (better, worse, the paper's verdict).
PAIRS = {
    "n1": (("byol", "resnet"), ("supervised", "resnet"), "outperforms"),
    "n2": (("byol", "resnet"), ("simclr", "resnet"), "outperforms"),
    "n3": (("dino", "vit"), ("supervised", "vit"), "outperforms"),
    "n4": (("dino", "vit"), ("mae", "vit"), "outperforms"),
    "n5": (("simclr", "resnet"), ("supervised", "resnet"), "no significant difference"),
    "n6": (("mae", "vit"), ("supervised", "vit"), "no significant difference"),
    "n7": (("dino", "vit"), ("byol", "resnet"), "slightly better, not significant"),
}
SELF_SUPERVISED = ("simclr", "byol", "dino", "mae")
SUPERVISED = ("supervised",)
#: The objectives of the table other than MAE (o3, o4).
NOT_MAE = ("supervised", "simclr", "byol", "dino")
_NAMES = {
    "supervised": "supervised",
    "simclr": "SimCLR",
    "byol": "BYOL",
    "dino": "DINO",
    "mae": "MAE",
}


def paper_pair_effect(pair: str) -> float:
    """Table 1a: MDL average rank of the pair's worse encoder minus its better's (r = 6)."""
    better, worse, _ = PAIRS[pair]
    return _paper.TABLE_1A[PAPER_ROWS[worse]][2] - _paper.TABLE_1A[PAPER_ROWS[better]][2]


def _paper_mean(group: str, objectives: Sequence[str]) -> float:
    col = list(PAPER_GROUP_TASKS).index(group)
    return float(
        np.mean(
            [_paper.TABLE_2[row][col] for (obj, _), row in PAPER_ROWS.items() if obj in objectives]
        )
    )


def paper_contrast(kind: str, group: str) -> float:
    """Table 2's per-group contrast (r = 6): ``"sup"``: mean rank of the supervised
    encoders minus that of the self-supervised ones; ``"mae"``: MAE's rank minus the mean
    of the other five; ``group`` a VTAB group or ``"shifted"`` (specialized and
    structured, weighted by their task counts)."""
    if group == "shifted":
        n = {g: PAPER_GROUP_TASKS[g] for g in ("specialized", "structured")}
        return sum(paper_contrast(kind, g) * k for g, k in n.items()) / sum(n.values())
    if kind == "sup":
        return _paper_mean(group, SUPERVISED) - _paper_mean(group, SELF_SUPERVISED)
    if kind == "mae":
        return _paper_mean(group, ("mae",)) - _paper_mean(group, NOT_MAE)
    raise ValueError(f"kind: must be 'sup' or 'mae', got {kind!r}")


def paper_group_effect(claim: str) -> float:
    """(o1)–(o4)'s paper value on Table 2's rank scale (r = 6)."""
    effects = {
        "o1": lambda: paper_contrast("sup", "structured"),
        "o2": lambda: paper_contrast("sup", "structured") - paper_contrast("sup", "natural"),
        "o3": lambda: paper_contrast("mae", "natural"),
        "o4": lambda: paper_contrast("mae", "natural") - paper_contrast("mae", "shifted"),
    }
    if claim not in effects:
        raise ValueError(f"claim: must be one of {sorted(effects)}, got {claim!r}")
    return float(effects[claim]())


def rank_scale(k: int) -> float:
    """Factor restating a rank difference among the paper's r = 6 encoders on k encoders'
    rank range: (k − 1)/(r − 1)."""
    if k < 2:
        raise ValueError(f"k: need at least 2 encoders to rank, got {k}")
    return (k - 1) / (PAPER_R - 1)


def task_ranks(frame, encoders: Sequence[str]):
    """tasks × encoders: each encoder's MDL rank on each task (1 = shortest code, ties
    averaged), over ``encoders`` only, tasks in group order."""
    rf = _tables.rank_frame(frame, encoders=encoders, methods=("mdl",))
    w = rf.pivot_table(index="task", columns="encoder", values="rank")
    return w.loc[[t for t in _tables.task_order(frame) if t in w.index], list(encoders)]


def resolve(
    frame, encoders: Sequence[str], objective: str, backbone: str | None = None
) -> str | None:
    """The one encoder of ``encoders`` with ``objective``: the only one, else the only one
    on ``backbone`` (an architecture); None when there is none or several."""
    info = frame.drop_duplicates("encoder").set_index("encoder")
    hits = [e for e in encoders if info.loc[e, "objective"] == objective]
    if len(hits) > 1 and backbone is not None:
        hits = [e for e in hits if info.loc[e, "architecture"] == backbone]
    return hits[0] if len(hits) == 1 else None


def members(frame, encoders: Sequence[str], objectives: Sequence[str]) -> list[str]:
    """The encoders of ``encoders`` whose objective is one of ``objectives``."""
    info = frame.drop_duplicates("encoder").set_index("encoder")["objective"]
    return [e for e in encoders if info.loc[e] in objectives]


def pairwise_table(frame, encoders: Sequence[str], *, alpha: float = 0.10):
    """Table 1a's pairs on this run: per pair the encoders, the average-rank difference
    (worse − better; > 0: the paper's better encoder ranks better here too), the tasks
    won, tied and lost by the paper's better encoder, the Nemenyi critical difference at
    ``alpha`` for (k, N) and whether the difference reaches it, beside the paper's
    difference (r = 6) and restated for k."""
    import pandas as pd

    r = task_ranks(frame, encoders)
    k, n = len(encoders), len(r)
    cd = ranking.nemenyi_cd(k, n, alpha) if n >= _significance.MIN_TASKS else float("nan")
    rows = []
    for pid, (better, worse, verdict) in PAIRS.items():
        a, b = (resolve(frame, encoders, *side) for side in (better, worse))
        d = (r[b] - r[a]) if a and b else pd.Series(dtype=float)
        rows.append(
            {
                "id": pid,
                "paper better": PAPER_ROWS[better],
                "paper worse": PAPER_ROWS[worse],
                "paper verdict": verdict,
                "better": a or "—",
                "worse": b or "—",
                "rank difference": float(d.mean()) if len(d) else float("nan"),
                "wins": int((d > 0).sum()),
                "ties": int((d == 0).sum()),
                "losses": int((d < 0).sum()),
                "tasks": n,
                "k": k,
                "alpha": alpha,
                "CD": cd,
                "beyond CD": bool(len(d) and abs(d.mean()) >= cd),
                "paper difference": paper_pair_effect(pid),
                "paper difference at k": paper_pair_effect(pid) * rank_scale(k),
            }
        )
    return pd.DataFrame(rows)


def group_contrasts(frame, encoders: Sequence[str]):
    """Per task, (o1)–(o4)'s contrasts: ``sup − ssl`` (mean rank of the supervised minus
    the self-supervised encoders) and ``mae − others`` (MAE's rank minus the mean of the
    other objectives of the table), NaN where a side has no encoder; with ``group``."""
    r = task_ranks(frame, encoders)
    groups = frame.drop_duplicates("task").set_index("task")["group"]
    sup, ssl = members(frame, encoders, SUPERVISED), members(frame, encoders, SELF_SUPERVISED)
    mae, rest = members(frame, encoders, ("mae",)), members(frame, encoders, NOT_MAE)
    nan = np.full(len(r), np.nan)

    def contrast(a, b):
        return r[a].mean(axis=1).to_numpy() - r[b].mean(axis=1).to_numpy() if a and b else nan

    return r.index.to_frame(index=False).assign(
        group=lambda d: d["task"].map(groups),
        **{"sup − ssl": contrast(sup, ssl), "mae − others": contrast(mae, rest)},
    )


def _pair_claim(pid: str, frame, encoders: Sequence[str], ranks, cd: float, level: float):
    better, worse, verdict = PAIRS[pid]
    k = len(encoders)
    paper, scale = paper_pair_effect(pid), rank_scale(k)
    a, b = (resolve(frame, encoders, *side) for side in (better, worse))
    names = [f"{_NAMES[s[0]]}" for s in (better, worse)]
    unit = "tasks"
    if a and b:
        diff = (ranks[b] - ranks[a]).to_numpy(float)
        d = C.bootstrap_effect(
            list(diff), np.mean, paper_effect=paper * scale, level=level, unit=unit
        )
        extra = (
            f"; {a} ranks ahead of {b} on {int((diff > 0).sum())} of {len(diff)} tasks, "
            f"behind on {int((diff < 0).sum())}; Nemenyi CD (α = 0.10, k = {k}, "
            f"N = {len(diff)}) {cd:.3f}: the difference "
            f"{'reaches' if abs(diff.mean()) >= cd else 'does not reach'} it"
        )
    else:
        d = C.effect_decision(
            float("nan"), float("nan"), float("nan"), paper_effect=paper * scale, n=0, unit=unit
        )
        extra = f"; no single encoder of objective {names[0] if not a else names[1]} here"
    significant = verdict == "outperforms"
    statement = (
        f"{names[0]} features outperform {names[1]} features under MDL."
        if significant
        else f"{names[0]} and {names[1]} features differ little under MDL "
        f"({names[0]} {verdict.split(',')[0] if ',' in verdict else 'ahead'}, "
        "not significantly)."
    )
    return C.Claim.decided(
        pid,
        statement,
        "Li et al. 2023 Sec. 4, Table 1a, Fig. 6",
        f"{PAPER_ROWS[worse]} {_paper.TABLE_1A[PAPER_ROWS[worse]][2]:.2f} − {PAPER_ROWS[better]} "
        f"{_paper.TABLE_1A[PAPER_ROWS[better]][2]:.2f} = {paper:.2f} average MDL ranks "
        f"(r = 6, N = 19; {verdict}); × (k − 1)/5 on this run's {k} encoders: "
        f"{paper * scale:.2f}",
        f"per task, MDL rank of {names[1]} minus that of {names[0]} among {k} encoders; "
        "effect: its mean over tasks (the average-rank difference); percentile bootstrap "
        "over tasks (2,000 resamples)"
        + (
            ""
            if significant
            else "; the paper's claim is on the size: larger than its value contradicts it"
        ),
        d,
        effect=f"rank({names[1]}) − rank({names[0]}), MDL [ranks]",
        our_value=d.detail + extra,
    )


def pairwise_claims(frame, encoders: Sequence[str], *, alpha: float = 0.05) -> list:
    """Claims (n1)–(n7) (module docstring) on ``encoders``; ``alpha``: 1 − the level."""
    ranks = task_ranks(frame, encoders)
    n = len(ranks)
    cd = ranking.nemenyi_cd(len(encoders), n, 0.10) if n >= 1 else float("nan")
    return [_pair_claim(pid, frame, encoders, ranks, cd, 1 - alpha) for pid in PAIRS]


#: (o1)–(o4): id → (contrast column, groups tested, groups against (None: one-sample),
#: statement, what the paper's value is made of).
GROUP_CLAIMS = {
    "o1": (
        "sup − ssl",
        ("structured",),
        None,
        "Self-supervised encoders rank better than supervised ones on structured tasks.",
        "structured: supervised {a:.2f} − self-supervised {b:.2f}",
    ),
    "o2": (
        "sup − ssl",
        ("structured",),
        ("natural",),
        "Supervised encoders lose to self-supervised ones on structured tasks but do "
        "decently on natural tasks: the gap is larger on structured tasks.",
        "structured {a:.2f} − natural {b:.2f}",
    ),
    "o3": (
        "mae − others",
        ("natural",),
        None,
        "MAE ranks worse than the other objectives on natural tasks.",
        "natural: MAE {a:.2f} − the other five {b:.2f}",
    ),
    "o4": (
        "mae − others",
        ("natural",),
        ("specialized", "structured"),
        "MAE generalises with dataset shift: its rank against the other objectives is "
        "better on shifted (specialized, structured) tasks than on natural ones.",
        "natural {a:.2f} − shifted (4 specialized + 8 structured tasks) {b:.2f}",
    ),
}


#: The forest plot's row labels of (o1)–(o4).
EFFECT_LABELS = {
    "o1": "rank(supervised) − rank(self-supervised), structured tasks [MDL ranks]",
    "o2": "rank(supervised) − rank(self-supervised), structured − natural [MDL ranks]",
    "o3": "rank(MAE) − rank(other objectives), natural tasks [MDL ranks]",
    "o4": "rank(MAE) − rank(other objectives), natural − shifted [MDL ranks]",
}


def _paper_parts(cid: str) -> tuple[float, float]:
    if cid == "o1":
        return _paper_mean("structured", SUPERVISED), _paper_mean("structured", SELF_SUPERVISED)
    if cid == "o2":
        return paper_contrast("sup", "structured"), paper_contrast("sup", "natural")
    if cid == "o3":
        return _paper_mean("natural", ("mae",)), _paper_mean("natural", NOT_MAE)
    return paper_contrast("mae", "natural"), paper_contrast("mae", "shifted")


def _group_claim(cid: str, contrasts, k: int, level: float):
    col, tested, against, statement, parts = GROUP_CLAIMS[cid]
    paper = paper_group_effect(cid) * rank_scale(k)
    x = contrasts.loc[contrasts["group"].isin(tested), col].to_numpy(float)
    y = contrasts.loc[contrasts["group"].isin(against), col].to_numpy(float) if against else None
    unit = "tasks"
    missing = np.isnan(x).any() or (y is not None and np.isnan(y).any())
    if missing or x.size == 0:
        why = (
            "an objective of the contrast has no encoder here"
            if missing
            else f"no {'/'.join(tested)} task"
        )
        d = C.effect_decision(
            float("nan"), float("nan"), float("nan"), paper_effect=paper, n=0, unit=unit
        )._replace(detail=f"{why}: no interval")
    elif y is None:
        d = C.t_effect(x, paper_effect=paper, level=level, unit=unit)
    else:
        d = C.welch_effect(x, y, paper_effect=paper, level=level, unit=unit)
    side = (
        "per task, "
        + (
            "mean MDL rank of the supervised encoders minus that of the "
            "self-supervised ones (SimCLR, BYOL, DINO, MAE)"
            if col == "sup − ssl"
            else "MDL rank of MAE minus the mean of the other objectives of "
            "the table (supervised, SimCLR, BYOL, DINO)"
        )
        + f" among {k} encoders"
    )
    test = (
        f"; mean over the {'/'.join(tested)} tasks, t interval"
        if against is None
        else f"; {'/'.join(tested)} tasks minus {'/'.join(against)} tasks, Welch interval"
    )
    a, b = _paper_parts(cid)
    return C.Claim.decided(
        cid,
        statement,
        "Li et al. 2023 Sec. 4, Table 2, Fig. 7, App. A.8",
        f"Table 2 (r = 6; natural 7, specialized 4, structured 8 tasks): "
        f"{parts.format(a=a, b=b)} = {paper_group_effect(cid):.2f} average ranks; "
        f"× (k − 1)/5 on this run's {k} encoders: {paper:.2f}",
        side + test,
        d,
        effect=EFFECT_LABELS[cid],
    )


def group_claims(frame, encoders: Sequence[str], *, alpha: float = 0.05) -> list:
    """Claims (o1)–(o4) (module docstring) on ``encoders``; ``alpha``: 1 − the level."""
    contrasts = group_contrasts(frame, encoders)
    return [_group_claim(cid, contrasts, len(encoders), 1 - alpha) for cid in GROUP_CLAIMS]


def table_claims(frame, encoders: Sequence[str], *, alpha: float = 0.05) -> list:
    """(n1)–(n7) and (o1)–(o4) on ``encoders`` (the study's frame)."""
    return pairwise_claims(frame, encoders, alpha=alpha) + group_claims(
        frame, encoders, alpha=alpha
    )
