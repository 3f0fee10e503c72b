"""The driver: encoders → features → ground truth → scores → τ, cached per unit of work.

Units of work are one (encoder, task) ground truth and one (encoder, task,
ratio, repeat) set of scores. Each finished unit is written atomically to
``cache_dir("studies/transferability")`` under a hash of everything that
decides it — its input features and labels, the config fields it reads, the
seed, :data:`CACHE_VERSION` and a fingerprint of the library's source — so an
interrupted run resumes where it stopped, a rerun of the same notebook costs
seconds, and a change to any metric's code recomputes everything. Encoders
and features have their own caches (:mod:`mdlnb.encoders`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from mdlnb import _progress
from mdlnb._io import atomic_write_text, cache_dir, content_hash
from mdlnb.studies.transferability._config import TransferabilityConfig
from mdlnb.studies.transferability._encoders import encoder_table
from mdlnb.studies.transferability._features import FeatureSet, prepare
from mdlnb.studies.transferability._kendall import kendall_table
from mdlnb.studies.transferability._result import TransferabilityResult
from mdlnb.studies.transferability._scores import (
    SCORE_COLUMNS,
    add_clid,
    add_combined,
    add_static,
    orient,
    score_subsample,
    select_grid,
)
from mdlnb.studies.transferability._subsamples import subsample_indices, subsample_seed
from mdlnb.studies.transferability._truth import TRUTH_COLUMNS, truth_rows

CACHE_VERSION = "transferability-units-v1"
#: Config fields a subsample's scores depend on (besides its features and the seed).
SCORE_FIELDS = (
    "metrics",
    "nleep_components",
    "grid_metrics",
    "linear_beta_factors",
    "label_free",
    "mdl",
    "mdl_experts",
    "mdl_batch_size",
    "mdl_m",
    "mdl_standardize",
)
# Modules that only format or present results: editing them keeps cached units valid.
_PRESENTATION = (
    "report.py",
    "plots.py",
    "runner/__init__.py",
    "runner/__main__.py",
    "runner/_cli.py",
    "runner/_execute.py",
    "runner/_paths.py",
    "runner/_summary.py",
    "runner/_types.py",
    "cli.py",
    "_paperdiff.py",
    "_progress.py",
    "claims.py",
    "manifest.py",
    "studies/transferability/_claims.py",
    "studies/transferability/_result.py",
    "studies/transferability/_kendall.py",
    "studies/transferability/_run.py",
)


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """SHA-256 (16 hex) of the source of every ``mdlnb`` module that computes numbers."""
    root = Path(__file__).resolve().parents[2]
    h = hashlib.sha256()
    for p in sorted(root.rglob("*.py")):
        rel = p.relative_to(root).as_posix()
        if rel not in _PRESENTATION:
            h.update(rel.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def _unit(kind: str, key: str, compute: Callable[[], Any], cache: bool) -> Any:
    """JSON value of one unit of work: read from the cache, or computed and written."""
    if not cache:
        return compute()
    path = cache_dir("studies/transferability") / f"{kind}-{key}.json"
    if path.exists():
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            pass
    value = compute()
    atomic_write_text(path, json.dumps(value))
    return value


def _bar(total: int, progress: bool, desc: str):
    if not progress:
        return None
    return _progress.bar(total=total, desc=desc, unit="unit")


def ground_truth_cached(
    featuresets: Sequence[FeatureSet],
    config: TransferabilityConfig,
    *,
    progress: bool = False,
    cache: bool = True,
):
    """:func:`ground_truth` of every (encoder, task) with ``config``'s probe, one cached
    unit per pair."""
    kw = dict(
        readouts=config.truth_readouts,
        grid=config.truth_grid,
        steps=config.truth_steps,
        batch_size=config.truth_batch_size,
        seed=config.seed,
    )
    bar, rows = _bar(len(featuresets), progress, "ground truth"), []
    for fs in featuresets:
        key = content_hash(
            CACHE_VERSION,
            code_fingerprint(),
            fs.encoder,
            fs.task,
            fs.train.x,
            fs.train.y,
            fs.test.x,
            fs.test.y,
            kw,
        )
        rows += _unit("truth", key, lambda fs=fs: truth_rows(fs, **kw), cache)
        if bar is not None:
            bar.update()
    if bar is not None:
        bar.close()
    return pd.DataFrame(rows, columns=TRUTH_COLUMNS)


def score_subsamples(
    featuresets: Sequence[FeatureSet],
    config: TransferabilityConfig,
    *,
    progress: bool = False,
    cache: bool = False,
):
    """Score every (encoder, task) on every subsample of the protocol.

    Returns ``(scores, grid)``: tidy DataFrames with columns ``encoder``,
    ``task``, ``ratio``, ``n``, ``repeat``, ``metric``, ``value`` (and ``knob``
    in ``grid``). Subsample indices come from :func:`subsample_indices`, the
    same for every encoder of a task; ``cache`` keeps one unit per subsample.
    """
    fields = {f: getattr(config, f) for f in SCORE_FIELDS}
    jobs = [
        (fs, r, rep) for fs in featuresets for r in config.ratios for rep in range(config.repeats)
    ]
    bar, rows, grows = _bar(len(jobs), progress, "scores"), [], []
    for fs, ratio, rep in jobs:
        idx = subsample_indices(
            fs.train.y,
            ratio,
            fs.train.num_classes,
            min_n=config.min_n,
            seed=config.seed,
            repeat=rep,
        )
        seed = subsample_seed(config.seed, ratio, rep)
        sp = None if fs.source_probs is None else fs.source_probs[idx]
        key = content_hash(
            CACHE_VERSION,
            code_fingerprint(),
            fs.train.x[idx],
            fs.train.y[idx],
            fs.train.num_classes,
            sp,
            fields,
            seed,
        )

        def compute(fs=fs, idx=idx, seed=seed):
            vals, grid = score_subsample(fs, idx, config, seed=seed)
            return {"scores": vals, "grid": [[m, kn, v] for (m, kn), v in grid.items()]}

        unit = _unit("scores", key, compute, cache)
        head = dict(encoder=fs.encoder, task=fs.task, ratio=int(ratio), n=len(idx), repeat=rep)
        rows += [{**head, "metric": m, "value": v} for m, v in unit["scores"].items()]
        grows += [{**head, "metric": m, "knob": kn, "value": v} for m, kn, v in unit["grid"]]
        if bar is not None:
            bar.update()
    if bar is not None:
        bar.close()
    cols = SCORE_COLUMNS[:-1]
    return (
        pd.DataFrame(rows, columns=SCORE_COLUMNS),
        pd.DataFrame(grows, columns=cols + ["knob", "value"]),
    )


def run(
    config: TransferabilityConfig | None = None, *, progress: bool | None = None, cache: bool = True
) -> TransferabilityResult:
    """Build encoders, extract features, compute ground truth, scores and τ
    (``config`` defaults to ``TransferabilityConfig()``). With ``cache`` every
    finished unit of work is kept on disk and reused (module docstring)."""
    progress = _progress.wanted(progress)  # None (default): a bar when interactive
    config = TransferabilityConfig.checked(config)
    inputs = prepare(config, progress=progress, feature_progress=progress)
    feats, built = inputs.features, inputs.built
    seconds = {"encoders": inputs.encoder_seconds, "features": inputs.feature_seconds}
    t0 = time.perf_counter()
    truth = ground_truth_cached(feats, config, progress=progress, cache=cache)
    seconds["ground_truth"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    scores, grid = score_subsamples(feats, config, progress=progress, cache=cache)
    choice = None
    if config.grid_metrics:
        extra, choice = select_grid(grid, scores)
        scores = pd.concat([scores, extra], ignore_index=True)
    scores = add_combined(scores)
    if config.label_free:
        scores = add_clid(scores)
    if config.static:
        scores = add_static(scores, built)
    scores = orient(scores)
    seconds["scores"] = time.perf_counter() - t0

    tau = kendall_table(scores, truth, readout=config.truth)
    return TransferabilityResult(
        config=config,
        scores=scores,
        grid_choice=choice,
        truth=truth,
        tau=tau,
        encoders=encoder_table(inputs.specs, built),
        seconds={k: round(v, 2) for k, v in seconds.items()},
    )
