"""Scores on few-shot subsamples (the pieces), and the table steps that need all encoders.

Per subsample and checkpoint (:mod:`._unit` assembles them): the registered
metrics of :data:`mdlnb.baselines.transfer.METRICS` (:func:`registry_metrics`), NCTI's and
ETran's per-model terms (:func:`combined_terms`), the label-free CL / TwoNN ID /
RankMe (:func:`label_free_scores`) and the MDL-switching codelength (nats per
example, :func:`mdl_score`). Across the encoders of one (zoo, task, ratio,
repeat): the grid knob chosen
by Kendall τ against LINEAR-VALID (:func:`select_grid`, PACTran Sec. 4.1.4)
and CLID's min–max combination (:func:`add_clid`, CLID Sec. 3.5); NCTI's and
ETran's authors' min–max combinations of their per-model terms
(:func:`add_combined`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from mdlnb import prequential, switching
from mdlnb.api.evaluation import Report
from mdlnb.baselines import labelfree, transfer
from mdlnb.baselines.transfer import select_by_kendall
from mdlnb.board import experts as _experts
from mdlnb.core import _standardize
from mdlnb.core._task import Task
from mdlnb.studies.transferability._config import TransferabilityConfig
from mdlnb.studies.transferability._metrics import GMM_METRICS, metric_sign, with_zoo

GROUP = ["zoo", "task", "ratio", "repeat"]
SCORE_COLUMNS = ["encoder", "task", "ratio", "n", "repeat", "metric", "value"]


def label_free_scores(features: Any, *, seed: int = 0) -> dict[str, float]:
    """Cluster learnability (k-means √N clusters, 1-NN, cosine), TwoNN ID and RankMe.

    CL is NaN when a row of ``features`` is all zeros: a zero vector has no cosine
    geometry. It happens with EfficientNet-Lite at 32 px, whose last ReLU6 units mostly
    never fire on images that small (Lite2 on CLEVR: 97 % of the rows); TwoNN ID is NaN
    when fewer than 3 rows are distinct, RankMe when every row is (no spectrum). The
    metrics' τ leave such a checkpoint out
    (:mod:`._kendall`)."""
    f = np.asarray(features)
    dead = not np.all(np.any(f != 0, axis=1))
    distinct = len(np.unique(f, axis=0))  # TwoNN needs 3 distinct rows (its duplicates="unique")
    return {
        "cl": float("nan") if dead else float(labelfree.cluster_learnability(features, int(seed))),
        "twonn_id": float("nan") if distinct < 3 else float(labelfree.twonn_id(features)),
        "rankme": float(labelfree.rankme(features)) if np.any(f != 0) else float("nan"),
    }


def zscore(features: Any) -> np.ndarray:
    """Per-feature (x − mean) / std over the rows given, float32: the library's one
    standardiser, :func:`mdlnb.core._standardize.zscore` (a feature constant up to
    round-off is only centred)."""
    return _standardize.zscore(np.asarray(features))


def mdl_score(
    features: Any,
    labels: Any,
    num_classes: int,
    *,
    experts: str = "small",
    batch_size: int = 4,
    m: float = 11.0,
    seed: int = 0,
    standardize: str = "subsample",
) -> float:
    """MDL-switching codelength (fixed share, α_t = (m−1)/t) in nats per example.

    ``standardize="subsample"`` z-scores the features with the statistics of
    all N inputs before coding (the code is for the labels given the inputs,
    which sender and receiver both hold); ``"online"`` leaves it to
    :func:`mdlnb.prequential.run`'s running statistics, which at N ≈ 20–160
    with near-constant features (EfficientNet's 1280-d ReLU6 means) can blow
    up the first predictions to tens of nats per example.
    """
    if standardize not in ("subsample", "online"):
        raise ValueError(f"standardize: must be 'subsample' or 'online', got {standardize!r}")
    x = zscore(features) if standardize == "subsample" else np.asarray(features, np.float32)
    task = Task("subsample", x, np.asarray(labels), num_classes)
    lm = prequential.run(
        task,
        _experts.preset(experts),
        batch_size=int(batch_size),
        seed=int(seed),
        standardize=standardize == "online",
        progress=False,
    )
    # no per-subsample warnings: the small board's 2-value grid always has its best on an edge
    report = Report.from_losses(lm, switching.FixedShare(m=float(m)), warn=False)
    return float(report.total_nats) / task.n


def registry_metrics(config: TransferabilityConfig, has_source: bool) -> list[str]:
    """The :data:`mdlnb.baselines.transfer.METRICS` names scored on a subsample (LINEAR-VALID is
    added when grid metrics need it; source-classifier metrics only with ``has_source``)."""
    names = list(transfer.METRICS) if config.metrics is None else list(config.metrics)
    if config.grid_metrics and "linear_valid" not in names:
        names.append("linear_valid")
    return [m for m in names if has_source or "source_probs" not in transfer.METRICS[m].needs]


def nleep_kwargs(config: TransferabilityConfig, names: list[str]) -> dict[str, Any]:
    """``{"nleep_components": ...}`` for :func:`mdlnb.baselines.transfer.score_all` when it takes
    that option; ``{}`` when no GMM metric is scored. A ValueError naming
    ``nleep_components`` when a GMM metric is scored by a library that cannot
    honour the setting (silently fitting another number of components would
    change N-LEEP without saying so)."""
    if not any(m in GMM_METRICS for m in names):
        return {}
    if "nleep_components" in inspect.signature(transfer.score_all).parameters:
        return {"nleep_components": config.nleep_components}
    raise ValueError(
        f"nleep_components: {config.nleep_components!r} cannot be passed on: this "
        f"mdlnb.baselines.transfer.score_all takes no 'nleep_components' (it fits C "
        f"components); leave out {[m for m in names if m in GMM_METRICS]} via "
        f"'metrics' or use a library with the option"
    )


#: Metrics whose authors rank candidate models by a min–max combination, across the
#: candidates, of per-model terms (NCTI: ``evaluate_metric_group1_cpu.py``; ETran:
#: ``tw.py``): the terms scored per subsample, combined by :func:`add_combined`.
COMBINED = {"ncti": ("ncti_seli", "ncti_ncc", "ncti_vc"), "etran": ("etran_energy", "etran_cls")}


def or_nan(compute: Callable[[], dict[str, float]], keys: Iterable[str]) -> dict[str, float]:
    """``compute()``, or NaN for each of ``keys`` where a metric refuses its input (a
    ``ValueError``: constant features, say); τ and the combinations across checkpoints
    leave NaN scores out."""
    try:
        return compute()
    except ValueError:
        return dict.fromkeys(keys, float("nan"))


def combined_terms(
    features: Any, labels: Any, num_classes: int, names: list[str]
) -> dict[str, float]:
    """The per-model terms of the :data:`COMBINED` metrics among ``names``; a metric that
    refuses the features (a ``ValueError``: NCTI's PCA when every feature is constant, as
    EfficientNet-Lite2's all-zero 32-px features of a subsample are) has NaN terms, which
    :func:`add_combined` leaves out of the combination across checkpoints."""

    def ncti() -> dict[str, float]:
        r = transfer.ncti_result(features, labels, num_classes=num_classes)
        return {"ncti_seli": r.seli, "ncti_ncc": r.ncc, "ncti_vc": r.vc}

    def etran() -> dict[str, float]:
        r = transfer.etran_result(features, labels, num_classes=num_classes)
        return {"etran_energy": r.energy, "etran_cls": r.classification}

    out: dict[str, float] = {}
    for name, compute in (("ncti", ncti), ("etran", etran)):
        if name in names:
            out.update(or_nan(compute, COMBINED[name]))
    return out


def _across_encoders(scores, combos):
    """Rows of metrics computed across each (task, ratio, repeat)'s encoders from other
    metrics' values: ``combos`` maps a metric to ``(terms, combine)``, ``combine`` taking
    one array per term (one value per encoder) and returning one value per encoder."""
    import pandas as pd

    scores = with_zoo(scores)
    terms = sorted({t for ts, _ in combos.values() for t in ts})
    part = scores[scores["metric"].isin(terms)]
    if part.empty:
        return pd.DataFrame(columns=scores.columns)
    wide = part.pivot_table(index=[*GROUP, "encoder", "n"], columns="metric", values="value")
    rows = []
    for _, g in wide.groupby(level=GROUP, sort=True):
        for metric, (ts, combine) in combos.items():
            if not set(ts) <= set(g):
                continue
            arrays = [g[t].to_numpy(float) for t in ts]
            ok = np.logical_and.reduce([np.isfinite(a) for a in arrays])
            values = np.full(len(g), np.nan)  # NaN where a term is (e.g. CL of dead features)
            if ok.all():
                values = combine(*arrays)
            elif ok.sum() >= 2:
                values[ok] = combine(*(a[ok] for a in arrays))
            for (zoo, task, ratio, repeat, enc, n), v in zip(g.index, values):
                rows.append(
                    dict(
                        zoo=zoo,
                        encoder=enc,
                        task=task,
                        ratio=ratio,
                        n=n,
                        repeat=repeat,
                        metric=metric,
                        value=float(v),
                    )
                )
    return pd.DataFrame(rows, columns=scores.columns)


def add_combined(scores):
    """NCTI and ETran ranked as their authors rank candidate models: per (task, ratio,
    repeat), :func:`mdlnb.baselines.transfer.ncti_combine` and :func:`~mdlnb.baselines.transfer.etran_combine`
    of the terms across that group's encoders replace the terms' rows (like CLID, the
    value of one encoder depends on the others it is ranked with)."""
    import pandas as pd

    scores = with_zoo(scores)
    terms = [t for ts in COMBINED.values() for t in ts]
    if not scores["metric"].isin(terms).any():
        return scores
    rows = _across_encoders(
        scores,
        {
            "ncti": (COMBINED["ncti"], transfer.ncti_combine),
            "etran": (COMBINED["etran"], transfer.etran_combine),
        },
    )
    return pd.concat([scores[~scores["metric"].isin(terms)], rows], ignore_index=True)


def select_grid(grid, scores, reference: str = "linear_valid"):
    """Per (task, ratio, repeat), each grid metric at the knob whose values have the
    highest Kendall τ with ``reference`` across encoders (PACTran Sec. 4.1.4).

    Returns ``(rows, chosen)``: score rows (as in ``scores``) for the grid
    metrics, and a table of the knob chosen per group.
    """
    import pandas as pd

    scores, grid = with_zoo(scores), with_zoo(grid)
    ref = scores[scores["metric"] == reference].set_index([*GROUP, "encoder"])["value"]
    rows, chosen = [], []
    for (metric, *gkey), g in grid.groupby(["metric", *GROUP], sort=True):
        table = {e: dict(zip(h["knob"], h["value"])) for e, h in g.groupby("encoder")}
        refmap = {e: float(ref[(*gkey, e)]) for e in table if (*gkey, e) in ref.index}
        if len(refmap) < 2:
            raise ValueError(f"scores: need {reference!r} for >= 2 encoders of {tuple(gkey)}")
        knob = select_by_kendall(table, refmap)
        sel = g[g["knob"] == knob]
        rows += sel.drop(columns="knob").to_dict("records")
        chosen.append(dict(zip(GROUP, gkey), metric=metric, knob=knob))
    return pd.DataFrame(rows, columns=list(scores.columns)), pd.DataFrame(chosen)


def add_clid(scores):
    """Append CLID = min–max(CL) + min–max(ID) across the encoders of each
    (task, ratio, repeat) (:func:`mdlnb.baselines.labelfree.clid`)."""
    import pandas as pd

    scores = with_zoo(scores)
    if not scores["metric"].isin(["cl", "twonn_id"]).any():
        return scores
    rows = _across_encoders(scores, {"clid": (("cl", "twonn_id"), labelfree.clid)})
    return pd.concat([scores, rows], ignore_index=True)


#: Published ImageNet top-1 (%) of the EfficientNet-Lite checkpoints (tensorflow/tpu,
#: models/official/efficientnet/lite README, at their own resolutions).
SOURCE_ACCURACY = {
    "efficientnet_lite0": 75.1,
    "efficientnet_lite1": 76.7,
    "efficientnet_lite2": 77.6,
}


def encoder_statics(encoder: Any) -> dict[str, float]:
    """The static baselines of one :class:`mdlnb.encoders.Encoder`: its parameter count
    (the feature extractor's: a source classifier head is not counted) and its source
    accuracy: the published ImageNet top-1 of an EfficientNet-Lite, or the Fashion-MNIST
    linear-probe accuracy recorded with a self-pretrained checkpoint (its artifact's
    ``probe_accuracy``); NaN when neither is known."""
    import jax

    p = encoder.params
    if isinstance(p, dict) and "classifier" in p:
        p = {k: v for k, v in p.items() if k != "classifier"}
    params = float(sum(np.size(v) for v in jax.tree_util.tree_leaves(p)))
    meta = getattr(encoder, "meta", None) or {}
    acc = next(
        (v for k, v in SOURCE_ACCURACY.items() if encoder.name.startswith(k)),
        meta.get("probe_accuracy", np.nan),
    )
    return {"params": params, "source_accuracy": float(acc)}


def add_static(scores, encoders: Mapping[str, Any]):
    """Append the static baselines (:func:`encoder_statics`) of ``encoders`` (name →
    Encoder) on every (task, ratio, repeat) row group of ``scores``. An encoder
    without a published source accuracy gets no such row (as a source-classifier
    metric is absent for encoders without one), so that baseline ranks the others."""
    import pandas as pd

    scores = with_zoo(scores)
    statics = {name: encoder_statics(e) for name, e in encoders.items()}
    heads = scores[["zoo", "encoder", "task", "ratio", "n", "repeat"]].drop_duplicates()
    rows = [
        dict(h, metric=m, value=v)
        for h in heads.to_dict("records")
        for m, v in statics[h["encoder"]].items()
        if np.isfinite(v)
    ]
    return pd.concat([scores, pd.DataFrame(rows, columns=scores.columns)], ignore_index=True)


def orient(scores):
    """``scores`` with a column ``oriented`` = sign · value (higher-is-better)."""
    signs = {m: metric_sign(m) for m in scores["metric"].unique()}
    return scores.assign(oriented=scores["value"] * scores["metric"].map(signs).astype(float))
