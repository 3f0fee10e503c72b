"""The claims (h) (PACTran Table 1) and (i) (CLID Tables 1–2) on the study's τ.

Each claim is decided in the largest zoo (the ViT-S checkpoints: one
architecture, one feature size, PACTran's checkpoint-selection question); the
other zoos' numbers are given beside it. Ground truth: the configured one
(default fine-tuned test accuracy, PACTran's).

* (h1–h4) "A ranks checkpoints better than B" (PT-Gauss and N-LEEP against LogME
  and LEEP): on every subsample (task, N/K, repeat) both τ are computed over the
  same checkpoints (those where both metrics are finite) and d = τ_A − τ_B. The
  effect is the mean over tasks of each task's mean d over its subsamples at all
  three N/K (PACTran's Table 1 reports each N/K; the claim is made for all of
  them, so they are pooled), its interval the two-stage bootstrap over tasks and
  then subsamples (:mod:`._bootstrap`), the paper's effect the mean over N/K of
  Table 1's differences. The per-N/K means and intervals are reported beside.
* (i1) CLID's τ with the ground truth, each task's CLID computed on its whole
  training split (as the CLID paper computes it on the data); bootstrap over
  tasks; paper: 0.70 (Table 2's average over transfer tasks).
* (i2, i3) CLID against its parts, TwoNN ID and CL: the paired τ difference per
  task on the whole training split; paper: Table 1's 0.75 − 0.09, 0.75 − 0.44.

The verdict is :func:`mdlnb.research.claims.effect_decision`'s two parts (direction
against 0, size against the paper's effect) with n = the number of tasks. A
metric the run did not compute, or τ over fewer than :data:`MIN_ENCODERS`
checkpoints, leaves both parts undetermined.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mdlnb.research import claims as C
from mdlnb.studies.transferability._bootstrap import two_stage
from mdlnb.studies.transferability._kendall import kendall_per_repeat, tied_truth
from mdlnb.studies.transferability._metrics import with_zoo

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
_LABEL = "95% two-stage bootstrap (tasks, then subsamples)"


def paired_tau(scores, truth, a: str, b: str, *, readout: str = "finetune"):
    """τ of metrics ``a`` and ``b`` against the ``readout`` ground truth on every
    (zoo, task, ratio, repeat), both over the encoders where both are finite. Columns
    ``zoo``, ``task``, ``ratio``, ``repeat``, ``tau_a``, ``tau_b``, ``diff``, ``encoders``."""
    import pandas as pd

    cols = ["zoo", "task", "ratio", "repeat", "tau_a", "tau_b", "diff", "encoders"]
    keys = ["zoo", "encoder", "task", "ratio", "repeat"]
    s = with_zoo(scores)
    s = s[s["metric"].isin([a, b])]
    if a == b or not {a, b} <= set(s["metric"]):
        return pd.DataFrame(columns=cols)
    fin = s.assign(ok=np.isfinite(s["value"].to_numpy(float)))
    both = fin.groupby(keys)["ok"].agg(["sum", "size"])
    keep = both[(both["sum"] == 2) & (both["size"] == 2)].index
    s = s.set_index(keys).loc[lambda d: d.index.isin(keep)].reset_index()
    ta = kendall_per_repeat(s[s["metric"] == a], truth, readout=readout)
    tb = kendall_per_repeat(s[s["metric"] == b], truth, readout=readout)
    m = ta.merge(tb, on=["zoo", "task", "ratio", "repeat"], suffixes=("_a", "_b"))
    out = pd.DataFrame(
        {
            "zoo": m["zoo"],
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


def _interval(frame, column: str, config: Any) -> tuple[float, float, float, int]:
    vals = {t: g[column].to_numpy(float) for t, g in frame.groupby("task", sort=True)}
    return two_stage(vals, resamples=config.resamples, seed=config.seed)


def _none(paper: float, why: str):
    d = C.effect_decision(
        float("nan"),
        float("nan"),
        float("nan"),
        paper_effect=paper,
        n=0,
        unit="tasks",
        label=_LABEL,
    )
    return d._replace(detail=why)


def _decided(frame, column: str, paper: float, config: Any, primary: str):
    """The two-part verdict of ``frame[column]`` in zoo ``primary``; the text of every
    zoo's effect and, for the primary zoo, of each N/K, beside it."""
    own = frame[frame["zoo"] == primary]
    if own.empty:
        return _none(paper, f"no τ in the {primary} zoo")
    if int(own["encoders"].min()) < MIN_ENCODERS:
        return _none(paper, f"τ over {int(own['encoders'].min())} checkpoints (< {MIN_ENCODERS})")
    mean, lo, hi, n = _interval(own, column, config)
    d = C.effect_decision(
        mean, lo, hi, paper_effect=paper, n=n, side="above", unit="tasks", label=_LABEL
    )
    parts = [f"{primary} zoo ({int(own['encoders'].min())} checkpoints): {d.detail}"]
    if own["ratio"].nunique() > 1:
        parts.append(
            "per N/K: "
            + "; ".join(
                "{}: {:.3f} [{:.3f}, {:.3f}]".format(r, *_interval(g, column, config)[:3])
                for r, g in own.groupby("ratio", sort=True)
            )
        )
    for zoo, g in frame[frame["zoo"] != primary].groupby("zoo", sort=True):
        m, lo_, hi_, k = _interval(g, column, config)
        parts.append(
            f"{zoo} zoo ({int(g['encoders'].min())} checkpoints): {m:.3f} "
            f"[{lo_:.3f}, {hi_:.3f}] over {k} tasks"
        )
    return d._replace(detail="; ".join(parts))


