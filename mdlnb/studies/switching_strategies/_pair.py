"""One (encoder, task) pair of the switching study in one example order: every frame.

:func:`run_pair` runs stage 1 (cached on disk by :func:`mdlnb.prequential.run`)
and computes every frame of :mod:`mdlnb.studies.switching_strategies._measures` from
its loss matrix; :func:`gather`, :func:`final_regrets`,
:func:`final_codelengths` and :func:`spread` combine pairs and orders.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from mdlnb import data, encoders, prequential, switching
from mdlnb.studies.switching_strategies._measures import (
    best_sequence_loss,
    bound_curves,
    fixed_share_bound,
    regret_curves,
    sensitivity,
    strategies,
    switch_counts,
)
from mdlnb.studies.transferability import build_encoder, parse_encoder


@dataclass(frozen=True)
class PairResult:
    """Every frame of the study for one (encoder, task) pair and one example order.

    ``regret``, ``sensitivity``, ``bound``, ``switches`` as returned by
    :func:`regret_curves`, :func:`sensitivity`, :func:`bound_curves` and
    :func:`switch_counts`; ``sequence``: one row per s = 0..m−1 with the loss of the
    best sequence with ≤ s switches, fixed share's regret to it and the
    paper's bound :func:`fixed_share_bound` (N, K, m) for s = m − 1 switches."""

    pair: str
    seed: int
    n: int
    num_experts: int
    num_classes: int
    m: float
    regret: Any
    sensitivity: Any
    bound: Any
    sequence: Any
    switches: Any


def run_pair(
    pair: str,
    task: Any,
    board: Sequence[Any],
    *,
    seed: int = 0,
    m: float = 11.0,
    batch_size: int = 32,
    points: int = 200,
    ms: Sequence[float] = (2, 5, 11, 31, 101),
    alphas: Sequence[float] = (1e-4, 1e-3, 1e-2, 1e-1),
) -> PairResult:
    """Stage 1 (cached) on ``task`` with ``board`` in order ``seed``, then every frame."""
    lm = prequential.run(task, list(board), batch_size=batch_size, seed=seed)
    L = np.asarray(lm.losses)
    fs = switching.FixedShare(m=m)
    res = switching.codelength(L, fs, posterior=True)
    s = max(int(math.ceil(m)) - 1, 1)
    best = best_sequence_loss(L, s)
    seq = pd.DataFrame(
        {
            "switches": np.arange(s + 1),
            "best sequence [nats]": best,
            "regret [nats]": res.total_nats - best,
            "bound [nats]": float(fixed_share_bound(L.shape[0], L.shape[1], m)),
        }
    )
    readout = [e.readout.name for e in board]
    return PairResult(
        pair,
        int(seed),
        int(L.shape[0]),
        int(L.shape[1]),
        int(task.num_classes),
        float(m),
        regret_curves(L, strategies(m), points=points),
        sensitivity(L, ms=ms, alphas=alphas),
        bound_curves(L, fs, points=points),
        seq,
        switch_counts(res.posterior, readout, points=points),
    )


def gather(results: Sequence[PairResult], frame: str):
    """Concatenate one frame over results, with ``pair`` and ``seed`` columns first."""
    if not results:
        raise ValueError("results: is empty")
    return pd.concat(
        [getattr(r, frame).assign(pair=r.pair, seed=r.seed) for r in results], ignore_index=True
    )[["pair", "seed", *getattr(results[0], frame).columns]]


def final_regrets(results: Sequence[PairResult]):
    """One row per (pair, seed): each strategy's regret to fixed share at n = N, nats."""
    df = gather(results, "regret")
    last = df[df["n"] == df.groupby(["pair", "seed"])["n"].transform("max")]
    return last.pivot_table(
        index=["pair", "seed"], columns="strategy", values="regret [nats]"
    ).reset_index()


def final_codelengths(results: Sequence[PairResult]):
    """One row per (pair, seed, strategy) at n = N: ``n``, ``num_classes``,
    ``codelength [nats]``, ``nats per example`` and ``regret [nats]`` (to fixed share)."""
    df = gather(results, "regret")
    last = df[df["n"] == df.groupby(["pair", "seed"])["n"].transform("max")].copy()
    classes = {(r.pair, r.seed): r.num_classes for r in results}
    last.insert(3, "num_classes", [classes[(p, s)] for p, s in zip(last["pair"], last["seed"])])
    last["nats per example"] = last["codelength [nats]"] / last["n"]
    return last.reset_index(drop=True)


def spread(df, by: Sequence[str], value: str):
    """Mean, std (ddof 1), min, max and count of ``value`` over seeds, per ``by``."""
    return df.groupby(list(by))[value].agg(["mean", "std", "min", "max", "count"]).reset_index()


def pair_task(encoder: str, task_name: str, *, size: int | None = None, split: str = "all"):
    """The task of one (encoder, task) pair: ``encoder="pixels"`` for the raw
    pixels, else an encoder spec such as ``"lite0@32"``
    (:func:`mdlnb.studies.transferability.parse_encoder`) whose frozen
    features (cached) replace the images. ``size``: stratified subsample."""
    task = data.load(task_name, split=split, size=size, seed=0)
    if encoder == "pixels":
        return task
    return encoders.features(build_encoder(parse_encoder(encoder)), task)
