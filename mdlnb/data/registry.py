"""The task registry: ``names()``, ``load(name, ...)``, ``info()``.

Every task is built by a function ``build(seed, **options) -> (train, test)``
that returns both splits at the task's default size; ``load`` picks the split
and subsamples. A ``TaskSpec`` records what ``info()`` reports without
building anything.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from collections.abc import Callable
from typing import Any

from mdlnb.core._checks import check_int
from mdlnb.core._targets import check_kind
from mdlnb.core._task import GROUPS, Task
from mdlnb.data.splits import concat, subsample

# Imported inside the functions that use them, so that importing this module does not load
# them: pandas.

Builder = Callable[..., "tuple[Task, Task]"]
SPLITS = ("train", "test", "all")


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """What a registered task is, at its default options.

    Attributes:
      name: registry key.
      group: ``"natural"``, ``"specialized"`` or ``"structured"`` (VTAB's groups);
        ``None`` for a task without images (``diabetes``).
      num_classes: C at the default options; 0 for a regression task.
      image_shape: ``(H, W, C)`` of the uint8 images at the default options; ``(D,)``
        for a task of feature vectors.
      n_train, n_test: split sizes at the default options.
      source: where the pixels come from.
      split_rule: how train and test are separated.
      build: ``build(seed, **options) -> (train, test)``.
      description: one line on what is predicted.
      kind: ``"classification"`` or ``"regression"`` (:class:`mdlnb.Task`); regression
        tasks are listed by ``names(kind="regression")``, not by default.
    """

    name: str
    group: str
    num_classes: int
    image_shape: tuple[int, int, int]
    n_train: int
    n_test: int
    source: str
    split_rule: str
    build: Builder
    description: str
    kind: str = "classification"

    def __post_init__(self) -> None:
        check_kind(self.kind)
        if self.group is None and self.kind == "regression":
            return
        if self.group not in GROUPS:
            raise ValueError(f"group: must be one of {GROUPS}, got {self.group!r}")

    def options(self) -> dict[str, Any]:
        """The builder's keyword options and their defaults."""
        sig = inspect.signature(self.build)
        return {
            k: p.default
            for k, p in sig.parameters.items()
            if k != "seed" and p.kind is p.KEYWORD_ONLY
        }


_REGISTRY: dict[str, TaskSpec] = {}


def register(spec: TaskSpec) -> TaskSpec:
    """Add ``spec`` to the registry (names are unique)."""
    if spec.name in _REGISTRY:
        raise ValueError(f"name: task {spec.name!r} is already registered")
    _REGISTRY[spec.name] = spec
    return spec


_DEFAULT_MODULES = ("fashion_mnist", "sklearn_tasks", "dsprites", "clevr", "skimage_tasks")


def _ensure_defaults() -> None:
    # Importing a module registers its tasks (once: modules are cached).
    for m in _DEFAULT_MODULES:
        importlib.import_module(f"mdlnb.data.{m}")


def spec(name: str) -> TaskSpec:
    """The ``TaskSpec`` registered under ``name``."""
    _ensure_defaults()
    if name not in _REGISTRY:
        raise ValueError(f"name: unknown task {name!r}; available: {names()}")
    return _REGISTRY[name]


def names(group: str | None = None, kind: str | None = "classification") -> list[str]:
    """Registered task names, grouped natural → specialized → structured (then tasks
    without a group). ``kind``: ``"classification"`` (default: the image
    classification tasks), ``"regression"``, or ``None`` for both."""
    _ensure_defaults()
    if group is not None and group not in GROUPS:
        raise ValueError(f"group: must be one of {GROUPS} or None, got {group!r}")
    if kind is not None:
        check_kind(kind)
    rank = lambda s: (GROUPS.index(s.group) if s.group in GROUPS else len(GROUPS), s.name)  # noqa: E731
    return [
        s.name
        for s in sorted(_REGISTRY.values(), key=rank)
        if (group is None or s.group == group) and (kind is None or s.kind == kind)
    ]


def load(
    name: str, split: str = "train", size: int | None = None, seed: int = 0, **options: Any
) -> Task:
    """Load task ``name`` as a ``Task`` of uint8 images ``(N, H, W, C)`` (``diabetes``:
    float features ``(N, 10)``; regression tasks: ``kind="regression"``, real targets).

    Args:
      name: one of ``names()``.
      split: ``"train"``, ``"test"`` or ``"all"`` (train followed by test).
      size: if given, a seeded, label-stratified subsample of that many examples.
      seed: procedural tasks: the generator seed (train and test stay disjoint
        for every seed); real datasets: the subsampling seed only — their
        train/test split is fixed (official, or seeded once; see ``info()``).
      **options: task-specific options (``spec(name).options()`` lists them).
    """
    s = spec(name)
    if split not in SPLITS:
        raise ValueError(f"split: must be one of {SPLITS}, got {split!r}")
    allowed = s.options()
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise ValueError(
            f"options: {unknown} not understood by task {name!r}; it takes {sorted(allowed)}"
        )
    check_int("seed", seed, minimum=0, maximum=2**32 - 1, what="an int in [0, 2**32)")
    train, test = s.build(seed=int(seed), **options)
    if split == "all":
        task = concat(train, test, split="all")
    else:
        task = train if split == "train" else test
    task = task.replace(meta={**task.meta, "split": split, "seed": seed, "options": dict(options)})
    if size is not None:
        task = subsample(task, size, seed)
    return task


def info(kind: str | None = "classification"):
    """One row per task at its default options (nothing is built); ``kind`` as in
    :func:`names` (a ``kind`` column is added unless it is ``"classification"``).

    Columns: name, group, n_train, n_test, classes, image_shape (H, W, C),
    source, split (the rule separating train and test), predicts.
    """
    import pandas as pd

    rows = [
        dict(
            name=s.name,
            group=s.group,
            n_train=s.n_train,
            n_test=s.n_test,
            classes=s.num_classes,
            image_shape=s.image_shape,
            source=s.source,
            split=s.split_rule,
            predicts=s.description,
            **({} if kind == "classification" else {"kind": s.kind}),
        )
        for s in (spec(n) for n in names(kind=kind))
    ]
    return pd.DataFrame(rows)
