"""Measures of representation quality read off a loss-data curve (SDL paper Sec. 2–4, App. A–C).

Every measure takes a :class:`LossDataCurve` **or** plain arrays ``(n, loss)``:
``n`` increasing integer sizes ``n_1 < … < n_S``, ``loss`` the held-out log-loss
in nats, ``(S,)`` or ``(R, S)`` (then averaged over the R seeds: the paper's
``L̂_n``). Lower is better for every measure.

Riemann convention (App. C, the chunking of Voita & Titov 2020): the curve is a
step function that is **left-edge** constant — examples ``[n_k, n_{k+1})`` are
coded by the probe trained on the first ``n_k`` examples, at ``L(n_k)`` nats
each — and the first block ``[0, n_1)`` is coded with the uniform distribution,
``log C`` nats each (C = number of classes). So for an evaluation set of size n:

    MDL(n) = n_1 log C + Σ_k (min(n_{k+1}, n) − n_k)₊ L(n_k)                  (Eq. 7)
    SDL(ε) = n_1 [log C − ε]₊ + Σ_{k<S} (n_{k+1} − n_k) [L(n_k) − ε]₊          (Eq. 11)
    εSC(ε) = min {n_k : L(n_k) ≤ ε}                                           (Eq. 12)

SDL is **tight** when ``L(n_S) ≤ ε/2`` and a **lower bound** otherwise
(Alg. 1's rule: the area beyond ``n_S`` is then unknown). εSC is ``> n_S`` when
no measured size reaches ε. All values are nats (per example for VA/MI, total
for MDL/SDL).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from mdlnb.baselines.curves._data import LossDataCurve, _check_sizes
from mdlnb.core._checks import as_array, check_finite, check_int

LEFT_EDGE = (
    "left-edge Riemann sum: examples [n_k, n_k+1) cost L(n_k) nats each; "
    "first block [0, n_1) uniform at log C"
)
LEFT_EDGE_NO_C = (
    "left-edge Riemann sum: examples [n_k, n_k+1) cost L(n_k) nats each; "
    "first block [0, n_1) left out (num_classes unknown)"
)


@dataclasses.dataclass(frozen=True)
class Epsilon:
    """A loss tolerance ε (nats per example) and where it came from."""

    value: float
    source: str = "given"

    def __post_init__(self) -> None:
        v = float(self.value)
        if not math.isfinite(v) or v <= 0:
            raise ValueError(f"eps: must be a finite number > 0, got {self.value!r}")
        object.__setattr__(self, "value", v)

    def __float__(self) -> float:
        return self.value


@dataclasses.dataclass(frozen=True)
class Measure:
    """One measure of one curve.

    Attributes:
      name: ``"VA"``, ``"MI"``, ``"MDL"`` or ``"SDL"``.
      value: nats (per example for VA/MI, total for MDL/SDL).
      status: ``"exact"`` (a function of the measured curve), ``"estimate"``
        (MI: the loss at the largest n stands in for n → ∞), ``"tight"`` or
        ``"lower bound"`` (SDL, Alg. 1).
      n: the evaluation-set size the value refers to (None for SDL).
      eps: ε (nats) for SDL; eps_source: where ε came from.
      convention: how the value was computed from the measured points.
    """

    name: str
    value: float
    status: str
    n: int | None = None
    eps: float | None = None
    eps_source: str | None = None
    convention: str = ""
    units: str = "nats"

    def __float__(self) -> float:
        return self.value

    @property
    def tight(self) -> bool:
        return self.status != "lower bound"

    def __str__(self) -> str:
        prefix = "≥ " if self.status == "lower bound" else ""
        at = f" at n={self.n}" if self.n is not None else f" (ε={self.eps:.4g})"
        return f"{self.name}{at}: {prefix}{self.value:.4g} {self.units} [{self.status}]"


@dataclasses.dataclass(frozen=True)
class SampleComplexity:
    """εSC: the first measured n with L(n) ≤ ε, or "> n_max" when no measured n reaches ε.

    Attributes:
      n: that size, or None when ``exceeded``.
      n_max: the largest size measured.
      eps, eps_source: ε (nats) and its provenance.
      bracket: ``(lo, hi)``: the true εSC of the (monotone) curve lies in
        ``(lo, hi]``; ``lo`` is the last measured size above ε (0 if none),
        ``hi = n`` (None when exceeded).
      convention: how it was read off.
    """

    n: int | None
    n_max: int
    eps: float
    eps_source: str
    bracket: tuple
    convention: str = "first measured n with mean loss <= eps (App. C)"

    @property
    def exceeded(self) -> bool:
        return self.n is None

    @property
    def value(self) -> float:
        """``n``, or ``inf`` when exceeded (for sorting; read ``str`` for the report)."""
        return math.inf if self.n is None else float(self.n)

    @property
    def status(self) -> str:
        return "lower bound" if self.exceeded else "exact"

    def __str__(self) -> str:
        return f"> {self.n_max}" if self.exceeded else str(self.n)


def as_points(curve: Any, name: str = "curve") -> tuple[np.ndarray, np.ndarray, int | None]:
    """``(n (S,), mean loss (S,), num_classes or None)`` from a curve or an ``(n, loss)`` pair."""
    if isinstance(curve, LossDataCurve):
        return curve.sizes, curve.mean_loss, curve.num_classes
    if not isinstance(curve, (tuple, list)) or len(curve) != 2:
        raise ValueError(
            f"{name}: expected a LossDataCurve or an (n, loss) pair, got {type(curve).__name__}"
        )
    n = _check_sizes(as_array(curve[0], f"{name}[0] (n)", ndim=1), f"{name} (n)")
    loss = as_array(curve[1], f"{name}[1] (loss)", ndim=(1, 2)).astype(np.float64)
    check_finite(loss, f"{name} (loss)")
    if loss.shape[-1] != n.shape[0]:
        raise ValueError(f"{name}: {n.shape[0]} sizes but loss has shape {loss.shape}")
    if np.any(loss < 0):
        raise ValueError(f"{name}: losses must be >= 0 nats")
    return n, (loss.mean(axis=0) if loss.ndim == 2 else loss), None


def as_eps(eps: Any) -> Epsilon:
    """An :class:`Epsilon` from a number or an Epsilon (ValueError naming ``eps`` otherwise)."""
    if isinstance(eps, Epsilon):
        return eps
    if isinstance(eps, bool) or not isinstance(eps, (int, float, np.integer, np.floating)):
        raise ValueError(f"eps: must be a number or an Epsilon, got {type(eps).__name__}")
    return Epsilon(float(eps))


def _classes(num_classes: Any, from_curve: int | None, required: bool) -> int | None:
    c = from_curve if num_classes is None else num_classes
    if c is None:
        if required:
            raise ValueError("num_classes: needed (plain arrays do not carry it)")
        return None
    return check_int("num_classes", c, minimum=2)


def _at(n: np.ndarray, at: Any, *, default_last: bool = True) -> int:
    if at is None:
        return int(n[-1])
    check_int("n", at, minimum=1)
    if at > n[-1]:
        raise ValueError(f"n: {at} is beyond the largest measured size {n[-1]}")
    return int(at)


def va(curve: Any, n: int | None = None) -> Measure:
    """Validation loss at evaluation-set size n (Eq. 2), nats per example.

    The probe trained on the largest measured size ``n_k ≤ n`` (all of the
    data one is allowed); ``n`` defaults to the largest measured size."""
    sizes, loss, _ = as_points(curve)
    m = _at(sizes, n)
    if m < sizes[0]:
        raise ValueError(f"n: {m} is below the smallest measured size {sizes[0]}")
    k = int(np.searchsorted(sizes, m, side="right") - 1)
    return Measure(
        "VA",
        float(loss[k]),
        "exact",
        n=m,
        convention=f"loss of the probe trained on n_k = {sizes[k]} <= n examples",
    )


def mi(curve: Any) -> Measure:
    """MI measure (Eq. 5): lim L(A, n), **estimated** by the loss at the largest n (nats/example).

    An upper bound on H(Y | φ(X)) in nats only if the probe family contains p(y|x)."""
    sizes, loss, _ = as_points(curve)
    return Measure(
        "MI",
        float(loss[-1]),
        "estimate",
        n=int(sizes[-1]),
        convention="loss at the largest measured n stands in for n -> infinity",
    )


def mdl(curve: Any, num_classes: int | None = None, *, n: int | None = None) -> Measure:
    """Block-wise MDL (Eq. 7) of the first n examples implied by the curve, nats total.

    ``n_1 log C + Σ_k (min(n_{k+1}, n) − n_k)₊ L(n_k)`` (left-edge Riemann sum,
    uniform first block); ``n`` defaults to the largest measured size."""
    sizes, loss, c0 = as_points(curve)
    c = _classes(num_classes, c0, required=True)
    m = _at(sizes, n)
    edges = np.append(sizes, m)
    widths = np.clip(np.minimum(edges[1:], m) - edges[:-1], 0, None)[:-1]
    total = min(m, int(sizes[0])) * math.log(c) + float(np.sum(widths * loss[:-1]))
    return Measure("MDL", total, "exact", n=m, convention=LEFT_EDGE)


def sdl(curve: Any, eps: Any, *, num_classes: int | None = None) -> Measure:
    """Surplus description length (Eq. 11, Alg. 1), nats total.

    Left-edge Riemann area of ``[L − ε]₊`` up to the largest size ``n_S``; the
    first block ``[0, n_1)`` costs ``[log C − ε]₊`` per example when C is known
    (from the curve or ``num_classes``). ``tight`` iff ``L(n_S) ≤ ε/2``, else
    ``lower bound``."""
    sizes, loss, c0 = as_points(curve)
    e = as_eps(eps)
    c = _classes(num_classes, c0, required=False)
    surplus = np.clip(loss - e.value, 0.0, None)
    area = float(np.sum(np.diff(sizes) * surplus[:-1]))
    if c is not None:
        area += int(sizes[0]) * max(math.log(c) - e.value, 0.0)
    status = "tight" if loss[-1] <= e.value / 2 else "lower bound"
    return Measure(
        "SDL",
        area,
        status,
        eps=e.value,
        eps_source=e.source,
        convention=(LEFT_EDGE if c is not None else LEFT_EDGE_NO_C)
        + "; tight iff L(n_S) <= eps/2 (Alg. 1)",
    )


def esc(curve: Any, eps: Any) -> SampleComplexity:
    """ε sample complexity (Eq. 12): the first measured n with L(n) ≤ ε, or "> n_S"."""
    sizes, loss, _ = as_points(curve)
    e = as_eps(eps)
    hit = np.flatnonzero(loss <= e.value)
    if hit.size == 0:
        return SampleComplexity(None, int(sizes[-1]), e.value, e.source, (int(sizes[-1]), None))
    k = int(hit[0])
    lo = int(sizes[k - 1]) if k > 0 else 0
    return SampleComplexity(int(sizes[k]), int(sizes[-1]), e.value, e.source, (lo, int(sizes[k])))
