"""How big the encoder grid must be to decide a2, d1 and f: a power analysis from measured spreads.

Each claim of :mod:`._claims` is decided by a 95 % interval over **tasks**
against zero and the paper's effect (:func:`mdlnb.research.claims.effect_decision`).
An interval of half-width h over T tasks decides for sure once
h ≤ margin · |paper effect| (default margin ½: then zero and the paper's
effect cannot both lie inside it); with per-task standard deviation σ that
needs T with t_{0.975, T−1} · σ / √T ≤ margin · |effect| (:func:`tasks_to_decide`).

Today's spreads (:data:`TODAY`) come from the committed run of 2026-11-24
(11 encoders × 5 tasks, N = 400, 3 orders; ``paper/objectives_*.csv``):

* a2: per-task d = τ(MLP, MDL) − τ(MLP, linear) over k = 6 encoders:
  −0.27, +0.13, +0.27, −0.48, 0 — σ = 0.30. Most of it is the coarseness of τ
  over few encoders: under independence sd(τ_b) = √(2(2k + 5) / (9k(k − 1)))
  (:func:`tau_sd`), 0.36 at k = 6 and 0.20 at k = 14, so pooling every
  encoder of the grid shrinks σ to about 0.30 · 0.20 / 0.36 ≈ 0.17.
* f: per-task log10 median(sd / gap): σ = 0.34 over 5 tasks; the gap between
  codelengths grows ∝ N and the order sd ∝ √N, so the effect −log10(ratio)
  grows by ½ log10(N / 400): +0.20 at N = 1,000, +0.35 at N = 2,000.
* d1: today's value is void (its reference bin was the prior); its per-task
  spread is assumed σ = 0.5 hidden layers until the new run measures it.

:func:`plan` turns these into the tasks each claim needs. With all 14
encoders, a2 needs 26 tasks to be decided whatever its true value; on the
14 tasks of the mini-VTAB (≥ 3 per group) its half-width is ≈ 0.10, so it is
decided unless its mean falls in about [0.04, 0.10]. d1 needs 7 tasks. f
needs 15 tasks at N = 1,000 and 7 at N = 2,000 (its "does not hold" side,
the paper's 1.54, is far away): hence streams of 2,000 where a task has them.

**What the budget allows** (:func:`grid_cost`, FLOPs of stage 1 turned into
minutes at the CPU's 92 GFLOP/s matmul limit × the grid's end-to-end
efficiency). Calibration: the committed grid (11 encoders × 5 tasks, N ≤ 400,
3 orders, the ``default`` board) is 1.9·10¹³ FLOPs, 16 min at the measured
21 % — its recorded stage 1 + 2 took 21 min. The grid that decides a2, d1
and f — the 14 encoders of the pretraining suite (ViT-S under 7 objectives,
supervised and MAE ViT-M/L, EfficientNet-Lite0/1/2 at 64 px) × the 14
mini-VTAB tasks × 3 orders on the ``deep`` board — costs:

====================  ===========  ==================  =================
N per task            FLOPs        minutes at 21 %      minutes at 60 %
====================  ===========  ==================  =================
1,000 (with Lite)     2.6·10¹⁴     222                  78
2,000 (with Lite)     5.0·10¹⁴     431                  151
1,000 (no Lite)       1.3·10¹⁴     113                  39
2,000 (no Lite)       2.5·10¹⁴     219                  77
====================  ===========  ==================  =================

The three Lite encoders (D = 1,280) are half of it.

**The grid chosen** (the :class:`EncodersConfig` defaults since 2026-11-26):
the 11 committed ViT encoders (no Lite) × 17 tasks (every embedded task with
≥ 1,000 training examples; lfw_faces has 160) × 3 orders at N = 1,000 on the
``deep`` board: 1.7·10¹⁴ FLOPs. It grew from 13 tasks in two runs:

* 13 tasks (143 pairs), measured on the 2-core CPU from an empty pair cache
  (features cached): 3,612 s in 2 worker processes (MDL 6,497 s and accuracy
  search 689 s of worker time), i.e. 39 % of the matmul limit end to end,
  probes included (a refactoring job shared the CPU for the first 35
  minutes). a2 came out 0.146 [−0.041, 0.284], "would decide at ≈ 17 tasks".
* Four more tasks, written down before they ran (two CLEVR questions about the
  nearest object, the slide's second stain, and the garment category of the
  Fashion-MNIST images, a second in-domain task for k): their 44 pairs took
  939 s (MDL 1,702 s and accuracy 168 s of worker time, the machine quiet), so
  the 187 pairs cost ≈ 4,550 s ≈ 76 min from an empty pair cache, 40 % of
  the matmul limit.
* With 32 MB expert blocks (``prequential-v7``, 2026-11-27): the 187 pairs
  took 3,920 s in one ``make reproduce`` (its first 14 min beside the other
  notebooks), 60–68 % of the same-shape matmul limit's rate measured by
  ``python -m benchmarks grid_limit`` (``benchmarks/RESULTS.md``).

With the other notebooks (``transferability_baselines`` alone recorded
1,877 s, most of it 270 subsamples × ~5 s of L-BFGS fits for LINEAR and
PT-Gauss grids), a cold ``make reproduce`` is estimated at ≈ 100 minutes on
the 2-core CPU (about 200 core-minutes of work on 2 cores, JOBS=2), not the
60 of the budget: the budget cost the Lite encoders and streams of 2,000,
and did not hold even so.

**Measured on the 17-task grid** (:func:`spreads`): a2 per-task Δτ over 11
encoders mean 0.045, σ 0.149 (20 tasks would decide the per-task statistic;
the claim's statistic, Δτ of the average-rank orders bootstrapped over
tasks, is 0.254 [−0.085, 0.327]: still inconclusive, and the interval's reach
below the estimate says ≈ 31 tasks would decide it, more than the embedded
data holds); f per-task −log10(sd / gap) mean 0.11, σ 0.37 (the claim's
median over all cells is decided: holds, 0.36 [0.17, 0.54]); d1 per-task
depth change mean +0.61 hidden layers, σ 0.60 (9 tasks; decided: holds).
On 13 tasks they were a2 0.046 / 0.096, f 0.43 / 0.34, d1 0.69 / 0.64.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from mdlnb import data
from mdlnb.board import experts as _experts
from mdlnb.board._arguments import resolve_protocol
from mdlnb.encoders import archs
from mdlnb.studies.encoder_grid import _claims
from mdlnb.studies.encoder_grid._claims import PAPER_EFFECTS
from mdlnb.studies.transferability import parse_encoder

#: Per-task standard deviations and effects measured on the committed 2026-11-24 run.
TODAY = {
    "a2": {"sd": 0.30, "k": 6, "tasks": 5, "effect": -0.07},
    "f": {"sd": 0.34, "k": 6, "tasks": 5, "effect": -0.007, "n": 400},
    "d1": {"sd": 0.5, "k": 11, "tasks": 5, "effect": float("nan")},
}


def tau_sd(k: int) -> float:
    """Standard deviation of Kendall's τ between two independent random orders of ``k``
    items (no ties): √(2(2k + 5) / (9k(k − 1)))."""
    if int(k) < 2:
        raise ValueError(f"k: need at least 2 items, got {k!r}")
    k = int(k)
    return math.sqrt(2 * (2 * k + 5) / (9 * k * (k - 1)))


def tasks_to_decide(
    sd: float, effect: float, *, margin: float = 0.5, level: float = 0.95, max_tasks: int = 10_000
) -> int:
    """Smallest T ≥ 2 with t_{(1+level)/2, T−1} · sd / √T ≤ margin · |effect|."""
    from scipy import stats

    if not (sd >= 0 and np.isfinite(sd)):
        raise ValueError(f"sd: must be a finite number >= 0, got {sd!r}")
    if not effect or not np.isfinite(effect):
        raise ValueError(f"effect: must be finite and non-zero, got {effect!r}")
    target = margin * abs(effect)
    for t in range(2, max_tasks + 1):
        if stats.t.ppf((1 + level) / 2, t - 1) * sd / math.sqrt(t) <= target:
            return t
    return max_tasks


#: Stage-1 throughput used to turn FLOPs into minutes: the fp32 matmul limit of the
#: project's 2-core CPU (92 GFLOP/s, ``benchmarks/RESULTS.md``) and the fraction of it
#: the encoder grid reached end to end in the committed run (0.21: 1,259 s against
#: 264 s of matmuls; the compile-once work of the stage-1 programs targets 0.6).
CPU_GFLOPS = 92.0
GRID_EFFICIENCY = 0.21


def stream_flops(board: Any, feature_dim: int, num_classes: int, n: int) -> float:
    """Stage-1 FLOPs of one stream of ``n`` examples over ``board`` (a preset name or a
    list of Experts): each example is coded by one forward pass of every expert and
    trains it by ``replay_streams`` updates of about three forward passes each (forward,
    two backward matmuls), i.e. ``n · Σ_k (3 r_k + 1) · flops_k(D, C)`` with
    ``flops_k`` = 2 × the expert's multiply-adds per example (the paper's
    6·N·Σ r·params + 2·N·Σ params)."""
    board = _experts.preset(board) if isinstance(board, str) else list(board)
    return float(n) * sum(
        (3 * e.replay_streams + 1) * e.readout.flops(feature_dim, num_classes) for e in board
    )


def feature_dim(encoder: str) -> int:
    """Feature dimension of an encoder string of the study, without building it."""
    spec = parse_encoder(encoder)
    if spec.family == "efficientnet":
        return 1280  # EfficientNet-Lite0/1/2: the 1,280-d head features
    return int(archs.config(spec.arch, spec.size).feature_dim)


def grid_cost(config: Any, *, gflops: float = CPU_GFLOPS, efficiency: float = GRID_EFFICIENCY):
    """Stage-1 cost of an :class:`EncodersConfig`'s grid: one row per (encoder, task) with
    D, C, N (the task's training split capped by ``train_size``), the FLOPs of all its
    orders and the minutes at ``gflops`` × ``efficiency`` (stage 1 only: features, the
    App. A.4 accuracy search and stage 2 come on top; the committed run spent 30 % of
    its pair time in the accuracy search)."""
    import pandas as pd

    if not (gflops > 0 and 0 < efficiency <= 1):
        raise ValueError(
            f"efficiency: need gflops > 0 and 0 < efficiency <= 1, got {gflops!r}, {efficiency!r}"
        )
    board = resolve_protocol(config.protocol).experts()
    info = data.info().set_index("name")
    rows = []
    for enc in config.encoders:
        d = feature_dim(enc)
        for task in config.tasks:
            n = int(info.loc[task, "n_train"])
            n = n if config.train_size is None else min(n, int(config.train_size))
            c = int(info.loc[task, "classes"])
            f = stream_flops(board, d, c, n) * len(config.seeds)
            rows.append(
                {
                    "encoder": enc,
                    "task": task,
                    "D": d,
                    "C": c,
                    "N": n,
                    "orders": len(config.seeds),
                    "flops": f,
                    "minutes": f / (gflops * 1e9 * efficiency) / 60,
                }
            )
    return pd.DataFrame(rows)


def plan(*, encoders: int = 14, n: int = 1000):
    """Tasks needed per claim for a grid of ``encoders`` encoders and streams of ``n``."""
    import pandas as pd

    a2_sd = TODAY["a2"]["sd"] * tau_sd(encoders) / tau_sd(TODAY["a2"]["k"])
    f_effect = TODAY["f"]["effect"] + 0.5 * math.log10(n / TODAY["f"]["n"])
    rows = [
        {
            "claim": "a2",
            "per-task sd": a2_sd,
            "effect to separate": PAPER_EFFECTS["a2"],
            "tasks to decide": tasks_to_decide(a2_sd, PAPER_EFFECTS["a2"]),
        },
        {
            "claim": "f",
            "per-task sd": TODAY["f"]["sd"],
            "effect to separate": f_effect,
            "tasks to decide": tasks_to_decide(TODAY["f"]["sd"], f_effect, margin=1.0),
        },
        {
            "claim": "d1",
            "per-task sd": TODAY["d1"]["sd"],
            "effect to separate": PAPER_EFFECTS["d1"],
            "tasks to decide": tasks_to_decide(TODAY["d1"]["sd"], PAPER_EFFECTS["d1"]),
        },
    ]
    return pd.DataFrame(rows)


def spreads(result: Any, objectives: Sequence[str] | None = None):
    """The per-task statistics a power analysis needs, measured on a finished grid
    (an :class:`EncodersResult`), one row per claim: a2 (per task τ(MLP, MDL) −
    τ(MLP, linear) over every encoder of the grid), f (per task −log10 of the
    median order-sd / nearest gap over the ``objectives`` encoders, all if None)
    and d1 (per task change in posterior-mean readout depth, hidden layers,
    every encoder): their number of tasks, mean, standard deviation over tasks,
    and the tasks that standard deviation needs (:func:`tasks_to_decide`): for
    a2 and d1 to separate zero from the paper's effect whatever the mean (half
    the paper's effect as half-width), for f to exclude zero at the measured
    mean (the paper's 1.54 is far off, as in :func:`plan`)."""
    import pandas as pd

    frame = result.frame
    everyone = list(dict.fromkeys(frame["encoder"]))
    agree = _claims.per_task_agreement(frame, everyone)
    a2 = (agree["mlp vs mdl"] - agree["linear vs mlp"]).dropna().to_numpy(float)
    _, _, cells = _claims.order_noise_cells(frame, list(objectives or everyone))
    f = np.array([_claims._log_ratio_median([c]) for c in cells])
    batch = int(resolve_protocol(result.config.protocol).batch_size)
    d1 = _claims.depth_change_by_task(result.posterior, first_batch=2 * batch)[2][
        "change"
    ].to_numpy(float)
    rows = []
    for claim, x in (("a2", a2), ("f", f), ("d1", d1)):
        sd = float(np.std(x, ddof=1)) if x.size >= 2 else float("nan")
        mean = float(np.mean(x)) if x.size else float("nan")
        effect, margin = (mean, 1.0) if claim == "f" else (_claims.PAPER_EFFECTS[claim], 0.5)
        need = (
            tasks_to_decide(sd, effect, margin=margin)
            if np.isfinite(sd) and np.isfinite(effect) and effect
            else None
        )
        rows.append(
            {
                "claim": claim,
                "tasks": int(x.size),
                "mean": mean,
                "per-task sd": sd,
                "tasks to decide": need,
            }
        )
    return pd.DataFrame(rows)
