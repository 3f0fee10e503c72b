"""Features of every (encoder, task): the capped image tasks, cached encoder features,
source-classifier probabilities; :func:`prepare`, the first two stages of the
encoder and transferability studies."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from mdlnb import data
from mdlnb.core._task import Task
from mdlnb.data.splits import concat, stratified_indices
from mdlnb.encoders import features
from mdlnb.infra import _progress
from mdlnb.studies.transferability._encoders import EncoderSpec, build_encoders, source_probs


@dataclasses.dataclass(frozen=True, eq=False)
class FeatureSet:
    """Features of one (encoder, task): ``train``/``test`` are Tasks of (N, D)
    float32 features; ``source_probs`` (N_train, Z) or None."""

    encoder: str
    task: str
    train: Task
    test: Task
    source_probs: np.ndarray | None = None
    encoder_meta: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    val: Task | None = None


def load_tasks(
    names: Sequence[str],
    *,
    train_size: int | None = None,
    test_size: int | None = None,
    seed: int = 0,
) -> dict[str, tuple[Task, Task]]:
    """``{name: (train, test)}`` image tasks, each split capped (stratified) at its size."""
    out = {}
    for name in names:
        tr, te = data.load(name, split="train", seed=seed), data.load(name, split="test", seed=seed)
        if train_size is not None and tr.n > train_size:
            tr = data.subsample(tr, int(train_size), seed)
        if test_size is not None and te.n > test_size:
            te = data.subsample(te, int(test_size), seed)
        out[name] = (tr, te)
    return out


class Splits(NamedTuple):
    """The ground truth's images of one task: ``train`` (the metrics' subsamples come
    from it), ``val`` (choosing the fine-tuning rate and the probe's β) and ``test``."""

    train: Task
    val: Task
    test: Task


def load_splits(
    names: Sequence[str], *, train_size: int, val_size: int, test_size: int, seed: int = 0
) -> dict[str, Splits]:
    """``{name: Splits}``: ``train_size`` then ``val_size`` images of the task's training
    split, and its test split with the training split's other images, capped at
    ``test_size`` (each a seeded, stratified subsample; the three are disjoint). A
    training split with fewer than ``train_size + val_size + 1`` images is a ValueError
    naming ``train_size``."""
    out = {}
    for name in names:
        tr, te = data.load(name, split="train", seed=seed), data.load(name, split="test", seed=seed)
        if tr.n <= train_size + val_size:
            raise ValueError(
                f"train_size: {train_size} + val_size {val_size} leave no image of "
                f"{name}'s {tr.n} training images for the test set"
            )
        i_tr = stratified_indices(tr.y, int(train_size), seed)
        rest = np.setdiff1d(np.arange(tr.n), i_tr)
        i_va = rest[stratified_indices(tr.y[rest], int(val_size), seed + 1)]
        rest = np.setdiff1d(rest, i_va)
        pool = concat(te, tr.take(rest), name=te.name, split="test")
        test = data.subsample(pool, int(test_size), seed) if pool.n > test_size else pool
        out[name] = Splits(tr.take(i_tr), tr.take(i_va), test)
    return out


def extract_splits(
    encoders: Mapping[str, Any], splits: Mapping[str, Splits], *, progress: bool = False
) -> list[FeatureSet]:
    """Features (disk-cached) of every (encoder, task) on the three splits, and the
    source classifier's probabilities on the training split where the encoder has one
    (:func:`source_probs`; the ViT zoo's are added by :mod:`._source`)."""
    pairs = [(e, t) for e in encoders for t in splits]
    it = _progress.bar(pairs, desc="features", unit="pair") if progress else pairs
    out = []
    for ename, tname in it:
        enc = encoders[ename]
        tr, va, te = (features(enc, s) for s in splits[tname])
        out.append(
            FeatureSet(
                ename,
                tname,
                tr,
                te,
                source_probs(enc, tr.x),
                dict(getattr(enc, "meta", {})),
                val=va,
            )
        )
    return out


def extract(
    encoders: Mapping[str, Any], tasks: Mapping[str, tuple[Task, Task]], *, progress: bool = False
) -> list[FeatureSet]:
    """Features (disk-cached by :func:`mdlnb.encoders.features`) of every
    (encoder, task), train and test, plus source-classifier probabilities."""
    pairs = [(e, t) for e in encoders for t in tasks]
    it = _progress.bar(pairs, desc="features", unit="pair") if progress else pairs
    out = []
    for ename, tname in it:
        enc = encoders[ename]
        tr, te = (features(enc, s) for s in tasks[tname])
        out.append(
            FeatureSet(
                ename, tname, tr, te, source_probs(enc, tr.x), dict(getattr(enc, "meta", {}))
            )
        )
    return out


class Prepared(NamedTuple):
    """The encoders, tasks and features a study scores, and the wall seconds of building
    (or loading) the encoders and of loading the tasks and extracting the features."""

    specs: dict[str, EncoderSpec]
    built: dict[str, Any]
    tasks: dict[str, tuple[Task, Task]]
    features: list[FeatureSet]
    encoder_seconds: float
    feature_seconds: float


def prepare(config: Any, *, progress: bool, feature_progress: bool) -> Prepared:
    """Encoders → tasks → features for a study's ``config`` (its ``encoders``, ``tasks``,
    ``train_size``, ``test_size`` and ``seed``), timed; ``progress``: bars while building
    encoders, ``feature_progress``: a bar over the (encoder, task) features."""
    t0 = time.perf_counter()
    specs, built = build_encoders(config, progress=progress)
    encoder_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    tasks = load_tasks(
        config.tasks, train_size=config.train_size, test_size=config.test_size, seed=config.seed
    )
    feats = extract(built, tasks, progress=feature_progress)
    return Prepared(specs, built, tasks, feats, encoder_seconds, time.perf_counter() - t0)
