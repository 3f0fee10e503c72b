"""The driver: zoos → features → ground truth → scores → τ, cached per unit of work.

Units of work: one (zoo, task) frozen probe and fine-tuning ground truth (the
latter a committed artifact, :mod:`._groundtruth`), and one (zoo, task, N/K)
set of scores over every checkpoint and subsample (:func:`._unit.score_unit`).
Each finished unit is written atomically to
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

import numpy as np
import pandas as pd

from mdlnb.infra import _progress
from mdlnb.infra._io import atomic_write_text, cache_dir, content_hash
from mdlnb.studies.transferability import _groundtruth
from mdlnb.studies.transferability._config import TransferabilityConfig
from mdlnb.studies.transferability._encoders import build_encoders, encoder_table
from mdlnb.studies.transferability._features import FeatureSet, extract_splits, load_splits
from mdlnb.studies.transferability._finetune import pairs_beyond_noise
from mdlnb.studies.transferability._kendall import kendall_per_repeat, kendall_table
from mdlnb.studies.transferability._result import TransferabilityResult
from mdlnb.studies.transferability._scores import (
    SCORE_COLUMNS,
    add_clid,
    add_combined,
    add_static,
    label_free_scores,
    orient,
    select_grid,
)
from mdlnb.studies.transferability._source import source_label_free, with_source_probs
from mdlnb.studies.transferability._truth import TRUTH_COLUMNS, best_rows, finetune_rows, probe_rows
from mdlnb.studies.transferability._unit import score_unit

CACHE_VERSION = "transferability-units-v2"
#: Config fields a unit's scores depend on (besides its features, labels and the seed).
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
    "repeats",
    "min_n",
)
# Modules that only format or present results: editing them keeps cached units valid.
_PRESENTATION = (
    "api/output.py",
    "api/plots.py",
    "api/_comparison_views.py",
    "infra/_progress.py",
    "research/_paperdiff.py",
    "research/claims.py",
    "research/_verdicts.py",
    "research/manifest.py",
    "tools/runner/__init__.py",
    "tools/runner/__main__.py",
    "tools/runner/_cli.py",
    "tools/runner/_execute.py",
    "tools/runner/_paths.py",
    "tools/runner/_summary.py",
    "tools/runner/_types.py",
    "tools/cli.py",
    "tools/_cli_cache.py",
    "tools/_cli_evaluate.py",
    "tools/_cli_options.py",
    "tools/_cli_switch.py",
    "studies/transferability/_claims.py",
    "studies/transferability/_result.py",
    "studies/transferability/_kendall.py",
    "studies/transferability/_run.py",
    "studies/transferability/_tables.py",
    "studies/transferability/_bootstrap.py",
    "studies/transferability/_power.py",
    "studies/transferability/_figures.py",
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


def _zoo_sets(featuresets: Sequence[FeatureSet], config: TransferabilityConfig):
    """``[(zoo, task, [FeatureSet in the zoo's order])]``."""
    by = {(fs.encoder, fs.task): fs for fs in featuresets}
    return [
        (zoo, task, [by[(e, task)] for e in names])
        for zoo, names in config.zoos().items()
        for task in config.tasks
    ]


def ground_truth(
    featuresets,
    built,
    splits,
    config: TransferabilityConfig,
    *,
    progress: bool = False,
    cache: bool = True,
    build: bool = False,
):
    """``(truth, noise)``: the frozen-probe, fine-tuning and best rows of every
    (zoo, encoder, task) (:data:`TRUTH_COLUMNS`), and per (zoo, task) how many
    checkpoint pairs differ in fine-tuned test accuracy beyond binomial noise
    (:func:`._finetune.pairs_beyond_noise`)."""
    spec = config.finetune_spec()
    rows, noise = [], []
    for zoo, task, fsets in _zoo_sets(featuresets, config):
        names = [fs.encoder for fs in fsets]
        key = content_hash(
            CACHE_VERSION,
            code_fingerprint(),
            "probe",
            zoo,
            [(fs.train.x, fs.val.x, fs.test.x) for fs in fsets],
            fsets[0].train.y,
            fsets[0].val.y,
            fsets[0].test.y,
            config.probe_beta_factors,
        )
        rows += _unit(
            "probe",
            key,
            lambda z=zoo, f=fsets: probe_rows(z, f, beta_factors=config.probe_beta_factors),
            cache,
        )
        arrays, _ = _groundtruth.ground_truth(
            zoo,
            task,
            names,
            [built[n] for n in names],
            splits[task],
            spec,
            build=build,
            progress=progress,
        )
        rows += finetune_rows(zoo, task, names, arrays, spec.learning_rates)
        sep, pairs = pairs_beyond_noise(arrays["test_correct"])
        noise.append(
            {
                "zoo": zoo,
                "task": task,
                "checkpoints": len(names),
                "test_size": int(arrays["test_correct"].shape[1]),
                "pairs": pairs,
                "beyond_noise": sep,
                "fraction": sep / pairs if pairs else np.nan,
            }
        )
    rows += best_rows(rows)
    return pd.DataFrame(rows, columns=TRUTH_COLUMNS), pd.DataFrame(noise)


def score_units(
    featuresets, config: TransferabilityConfig, *, progress: bool = False, cache: bool = True
):
    """``(scores, grid, seconds)``: every zoo's checkpoints scored on every subsample,
    one cached unit per (zoo, task, N/K) (:func:`._unit.score_unit`)."""
    fields = {f: getattr(config, f) for f in SCORE_FIELDS}
    jobs = [(z, t, f, r) for z, t, f in _zoo_sets(featuresets, config) for r in config.ratios]
    bar = _progress.bar(total=len(jobs), desc="scores", unit="unit") if progress else None
    rows, grows, seconds = [], [], {}
    for zoo, task, fsets, ratio in jobs:
        key = content_hash(
            CACHE_VERSION,
            code_fingerprint(),
            zoo,
            int(ratio),
            config.seed,
            [(fs.encoder, fs.train.x, fs.source_probs) for fs in fsets],
            fsets[0].train.y,
            fsets[0].train.num_classes,
            fields,
        )
        unit = _unit("scores", key, lambda f=fsets, r=ratio: score_unit(f, r, config), cache)
        head = dict(zoo=zoo, task=task, ratio=int(ratio))
        rows += [
            {**head, "encoder": e, "repeat": rep, "n": n, "metric": m, "value": v}
            for e, rep, n, m, v in unit["scores"]
        ]
        grows += [
            {**head, "encoder": e, "repeat": rep, "n": n, "metric": m, "knob": kn, "value": v}
            for e, rep, n, m, kn, v in unit["grid"]
        ]
        for k, v in unit["seconds"].items():
            seconds[k] = seconds.get(k, 0.0) + v
        if bar is not None:
            bar.update()
    if bar is not None:
        bar.close()
    cols = ["zoo", *SCORE_COLUMNS]
    return (
        pd.DataFrame(rows, columns=cols),
        pd.DataFrame(grows, columns=cols[:-1] + ["knob", "value"]),
        seconds,
    )


def full_label_free(featuresets, config: TransferabilityConfig, *, cache: bool = True):
    """CL, TwoNN ID and RankMe of every checkpoint on each task's whole training split,
    and CLID across each zoo's checkpoints (CLID Table 2 computes them on the data)."""
    rows = []
    for zoo, task, fsets in _zoo_sets(featuresets, config):
        key = content_hash(
            CACHE_VERSION,
            code_fingerprint(),
            "labelfree",
            zoo,
            config.seed,
            [fs.train.x for fs in fsets],
        )
        vals = _unit(
            "labelfree",
            key,
            lambda f=fsets: [label_free_scores(fs.train.x, seed=config.seed) for fs in f],
            cache,
        )
        for fs, v in zip(fsets, vals):
            rows += [
                dict(
                    zoo=zoo,
                    encoder=fs.encoder,
                    task=task,
                    ratio=0,
                    n=fs.train.n,
                    repeat=0,
                    metric=m,
                    value=x,
                )
                for m, x in v.items()
            ]
    return add_clid(pd.DataFrame(rows, columns=["zoo", *SCORE_COLUMNS]))


def _source_scores(built, config: TransferabilityConfig, *, cache: bool = True):
    """:func:`._source.source_label_free` of the largest zoo without a published source
    classifier (the self-pretrained one), cached."""
    zoos = {z: n for z, n in config.zoos().items() if z != "lite"}
    if not zoos or not config.label_free:
        return pd.DataFrame(columns=["encoder", "metric", "value", "source_accuracy"])
    names = max(zoos.values(), key=len)
    key = content_hash(
        CACHE_VERSION,
        code_fingerprint(),
        "source",
        config.source_data,
        config.source_size,
        config.seed,
        [built[n].fingerprint() for n in names],
    )
    rows = _unit(
        "source",
        key,
        lambda: source_label_free(
            built, names, data_name=config.source_data, size=config.source_size, seed=config.seed
        ).to_dict("records"),
        cache,
    )
    return pd.DataFrame(rows, columns=["encoder", "metric", "value", "source_accuracy"])


def run(
    config: TransferabilityConfig | None = None, *, progress: bool | None = None, cache: bool = True
) -> TransferabilityResult:
    """Build the zoos, extract features, compute ground truth, scores and τ (``config``
    defaults to ``TransferabilityConfig()``), each finished unit kept on disk."""
    progress = _progress.wanted(progress)  # None (default): a bar when interactive
    config = TransferabilityConfig.checked(config)
    t0 = time.perf_counter()
    specs, built = build_encoders(config, progress=progress)
    seconds = {"encoders": time.perf_counter() - t0}
    t0 = time.perf_counter()
    splits = load_splits(
        config.tasks,
        train_size=config.train_size,
        val_size=config.val_size,
        test_size=config.test_size,
        seed=config.seed,
    )
    feats = extract_splits(built, splits, progress=progress)
    feats = with_source_probs(
        feats, built, data_name=config.source_data, size=config.source_size, seed=config.seed
    )
    seconds["features"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    truth, noise = ground_truth(feats, built, splits, config, progress=progress, cache=cache)
    seconds["ground_truth"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    scores, grid, parts = score_units(feats, config, progress=progress, cache=cache)
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
    seconds.update({f"scores: {k} (recorded)": v for k, v in parts.items()})
    full = orient(full_label_free(feats, config, cache=cache)) if config.label_free else None
    source = _source_scores(built, config, cache=cache)
    per_repeat = kendall_per_repeat(scores, truth, readout=config.truth)
    return TransferabilityResult(
        config=config,
        scores=scores,
        grid_choice=choice,
        truth=truth,
        tau=kendall_table(scores, truth, readout=config.truth),
        per_repeat=per_repeat,
        noise=noise,
        full_label_free=full,
        source=source,
        encoders=encoder_table(specs, built),
        seconds={k: round(v, 2) for k, v in seconds.items()},
    )
