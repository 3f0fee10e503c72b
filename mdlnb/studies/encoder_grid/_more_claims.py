"""The paper's further claims on the encoder grid: scaling (j1, j2), switching in and out
of the pretraining domain (k), and average accuracy against average rank (l).

Each has its rule and the paper's effect fixed here, before any run, and a two-part
verdict decided by one interval (:func:`mdlnb.research.claims.effect_decision`: direction
replicated / reversed / undetermined, size smaller / consistent / larger than the
paper's). Li, Bornschein & Hutter 2023, arXiv:2302.09579:

* (j1) *MAE keeps improving with size* (Sec. 4 'Model Scaling', Table 1b,
  Table 10): per task the relative codelength reduction from the smallest to
  the largest MAE encoder, r = (L_small − L_large) / L_small; t interval over
  tasks; paper (Table 10, ViT/S16 → L16, 19 tasks): mean r = 0.400.
* (j2) *size helps MAE more than supervised training* (same anchor: "further
  scaling up for supervised loss is not useful"): per task r(MAE) − r(SUP)
  over the same sizes; paper (Table 10): 0.311.
* (k) *switching is more frequent out of domain* (Sec. 4 'Readout Models'):
  per task, log2 of the readout switches per 1,000 examples (MAP readout,
  mean over encoders and orders); tasks outside the pretraining domain minus
  the in-domain task(s) (the pretraining data's own), Welch interval with
  tasks as the units (the encoders share the tasks, so they are not
  independent units). The paper gives no number; the smallest effect its
  remark implies is taken as twice as frequent (log2 ratio 1).
* (l) *average accuracy and average rank select differently* (App. Table 5):
  1 − τ between the encoders' order by mean linear accuracy over tasks and by
  average linear-accuracy rank; bootstrap over tasks; paper (Table 5, 6
  encoders): 1 − τ = 0.400.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mdlnb.research import claims as C
from mdlnb.research import ranking
from mdlnb.studies.encoder_grid import _tables

#: Paper Table 10 (fixed-share codelength per example, 19 VTAB tasks), ViT rows.
TABLE_10 = {
    ("sup", "S"): [
        0.83,
        0.95,
        1.45,
        1.45,
        0.38,
        1.23,
        1.38,
        0.19,
        0.20,
        0.56,
        0.72,
        1.06,
        1.17,
        1.14,
        0.63,
        0.38,
        0.64,
        0.61,
        1.00,
    ],
    ("sup", "L"): [
        0.81,
        0.88,
        1.52,
        1.41,
        0.37,
        1.06,
        1.40,
        0.18,
        0.18,
        0.52,
        0.72,
        0.96,
        1.05,
        1.04,
        0.32,
        0.27,
        0.61,
        0.59,
        0.91,
    ],
    ("mae", "S"): [
        1.83,
        2.01,
        1.76,
        2.10,
        1.54,
        1.64,
        2.27,
        0.17,
        0.15,
        0.64,
        0.71,
        0.97,
        1.16,
        1.09,
        1.75,
        0.27,
        0.64,
        0.59,
        0.69,
    ],
    ("mae", "L"): [
        0.92,
        0.86,
        1.39,
        1.50,
        0.53,
        0.82,
        1.36,
        0.12,
        0.13,
        0.43,
        0.69,
        0.60,
        0.76,
        0.85,
        0.02,
        0.11,
        0.56,
        0.21,
        0.42,
    ],
}
#: Paper Table 5: average linear accuracy (%) and average rank of six encoders.
TABLE_5 = {
    "ViT/B16 DINO": (76.01, 2.26),
    "ResNet-50 BYOL": (77.93, 2.37),
    "ResNet-50 SUP": (75.51, 3.82),
    "ViT/B16 MAE": (74.10, 3.84),
    "ViT/B16 SUP": (72.46, 4.18),
    "ResNet-50 SimCLR": (74.35, 4.53),
}


def _reduction(small, large) -> np.ndarray:
    small, large = np.asarray(small, float), np.asarray(large, float)
    return (small - large) / small


def paper_effects() -> dict[str, float]:
    """j1, j2 and l recomputed from the paper's tables (k: the chosen smallest effect)."""
    mae = _reduction(TABLE_10[("mae", "S")], TABLE_10[("mae", "L")])
    sup = _reduction(TABLE_10[("sup", "S")], TABLE_10[("sup", "L")])
    acc = np.array([v[0] for v in TABLE_5.values()])
    rank = np.array([v[1] for v in TABLE_5.values()])
    return {
        "j1": float(mae.mean()),
        "j2": float((mae - sup).mean()),
        "k": 1.0,
        "l": 1.0 - float(ranking.kendall_tau(acc, -rank)),
    }


def _bits(frame, encoder: str):
    f = frame[(frame["encoder"] == encoder) & (frame["metric"] == "codelength [bits/example]")]
    return f.groupby("task")["value"].mean()


