"""The claims (h) (PACTran Table 1) and (i) (CLID Tables 1–2) on the study's τ.

A claim "metric A ranks checkpoints better than metric B" is decided on the
**paired** difference of their Kendall τ against the ground truth: on every
subsample (task, N/K, repeat) both τ are computed over the same encoders —
those where both metrics are finite, so LEEP (which needs a source
classifier) is compared with N-LEEP or PT-Gauss over the encoders that have
one — and d = τ_A − τ_B. The mean of d over tasks gets the study's own 95 %
interval (:func:`mean_over_tasks`: subsample noise, tasks fixed), and the
two-part verdict (:func:`mdlnb.claims.effect_decision`: direction against 0,
size against the paper's difference) is decided at the smallest N/K; the other
N/K are reported beside. A task whose ground truth ties across all the
eligible encoders gives no τ and is left out, and the claim names it.

The ground truth here is the accuracy of probes on frozen features (the
study's ``truth``), not fine-tuning accuracy as in PACTran: the comparison
with the paper's numbers carries that difference. A metric the run did not
compute, or τ over fewer than :data:`MIN_ENCODERS` encoders (over two, τ = ±1
is one pair's order and its spread over subsamples is no evidence), makes
its claim inconclusive.

* (h1–h4) PT-Gauss (PACTran-Gaussian with the paper's fixed β = 10N,
  σ0² = 100/D) and N-LEEP each beat LogME and LEEP at every N/K
  (PACTran Table 1's "Average" column: the paper's N/K ∈ {2, 5, 10} are all
  "small").
* (i1) CLID's τ with accuracy is positive; (i2, i3) CLID beats its parts,
  TwoNN ID and cluster learnability (CLID Table 1: τ 0.75 vs 0.09 and 0.44).
  Decided at the run's largest N/K only: the CLID paper measures on whole
  datasets, and the largest subsample is the closest to that (the other N/K
  are listed in the value).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mdlnb.studies.transferability._kendall import kendall_per_repeat, mean_over_tasks, tied_truth

#: Fewest encoders a τ may be over to decide a claim: over 2, τ = ±1 is one pair's order.
MIN_ENCODERS = 3
#: PACTran Table 1, "Average" column (NeuCRaB on VTAB): N/K → metric → Kendall τ.
PACTRAN_TABLE_1 = {
    2: {"leep": 0.083, "nleep": 0.401, "logme": 0.149, "pactran_gaussian": 0.654},
    5: {"leep": 0.109, "nleep": 0.476, "logme": 0.196, "pactran_gaussian": 0.673},
    10: {"leep": 0.134, "nleep": 0.497, "logme": 0.233, "pactran_gaussian": 0.641},
}
#: CLID Table 1 (Kendall τ with ImageNet top-1) and Table 2's "Avg" (7 transfer tasks).
CLID_TABLE_1 = {"clid": 0.75, "cl": 0.44, "twonn_id": 0.09}
CLID_TABLE_2_AVG = 0.70
_NAMES = {
    "leep": "LEEP",
    "nleep": "N-LEEP",
    "logme": "LogME",
    "pactran_gaussian": "PT-Gauss",
    "clid": "CLID",
    "cl": "CL",
    "twonn_id": "TwoNN ID",
}


def paired_tau(scores, truth, a: str, b: str, *, readout: str = "best"):
    """τ of metrics ``a`` and ``b`` against the ``readout`` ground truth on every
    (task, ratio, repeat), both over the encoders where both are finite.
    Columns ``task``, ``ratio``, ``repeat``, ``tau_a``, ``tau_b``, ``diff``
    (τ_a − τ_b), ``encoders``; empty if either metric is absent."""
    import pandas as pd

    cols = ["task", "ratio", "repeat", "tau_a", "tau_b", "diff", "encoders"]
    keys = ["encoder", "task", "ratio", "repeat"]
    s = scores[scores["metric"].isin([a, b])]
    if a == b or not {a, b} <= set(s["metric"]):
        return pd.DataFrame(columns=cols)
    fin = s.assign(ok=np.isfinite(s["value"].to_numpy(float)))
    both = fin.groupby(keys)["ok"].agg(["sum", "size"])
    keep = both[(both["sum"] == 2) & (both["size"] == 2)].index
    s = s.set_index(keys).loc[lambda d: d.index.isin(keep)].reset_index()
    ta = kendall_per_repeat(s[s["metric"] == a], truth, readout=readout)
    tb = kendall_per_repeat(s[s["metric"] == b], truth, readout=readout)
    m = ta.merge(tb, on=["task", "ratio", "repeat"], suffixes=("_a", "_b"))
    out = pd.DataFrame(
        {
            "task": m["task"],
            "ratio": m["ratio"],
            "repeat": m["repeat"],
            "tau_a": m["tau_a"],
            "tau_b": m["tau_b"],
            "diff": m["tau_a"] - m["tau_b"],
            "encoders": m["encoders_a"],
        }
    )
    return out[cols].reset_index(drop=True)


def _sd(x) -> float:
    return float(np.std(x, ddof=1)) if len(x) > 1 else math.nan


def mean_difference(paired, column: str = "diff"):
    """Per ratio: mean over tasks of the per-task mean of ``column`` over repeats,
    and the half-width ``ci`` of its 95 % interval (:func:`mean_over_tasks`)."""
    import pandas as pd

    if paired.empty:
        return pd.DataFrame(columns=["ratio", "tau", "ci", "tasks", "encoders"])
    per_task = (
        paired.groupby(["task", "ratio"], sort=True)
        .agg(
            tau=(column, "mean"),
            tau_std=(column, _sd),
            repeats=(column, "size"),
            encoders=("encoders", "min"),
        )
        .reset_index()
        .assign(metric=column, nonfinite=0)
    )
    return mean_over_tasks(per_task)[["ratio", "tau", "ci", "tasks", "encoders"]]


def _decide(paired, ratios, effects) -> Any:
    """The two-part verdict at the first of ``ratios`` (the other ratios' numbers in its
    detail); ``effects``: the paper's τ difference per ratio (A − B > 0)."""
    from mdlnb import claims as C

    md = mean_difference(paired).set_index("ratio")
    first, parts, decision = ratios[0], [], None
    for r in ratios:
        if r not in md.index:
            parts.append(f"N/K={r}: no τ")
            continue
        row = md.loc[r]
        if int(row["encoders"]) < MIN_ENCODERS:
            parts.append(f"N/K={r}: τ over {int(row['encoders'])} encoders (< {MIN_ENCODERS})")
            continue
        ci, tau = float(row["ci"]), float(row["tau"])
        reps = int(paired[paired["ratio"] == r].groupby("task").size().min())
        d = C.effect_decision(
            tau,
            tau - ci,
            tau + ci,
            paper_effect=effects[r],
            n=reps,
            unit="repeats per task",
            label="95% interval",
        )
        parts.append(
            f"N/K={r}: {d.detail} ({int(row['tasks'])} tasks, "
            f"{int(row['encoders'])} encoders) → {d.direction}, {d.size}"
        )
        if r == first:
            decision = d
    if decision is None:
        decision = C.effect_decision(
            float("nan"),
            float("nan"),
            float("nan"),
            paper_effect=effects[first],
            n=0,
            unit="repeats per task",
        )
    return decision._replace(detail="; ".join(parts))


