"""Why an encoder ranks where it does: what its features keep, per task.

The grid ranks the supervised ViT-S (labels of the 10 Fashion-MNIST classes)
last of the seven objectives, below the untrained encoder, under linear
accuracy, best-MLP accuracy and MDL; in Li, Bornschein & Hutter 2023
(arXiv:2302.09579, Table 1a, Fig. 7) supervised ImageNet encoders are
mid-table, behind the self-supervised ones on the structured group only.
:func:`supervised_diagnosis` measures, for every (encoder, task) of a grid,
the quantities that tell the candidate explanations apart, on the features
the grid scored (the training split, standardised per feature as stage 1
and the probes standardise them):

* **effective rank** (RankMe, Garrido et al. 2023, :func:`mdlnb.baselines.labelfree.rankme`)
  of the raw features (RankMe's own convention, uncentred) and of the
  standardised ones (what the readouts see). Dimensional collapse would
  show as a low rank;
* **class separation**: with class means μ_c, priors π_c and the grand mean
  μ, the within-class scatter Σ_W = (1/N) Σ_i (x_i − μ_{y_i})(x_i − μ_{y_i})ᵀ
  and the between-class scatter Σ_B = Σ_c π_c (μ_c − μ)(μ_c − μ)ᵀ of the
  standardised features (Σ_W + Σ_B is their covariance, trace D). The
  ratio tr Σ_W / tr Σ_B, and neural collapse's NC1 = tr(Σ_W Σ_B⁺)/C (Papyan,
  Han & Donoho 2020, PNAS, arXiv:2008.08186, Fig. 6): both → 0 as the
  features of each class collapse onto their mean. Collapse onto the
  pretraining classes shows as a small ratio on Fashion-MNIST;
* **nuisance decodability**: the held-out R² of a ridge regression from the
  standardised features to simple statistics of each input image — its
  mean intensity, its contrast (pixel standard deviation) and its area
  (fraction of pixels above 0.2) — over ``folds`` contiguous folds. These
  are what a clothing classifier may discard and what the structured tasks
  ask (object size, distance, brightness);
* the grid's own **linear accuracy** and **codelength** (bits/example), the
  means over data orders of the study's frame.

:func:`contrast` condenses the tidy result into one row per metric: the
median over tasks of two encoders and the tasks on which the first is lower.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mdlnb import data
from mdlnb.baselines.labelfree import rankme
from mdlnb.core import _standardize
from mdlnb.core._checks import (
    check_images,
    check_int,
    check_labels,
    check_matrix,
    check_same_length,
    check_targets,
)
from mdlnb.studies.transferability._features import prepare

#: Image statistics whose decodability :func:`supervised_diagnosis` measures.
IMAGE_STATS = ("mean intensity", "contrast", "area")
#: Pixel value (images in [0, 1]) above which a pixel counts towards "area".
AREA_THRESHOLD = 0.2
#: Metrics of the frame, in the order :func:`contrast` lists them.
METRICS = (
    "linear accuracy",
    "codelength [bits/example]",
    "RankMe (raw)",
    "RankMe (standardised)",
    "within/between variance",
    "NC1",
    *(f"R² {s}" for s in IMAGE_STATS),
)
_FROM_GRID = {
    "linear accuracy": "linear accuracy",
    "codelength [bits/example]": "codelength [bits/example]",
}


def _standardised(x: Any, name: str = "x") -> np.ndarray:
    x = check_matrix(x, name).astype(np.float64)
    return _standardize.apply(x, _standardize.fit(x))


def class_separation(x: Any, y: Any) -> dict[str, float]:
    """Within- and between-class scatter of features ``x`` (N, D) with labels ``y`` (N,).

    Returns ``within`` = tr Σ_W, ``between`` = tr Σ_B, ``ratio`` = tr Σ_W / tr Σ_B
    (inf when the class means coincide) and ``nc1`` = tr(Σ_W Σ_B⁺)/C over the C
    classes present (the pseudo-inverse keeps the eigenvalues of Σ_B above
    1e-10 of its largest). ``x`` is taken as given (standardise it first for
    scale-free values); scatter divides by N (biased), so within + between is
    the total variance tr Cov(x) (ddof 0).
    """
    x = check_matrix(x, "x").astype(np.float64)
    y = check_labels(y, None)
    check_same_length(x, y, "x", "y")
    classes, idx = np.unique(y, return_inverse=True)
    if len(classes) < 2:
        raise ValueError(f"y: needs at least 2 classes, got {len(classes)}")
    n = len(y)
    counts = np.bincount(idx).astype(np.float64)
    means = np.zeros((len(classes), x.shape[1]))
    np.add.at(means, idx, x)
    means /= counts[:, None]
    centred = means - x.mean(axis=0)
    sb = (centred * (counts / n)[:, None]).T @ centred
    resid = x - means[idx]
    sw = resid.T @ resid / n
    within, between = float(np.trace(sw)), float(np.trace(sb))
    nc1 = float(np.trace(sw @ np.linalg.pinv(sb, rcond=1e-10, hermitian=True)) / len(classes))
    return {
        "within": within,
        "between": between,
        "ratio": within / between if between > 0 else float("inf"),
        "nc1": nc1,
    }


def image_statistics(images: Any) -> dict[str, np.ndarray]:
    """Per-image statistics of float images ``(N, H, W[, C])`` in [0, 1] (channels
    averaged): ``mean intensity``, ``contrast`` (standard deviation of the
    pixels) and ``area`` (fraction of pixels above :data:`AREA_THRESHOLD`)."""
    x, white = check_images(images, "images")
    x = x.astype(np.float64) / white
    if x.ndim == 4:
        x = x.mean(axis=-1)
    flat = x.reshape(len(x), -1)
    return {
        "mean intensity": flat.mean(axis=1),
        "contrast": flat.std(axis=1),
        "area": (flat > AREA_THRESHOLD).mean(axis=1),
    }


def decodability(x: Any, target: Any, *, folds: int = 5, alpha: float = 1.0) -> float:
    """Mean held-out R² of ridge regression (scikit-learn ``Ridge``, penalty ``alpha``,
    with intercept) from the standardised features ``x`` (N, D) to ``target`` (N,),
    over ``folds`` contiguous folds (``KFold`` without shuffling: the rows are
    already a stratified random subsample). R² = 1 − Σ(t − t̂)² / Σ(t − t̄)² with
    t̄ the held-out fold's mean; NaN where a fold's target is constant."""
    from sklearn.linear_model import Ridge
    from sklearn.model_selection import KFold

    x = _standardised(x)
    t = check_targets(target, "target")
    check_same_length(x, t, "x", "target")
    if t.ndim != 1:
        raise ValueError(f"target: expected one value per row, got shape {t.shape}")
    folds = check_int("folds", folds, minimum=2, maximum=len(t))
    scores = []
    for tr, te in KFold(folds).split(x):
        pred = Ridge(alpha=float(alpha)).fit(x[tr], t[tr]).predict(x[te])
        ss = float(np.sum((t[te] - t[te].mean()) ** 2))
        scores.append(1.0 - float(np.sum((t[te] - pred) ** 2)) / ss if ss > 0 else np.nan)
    return float(np.mean(scores))


def feature_diagnosis(features: Any, labels: Any, images: Any = None) -> dict[str, float]:
    """The label-free and label-based measurements of one (encoder, task): RankMe of the
    raw and of the standardised features, the within/between ratio and NC1 of the
    standardised features, and (with ``images``, the inputs the features came from)
    the decodability of each of :data:`IMAGE_STATS`."""
    raw = check_matrix(features, "features")
    z = _standardised(raw, "features")
    sep = class_separation(z, labels)
    out = {
        "RankMe (raw)": rankme(raw),
        "RankMe (standardised)": rankme(z),
        "within/between variance": sep["ratio"],
        "NC1": sep["nc1"],
    }
    if images is not None:
        stats = image_statistics(images)
        check_same_length(raw, stats["area"], "features", "images")
        out.update({f"R² {k}": decodability(z, v) for k, v in stats.items()})
    return out


def _grid_means(frame: Any, encoders: Sequence[str]) -> dict[tuple[str, str, str], float]:
    f = frame[frame["encoder"].isin(encoders) & frame["metric"].isin(list(_FROM_GRID))]
    means = f.groupby(["encoder", "task", "metric"])["value"].mean()
    return {k: float(v) for k, v in means.items()}


def supervised_diagnosis(
    result: Any, *, encoders: Sequence[str] | None = None, prepared: Any = None, images: bool = True
):
    """Tidy frame (encoder, task, group, metric, value) of :data:`METRICS` for every
    (encoder, task) of an encoder-study ``result`` (:class:`EncodersResult`, or
    anything with its ``config`` and ``frame``).

    ``encoders``: which of the study's encoders (default: all); the features are
    those the grid scored, rebuilt by :func:`mdlnb.studies.transferability._features.prepare`
    (cached on disk by :func:`mdlnb.encoders.features`), or taken from
    ``prepared`` (its return value) when given. ``images=False`` skips the
    decodability of the image statistics (the slowest part: 5 ridge fits per
    statistic and pair).
    """
    import dataclasses

    import pandas as pd

    config = result.config
    chosen = list(config.encoders if encoders is None else encoders)
    unknown = sorted(set(chosen) - set(config.encoders))
    if unknown or not chosen:
        raise ValueError(
            f"encoders: not in the study: {unknown or chosen}; "
            f"the study has {list(config.encoders)}"
        )
    if prepared is None:
        prepared = prepare(
            dataclasses.replace(config, encoders=tuple(chosen)),
            progress=False,
            feature_progress=False,
        )
    grid = _grid_means(result.frame, chosen)
    rows = []
    for fs in prepared.features:
        if fs.encoder not in chosen:
            continue
        pics = prepared.tasks[fs.task][0].x if images else None
        values = feature_diagnosis(fs.train.x, fs.train.y, pics)
        values.update(
            {m: grid.get((fs.encoder, fs.task, g), np.nan) for m, g in _FROM_GRID.items()}
        )
        group = data.spec(fs.task).group
        rows += [
            {
                "encoder": fs.encoder,
                "task": fs.task,
                "group": group,
                "metric": m,
                "value": float(values[m]),
            }
            for m in METRICS
            if m in values
        ]
    return pd.DataFrame(rows, columns=["encoder", "task", "group", "metric", "value"])


def contrast(diagnosis: Any, encoder: str, reference: str):
    """One row per metric of a :func:`supervised_diagnosis` frame: the median over tasks of
    ``encoder`` and of ``reference``, the number of tasks both have, and on how many
    ``encoder``'s value is the lower (for codelength and the ratios lower is better;
    for the others higher is)."""
    import pandas as pd

    have = set(diagnosis["encoder"])
    for name, e in (("encoder", encoder), ("reference", reference)):
        if e not in have:
            raise ValueError(f"{name}: {e!r} not in the diagnosis; it has {sorted(have)}")
    wide = diagnosis.pivot_table(index=["metric", "task"], columns="encoder", values="value")
    rows = []
    for m in [m for m in METRICS if m in wide.index.get_level_values(0)]:
        pair = wide.loc[m, [encoder, reference]].dropna()
        rows.append(
            {
                "metric": m,
                encoder: float(pair[encoder].median()),
                reference: float(pair[reference].median()),
                "tasks": len(pair),
                f"tasks {encoder} lower": int((pair[encoder] < pair[reference]).sum()),
            }
        )
    return pd.DataFrame(rows)


def findings(diagnosis: Any, *, encoder: str, reference: str) -> str:
    """The diagnosis in words (Markdown), every number read off ``diagnosis``: the
    effective rank of ``encoder``'s features against the others', how well a ridge
    regression recovers the image statistics from them, and its class separation on
    the pretraining data, against ``reference`` and the rest."""
    wide = diagnosis.pivot_table(index=["metric", "task"], columns="encoder", values="value")
    med = {m: wide.loc[m].median() for m in set(wide.index.get_level_values(0))}
    others = [e for e in wide.columns if e not in (encoder,)]

    def rng(m: str) -> str:
        v = med[m][others]
        return f"{v.min():.3g}–{v.max():.3g}"

    lines = [
        f"- **Effective rank** (RankMe of the raw features, median over tasks): {encoder} "
        f"{med['RankMe (raw)'][encoder]:.3g}, the others {rng('RankMe (raw)')}: its "
        "features have not collapsed onto few dimensions."
    ]
    for stat in IMAGE_STATS:
        m = f"R² {stat}"
        if m in med:
            lower = int((wide.loc[m][encoder] < wide.loc[m][reference]).sum())
            lines.append(
                f"- **{stat} recovered by a ridge regression** (held-out R², median): "
                f"{encoder} {med[m][encoder]:.3g}, {reference} {med[m][reference]:.3g}, "
                f"the others {rng(m)}; lower than {reference} on {lower} of "
                f"{int(wide.loc[m][[encoder, reference]].dropna().shape[0])} tasks."
            )
    if "NC1" in med and "fashion_mnist" in wide.loc["NC1"].index:
        nc = wide.loc[("NC1", "fashion_mnist")]
        lines.append(
            f"- **Class collapse on the pretraining images** (NC1, Fashion-MNIST): "
            f"{encoder} {nc[encoder]:.3g}, {reference} {nc[reference]:.3g}, the others "
            f"{nc[[e for e in others if e != reference]].min():.3g}–"
            f"{nc[[e for e in others if e != reference]].max():.3g}."
        )
    return "\n".join(lines)
