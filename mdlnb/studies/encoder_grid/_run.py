"""The driver: encoders → features → one unit of work per (encoder, task) pair → result.

Each pair is independent. Its measurements (:func:`._pair.compute_pair`)
are written atomically to ``cache_dir("studies/encoders")`` as one JSON file
named by a hash of everything that decides them — the pair's train and test
features and labels, the config fields a pair reads, :data:`CACHE_VERSION`
and stage 1's ``CODE_VERSION`` — so a killed run resumes without redoing
finished pairs, and the three notebooks that read this study share one computation.
Stage-1 loss matrices, encoders and features have their own caches. Pairs
run in ``config.workers`` processes (spawned; default 2; 1 = in process) under
one progress bar.

Where stage 1 runs. On a CPU each worker process is given its own share of
the cores (:func:`worker_cores`: one core each on the 2-core machine), so
XLA runs one compute thread per core instead of two threads per process
fighting over both; the losses are the same bits (a stream's arithmetic does
not depend on the thread count, ``tests/test_streams.py``) and the block
layout, which follows the process's cores, stays the 2-core one there. A
pair's orders are one batch of streams (:func:`mdlnb.prequential.run_streams`).
On an accelerator (whose default layout stacks streams) stage 1 of every
pair still to compute runs first, in this process, as one batch — the
streams of each shape bucket stacked into one compiled program — and the
pairs then read their loss matrices from it.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import re
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any

import pandas as pd

from mdlnb import data, prequential
from mdlnb.board._arguments import resolve_protocol
from mdlnb.encoders.archs import param_count
from mdlnb.infra import _progress
from mdlnb.infra._io import atomic_write_text, cache_dir, content_hash
from mdlnb.prequential import CODE_VERSION
from mdlnb.studies.encoder_grid._config import EncodersConfig, describe_encoder
from mdlnb.studies.encoder_grid._pair import compute_pair
from mdlnb.studies.encoder_grid._result import EncodersResult
from mdlnb.studies.transferability._features import prepare

CACHE_VERSION = "encoders-pair-v1"
#: Config fields a pair's measurements depend on (besides its features and labels).
PAIR_FIELDS = (
    "protocol",
    "seeds",
    "probe_readouts",
    "probe_grid",
    "probe_steps",
    "probe_batch_size",
    "posterior_bins",
    "seed",
)
FRAME_COLUMNS = [
    "encoder",
    "architecture",
    "objective",
    "size",
    "task",
    "group",
    "metric",
    "value",
    "seed",
]


def pair_key(train: Any, test: Any, config: EncodersConfig) -> str:
    """Hash of the pair's data and the config fields it reads."""
    plan = resolve_protocol(config.protocol)
    fields = {f: getattr(config, f) for f in PAIR_FIELDS if f != "protocol"}
    proto = {k: v for k, v in plan.stage1().items() if k != "seed"}
    proto["strategy"] = plan.to_dict()["strategy"]
    return content_hash(
        CACHE_VERSION,
        CODE_VERSION,
        train.x,
        train.y,
        test.x,
        test.y,
        train.num_classes,
        json.dumps(fields, sort_keys=True, default=str),
        json.dumps(proto, sort_keys=True, default=str),
    )


def pair_path(encoder: str, task: str, key: str):
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{encoder}-{task}")
    return (
        cache_dir("studies/encoders") / f"pair-{safe}-{key}.json"
    )  # the name before the rename: caches stay valid


def _work(
    train: Any, test: Any, config: EncodersConfig, path: str | None, cache: bool, losses: Any = None
) -> dict[str, Any]:
    """Compute one pair and (if ``path``) write it atomically; runs in a worker process."""
    out = compute_pair(train, test, config, cache=cache, losses=losses)
    if path is not None:
        atomic_write_text(path, json.dumps(out))
    return out


