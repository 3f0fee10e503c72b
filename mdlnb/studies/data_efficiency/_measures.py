"""The data-efficiency study's measures: four codes of one stream and their regret to from scratch.

On one stream of a task's images, four methods are coded by the same
prequential protocol (same order, batch size B; nats):

* ``linear probe`` — linear readouts on the frozen encoder's features;
* ``deep MLP`` — MLP readouts (several depths) on the frozen features;
* ``fine-tuned`` — the encoder with a linear head, trained end to end;
* ``from scratch`` — the same architecture from a random init (comparator).

Within each method the hyperparameter grid is combined by the Bayesian
mixture (a proper code), as :func:`mdlnb.baselines.finetune.compare` does. The
"regret" of a method at n is its cumulative next-step loss over the first n
examples minus that of ``from scratch`` (< 0: more data-efficient).
:func:`zero_crossing` finds where a regret curve changes sign for good.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from mdlnb import prequential, switching
from mdlnb.baselines import finetune
from mdlnb.board import readouts
from mdlnb.board.experts import expert_grid
from mdlnb.encoders import features
from mdlnb.studies.switching_strategies import checkpoints

SCRATCH = "from scratch"
METHODS = ("linear probe", "deep MLP", "fine-tuned", SCRATCH)


def per_step_losses(
    task: Any,
    encoder: Any,
    *,
    mlp_layers: Sequence[int] = (1, 2, 3),
    mlp_width: int = 64,
    learning_rate: Sequence[float] = (1e-4, 1e-3),
    probe_learning_rate: Sequence[float] = (1e-3, 3e-3),
    replay_streams: int = 3,
    batch_size: int = 32,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """Each method's (N,) per-example mixture loss in stream order (nats).

    ``linear probe``, ``fine-tuned`` and ``from scratch`` come from
    :func:`mdlnb.baselines.finetune.compare`; ``deep MLP`` runs MLP readouts of
    ``mlp_layers`` hidden layers on the same cached frozen features, same
    order, and mixes them with the Bayesian mixture."""
    df = finetune.compare(
        task,
        encoder,
        learning_rate=learning_rate,
        probe_learning_rate=probe_learning_rate,
        replay_streams=replay_streams,
        batch_size=batch_size,
        seed=seed,
    )
    out = dict(df.attrs["per_step_nats"])
    board = expert_grid(
        [readouts.mlp(h, mlp_width) for h in mlp_layers],
        learning_rate=probe_learning_rate,
        replay_streams=replay_streams,
    )
    lm = prequential.run(features(encoder, task), board, batch_size=batch_size, seed=seed)
    if not np.array_equal(lm.order, df.attrs["loss_matrices"]["probe"].order):
        raise ValueError("seed: the MLP stream's order differs from the probe's")
    out["deep MLP"] = np.asarray(
        switching.codelength(lm.losses, switching.BayesianMixture(), posterior=False).per_step_nats,
        np.float64,
    )
    return {m: out[m] for m in METHODS}


def zero_crossing(cumulative: Any) -> float:
    """Where a cumulative regret curve crosses zero for good (1-indexed n), or NaN.

    The smallest n such that every value from n on has the sign of the last
    value, provided some earlier nonzero value had the opposite sign; NaN if
    the curve never changes sign (zeros — e.g. the uniform first batch, where
    every method pays log C — carry no sign)."""
    c = np.asarray(cumulative, dtype=np.float64)
    if c.ndim != 1 or c.size == 0:
        raise ValueError(f"cumulative: expected a non-empty 1-D array, got shape {c.shape}")
    s = np.sign(c[-1])
    if s == 0:
        return float("nan")
    wrong = np.flatnonzero(np.sign(c) != s)
    if wrong.size == 0 or not np.any(np.sign(c[: wrong[-1] + 1]) == -s):
        return float("nan")
    return float(wrong[-1] + 2)


def regret_frames(
    per_step: dict[str, np.ndarray], *, task: str, domain: str, seed: int, points: int = 200
):
    """Tidy curves and a summary for one (task, seed).

    Returns ``(curves, summary)``: ``curves`` has columns ``task``, ``domain``,
    ``seed``, ``method``, ``n``, ``regret [nats]`` (cumulative, minus from
    scratch); ``summary`` one row per method with ``codelength [nats]``,
    ``nats per example``, ``regret [nats]`` at N, ``crossing n``
    (:func:`zero_crossing`, NaN if none) and ``n``."""
    base = np.cumsum(per_step[SCRATCH])
    n = base.size
    ns = checkpoints(n, points)
    curves, rows = [], []
    for method, loss in per_step.items():
        cum = np.cumsum(loss)
        reg = cum - base
        curves.append(
            pd.DataFrame(
                {
                    "task": task,
                    "domain": domain,
                    "seed": seed,
                    "method": method,
                    "n": ns,
                    "regret [nats]": reg[ns - 1],
                }
            )
        )
        rows.append(
            {
                "task": task,
                "domain": domain,
                "seed": seed,
                "method": method,
                "n": n,
                "codelength [nats]": float(cum[-1]),
                "nats per example": float(cum[-1] / n),
                "regret [nats]": float(reg[-1]),
                "crossing n": zero_crossing(reg),
            }
        )
    return pd.concat(curves, ignore_index=True), pd.DataFrame(rows)


def regret_at(per_step: dict[str, np.ndarray], method: str, n: int) -> float:
    """Cumulative regret of ``method`` to from scratch over the first ``n`` examples (nats)."""
    return float(np.sum(per_step[method][:n]) - np.sum(per_step[SCRATCH][:n]))
