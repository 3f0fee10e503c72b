"""What :func:`mdlnb.compare` is given, read and checked: the encoders (arrays of
features, Tasks of features or Encoders), the labels or the task, the seeds.

Every encoder's features become an (N, D) float32 array (more dimensions are
flattened, with a warning; an Encoder's are extracted from the task's images and
cached); the labels are checked once (an array of labels: C = max(y) + 1 unless
given, with the label-alphabet warnings of :mod:`mdlnb.core._task`; a regression Task:
its targets, C = None), and each encoder must have as many examples, the same
labels and the same kind of target.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from mdlnb.board._arguments import looks_like_board
from mdlnb.core._checks import check_labels, check_matrix
from mdlnb.core._task import Task, warn_label_alphabet, warn_missing_classes
from mdlnb.encoders import Encoder, features

MIN_ORDERS = 3

#: The forms :func:`mdlnb.compare` accepts, quoted by its errors.
ACCEPTED_FORMS = (
    "compare({name: features, ...}, y, ...) or compare({name: features or Encoder, "
    "...}, task, ...); everything after the labels by keyword (experts=, "
    "strategy=, m=, protocol=, seeds=, ...)"
)


def features_of(name: str, value: Any, task: Task | None, y: np.ndarray) -> np.ndarray:
    """(N, D) float32 features of one entry of ``encoders``."""
    if isinstance(value, Encoder):
        if task is None or task.x.ndim != 4:
            raise ValueError(
                f"encoders: {name!r} is an Encoder; y must then be a Task of images (N, H, W, C)"
            )
        return features(value, task).x.astype(np.float32)
    if isinstance(value, Task):
        x = value.x.reshape(value.n, -1)
    else:
        x = np.asarray(value)
        if x.ndim > 2:
            flat = (x.shape[0], int(np.prod(x.shape[1:])))
            warnings.warn(
                f"encoders: {name!r}: features of shape {x.shape} are flattened to "
                f"{flat} (one row per example); pass x.reshape(len(x), -1) to say "
                "so",
                UserWarning,
                stacklevel=5,  # features_of, dictcomp, read_inputs, compare, caller
            )
            x = x.reshape(flat)  # type: ignore[assignment]
    try:
        x = check_matrix(x, "x")
    except ValueError as e:
        raise ValueError(f"encoders: {name!r}: {e}") from None
    if x.shape[0] != len(y):
        raise ValueError(f"encoders: {name!r} has {x.shape[0]} examples, the labels {len(y)}")
    if isinstance(value, Task) and value.kind != (
        task.kind if task is not None else "classification"
    ):
        kind = task.kind if task is not None else "classification"
        raise ValueError(
            f"encoders: {name!r} is a {value.kind} task and y a {kind} one; one "
            "comparison codes one kind of target (density codelengths of real "
            "targets are never comparable with classification codelengths)"
        )
    if isinstance(value, Task) and not np.array_equal(value.y, y):
        raise ValueError(f"encoders: {name!r} is a Task whose labels differ from y")
    return np.asarray(x, np.float32)


def labels_of(y: Any, num_classes: int | None) -> tuple[Task | None, np.ndarray, int | None]:
    """``(task or None, labels, C)``; a regression Task gives its targets and C = None."""
    if isinstance(y, Task):
        if num_classes is not None:
            raise TypeError("num_classes: only for an array of labels; a Task has its own")
        return y, y.y, y.num_classes
    if y is None:
        raise TypeError(f"y: missing; use {ACCEPTED_FORMS}")
    if isinstance(y, (Mapping, str, bytes)) or looks_like_board(y):
        hint = " (a board: pass it as experts=...)" if looks_like_board(y) else ""
        raise TypeError(
            f"y: expected labels (N,) or a Task, got a {type(y).__name__}{hint}; "
            f"use {ACCEPTED_FORMS}"
        )
    y = check_labels(y, num_classes, "y")
    c = int(num_classes) if num_classes is not None else max(int(y.max()) + 1, 2)
    if num_classes is None and not warn_label_alphabet(y, c, "labels"):
        warn_missing_classes(y, c, "labels")
    return None, y, c


class Inputs(NamedTuple):
    """The checked inputs: the Task given as ``y`` (or None), the labels (a regression
    task's targets), C (None: regression), each encoder's (N, D) float32 features,
    the task's name and its kind."""

    task: Task | None
    y: np.ndarray
    num_classes: int | None
    features: dict[str, np.ndarray]
    name: str
    kind: str


def read_inputs(encoders: Mapping[str, Any], y: Any, num_classes: int | None) -> Inputs:
    """``encoders`` and ``y`` read and checked (:func:`labels_of`, :func:`features_of`)."""
    task, y, c = labels_of(y, num_classes)
    feats = {k: features_of(k, v, task, y) for k, v in encoders.items()}
    if task is None:
        return Inputs(None, y, c, feats, "labels", "classification")
    return Inputs(task, y, c, feats, task.name, task.kind)


def check_encoders(encoders: Any, seeds: Sequence[int]) -> tuple[int, ...]:
    """The seeds as a tuple, after checking ``encoders`` (a mapping of ≥ 2 named entries)
    and ``seeds`` (≥ :data:`MIN_ORDERS` distinct orders)."""
    if not isinstance(encoders, Mapping) or len(encoders) < 2:
        raise ValueError("encoders: expected a mapping {name: features} with at least 2 entries")
    if any(not isinstance(k, str) or not k for k in encoders):
        raise ValueError("encoders: names must be non-empty strings")
    seeds = tuple(int(s) for s in seeds)
    if len(seeds) < MIN_ORDERS or len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds: need at least {MIN_ORDERS} distinct data orders, got {seeds}")
    return seeds