def worker_cores(workers: int, cores: Sequence[int] | None = None) -> list[list[int]]:
    """The cores each of ``workers`` processes runs on: ``cores`` (default the
    process's affinity mask) dealt out in turn, ``cores[i::workers]`` for worker
    ``i`` (each core to one worker; with more workers than cores, cores are shared
    round the ring)."""
    if cores is None:
        cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    cores = list(cores)
    if not cores:
        return [[] for _ in range(workers)]
    if workers > len(cores):
        return [[cores[i % len(cores)]] for i in range(workers)]
    return [cores[i::workers] for i in range(workers)]


def _take_cores(counter: Any, shares: list[list[int]]) -> None:
    """Worker initializer: pin this process to the next share of :func:`worker_cores`
    (before it imports JAX, whose CPU thread pool follows the affinity mask)."""
    with counter.get_lock():
        i = counter.value
        counter.value += 1
    share = shares[i % len(shares)]
    if share and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, share)


def pool(workers: int, *, pin: bool | None = None) -> ProcessPoolExecutor:
    """``workers`` spawned processes; with ``pin`` (default: on a CPU), each on its own
    share of the cores (:func:`worker_cores`)."""
    ctx = mp.get_context("spawn")
    if pin is None:
        pin = prequential.default_layout() == "sequential"  # a CPU (no stacked streams)
    if not pin:
        return ProcessPoolExecutor(int(workers), mp_context=ctx)
    return ProcessPoolExecutor(
        int(workers),
        mp_context=ctx,
        initializer=_take_cores,
        initargs=(ctx.Value("i", 0), worker_cores(int(workers))),
    )


def _stage1_batch(todo, config: EncodersConfig, cache: bool, progress: bool | None):
    """``{(encoder, task): [loss matrix per seed]}`` of the pairs ``todo``, stage 1 of
    all of them as one batch of streams (an accelerator's stacked layout)."""
    seeds = [int(s) for s in config.seeds]
    lms = prequential.run_streams(
        [(fs.train, s) for fs, _ in todo for s in seeds],
        protocol=resolve_protocol(config.protocol),
        cache=cache,
        progress=progress,
    )
    return {
        (fs.encoder, fs.task): lms[k * len(seeds) : (k + 1) * len(seeds)]
        for k, (fs, _) in enumerate(todo)
    }


def run_pairs(
    featuresets: Sequence[Any],
    config: EncodersConfig,
    *,
    progress: bool | None = None,
    cache: bool = True,
) -> dict[tuple[str, str], dict[str, Any]]:
    """``{(encoder, task): measurements}``, finished pairs read from disk, the rest computed.
    ``progress``: a bar over pairs (:func:`mdlnb.infra._progress.wanted`: ``None``, the
    default, draws one where someone watches; one summary line in batch mode)."""
    done: dict[tuple[str, str], dict[str, Any]] = {}
    todo = []
    for fs in featuresets:
        path = pair_path(fs.encoder, fs.task, pair_key(fs.train, fs.test, config))
        if cache and path.exists():
            done[(fs.encoder, fs.task)] = {**json.loads(path.read_text()), "cached": True}
        else:
            todo.append((fs, str(path) if cache else None))
    losses: dict = {}
    if len(todo) > 1 and prequential.default_layout() == "stacked":
        losses = _stage1_batch(todo, config, cache, progress)  # then the pairs in process
    bar = None
    if _progress.wanted(progress):
        bar = _progress.bar(
            total=len(featuresets), initial=len(done), desc="encoder × task pairs", unit="pair"
        )
    if config.workers == 1 or len(todo) <= 1 or losses:
        for fs, path in todo:
            done[(fs.encoder, fs.task)] = {
                **_work(fs.train, fs.test, config, path, cache, losses.get((fs.encoder, fs.task))),
                "cached": False,
            }
            if bar is not None:
                bar.update(1)
    else:
        with pool(int(config.workers)) as ex:
            futs = {
                ex.submit(_work, fs.train, fs.test, config, path, cache): fs for fs, path in todo
            }
            for f in as_completed(futs):
                fs = futs[f]
                done[(fs.encoder, fs.task)] = {**f.result(), "cached": False}
                if bar is not None:
                    bar.update(1)
    if bar is not None:
        bar.close()
    return done