def _comparison(result, a: str, b: str, ratios, effects) -> Any:
    from mdlnb import claims as C

    computed = set(result.scores["metric"])
    missing = [m for m in (a, b) if m not in computed]
    if missing:
        d = C.effect_decision(
            float("nan"),
            float("nan"),
            float("nan"),
            paper_effect=effects[ratios[0]],
            n=0,
            unit="repeats per task",
        )
        return d._replace(
            detail=f"{', '.join(_NAMES.get(m, m) for m in missing)} not computed in this run"
        )
    paired = paired_tau(result.scores, result.truth, a, b, readout=result.config.truth)
    d = _decide(paired, ratios, effects)
    eligible = set(result.scores.loc[result.scores["metric"] == b, "encoder"]) & set(
        result.scores.loc[result.scores["metric"] == a, "encoder"]
    )
    tied = tied_truth(result.truth, readout=result.config.truth, encoders=eligible)
    if tied:
        d = d._replace(
            detail=d.detail + f"; no τ on {', '.join(tied)} (ground truth tied "
            "across the eligible encoders, left out)"
        )
    return d


def claims(result: Any) -> list:
    """Claims (h1–h4) and (i1–i3) (module docstring) on a :class:`TransferabilityResult`."""
    from mdlnb import claims as C

    ratios = sorted(int(r) for r in result.config.ratios)
    rule_h = (
        "paired τ difference (A − B) per subsample over the encoders where both are "
        "finite; the 95 % interval of its mean over tasks (subsample noise, tasks fixed) "
        f"at the smallest N/K ({ratios[0]}; the others reported beside), undetermined "
        f"with τ over < {MIN_ENCODERS} encoders; ground truth: frozen-feature probe "
        "accuracy (PACTran: fine-tuning accuracy)"
    )
    out = []
    for cid, a, b in (
        ("h1", "pactran_gaussian", "logme"),
        ("h2", "nleep", "logme"),
        ("h3", "pactran_gaussian", "leep"),
        ("h4", "nleep", "leep"),
    ):
        na, nb = _NAMES[a], _NAMES[b]
        paper = "; ".join(
            f"N/K={r}: {PACTRAN_TABLE_1[r][a]:.3f} vs {PACTRAN_TABLE_1[r][b]:.3f}"
            for r in sorted(PACTRAN_TABLE_1)
        )
        out.append(
            C.Claim.decided(
                cid,
                f"At small N/K, {na} ranks checkpoints by transfer accuracy better than {nb}.",
                "PACTran Sec. 4.1.5, Table 1 (Average)",
                f"mean τ {paper}",
                f"A = {na}, B = {nb}; {rule_h}"
                + (
                    "; B needs a source classifier, so over the encoders with one"
                    if b == "leep"
                    else ""
                ),
                _comparison(
                    result,
                    a,
                    b,
                    ratios,
                    {
                        r: PACTRAN_TABLE_1[r][a] - PACTRAN_TABLE_1[r][b]
                        if r in PACTRAN_TABLE_1
                        else PACTRAN_TABLE_1[10][a] - PACTRAN_TABLE_1[10][b]
                        for r in ratios
                    },
                ),
            )
        )
    top = ratios[-1]
    long = mean_over_tasks(result.tau)
    clid = long[long["metric"] == "clid"].set_index("ratio")
    none = C.effect_decision(
        float("nan"),
        float("nan"),
        float("nan"),
        paper_effect=CLID_TABLE_1["clid"],
        n=0,
        unit="repeats per task",
    )
    if top in clid.index and int(clid.loc[top, "encoders"]) < MIN_ENCODERS:
        d = none._replace(
            detail=f"τ over {int(clid.loc[top, 'encoders'])} encoders (< {MIN_ENCODERS})"
        )
        value = d.detail
    elif top in clid.index:
        row = clid.loc[top]
        reps = int(
            result.tau.loc[
                (result.tau["metric"] == "clid") & (result.tau["ratio"] == top), "repeats"
            ].min()
        )
        d = C.effect_decision(
            float(row["tau"]),
            float(row["tau"] - row["ci"]),
            float(row["tau"] + row["ci"]),
            paper_effect=CLID_TABLE_1["clid"],
            n=reps,
            unit="repeats per task",
            label="95% interval",
        )
        d = d._replace(
            detail=d.detail + f" at N/K={top} ({int(row['tasks'])} tasks, "
            f"{int(row['encoders'])} encoders)"
        )
        every = "; ".join(
            f"N/K={r}: {clid.loc[r, 'tau']:.3f} ± {clid.loc[r, 'ci']:.3f}" for r in clid.index
        )
        value = f"{d.detail}; mean τ ± 95 % at every N/K: {every}"
    else:
        d = none._replace(detail="CLID not computed in this run")
        value = d.detail
    out.append(
        C.Claim.decided(
            "i1",
            "The label-free CLID score correlates positively with downstream accuracy.",
            "CLID Sec. 3.3–3.5, Tables 1–2",
            f"Kendall τ {CLID_TABLE_1['clid']:.2f} with ImageNet top-1 (Table 1), "
            f"{CLID_TABLE_2_AVG:.2f} averaged over 7 transfer tasks (Table 2)",
            f"mean τ over tasks of CLID vs the ground truth at the largest N/K ({top}; the paper "
            "uses whole datasets); 95 % interval (subsample noise, tasks fixed); ground truth: "
            "frozen-feature probe accuracy",
            d,
            our_value=value,
        )
    )
    for cid, b in (("i2", "twonn_id"), ("i3", "cl")):
        out.append(
            C.Claim.decided(
                cid,
                f"CLID ranks encoders better than {_NAMES[b]} alone.",
                "CLID Sec. 3.3, Table 1",
                f"τ {CLID_TABLE_1['clid']:.2f} vs {CLID_TABLE_1[b]:.2f} (ImageNet top-1)",
                f"A = CLID, B = {_NAMES[b]}, at the largest N/K ({top}) only; {rule_h}",
                _comparison(
                    result, "clid", b, [top], {top: CLID_TABLE_1["clid"] - CLID_TABLE_1[b]}
                ),
            )
        )
    return out
