"""Tidy tables of every measure for several curves, with spreads over seeds, and the rankings.

Each measure is computed on the seed-mean curve (the paper's ``L̂_n``) and on
every seed's own curve; the table gives the value on the mean curve and the
mean and standard deviation of the per-seed values (εSC per seed counts a seed
that never reaches ε as "> n_max": its share is reported as ``exceeded``).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from mdlnb.curves._curve import LossDataCurve
from mdlnb.curves._measures import as_eps, esc, mdl, sdl, va


def _per_seed(curve: LossDataCurve) -> list[LossDataCurve]:
    return [LossDataCurve.from_arrays(curve.sizes, curve.loss[r], num_classes=curve.num_classes,
                                      representation=curve.representation)
            for r in range(curve.loss.shape[0])]


def _spread(values: Sequence[float]) -> tuple[float, float]:
    v = np.asarray(values, np.float64)
    return float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else 0.0


def measure_table(curves: Sequence[LossDataCurve], eps: Any, *, at: Sequence[int] | None = None):
    """One row per (representation, measure, n): VA and MDL at each size in ``at``
    (default: the common measured sizes), SDL and εSC at ``eps``.

    Columns: ``representation``, ``measure``, ``n`` (evaluation-set size; empty for
    SDL/εSC), ``value`` (on the seed-mean curve; εSC as a number, inf when > n_max),
    ``shown`` (the value as reported, e.g. "> 48000", "≥ 12.3"), ``status``,
    ``seed mean``, ``seed std``, ``exceeded`` (εSC: fraction of seeds above n_max),
    ``units``.
    """
    import pandas as pd

    curves = list(curves)
    if not curves or not all(isinstance(c, LossDataCurve) for c in curves):
        raise ValueError("curves: must be a non-empty list of LossDataCurve")
    e = as_eps(eps)
    if at is None:
        at = sorted(set.intersection(*(set(c.sizes.tolist()) for c in curves)))
    rows = []
    for c in curves:
        seeds = _per_seed(c)
        for n in at:
            for name, fn, units in (("VA", lambda k: va(k, int(n)), "nats/example"),
                                    ("MDL", lambda k: mdl(k, n=int(n)), "nats")):
                m = fn(c)
                mu, sd = _spread([fn(s).value for s in seeds])
                rows.append(dict(representation=c.representation, measure=name, n=int(n),
                                 value=m.value, shown=f"{m.value:.4g}", status=m.status,
                                 **{"seed mean": mu, "seed std": sd}, exceeded=np.nan,
                                 units=units))
        m = sdl(c, e)
        mu, sd = _spread([sdl(s, e).value for s in seeds])
        rows.append(dict(representation=c.representation, measure="SDL", n=None, value=m.value,
                         shown=("≥ " if not m.tight else "") + f"{m.value:.4g}", status=m.status,
                         **{"seed mean": mu, "seed std": sd}, exceeded=np.nan, units="nats"))
        s = esc(c, e)
        per = [esc(k, e) for k in seeds]
        found = [p.value for p in per if not p.exceeded]
        mu, sd = _spread(found) if found else (np.nan, np.nan)
        rows.append(dict(representation=c.representation, measure="eSC", n=None, value=s.value,
                         shown=str(s), status=s.status, **{"seed mean": mu, "seed std": sd},
                         exceeded=float(np.mean([p.exceeded for p in per])), units="examples"))
    return pd.DataFrame(rows)


def rankings(table) -> Any:
    """Which representation each (measure, n) prefers (lowest ``value``; ties → "tie").

    SDL/εSC rows where every representation is a lower bound / exceeded say
    "none reaches ε" instead of a winner: the paper's premature-evaluation guard."""
    import pandas as pd

    rows = []
    for (measure, n), g in table.groupby(["measure", table["n"].fillna(-1)], sort=False):
        best = g["value"].min()
        winners = g.loc[g["value"] == best, "representation"].tolist()
        if measure in ("SDL", "eSC") and (g["status"] == "lower bound").all():
            pick = "none reaches ε"
        else:
            pick = winners[0] if len(winners) == 1 else "tie"
        rows.append(dict(measure=measure, n=None if n == -1 else int(n), prefers=pick,
                         **{r: v for r, v in zip(g["representation"], g["shown"])}))
    return pd.DataFrame(rows)