def _param_count(encoder: Any) -> int:
    """Encoder parameters, a source classifier head excluded."""
    params = encoder.params
    head = params.get("classifier") if isinstance(params, dict) else None
    return int(param_count(params) - (param_count(head) if head is not None else 0))


def encoder_table(config: EncodersConfig, built: dict[str, Any]):
    """One row per encoder: architecture, objective, size, parameters, feature_dim,
    pretraining steps and final pretraining loss."""
    rows = []
    for e in config.encoders:
        enc = built[e]
        m = dict(enc.meta)
        rows.append(
            {
                "encoder": e,
                **describe_encoder(e),
                "parameters": _param_count(enc),
                "feature_dim": int(enc.feature_dim),
                "pretrain_steps": int(m.get("steps", 0)),
                "final_loss": m.get("final_loss"),
            }
        )
    return pd.DataFrame(rows)


def to_frames(config: EncodersConfig, pairs: dict[tuple[str, str], dict[str, Any]]):
    """(frame, posterior, curves): the tidy frame of FRAME_COLUMNS and the compact traces."""
    group = {t: data.spec(t).group for t in config.tasks}
    rows, post, curve = [], [], []
    for e in config.encoders:
        desc = describe_encoder(e)
        for t in config.tasks:
            p = pairs[(e, t)]
            key = {"encoder": e, **desc, "task": t, "group": group[t]}
            rows += [
                {**key, "metric": m, "value": float(v), "seed": int(s)} for s, m, v in p["rows"]
            ]
            post += [
                {
                    "encoder": e,
                    "task": t,
                    "group": group[t],
                    "seed": s,
                    "t_start": a,
                    "t_end": b,
                    "readout": r,
                    "probability": v,
                }
                for s, a, b, r, v in p["posterior"]
            ]
            curve += [
                {"encoder": e, "task": t, "seed": s, "n": n, "cumulative [nats]": v}
                for s, n, v in p["curve"]
            ]
    frame = pd.DataFrame(rows, columns=FRAME_COLUMNS)
    return frame, pd.DataFrame(post), pd.DataFrame(curve)


def run(config: EncodersConfig | None = None, *, progress: bool | None = None, cache: bool = True):
    """Build (or load) the encoders, extract features, measure every pair, and
    return an :class:`EncodersResult` (``config`` defaults to ``EncodersConfig()``).

    ``seconds`` in the result: wall time of this call per stage
    (``pretraining``, ``features``, ``pairs``) and the computing time recorded
    by the pairs themselves (``mdl``: stage 1 + 2 over all orders,
    ``accuracy``: the App. A.4 search), summed over pairs whether they were
    computed now or read from the cache.
    """
    progress = _progress.wanted(progress)  # None (default): a bar when interactive
    config = EncodersConfig.checked(config)
    inputs = prepare(config, progress=progress, feature_progress=False)
    seconds = {"pretraining": inputs.encoder_seconds, "features": inputs.feature_seconds}
    t0 = time.perf_counter()
    pairs = run_pairs(inputs.features, config, progress=progress, cache=cache)
    seconds["pairs"] = time.perf_counter() - t0
    seconds["mdl (recorded)"] = sum(p["seconds"]["mdl"] for p in pairs.values())
    seconds["accuracy (recorded)"] = sum(p["seconds"]["accuracy"] for p in pairs.values())
    frame, posterior, curves = to_frames(config, pairs)
    return EncodersResult(
        config=config,
        frame=frame,
        posterior=posterior,
        curves=curves,
        encoders=encoder_table(config, inputs.built),
        sizes={t: int(inputs.tasks[t][0].n) for t in config.tasks},
        cached_pairs=sum(p["cached"] for p in pairs.values()),
        seconds={k: round(v, 2) for k, v in seconds.items()},
    )