def scaling_claims(
    result: Any, mae: Sequence[str], supervised: Sequence[str], *, alpha: float = 0.05
) -> list:
    """(j1), (j2): ``mae`` and ``supervised`` are each [smallest, largest] encoder names."""
    level, eff = 1 - alpha, paper_effects()
    frame = result.frame
    m_s, m_l = _bits(frame, mae[0]), _bits(frame, mae[-1])
    s_s, s_l = _bits(frame, supervised[0]), _bits(frame, supervised[-1])
    tasks = sorted(set(m_s.index) & set(m_l.index))
    r_mae = _reduction(m_s[tasks], m_l[tasks])
    d = C.t_effect(r_mae, paper_effect=eff["j1"], level=level, unit="tasks")
    j1 = C.Claim.decided(
        "j1",
        "MAE keeps improving with encoder size: the larger MAE encoder codes the labels "
        "in fewer bits.",
        "Li et al. 2023 Sec. 4 'Model Scaling', Table 1b, Table 10",
        f"ViT/S16 → L16 MAE, per task (L_S − L_L) / L_S: mean {eff['j1']:.3f} (19 tasks)",
        f"per task, relative codelength reduction from {mae[0]} to {mae[-1]} (bits/example, "
        "mean over orders); t interval over tasks",
        d,
        effect="relative codelength reduction, MAE S → L",
    )
    both = sorted(set(tasks) & set(s_s.index) & set(s_l.index))
    diff = _reduction(m_s[both], m_l[both]) - _reduction(s_s[both], s_l[both])
    d = C.t_effect(diff, paper_effect=eff["j2"], level=level, unit="tasks")
    j2 = C.Claim.decided(
        "j2",
        "Size helps MAE more than supervised pretraining.",
        "Li et al. 2023 Sec. 4 'Model Scaling', Table 1b, Table 10",
        f"per task r(MAE) − r(SUP), ViT/S16 → L16: mean {eff['j2']:.3f} (19 tasks)",
        f"per task, relative reduction {mae[0]} → {mae[-1]} minus {supervised[0]} → "
        f"{supervised[-1]}; t interval over tasks",
        d,
        effect="r(MAE) − r(SUP), S → L",
    )
    return [j1, j2]


def domain_claim(
    result: Any,
    in_domain: Sequence[str],
    encoders: Sequence[str] | None = None,
    *,
    alpha: float = 0.05,
) -> Any:
    """(k): switches per 1,000 examples out of domain against ``in_domain`` tasks,
    tasks as the units."""
    level, eff = 1 - alpha, paper_effects()
    f = _tables._subset(result.frame, encoders)
    sw = f[f["metric"] == "readout switches"]
    sw = sw.assign(rate=sw["value"] / sw["task"].map(result.sizes) * 1000.0)
    per_task = sw.groupby("task", sort=True)["rate"].mean()
    inside = per_task.index.isin(list(in_domain))
    zero = per_task[per_task <= 0]
    rates = np.log2(per_task[per_task > 0])
    d = C.welch_effect(
        rates[~rates.index.isin(list(in_domain))],
        rates[rates.index.isin(list(in_domain))],
        paper_effect=eff["k"],
        level=level,
        unit="tasks",
    )
    return C.Claim.decided(
        "k",
        "Readout switching is more frequent out of domain than in domain.",
        "Li et al. 2023 Sec. 4 'Readout Models'",
        "qualitative; taken as twice as frequent (log2 ratio 1)",
        "per task, log2 of the MAP-readout switches per 1,000 examples (mean over encoders and "
        f"orders); tasks outside the pretraining domain ({int((~inside).sum())}) minus "
        f"{', '.join(in_domain)} ({int(inside.sum())}), Welch interval over tasks",
        d,
        effect="log2 switch rate, out − in domain",
        our_value=d.detail
        + (f"; tasks without a switch (left out): {', '.join(zero.index)}" if len(zero) else ""),
    )


def aggregation_claim(result: Any, encoders: Sequence[str], *, alpha: float = 0.05) -> Any:
    """(l): the order by mean linear accuracy against the order by average rank."""
    level, eff = 1 - alpha, paper_effects()
    acc = _tables.scores(result.frame, "linear accuracy", encoders=encoders)  # task × encoder

    def gap(rows) -> float:
        from scipy.stats import rankdata

        t = np.vstack(rows)
        mean_acc, mean_rank = t.mean(0), np.vstack([rankdata(-r) for r in t]).mean(0)
        if np.ptp(mean_acc) == 0 or np.ptp(mean_rank) == 0:
            return float("nan")
        return 1.0 - float(ranking.kendall_tau(mean_acc, -mean_rank))

    rows = [acc.loc[t].to_numpy(float) for t in acc.index]
    d = C.bootstrap_effect(rows, gap, paper_effect=eff["l"], level=level, unit="tasks")
    return C.Claim.decided(
        "l",
        "Average accuracy and average rank over tasks select encoders differently.",
        "Li et al. 2023 App. Table 5",
        f"6 encoders, 19 VTAB tasks: 1 − τ(order by mean "
        f"accuracy, by average rank) = {eff['l']:.3f}",
        f"linear accuracy of {len(encoders)} encoders; 1 − Kendall τ between the order by mean "
        "accuracy over tasks and by average rank; percentile bootstrap over tasks",
        d,
        effect="1 − τ(mean accuracy, average rank)",
    )
