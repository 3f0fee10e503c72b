"""εSC by recursive grid search (SDL paper Sec. 4.2, App. B, Alg. 2), and ε from a large probe (Sec. 4.3).

Alg. 2: start from a search interval ``[ℓ, u]``; each round splits it into
``bins`` equal bins, measures ``L̂`` at the bin ends ``ℓ + jΔ`` (j = 1..bins)
and keeps the leftmost bin ``(n − Δ, n]`` whose end has ``L̂_n ≤`` the
threshold; after ``rounds`` rounds (or when the bin is one example wide) the
estimate is ``u``. New probes are trained **only** inside the bracketing
interval; sizes already measured are reused. The paper's Alg. 2 compares with
ε/2 (its high-confidence guarantee, Thm. 5); App. C reports the first size with
``L ≤ ε`` — ``threshold`` picks ("eps" by default, the same rule as :func:`esc`).

The bin ends of one round are measured together (one vmapped call of
:func:`loss_data_curve` for a task); the leftmost qualifying one is the one the
sequential loop of Alg. 2 would stop at.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from mdlnb.baselines.curves._curve import LossDataCurve, loss_data_curve, split_test
from mdlnb.baselines.curves._measures import Epsilon, as_eps, as_points
from mdlnb.core._checks import check_int
from mdlnb.core._task import Task

THRESHOLDS = ("eps", "half")


@dataclasses.dataclass(frozen=True)
class RefinedSampleComplexity:
    """Result of :func:`esc_refine`.

    Attributes:
      n: the estimate (``u`` of Alg. 2), or None when no size up to ``n_max`` reached the threshold.
      bracket: ``(ℓ, u)``: the final interval; the crossing lies in ``(ℓ, u]``.
      n_max: upper end of the search.
      eps, eps_source, threshold: ε (nats), where it came from, "eps" or "half" (ε/2).
      rounds: rounds run; evaluated: ``{n: mean loss}`` of every size measured;
      new_sizes: how many sizes were measured by the search itself (not given in ``curve``).
      curve: the merged curve (given points + new ones) when the source was a task.
    """

    n: int | None
    bracket: tuple
    n_max: int
    eps: float
    eps_source: str
    threshold: str
    rounds: int
    evaluated: dict
    new_sizes: int
    curve: LossDataCurve | None = None

    @property
    def exceeded(self) -> bool:
        return self.n is None

    def __str__(self) -> str:
        return f"> {self.n_max}" if self.exceeded else str(self.n)


def _bin_ends(lo: int, hi: int, bins: int) -> np.ndarray:
    ends = np.round(lo + (hi - lo) * np.arange(1, bins + 1) / bins).astype(np.int64)
    return np.unique(ends[ends > lo])


def esc_refine(
    source: Any,
    eps: Any,
    *,
    n_max: int | None = None,
    curve: Any = None,
    bins: int = 10,
    rounds: int = 3,
    threshold: str = "eps",
    **curve_kwargs: Any,
) -> RefinedSampleComplexity:
    """εSC by Alg. 2's recursive grid search, training new points only where the curve crosses ε.

    Args:
      source: a :class:`mdlnb.Task` (probes trained by :func:`loss_data_curve`
        with ``curve_kwargs``: readout, test, seeds, steps, ...), or a callable
        ``sizes (int array) -> mean losses (nats)`` or ``-> LossDataCurve``.
      eps: ε in nats (a number or an :class:`Epsilon`).
      n_max: search upper limit N (default: the task's training pool, or the
        largest size of ``curve``); required for a callable without ``curve``.
      curve: an already measured curve (LossDataCurve or ``(n, loss)``): its
        points are reused, and the first round starts from the bracket where it
        crosses the threshold (App. C.2's "one recursive grid search step").
      bins: bins per round (Alg. 2: 10); rounds: at most this many rounds (k).
      threshold: ``"eps"`` (L ≤ ε, as :func:`esc`) or ``"half"`` (L ≤ ε/2, Alg. 2).
    """
    e = as_eps(eps)
    if threshold not in THRESHOLDS:
        raise ValueError(f"threshold: must be one of {THRESHOLDS}, got {threshold!r}")
    for v, nm in ((bins, "bins"), (rounds, "rounds")):
        check_int(nm, v, minimum=1)
    if bins < 2:
        raise ValueError(f"bins: must be >= 2, got {bins}")
    thr = e.value if threshold == "eps" else e.value / 2
    merged: list[LossDataCurve] = []
    measure, limit = _measurer(source, curve_kwargs, merged)
    seen: dict[int, float] = {}
    if curve is not None:
        n0, l0, _ = as_points(curve, "curve")
        seen.update({int(a): float(b) for a, b in zip(n0, l0)})
    top = (
        n_max
        if n_max is not None
        else (limit if limit is not None else (max(seen) if seen else None))
    )
    if top is None:
        raise ValueError("n_max: needed for a callable source without a curve")
    top = check_int(
        "n_max", top, minimum=1, maximum=limit, what=f"an integer in [1, {limit or 'inf'}]"
    )
    new = 0

    def losses(sizes: np.ndarray) -> np.ndarray:
        nonlocal new
        todo = np.array([s for s in sizes if int(s) not in seen], np.int64)
        if todo.size:
            seen.update({int(a): float(b) for a, b in zip(todo, measure(todo))})
            new += int(todo.size)
        return np.array([seen[int(s)] for s in sizes])

    lo, hi = _first_bracket(seen, top, thr)
    done = 0
    found = bool(seen) and hi in seen and seen[hi] <= thr
    while done < rounds and hi - lo > 1:
        ends = _bin_ends(lo, hi, bins)
        vals = losses(ends)
        done += 1
        ok = np.flatnonzero(vals <= thr)
        if ok.size == 0:
            if not found:  # nothing up to n_max reaches the threshold
                break
            continue
        j = int(ok[0])
        lo, hi, found = (int(ends[j - 1]) if j > 0 else lo), int(ends[j]), True
    return RefinedSampleComplexity(
        n=hi if found else None,
        bracket=(lo, hi),
        n_max=top,
        eps=e.value,
        eps_source=e.source,
        threshold=threshold,
        rounds=done,
        evaluated=dict(sorted(seen.items())),
        new_sizes=new,
        curve=_merged_curve(merged, curve),
    )


def _measurer(
    source: Any, curve_kwargs: dict[str, Any], merged: list[LossDataCurve]
) -> tuple[Callable[[np.ndarray], np.ndarray], int | None]:
    """``(measure, limit)`` of :func:`esc_refine`'s ``source``: ``measure(sizes)`` → the
    mean loss at each size (a curve it trains or gets is appended to ``merged``), and
    the largest size allowed (a Task's training pool; None for a callable). A Task's
    ``test`` is taken out of ``curve_kwargs``."""
    if isinstance(source, Task):
        pool, test = split_test(source, curve_kwargs.pop("test", None))

        def measure(sizes: np.ndarray) -> np.ndarray:
            c = loss_data_curve(pool, test=test, sizes=sizes, **curve_kwargs)
            merged.append(c)
            return c.mean_loss

        return measure, pool.n
    if callable(source):
        if curve_kwargs:
            raise ValueError(f"source: {sorted(curve_kwargs)} apply to a Task source only")

        def measure(sizes: np.ndarray) -> np.ndarray:
            out = source(sizes)
            if isinstance(out, LossDataCurve):
                merged.append(out)
                return out.mean_loss
            out = np.asarray(out, np.float64).reshape(-1)
            if out.shape != sizes.shape or not np.all(np.isfinite(out)):
                raise ValueError(
                    f"source: returned {out.shape} losses for {sizes.shape} sizes "
                    "(must be finite, one per size)"
                )
            return out

        return measure, None
    raise ValueError(f"source: expected a Task or a callable, got {type(source).__name__}")


def _first_bracket(seen: dict[int, float], top: int, thr: float) -> tuple[int, int]:
    """The interval ``(ℓ, u]`` the search starts from: ``(0, top]``, narrowed to the
    sizes around the first one of ``seen`` (up to ``top``) whose loss is ``≤ thr``."""
    lo, hi = 0, top
    if seen:
        known = np.array(sorted(k for k in seen if k <= top))
        ok = known[np.array([seen[k] for k in known]) <= thr]
        if ok.size:
            hi = int(ok[0])
            lo = int(known[known < hi].max()) if np.any(known < hi) else 0
    return lo, hi


def _merged_curve(merged: list[LossDataCurve], curve: Any) -> LossDataCurve | None:
    """The curves measured by the search merged into one, on top of the given ``curve``
    when it is a LossDataCurve; None when the search measured no curve."""
    result = None
    for c in merged:
        result = c if result is None else result.merge(c)
    if isinstance(curve, LossDataCurve) and result is not None:
        result = curve.merge(result)
    return result


def epsilon_from_probe(
    task: Task, readout: Any = None, *, seeds: int = 3, **curve_kwargs: Any
) -> Epsilon:
    """ε as Sec. 4.3 recommends: held-out loss (nats) of a large probe trained on **all** of
    ``task`` (the raw representation, full data), mean over ``seeds``.

    ``readout`` defaults to an MLP with 2 hidden layers of 512 units; the
    provenance (readout, n, seeds, spread) is recorded in ``Epsilon.source``."""
    if not isinstance(task, Task):
        raise ValueError(f"task: expected an mdlnb.Task, got {type(task).__name__}")
    pool, test = split_test(task, curve_kwargs.pop("test", None))
    c = loss_data_curve(pool, readout, test=test, sizes=[pool.n], seeds=seeds, **curve_kwargs)
    value = float(c.mean_loss[0])
    sd = float(c.std_loss[0])
    src = (
        f"held-out loss of {c.meta['algorithm']} trained on all {pool.n} examples of "
        f"{task.name} ({len(c.seeds)} seeds, sd {sd:.3g} nats; Sec. 4.3)"
    )
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"task: the large probe reached loss {value}; ε must be > 0")
    return Epsilon(value, src)
