"""The shift study's driver: draws → encoder features → one unit of work per
(task, draw, encoder): the four streams of :mod:`._split` coded by stage 1 + 2.

A unit's numbers (codelengths, the cumulative code along the stream) are written
atomically to ``cache_dir("studies/shift")`` as one JSON file named by a hash of
everything that decides them — the draw's features and labels, the streams'
indices, the protocol, :data:`CACHE_VERSION` and stage 1's ``CODE_VERSION`` — so a
killed run resumes without redoing finished units. Stage-1 loss matrices, encoders
and features have their own caches.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import numpy as np
import pandas as pd

from mdlnb import data, encoders, prequential
from mdlnb.api.evaluation import Report
from mdlnb.board._arguments import resolve_protocol
from mdlnb.infra import _progress
from mdlnb.infra._io import atomic_write_text, cache_dir, content_hash
from mdlnb.prequential import CODE_VERSION
from mdlnb.studies.encoder_grid._run import encoder_table
from mdlnb.studies.shift._config import ShiftConfig
from mdlnb.studies.shift._result import ShiftResult
from mdlnb.studies.shift._split import (
    STREAMS,
    data_seed,
    in_stream_order,
    nuisance,
    parse_shift,
    shifted_split,
    streams,
)
from mdlnb.studies.transferability import build_encoder, parse_encoder

CACHE_VERSION = "shift-unit-v1"
RUN_COLUMNS = [
    "task",
    "factor",
    "seed",
    "encoder",
    "stream",
    "n",
    "num_classes",
    "from train split",
    "codelength [nats]",
    "per example [nats]",
]


def draw(entry: str, seed: int, config: ShiftConfig):
    """(pool, streams, A): the ``2N`` images of draw ``seed`` of ``entry``'s task, the
    index sequence of every stream (:func:`._split.streams`) and the original train
    split A; the split and the reshuffle are seeded by the draw's generator seed."""
    name, factor = parse_shift(entry)
    n, s = int(config.size), data_seed(name, seed)
    pool = data.load(name, split="train", seed=s, n_train=2 * n, n_test=1)
    a, b = shifted_split(nuisance(pool, factor), n, config.shift, s)
    return pool, streams(a, b, s), a


def stream_task(features: Any, stream: str, idx: np.ndarray, seed: int):
    """The features task stage 1 codes for one stream: ``train then test`` keeps its
    order (:func:`._split.in_stream_order`); the others are coded in stage 1's order."""
    t = features.take(idx)
    return in_stream_order(t, seed) if stream == "train then test" else t


def code_unit(
    features: Any,
    seqs: dict[str, np.ndarray],
    train_split: np.ndarray,
    config: ShiftConfig,
    seed: int,
    *,
    cache: bool = True,
) -> dict[str, Any]:
    """Stage 1 + 2 of every stream on one encoder's features of one draw: per stream the
    codelength (nats) and the cumulative codelength at ``config.points`` positions."""
    plan = resolve_protocol(config.protocol)
    t0 = time.perf_counter()
    runs, curve = [], []
    for stream in STREAMS:
        idx = seqs[stream]
        lm = prequential.run(
            stream_task(features, stream, idx, seed),
            protocol=plan,
            seed=int(seed),
            progress=False,
            cache=cache,
        )
        rep = Report.from_losses(lm, warn=False)
        cum = np.cumsum(np.asarray(rep.per_step_nats, np.float64))
        at = np.unique(np.linspace(1, len(cum), int(config.points)).round().astype(int))
        runs.append(
            (stream, int(len(idx)), int(np.isin(idx, train_split).sum()), float(rep.total_nats))
        )
        curve += [(stream, int(k), float(cum[k - 1])) for k in at]
    return {"runs": runs, "curve": curve, "seconds": round(time.perf_counter() - t0, 3)}


def unit_key(features: Any, seqs: dict[str, np.ndarray], config: ShiftConfig, seed: int) -> str:
    """Hash of the unit's features, labels, streams, seed and protocol."""
    plan = resolve_protocol(config.protocol)
    proto = {k: v for k, v in plan.stage1().items() if k != "seed"}
    proto["strategy"] = plan.to_dict()["strategy"]
    return content_hash(
        CACHE_VERSION,
        CODE_VERSION,
        features.x,
        features.y,
        *(seqs[s] for s in STREAMS),
        int(seed),
        int(config.points),
        json.dumps(proto, sort_keys=True, default=str),
    )


def unit_path(entry: str, seed: int, encoder: str, key: str):
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{entry}-{seed}-{encoder}")
    return cache_dir("studies/shift") / f"unit-{safe}-{key}.json"


def _frames(
    config: ShiftConfig, units: dict[tuple[str, int, str], dict[str, Any]], classes: dict[str, int]
):
    rows, curve = [], []
    for (entry, seed, enc), u in units.items():
        task, factor = parse_shift(entry)
        key = {"task": task, "factor": factor, "seed": seed, "encoder": enc}
        for stream, n, from_a, nats in u["runs"]:
            rows.append(
                {
                    **key,
                    "stream": stream,
                    "n": n,
                    "num_classes": classes[entry],
                    "from train split": from_a,
                    "codelength [nats]": nats,
                    "per example [nats]": nats / n,
                }
            )
        curve += [{**key, "stream": s, "n": k, "cumulative [nats]": v} for s, k, v in u["curve"]]
    return pd.DataFrame(rows, columns=RUN_COLUMNS), pd.DataFrame(curve)


def run(config: ShiftConfig | None = None, *, progress: bool | None = None, cache: bool = True):
    """Every (task, draw, encoder) unit of ``config`` (default :class:`ShiftConfig`'s CPU
    run), finished units read from the cache; returns a :class:`ShiftResult`."""
    config = ShiftConfig.checked(config)
    progress = _progress.wanted(progress)
    t0 = time.perf_counter()
    built = {e: build_encoder(parse_encoder(e)) for e in config.encoders}
    total = len(config.tasks) * len(config.seeds) * len(config.encoders)
    bar = (
        _progress.bar(total=total, desc="task × draw × encoder", unit="unit") if progress else None
    )
    units, classes, cached = {}, {}, 0
    for entry in config.tasks:
        for seed in config.seeds:
            pool, seqs, a = draw(entry, int(seed), config)
            classes[entry] = int(pool.num_classes)
            for e, enc in built.items():
                feats = encoders.features(enc, pool, cache=cache)
                path = unit_path(entry, int(seed), e, unit_key(feats, seqs, config, int(seed)))
                if cache and path.exists():
                    units[(entry, int(seed), e)] = json.loads(path.read_text())
                    cached += 1
                else:
                    u = code_unit(feats, seqs, a, config, int(seed), cache=cache)
                    if cache:
                        atomic_write_text(path, json.dumps(u))
                    units[(entry, int(seed), e)] = u
                if bar is not None:
                    bar.update(1)
    if bar is not None:
        bar.close()
    runs, curves = _frames(config, units, classes)
    return ShiftResult(
        config=config,
        runs=runs,
        curves=curves,
        encoders=encoder_table(config, built),
        cached_units=cached,
        seconds=round(time.perf_counter() - t0, 2),
    )
