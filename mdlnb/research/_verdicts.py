"""The verdict rules of :mod:`mdlnb.research.claims`: one interval, two questions.

A claim of a paper is an effect with a direction (an encoder codes *shorter*,
a metric ranks *better*, a readout is *deeper*) and a size (the paper's
value P). This run measures the effect and its 95 % interval [lo, hi]; the
same interval answers both questions, and each answer can fail both ways:

* **direction** — *replicated* if the interval lies wholly on the claimed side
  of the null value (usually 0), *reversed* if it lies wholly on the other
  side, *undetermined* if it contains the null;
* **size**, against P — *smaller* if the interval lies wholly short of P (on
  the null's side of it), *larger* if wholly beyond P, *consistent* if it
  contains P.

So an interval that contains both the null and P is "direction undetermined,
size consistent": the run told us little, and :func:`runs_to_decide` says at
how many units the same mean and spread would settle the direction. This is
the two-part judgement of replication studies (Open Science Collaboration
2015, *Estimating the reproducibility of psychological science*, Science 349:
direction and significance on one side, whether the original effect lies in
the replication's interval on the other).

:func:`effect_decision` decides; :mod:`mdlnb.research._effects` builds its interval
from a claim's units (Student t, Welch, percentile bootstrap over units,
Clopper–Pearson). Every
:class:`Decision` carries the numbers and the rule clause in words, written by
the same code that decides, so the printed rule cannot disagree with the
verdict. Re-exported by :mod:`mdlnb.research.claims`.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from mdlnb.core._checks import check_int

REPLICATED, REVERSED, UNDETERMINED = "replicated", "reversed", "undetermined"
#: Direction of the effect against the null value.
DIRECTIONS = (REPLICATED, REVERSED, UNDETERMINED)
SMALLER, CONSISTENT, LARGER = "smaller", "consistent", "larger"
#: Size of the effect against the paper's (undetermined: no interval).
SIZES = (SMALLER, CONSISTENT, LARGER, UNDETERMINED)
SIDES = ("above", "below")
#: The size part in words.
SIZE_WORDS = {
    SMALLER: "smaller than the paper's",
    CONSISTENT: "consistent with the paper's",
    LARGER: "larger than the paper's",
    UNDETERMINED: "undetermined",
}

#: Interval ends this close to the null (relative to the paper's effect, at least 1) count
#: as the null: "excludes zero" must not rest on float rounding (1 − τ = 1.1e-16 at τ = 1).
ROUNDING = 1e-12


class Decision(NamedTuple):
    """A claim's two-part verdict and the numbers that decided it.

    ``direction`` in :data:`DIRECTIONS`, ``size`` in :data:`SIZES`; ``estimate``
    and its interval ``[lo, hi]`` (``label`` says which interval); the paper's
    effect ``paper_effect`` and the ``null`` it is measured from, on the claimed
    ``side`` of the null; ``n`` independent ``unit``; ``settle_at``: the number of
    units at which the same mean and spread would settle an undetermined direction
    (NaN when the direction is settled, inf when no number of units would);
    ``detail``: the numbers as text; ``rule``: how direction and size were decided,
    in words."""

    direction: str
    size: str
    estimate: float
    lo: float
    hi: float
    paper_effect: float
    null: float
    side: str
    n: int
    unit: str
    label: str
    settle_at: float
    detail: str
    rule: str

    @property
    def standardized(self) -> tuple[float, float, float]:
        """(estimate, lo, hi) as fractions of the paper's effect: 0 is the null, 1 the
        paper's value (what the forest plot draws, so effects of any unit share an axis)."""
        scale = self.paper_effect - self.null
        return tuple((v - self.null) / scale for v in (self.estimate, self.lo, self.hi))


def _fmt(v: float) -> str:
    return f"{v:.4g}"


def _finite(values: Any, name: str) -> np.ndarray:
    a = np.asarray(values, dtype=np.float64).reshape(-1)
    if a.size and not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: must be finite, got {a}")
    return a


def _check_level(level: float) -> None:
    if not 0 < level < 1:
        raise ValueError(f"level: must lie in (0, 1), got {level!r}")


