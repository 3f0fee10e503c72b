"""Features of every (encoder, task): the capped image tasks, cached encoder features,
source-classifier probabilities."""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping, Sequence

import numpy as np

from mdlnb._task import Task
from mdlnb.studies.transferability._encoders import source_probs

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


def load_tasks(names: Sequence[str], *, train_size: int | None = None,
               test_size: int | None = None, seed: int = 0) -> dict[str, tuple[Task, Task]]:
    """``{name: (train, test)}`` image tasks, each split capped (stratified) at its size."""
    from mdlnb import data

    out = {}
    for name in names:
        tr, te = data.load(name, split="train", seed=seed), data.load(name, split="test", seed=seed)
        if train_size is not None and tr.n > train_size:
            tr = data.subsample(tr, int(train_size), seed)
        if test_size is not None and te.n > test_size:
            te = data.subsample(te, int(test_size), seed)
        out[name] = (tr, te)
    return out


def extract(encoders: Mapping[str, Any], tasks: Mapping[str, tuple[Task, Task]], *,
            progress: bool = False) -> list[FeatureSet]:
    """Features (disk-cached by :func:`mdlnb.encoders.features`) of every
    (encoder, task), train and test, plus source-classifier probabilities."""
    from mdlnb.encoders import features

    pairs = [(e, t) for e in encoders for t in tasks]
    it = pairs
    if progress:
        from mdlnb import _progress

        it = _progress.bar(pairs, desc="features", unit="pair")
    out = []
    for ename, tname in it:
        enc = encoders[ename]
        tr, te = (features(enc, s) for s in tasks[tname])
        out.append(FeatureSet(ename, tname, tr, te, source_probs(enc, tr.x),
                              dict(getattr(enc, "meta", {}))))
    return out

