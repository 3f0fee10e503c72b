"""Source classifiers for checkpoints that keep none: LEEP, NCE, PT-Dir and PT-Gam need
``p(z | x)`` over the source task's labels (PACTran Sec. 2, 3.2–3.3).

The ImageNet EfficientNet-Lite checkpoints keep their 1,000-way head
(:func:`mdlnb.studies.transferability.source_probs`). The ViT-S zoo's
checkpoints keep no head at all: the supervised objective's classifier is
discarded after pretraining and the self-supervised objectives never had one.
Every one of them gets the same kind of source classifier instead: a
multinomial logistic regression on its frozen features of ``size`` images of
its pretraining data (Fashion-MNIST's training split, 10 classes; a seeded,
stratified subsample), fitted by :func:`mdlnb.baselines.transfer._softmax_batch.fit_batch`
(all checkpoints in one program; β = N, features standardised with the
subsample's mean and standard deviation, the bias regularised like the
weights). For a supervised checkpoint this stands in for the head it was
trained with; for the others it is the best linear read-out of the source
labels their features allow, so LEEP and its kin measure what a source
classifier on these features knows about the target labels.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mdlnb import data
from mdlnb.baselines import labelfree
from mdlnb.baselines.transfer._softmax_batch import fit_batch
from mdlnb.encoders import features as extract_features
from mdlnb.studies.transferability._scores import label_free_scores


def fit_source_heads(
    encoders: Mapping[str, Any], names: Sequence[str], *, data_name: str, size: int, seed: int = 0
) -> dict[str, tuple[np.ndarray, ...]]:
    """``{name: (mean, std, params)}``: the standardisation and the (D + 1, Z) logistic
    head of each encoder in ``names`` on ``size`` images of ``data_name``'s training split."""
    if not names:
        return {}
    task = data.subsample(data.load(data_name, split="train", seed=seed), int(size), seed)
    xs, stats = [], []
    for n in names:
        f = np.asarray(extract_features(encoders[n], task).x, np.float64)
        mu, sd = f.mean(0), f.std(0)
        sd = np.where(sd > 0, sd, 1.0)
        xs.append((f - mu) / sd)
        stats.append((mu, sd))
    x = np.stack(xs)
    fit = fit_batch(
        x, np.tile(task.y, (len(names), 1)), task.num_classes, np.full(len(names), float(task.n))
    )
    return {n: (mu, sd, fit.params[i]) for i, (n, (mu, sd)) in enumerate(zip(names, stats))}


def head_probs(head: tuple[np.ndarray, ...], features: Any) -> np.ndarray:
    """Source-class probabilities (N, Z) of ``features`` under a head of
    :func:`fit_source_heads`."""
    from scipy.special import softmax

    mu, sd, params = head
    z = (np.asarray(features, np.float64) - mu) / sd
    return softmax(z @ params[:-1] + params[-1], axis=1)


def with_source_probs(
    featuresets: Sequence[Any],
    encoders: Mapping[str, Any],
    *,
    data_name: str,
    size: int,
    seed: int = 0,
) -> list[Any]:
    """``featuresets`` with the source probabilities of every encoder that has no source
    classifier of its own filled in from :func:`fit_source_heads`."""
    import dataclasses

    need = sorted({fs.encoder for fs in featuresets if fs.source_probs is None})
    heads = fit_source_heads(encoders, need, data_name=data_name, size=size, seed=seed)
    return [
        fs
        if fs.source_probs is not None
        else dataclasses.replace(fs, source_probs=head_probs(heads[fs.encoder], fs.train.x))
        for fs in featuresets
    ]


def source_label_free(
    encoders: Mapping[str, Any], names: Sequence[str], *, data_name: str, size: int, seed: int = 0
):
    """CLID Table 1 in miniature: per checkpoint, the label-free scores (CL, TwoNN ID,
    RankMe; CLID across ``names``) of its features of ``size`` held-out images of the
    pretraining data (its test split), beside its source accuracy (the Fashion-MNIST
    probe accuracy its artifact records). Rows ``encoder``, ``metric``, ``value``,
    ``source_accuracy``."""
    import pandas as pd

    if len(names) < 2:
        return pd.DataFrame(columns=["encoder", "metric", "value", "source_accuracy"])
    task = data.subsample(data.load(data_name, split="test", seed=seed), int(size), seed)
    vals = {n: label_free_scores(extract_features(encoders[n], task).x, seed=seed) for n in names}
    clid = labelfree.clid([vals[n]["cl"] for n in names], [vals[n]["twonn_id"] for n in names])
    rows = []
    for i, n in enumerate(names):
        acc = float(encoders[n].meta.get("probe_accuracy", np.nan))
        rows += [
            {"encoder": n, "metric": m, "value": float(v), "source_accuracy": acc}
            for m, v in {**vals[n], "clid": clid[i]}.items()
        ]
    return pd.DataFrame(rows, columns=["encoder", "metric", "value", "source_accuracy"])