def rule_clause(
    *, paper_effect: float, side: str = "above", null: float = 0.0, label: str = "95% CI"
) -> str:
    """The decision rule of :func:`effect_decision` in words (what ``Decision.rule`` holds)."""
    other = "below" if side == "above" else "above"
    short, beyond = ("below", "above") if side == "above" else ("above", "below")
    return (
        f"{label}: direction replicated if it lies wholly {side} {_fmt(null)}, reversed if "
        f"wholly {other}, else undetermined; size smaller than the paper's "
        f"{_fmt(paper_effect)} if wholly {short} it, larger if wholly {beyond}, else "
        "consistent"
    )


def runs_to_decide(
    n: int,
    mean: float,
    half_width: float,
    paper_effect: float | None,
    *,
    below: float | None = None,
    above: float | None = None,
    null: float = 0.0,
) -> float:
    """Sample size (in the units of ``n``) at which an interval of the same mean and
    spread would exclude the ``null`` or the paper's effect, whichever comes first:
    the half-width shrinks as 1/√n, so it excludes a value v at n·(h/|mean − v|)²
    (inf when neither can move: zero spread, or the mean sits on both).
    ``paper_effect`` None: decided against the null alone.

    ``below``, ``above``: the interval's reach below and above ``mean`` where it is
    not symmetric (a percentile bootstrap); h is then the reach on the side that
    faces the value (default ``half_width``); where that reach ends exactly on the
    value (a bounded statistic's percentile interval at its bound) the projection
    would be n itself, and the half-width is used instead."""
    below = half_width if below is None else below
    above = half_width if above is None else above
    needs = []
    for v in (null, paper_effect):
        if v is None or mean == v:
            continue
        reach = below if mean > v else above
        if math.isclose(reach, abs(mean - v), rel_tol=1e-9, abs_tol=1e-12):
            reach = half_width
        needs.append(n * (reach / abs(mean - v)) ** 2)
    return float(min(needs)) if needs and min(below, above) > 0 else float("inf")


def effect_decision(
    mean: float,
    lo: float,
    hi: float,
    *,
    paper_effect: float,
    n: int,
    side: str = "above",
    null: float = 0.0,
    unit: str = "units",
    label: str = "95% CI",
) -> Decision:
    """The two-part verdict (module docstring) of an effect's interval ``[lo, hi]``.

    ``side="above"``: the claim is an effect above ``null`` and the paper measured
    ``paper_effect`` > ``null``; ``"below"``: below it. Interval ends within
    :data:`ROUNDING` of the null count as the null. A non-finite end gives
    direction and size undetermined ("no interval")."""
    if side not in SIDES:
        raise ValueError(f"side: must be 'above' or 'below', got {side!r}")
    s = 1.0 if side == "above" else -1.0
    if not s * (paper_effect - null) > 0:
        raise ValueError(
            f"paper_effect: must lie on the claimed side ({side}) of the null "
            f"{null!r}, got {paper_effect!r}"
        )
    n = check_int("n", n, minimum=0)
    rule = rule_clause(paper_effect=paper_effect, side=side, null=null, label=label)
    detail = (
        f"{_fmt(mean)}, {label} [{_fmt(lo)}, {_fmt(hi)}] (n = {n} {unit}); "
        f"paper {_fmt(paper_effect)}"
    )
    common = dict(
        estimate=float(mean),
        lo=float(lo),
        hi=float(hi),
        paper_effect=float(paper_effect),
        null=float(null),
        side=side,
        n=int(n),
        unit=unit,
        label=label,
        rule=rule,
    )
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return Decision(
            UNDETERMINED,
            UNDETERMINED,
            settle_at=float("inf"),
            detail=detail + "; no interval",
            **common,
        )
    # the interval in the claimed direction, measured from the null
    a, b = sorted((s * (lo - null), s * (hi - null)))
    tol = ROUNDING * max(1.0, abs(paper_effect - null))
    a, b = (0.0 if abs(v) <= tol else v for v in (a, b))
    effect = s * (paper_effect - null)
    direction = REPLICATED if a > 0 else REVERSED if b < 0 else UNDETERMINED
    size = SMALLER if b < effect else LARGER if a > effect else CONSISTENT
    settle = float("nan")
    if direction == UNDETERMINED:
        settle = runs_to_decide(
            n,
            mean,
            (hi - lo) / 2,
            None,
            below=max(mean - lo, 0.0),
            above=max(hi - mean, 0.0),
            null=null,
        )
        detail += (
            f"; direction would settle at n ≈ {math.ceil(settle):,} {unit}"
            if np.isfinite(settle)
            else "; no spread to settle the direction"
        )
    return Decision(direction, size, settle_at=settle, detail=detail, **common)
