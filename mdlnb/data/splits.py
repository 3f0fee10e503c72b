"""Seeded splitting, stratified subsampling and re-splitting of tasks.

All functions are pure: the same inputs and seed give the same indices.
"""

from __future__ import annotations

import numpy as np

from mdlnb.core._checks import check_int, check_labels
from mdlnb.core._task import Task


def stratified_indices(y: np.ndarray, n: int, seed: int) -> np.ndarray:
    """Sorted indices of ``n`` examples drawn without replacement, stratified by label.

    Each class gets ``n · (class count / N)`` examples, rounded by largest
    remainder (ties broken by the seeded generator), so class proportions are
    kept to within one example per class.
    """
    y = check_labels(y, None, "y")
    check_int("size", n, minimum=1, maximum=len(y))
    rng = np.random.default_rng(seed)
    classes, counts = np.unique(y, return_counts=True)
    quota = n * counts / len(y)
    take = np.floor(quota).astype(np.int64)
    short = n - int(take.sum())
    if short:
        # largest remainder first; random jitter breaks ties reproducibly
        order = np.lexsort((rng.random(len(classes)), -(quota - take)))
        take[order[:short]] += 1
    picked = [
        rng.choice(np.flatnonzero(y == c), size=k, replace=False)
        for c, k in zip(classes, take)
        if k
    ]
    return np.sort(np.concatenate(picked))


def stratified_split(
    y: np.ndarray, test_fraction: float, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint sorted ``(train_idx, test_idx)``; the test part is stratified."""
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction: must lie in (0, 1), got {test_fraction}")
    n_test = max(1, int(round(test_fraction * len(y))))
    test = stratified_indices(y, n_test, seed)
    train = np.setdiff1d(np.arange(len(y)), test, assume_unique=True)
    return train, test


def subsample(task: Task, size: int, seed: int = 0) -> Task:
    """``size`` examples of ``task``, seeded and stratified by label (order kept); a
    regression task (no labels to stratify by): a uniform draw without replacement."""
    if task.is_regression:
        check_int("size", size, minimum=1, maximum=task.n)
        idx = np.sort(np.random.default_rng(seed).choice(task.n, size=int(size), replace=False))
    else:
        idx = stratified_indices(task.y, size, seed)
    return task.take(idx).replace(
        meta={**task.meta, "subsample": {"size": int(size), "seed": seed}}
    )


def concat(a: Task, b: Task, *, name: str | None = None, split: str = "all") -> Task:
    """``a`` followed by ``b`` (same label alphabet and input shape)."""
    if a.kind != b.kind:
        raise ValueError(f"task_test: kind {b.kind!r} != {a.kind!r} of task_train")
    if a.num_classes != b.num_classes:
        raise ValueError(f"task_test: num_classes {b.num_classes} != {a.num_classes} of task_train")
    if a.x.shape[1:] != b.x.shape[1:]:
        raise ValueError(f"task_test: input shape {b.x.shape[1:]} != {a.x.shape[1:]} of task_train")
    return a.replace(
        name=name or a.name,
        x=np.concatenate([a.x, b.x]),
        y=np.concatenate([a.y, b.y]),
        meta={**a.meta, "split": split},
    )


def reshuffle(task_train: Task, task_test: Task, seed: int = 0) -> tuple[Task, Task]:
    """Merge both splits, shuffle, and re-split into the same sizes (paper App. A.2).

    Removes a train/test distribution shift: afterwards both parts are i.i.d.
    draws from the union. Returns ``(train, test)`` with ``len`` equal to the
    inputs' lengths.
    """
    both = concat(task_train, task_test)
    perm = np.random.default_rng(seed).permutation(both.n)
    n_tr = task_train.n
    meta = {k: v for k, v in task_train.meta.items() if k != "split"}
    meta["reshuffled"] = {"seed": seed}
    train = both.take(perm[:n_tr]).replace(meta={**meta, "split": "train"})
    test = both.take(perm[n_tr:]).replace(meta={**meta, "split": "test"})
    return train, test