def _primary(result) -> str:
    return max(result.config.zoos().items(), key=lambda kv: len(kv[1]))[0]


def _h_claim(result, cid: str, a: str, b: str):
    na, nb = _NAMES[a], _NAMES[b]
    ratios = sorted(PACTRAN_TABLE_1)
    paper = float(np.mean([PACTRAN_TABLE_1[r][a] - PACTRAN_TABLE_1[r][b] for r in ratios]))
    computed = set(result.scores["metric"])
    missing = [_NAMES[m] for m in (a, b) if m not in computed]
    if missing:
        d = _none(paper, f"{', '.join(missing)} not computed in this run")
    else:
        paired = paired_tau(result.scores, result.truth, a, b, readout=result.config.truth)
        d = _decided(paired, "diff", paper, result.config, _primary(result))
        tied = tied_truth(result.truth, readout=result.config.truth)
        if tied:
            d = d._replace(detail=d.detail + f"; no τ on {', '.join(tied)} (ground truth tied)")
    table = "; ".join(
        f"N/K={r}: {PACTRAN_TABLE_1[r][a]:.3f} vs {PACTRAN_TABLE_1[r][b]:.3f}" for r in ratios
    )
    return C.Claim.decided(
        cid,
        f"At small N/K, {na} ranks checkpoints by transfer accuracy better than {nb}.",
        "PACTran Sec. 4.1.5, Table 1 (Average)",
        f"mean τ {table}",
        f"A = {na}, B = {nb}: paired τ difference (A − B) per subsample (task, N/K ∈ "
        f"{{{', '.join(map(str, result.config.ratios))}}}, repeat) over the checkpoints "
        f"where both are finite; mean over tasks of the per-task mean, in the "
        f"{_primary(result)} zoo; ground truth: {result.config.truth}",
        d,
        effect=f"τ({na}) − τ({nb}), mean over N/K",
    )


def _full_tau(result, metric: str):
    """τ per (zoo, task) of ``metric`` on the whole training split (one 'subsample')."""
    if result.full_label_free is None:
        import pandas as pd

        return pd.DataFrame(columns=["zoo", "task", "ratio", "repeat", "tau", "encoders"])
    part = result.full_label_free[result.full_label_free["metric"] == metric]
    return kendall_per_repeat(part, result.truth, readout=result.config.truth)


def _i_claims(result) -> list:
    primary = _primary(result)
    clid = _full_tau(result, "clid")
    d = (
        _decided(clid, "tau", CLID_TABLE_2_AVG, result.config, primary)
        if not clid.empty
        else _none(CLID_TABLE_2_AVG, "CLID not computed in this run")
    )
    out = [
        C.Claim.decided(
            "i1",
            "The label-free CLID score correlates positively with downstream accuracy.",
            "CLID Sec. 3.3–3.5, Tables 1–2",
            f"Kendall τ {CLID_TABLE_1['clid']:.2f} with ImageNet top-1 (Table 1), "
            f"{CLID_TABLE_2_AVG:.2f} averaged over 7 transfer tasks (Table 2)",
            "Kendall τ across checkpoints between CLID (min–max CL + min–max TwoNN ID on each "
            "task's whole training split) and the ground truth, per task; mean over tasks, "
            f"bootstrap over tasks, in the {primary} zoo; ground truth: {result.config.truth}",
            d,
            effect="τ(CLID, accuracy)",
        )
    ]
    for cid, b in (("i2", "twonn_id"), ("i3", "cl")):
        other = _full_tau(result, b)
        paper = CLID_TABLE_1["clid"] - CLID_TABLE_1[b]
        if clid.empty or other.empty:
            d = _none(paper, f"CLID or {_NAMES[b]} not computed in this run")
        else:
            m = clid.merge(other, on=["zoo", "task", "ratio", "repeat"], suffixes=("_a", "_b"))
            m = m.assign(diff=m["tau_a"] - m["tau_b"], encoders=m["encoders_a"])
            d = _decided(m, "diff", paper, result.config, primary)
        out.append(
            C.Claim.decided(
                cid,
                f"CLID ranks encoders better than {_NAMES[b]} alone.",
                "CLID Sec. 3.3, Table 1",
                f"τ {CLID_TABLE_1['clid']:.2f} vs {CLID_TABLE_1[b]:.2f} (ImageNet top-1)",
                f"A = CLID, B = {_NAMES[b]}: paired τ difference per task, both on the task's whole "
                f"training split; mean over tasks, bootstrap over tasks, in the {primary} zoo; "
                f"ground truth: {result.config.truth}",
                d,
                effect=f"τ(CLID) − τ({_NAMES[b]})",
            )
        )
    return out


def claims(result: Any) -> list:
    """Claims (h1–h4) and (i1–i3) (module docstring) on a :class:`TransferabilityResult`."""
    out = [
        _h_claim(result, cid, a, b)
        for cid, a, b in (
            ("h1", "pactran_gaussian", "logme"),
            ("h2", "nleep", "logme"),
            ("h3", "pactran_gaussian", "leep"),
            ("h4", "nleep", "leep"),
        )
    ]
    return out + _i_claims(result)
