"""Every measure of several curves as the evaluation set grows (SDL paper Fig. 2), and the rankings.

For each evaluation-set size ``n`` in ``at``, each measure sees only what an
evaluator holding ``n`` examples could measure: the curve's points with
``n_k ≤ n``. VA(n) and MDL(n) are then numbers; SDL and εSC are **tight** (or
found) once the truncated curve has gone below ε (SDL: below ε/2, Alg. 1) and
**lower bounds** before — that is how they refuse to rank prematurely.

Each measure is computed on the seed-mean curve (the paper's ``L̂_n``) and on
every seed's own curve: ``seed mean`` / ``seed std`` give the spread (εSC:
over the seeds that reached ε; ``exceeded`` is the fraction that did not).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mdlnb.baselines.curves._data import LossDataCurve
from mdlnb.baselines.curves._measures import as_eps, esc, mdl, sdl, va

# Imported inside the functions that use them, so that importing this module does not load
# them: pandas.


def truncate(curve: LossDataCurve, n: int) -> LossDataCurve:
    """The points of ``curve`` with size ``≤ n`` (ValueError naming ``n`` if none)."""
    keep = curve.sizes <= n
    if not keep.any():
        raise ValueError(f"n: {n} is below the smallest measured size {curve.sizes[0]}")
    return LossDataCurve(
        curve.representation,
        curve.sizes[keep],
        curve.loss[:, keep],
        curve.accuracy[:, keep],
        curve.seeds,
        curve.num_classes,
        curve.meta,
    )


def _per_seed(curve: LossDataCurve) -> list[LossDataCurve]:
    return [
        LossDataCurve.from_arrays(
            curve.sizes,
            curve.loss[r],
            num_classes=curve.num_classes,
            representation=curve.representation,
        )
        for r in range(curve.loss.shape[0])
    ]


def _spread(values: Sequence[float]) -> tuple[float, float]:
    v = np.asarray(values, np.float64)
    if v.size == 0:
        return np.nan, np.nan
    return float(v.mean()), (float(v.std(ddof=1)) if v.size > 1 else 0.0)


def measure_table(curves: Sequence[LossDataCurve], eps: Any, *, at: Sequence[int] | None = None):
    """Tidy table: one row per (representation, measure, n, ε).

    Args:
      curves: the curves to compare (one per representation).
      eps: ε in nats (number or ``Epsilon``), or a list of them (SDL/εSC rows per ε).
      at: evaluation-set sizes; default the sizes every curve measured.

    Columns: ``representation``, ``measure`` (VA, MDL, SDL, eSC), ``n``, ``eps``
    (SDL/εSC), ``value`` (seed-mean curve; εSC inf when "> n"), ``shown`` (as
    reported: "≥ 12.3", "> 500"), ``status``, ``seed mean``, ``seed std``,
    ``exceeded`` (εSC: fraction of seeds not reaching ε), ``units``.
    """
    import pandas as pd

    curves = [curves] if isinstance(curves, LossDataCurve) else list(curves)
    if not curves or not all(isinstance(c, LossDataCurve) for c in curves):
        raise ValueError("curves: must be a non-empty list of LossDataCurve")
    epss = [as_eps(e) for e in (eps if isinstance(eps, (list, tuple)) else [eps])]
    if at is None:
        at = sorted(set.intersection(*(set(c.sizes.tolist()) for c in curves)))
    rows = []

    def row(c, measure, n, e, m, shown, per, units, exceeded=np.nan):
        mu, sd = _spread(per)
        rows.append(
            {
                "representation": c.representation,
                "measure": measure,
                "n": int(n),
                "eps": e,
                "value": m.value,
                "shown": shown,
                "status": m.status,
                "seed mean": mu,
                "seed std": sd,
                "exceeded": exceeded,
                "units": units,
            }
        )

    for c in curves:
        for n in at:
            n = int(n)
            part = truncate(c, n)
            seeds, whole = _per_seed(part), _per_seed(c)
            m = va(c, n)
            row(
                c,
                "VA",
                n,
                np.nan,
                m,
                f"{m.value:.4g}",
                [va(s, n).value for s in whole],
                "nats/example",
            )
            m = mdl(c, n=n)
            row(
                c, "MDL", n, np.nan, m, f"{m.value:.4g}", [mdl(s, n=n).value for s in whole], "nats"
            )
            for e in epss:
                m = sdl(part, e)
                row(
                    c,
                    "SDL",
                    n,
                    e.value,
                    m,
                    ("≥ " if not m.tight else "") + f"{m.value:.4g}",
                    [sdl(s, e).value for s in seeds],
                    "nats",
                )
                m = esc(part, e)
                per = [esc(s, e) for s in seeds]
                row(
                    c,
                    "eSC",
                    n,
                    e.value,
                    m,
                    str(m),
                    [p.value for p in per if not p.exceeded],
                    "examples",
                    float(np.mean([p.exceeded for p in per])),
                )
    return pd.DataFrame(rows)


def _winner(g, spread: bool = False) -> str:
    """Lowest value; for SDL/εSC a winner only when its value is final (tight / found) and no
    lower bound of another representation could still go below it. ``spread``: VA/MDL name
    a winner only when the runner-up is further than the difference's seed spread,
    √(sd₁² + sd₂²) of the two ``seed std`` values (else "tie (within the seed spread)")."""
    reps, vals = g["representation"].tolist(), g["value"].to_numpy()
    final = (g["status"] != "lower bound").to_numpy()
    if g["measure"].iloc[0] in ("SDL", "eSC"):
        if not final.any():
            return "undetermined (all lower bounds)"
        best = vals[final].min()
        if np.any(~final & (vals < best)):
            return "undetermined (a lower bound is smaller)"
        winners = [r for r, v, f in zip(reps, vals, final) if f and v == best]
    else:
        winners = [r for r, v in zip(reps, vals) if v == vals.min()]
        if spread and len(winners) == 1 and len(vals) > 1:
            sd = g["seed std"].to_numpy(float)
            i, j = np.argsort(vals, kind="stable")[:2]
            if np.isfinite(sd[[i, j]]).all() and vals[j] - vals[i] <= np.hypot(sd[i], sd[j]):
                return "tie (within the seed spread)"
    return winners[0] if len(winners) == 1 else "tie"


def rankings(table, *, spread: bool = False) -> Any:
    """Which representation each (measure, ε, n) prefers, with every representation's shown value.
    ``spread=True``: a VA/MDL winner must beat the runner-up by more than the seed spread of
    their difference (:func:`_winner`), so a change of winner is never one inside the noise."""
    import pandas as pd

    rows = []
    keys = [table["measure"], table["eps"].fillna(-1.0), table["n"]]
    for (measure, e, n), g in table.groupby(keys, sort=False):
        rows.append(
            {
                "measure": measure,
                "eps": None if e == -1.0 else e,
                "n": int(n),
                "prefers": _winner(g, spread),
                **{r: v for r, v in zip(g["representation"], g["shown"])},
            }
        )
    out = pd.DataFrame(rows)
    order = {"VA": 0, "MDL": 1, "SDL": 2, "eSC": 3}
    out = out.assign(_m=out["measure"].map(order), _e=out["eps"].fillna(-1.0))
    return (
        out.sort_values(["_m", "_e", "n"], kind="stable")
        .drop(columns=["_m", "_e"])
        .reset_index(drop=True)
    )


def winner_changes(ranks) -> Any:
    """Per (measure, ε): the sequence of :func:`rankings`' verdicts as n grows, and whether
    the *named* winner (ignoring "undetermined" and "tie") changed.

    Columns ``measure``, ``eps``, ``sequence`` (verdicts in order of n, consecutive
    repeats dropped, joined by " → "), ``winners`` (the named representations in
    that order), ``changed`` (more than one distinct named winner)."""
    import pandas as pd

    for col in ("measure", "eps", "n", "prefers"):
        if col not in getattr(ranks, "columns", []):
            raise ValueError(f"ranks: missing column {col!r}; pass rankings()'s output")
    rows = []
    keys = [ranks["measure"], ranks["eps"].fillna(-1.0)]
    for (measure, e), g in ranks.sort_values("n", kind="stable").groupby(keys, sort=False):
        verdicts = g["prefers"].tolist()
        seq = [v for i, v in enumerate(verdicts) if i == 0 or v != verdicts[i - 1]]
        named = [p for p in seq if not p.startswith(("undetermined", "tie"))]
        named = [p for i, p in enumerate(named) if i == 0 or p != named[i - 1]]
        rows.append(
            {
                "measure": measure,
                "eps": None if e == -1.0 else e,
                "sequence": " → ".join(seq),
                "winners": ", ".join(named),
                "changed": len(set(named)) > 1,
            }
        )
    return pd.DataFrame(rows)
