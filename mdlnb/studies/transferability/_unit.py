"""One unit of scoring: every checkpoint of one zoo on every subsample of one (task, N/K).

Per subsample (PACTran Sec. 4.1.4: N = max(ratio·K, min_n) examples, stratified,
the same for every checkpoint) and checkpoint: every registered metric of
:data:`mdlnb.baselines.transfer.METRICS` that is not a softmax fit, the NCTI and ETran
terms, the label-free CL / TwoNN ID / RankMe and the MDL-switching codelength
(:mod:`._scores`). The metrics that are softmax fits — LINEAR (β = N),
LINEAR-VALID, PT-Gauss (β = 10N, σ0² = 100/D) and the PT-Gauss and LINEAR
grids — are computed for all checkpoints and all subsamples of the unit
together (:func:`mdlnb.baselines.transfer._batched.linear_metrics`: one compiled L-BFGS
program for every fit of one shape), not one scipy fit at a time.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from mdlnb.baselines import transfer
from mdlnb.baselines.transfer._batched import linear_metrics
from mdlnb.studies.transferability._scores import (
    COMBINED,
    combined_terms,
    label_free_scores,
    mdl_score,
    nleep_kwargs,
    or_nan,
    registry_metrics,
)
from mdlnb.studies.transferability._subsamples import subsample_indices, subsample_seed

#: Registry metrics computed by the batched fits rather than one scipy fit each.
FIT_METRICS = ("pactran_gaussian", "linear", "linear_valid")


def subsamples(
    labels: Any, num_classes: int, ratio: int, config: Any
) -> list[tuple[np.ndarray, int]]:
    """``[(indices, seed)]`` of the unit's repeats (the same for every checkpoint)."""
    return [
        (
            subsample_indices(
                labels, ratio, num_classes, min_n=config.min_n, seed=config.seed, repeat=rep
            ),
            subsample_seed(config.seed, ratio, rep),
        )
        for rep in range(config.repeats)
    ]


def _registry_scores(f, y, sp, k: int, metrics: list, seed: int, config: Any) -> dict:
    """:func:`mdlnb.baselines.transfer.score_all` of ``metrics``; if one of them refuses the
    features (a ``ValueError``: e.g. SFDA's zero within-class covariance when the
    subsample's features are all zero, as EfficientNet-Lite's at 32 px can be), each
    metric alone, the refusing ones NaN (τ leaves a NaN checkpoint out)."""
    if not metrics:
        return {}
    try:
        return transfer.score_all(
            f, y, sp, num_classes=k, metrics=metrics, seed=seed, **nleep_kwargs(config, metrics)
        )
    except ValueError:
        pass
    out = {}
    for m in metrics:
        out.update(
            or_nan(
                lambda m=m: transfer.score_all(
                    f, y, sp, num_classes=k, metrics=[m], seed=seed, **nleep_kwargs(config, [m])
                ),
                [m],
            )
        )
    return out


def _per_checkpoint(fs: Any, idx: np.ndarray, seed: int, config: Any) -> tuple[dict, float]:
    """The scores of one checkpoint on one subsample that are not batched fits, and the
    seconds the MDL code took."""
    f, y, k = fs.train.x[idx], fs.train.y[idx], fs.train.num_classes
    sp = None if fs.source_probs is None else fs.source_probs[idx]
    names = registry_metrics(config, sp is not None)
    direct = [m for m in names if m not in COMBINED and m not in FIT_METRICS]
    out = _registry_scores(f, y, sp, k, direct, seed, config)
    out.update(combined_terms(f, y, k, names))
    if config.label_free:
        out.update(label_free_scores(f, seed=seed))
    t0 = time.perf_counter()
    if config.mdl:
        out["mdl"] = mdl_score(
            f,
            y,
            k,
            experts=config.mdl_experts,
            batch_size=config.mdl_batch_size,
            m=config.mdl_m,
            seed=seed,
            standardize=config.mdl_standardize,
        )
    return out, time.perf_counter() - t0


def _batched(
    featuresets: Sequence[Any], subs: list, config: Any, wanted: set[str]
) -> tuple[dict, dict, float]:
    """``({(encoder, repeat): {metric: value}}, {(encoder, repeat): {(metric, knob):
    value}}, seconds)`` of the batched softmax fits."""
    if not wanted and not config.grid_metrics:
        return {}, {}, 0.0
    t0 = time.perf_counter()
    x = np.stack([fs.train.x[idx] for fs in featuresets for idx, _ in subs])
    y = np.stack([fs.train.y[idx] for fs in featuresets for idx, _ in subs])
    seeds = [seed for _ in featuresets for _, seed in subs]
    res = linear_metrics(
        x,
        y,
        num_classes=featuresets[0].train.num_classes,
        valid_seeds=seeds,
        linear_beta_factors=config.linear_beta_factors,
    )
    vals, grid, i = {}, {}, 0
    for fs in featuresets:
        for rep in range(len(subs)):
            vals[(fs.encoder, rep)] = {m: float(res[m][i]) for m in FIT_METRICS if m in wanted}
            g = {}
            if config.grid_metrics:
                for (bf, sf), v in res["pactran_gaussian_grid"].items():
                    g[("pactran_gaussian_grid", f"beta={bf:g}N,sigma0^2={sf:g}/D")] = float(v[i])
                for bf, v in res["linear_grid"].items():
                    g[("linear_grid", f"beta={bf:g}N")] = float(v[i])
            grid[(fs.encoder, rep)] = g
            i += 1
    return vals, grid, time.perf_counter() - t0


def score_unit(featuresets: Sequence[Any], ratio: int, config: Any) -> dict:
    """Scores of one zoo's checkpoints (``featuresets``: one task, one feature size) on
    the ``config.repeats`` subsamples at N/K = ``ratio``. Returns a JSON-able dict:
    ``scores`` rows ``[encoder, repeat, n, metric, value]``, ``grid`` rows ``[encoder,
    repeat, n, metric, knob, value]`` and ``seconds`` per part."""
    first = featuresets[0]
    dims = {fs.train.x.shape[1] for fs in featuresets}
    if len(dims) != 1 or {fs.task for fs in featuresets} != {first.task}:
        raise ValueError(
            f"featuresets: one task and one feature size per unit, got "
            f"{sorted({fs.task for fs in featuresets})} and dimensions {sorted(dims)}"
        )
    subs = subsamples(first.train.y, first.train.num_classes, ratio, config)
    names = registry_metrics(config, True)
    wanted = {m for m in FIT_METRICS if m in names}
    seconds = {"metrics": 0.0, "mdl": 0.0}
    per = {}
    for fs in featuresets:
        for rep, (idx, seed) in enumerate(subs):
            t0 = time.perf_counter()
            per[(fs.encoder, rep)], mdl = _per_checkpoint(fs, idx, seed, config)
            seconds["metrics"] += time.perf_counter() - t0 - mdl
            seconds["mdl"] += mdl
    fits, grid, seconds["fits"] = _batched(featuresets, subs, config, wanted)
    rows, grows = [], []
    for fs in featuresets:
        for rep, (idx, _) in enumerate(subs):
            vals = {**per[(fs.encoder, rep)], **fits.get((fs.encoder, rep), {})}
            rows += [[fs.encoder, rep, len(idx), m, v] for m, v in vals.items()]
            grows += [
                [fs.encoder, rep, len(idx), m, kn, v]
                for (m, kn), v in grid.get((fs.encoder, rep), {}).items()
            ]
    return {"scores": rows, "grid": grows, "seconds": {k: round(v, 3) for k, v in seconds.items()}}
