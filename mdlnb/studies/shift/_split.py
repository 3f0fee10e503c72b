"""The shifted splits of one procedural draw, and the four streams coded from them.

A VTAB task whose train and test splits differ in distribution (Li, Bornschein &
Hutter 2023, arXiv:2302.09579, App. A.2: KittiDistance, DMLab, PatchCamelyon,
SmallNORBAzimuth) is built here from a procedural task by a *nuisance* factor,
one the label does not depend on (dSprites' scale for the shape label, its row
for the column label, the nearest object's depth for Clevr's count):

* one draw of ``2N`` images (generator seed :func:`data_seed`), the factor's value
  per image (:func:`nuisance`: a per-object factor is read off the nearest object);
* :func:`shifted_split`: the images below the factor's median form the lower half,
  the rest the upper half; the *original train split* A takes ``round(σN)`` images of
  the lower half and the rest from the upper, the *original test split* B the
  remainder (σ = ``shift``: 1 separates the halves, ½ is no shift at all);
* :func:`streams`: the index sequences (into the draw) that are coded —
  ``original`` (A), ``swapped`` (B as the train split: which half VTAB happened to
  call "train" is arbitrary here, so both are coded), ``reshuffled`` (App. A.2:
  A ∪ B merged, shuffled, re-split into the same sizes, the train part coded —
  :func:`mdlnb.data.reshuffle`'s rule on indices), ``train then test`` (the
  reshuffled split's examples, those from A first, then those from B: the shift
  inside one stream).

Every stream but ``train then test`` is coded in stage 1's own seeded order;
``train then test`` keeps its order through :func:`in_stream_order`.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping

import numpy as np

from mdlnb.core._checks import check_int
from mdlnb.core._task import Task
from mdlnb.prequential import stream_order

#: The coded streams, in table order (module docstring).
STREAMS = ("original", "swapped", "reshuffled", "train then test")


def parse_shift(text: str) -> tuple[str, str]:
    """``"dsprites_shape:scale"`` → ``("dsprites_shape", "scale")`` (task, nuisance factor)."""
    if not isinstance(text, str) or text.count(":") != 1 or not all(text.split(":")):
        raise ValueError(f"tasks: expected '<task>:<factor>' strings, got {text!r}")
    task, factor = text.split(":")
    return task, factor


def data_seed(task: str, seed: int) -> int:
    """The generator seed of draw ``seed`` of ``task``: ``crc32(task) + seed`` (mod 2³¹),
    so every (task, seed) is an independent draw (tasks of one generator, such as the
    dSprites tasks, label the same images at the same generator seed)."""
    check_int("seed", seed, minimum=0)
    return int((zlib.crc32(task.encode()) + int(seed)) % 2**31)


def nuisance(task: Task, factor: str) -> np.ndarray:
    """``(N,)`` float64 value of ``factor`` per example, from ``task.meta["factors"]``
    (procedural tasks); a per-object factor ``(N, objects)`` gives the nearest object's
    value (smallest depth ``z``)."""
    factors = task.meta.get("factors")
    if not isinstance(factors, Mapping):
        raise ValueError(
            f"task: {task.name!r} records no generative factors (a procedural "
            "task does: dSprites, Clevr)"
        )
    if factor not in factors:
        raise ValueError(
            f"factor: {factor!r} is not a factor of {task.name!r}; it has {sorted(factors)}"
        )
    v = np.asarray(factors[factor], np.float64)
    if v.ndim == 2:
        if "z" not in factors:
            raise ValueError(
                f"factor: {factor!r} is per object, and {task.name!r} has no depth "
                "z to find the nearest object"
            )
        nearest = np.nanargmin(np.asarray(factors["z"], np.float64), axis=1)
        v = v[np.arange(len(v)), nearest]
    if v.shape != (task.n,) or not np.all(np.isfinite(v)):
        raise ValueError(f"factor: {factor!r} gives no finite value per example of {task.name!r}")
    return v


def shifted_split(
    values: np.ndarray, n: int, shift: float, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """(A, B): two disjoint sorted index arrays of ``n`` examples each among the ``2n``
    ``values``. The lower half (the ``n`` smallest values, ties by index) gives A
    ``round(shift·n)`` examples and B the rest of it; the upper half fills both up
    (which examples: a permutation of each half from ``default_rng(seed)``)."""
    values = np.asarray(values, np.float64)
    n = check_int("n", n, minimum=1)
    if values.shape != (2 * n,):
        raise ValueError(f"values: expected {2 * n} values (2n), got shape {values.shape}")
    if not 0.5 <= float(shift) <= 1.0:
        raise ValueError(
            f"shift: the lower half's share of the train split, in [0.5, 1], got {shift!r}"
        )
    order = np.argsort(values, kind="stable")
    rng = np.random.default_rng(seed)
    low, high = rng.permutation(order[:n]), rng.permutation(order[n:])
    k = int(round(float(shift) * n))
    a = np.concatenate([low[:k], high[: n - k]])
    b = np.concatenate([low[k:], high[n - k :]])
    return np.sort(a), np.sort(b)


def reshuffled_indices(a: np.ndarray, b: np.ndarray, seed: int) -> np.ndarray:
    """The train part of App. A.2's reshuffle of splits A and B, as indices into the draw:
    :func:`mdlnb.data.reshuffle`'s rule (A then B concatenated, permuted by
    ``default_rng(seed)``, the first ``len(A)`` kept), order kept."""
    both = np.concatenate([a, b])
    return both[np.random.default_rng(seed).permutation(len(both))[: len(a)]]


def streams(a: np.ndarray, b: np.ndarray, seed: int) -> dict[str, np.ndarray]:
    """The index sequence of every stream of :data:`STREAMS` (module docstring)."""
    mixed = reshuffled_indices(a, b, seed)
    from_a = np.isin(mixed, a)
    return {
        "original": np.asarray(a),
        "swapped": np.asarray(b),
        "reshuffled": mixed,
        "train then test": np.concatenate([mixed[from_a], mixed[~from_a]]),
    }


def in_stream_order(task: Task, seed: int) -> Task:
    """``task`` rearranged so that stage 1's seeded order
    (:func:`mdlnb.prequential.stream_order`) codes its examples in their given order:
    example ``t`` of ``task`` is the ``t``-th coded."""
    order = stream_order(int(seed), task.n)
    return task.take(np.argsort(order))
