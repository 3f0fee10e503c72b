"""Which readout, from how many examples on: readout preference by data size, across orders.

The posterior p(readout | D_<t) of one run flickers from step to step (the
per-step argmax of a digits run changes dozens of times) and its whole-run
average depends on the example order and on the strategy. This module
summarises it on log-spaced bins of *examples seen* t (0 … N−1: the
prediction of example t + 1 uses t examples), and, given several
:class:`~mdlnb.api.evaluation.Report` of one task (different seeds = different
orders), says where the preference is stable.

Bins start at t = B (the batch size): before the first training step every
expert predicts uniformly and the posterior is the prior, which prefers
nothing. Per report r and bin b = [n_from, n_to): the mass of readout ρ is the
mean of p(ρ | D_<t) over t in the bin (summed over ρ's hyperparameter
settings); the report's preferred readout in b is its argmax, or none when
the top two are within :data:`TIE` (1e-3) of each other. Across reports: the
bin's ``readout`` is the argmax of the mass averaged over reports (``tie``
says when the runner-up is within :data:`TIE` of it: then no readout is
preferred), ``agreement`` the fraction of reports whose own preferred readout
is that one.

**Stability and switch points (the rule).** A bin is *stable* when at least
two distinct example orders were given, it has a readout (not a tie) and
``agreement ≥ min_agreement`` (default 1: every order prefers the same
readout). A switch point is stated
only between two *adjacent stable* bins whose readouts differ, at their
common edge n; between unstable bins nothing is stated, and with a single
order no bin is stable, so no switch point is ever stated from one run.

**Linear or deeper?** Where the named readout is unsettled (the mass split
across mlp1, mlp2, mlp3, which code almost alike), the question a user asks
often is settled: :attr:`ReadoutPreference.linear_or_deeper` sums the mass of
every readout but ``linear`` and states per bin whether it is above or below
½ beyond the spread over orders, from which n on, and how many orders that
needs (:mod:`mdlnb.api._depth`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from mdlnb.api import _depth
from mdlnb.core._checks import check_int
from mdlnb.core._grid import log_integers

# Imported inside the functions that use them, so that importing this module does not load
# them: pandas.


def log_bins(n: int, *, start: int = 1, per_decade: int = 3) -> np.ndarray:
    """Integer edges ``start = e_0 < e_1 < … < e_B = n`` of log-spaced bins of
    examples seen, about ``per_decade`` bins per factor of 10."""
    for name, v, lo in (("start", start, 1), ("n", n, 2), ("per_decade", per_decade, 1)):
        check_int(name, v, minimum=lo)
    if start >= n:
        raise ValueError(f"start: must be < n = {n}, got {start}")
    count = max(1, int(np.ceil(np.log10(n / start) * per_decade)))
    return log_integers(start, n, count + 1)


@dataclasses.dataclass(frozen=True)
class ReadoutPreference:
    """Readout preference by data size; see the module docstring for the rule.

    Attributes:
      table: tidy DataFrame, one row per bin: ``n_from``, ``n_to`` (examples
        seen, ``[n_from, n_to)``, from the batch size B to N), ``readout`` (the
        leader), ``mass`` (its mean posterior mass, averaged over reports),
        ``mass_sd`` (sd over reports, ddof 0; 0 for one report), ``runner_up``,
        ``runner_up_mass``, ``tie`` (the runner-up within :data:`TIE` of the
        leader: no readout preferred), ``agreement``, ``stable``.
      switch_points: tuples ``(n, from_readout, to_readout)``, stated only between
        adjacent stable bins.
      orders: number of distinct example orders among the reports.
      task: task name; n: N.
      linear_or_deeper: the :class:`mdlnb.api._depth.LinearOrDeeper` answer on the same
        bins (None for a board without a ``linear`` readout and another).
    """

    table: Any
    switch_points: tuple[tuple[int, str, str], ...]
    orders: int
    task: str
    n: int
    linear_or_deeper: Any = None

    @property
    def stable(self) -> bool:
        """Every bin stable (needs ≥ 2 orders)."""
        return bool(self.table["stable"].all())

    @property
    def settled(self) -> tuple[int, str] | None:
        """``(n, readout)``: from n examples on, every bin is stable and prefers
        ``readout`` — "which readout from how many examples on"; None when the
        last bin is not stable."""
        t = self.table
        if t.empty or not bool(t["stable"].iloc[-1]):
            return None
        last = t["readout"].iloc[-1]
        i = len(t) - 1
        while i > 0 and bool(t["stable"].iloc[i - 1]) and t["readout"].iloc[i - 1] == last:
            i -= 1
        return int(t["n_from"].iloc[i]), str(last)

    def __str__(self) -> str:
        lines = [
            f"readout preference by examples seen: task {self.task!r}, N={self.n}, "
            f"{self.orders} order{'s' if self.orders != 1 else ''}"
        ]
        for r in self.table.itertuples(index=False):
            agree = (
                ""
                if self.orders < 2
                else f"  agreement {r.agreement:.0%}{'  stable' if r.stable else '  UNSTABLE'}"
            )
            lead = f"{r.readout} = {r.runner_up} (tie)" if r.tie else r.readout
            lines.append(
                f"  [{r.n_from:>6,}, {r.n_to:>6,})  {lead:<10} {r.mass:.2f}"
                f" (next {r.runner_up} {r.runner_up_mass:.2f}){agree}"
            )
        if self.orders < 2:
            lines.append(
                "  one order: stability unknown; no switch point stated "
                "(pass Reports of several seeds)"
            )
        else:
            if self.switch_points:
                lines.append(
                    "  switch points: "
                    + "; ".join(f"{a} → {b} at n ≈ {n:,}" for n, a, b in self.switch_points)
                )
            else:
                lines.append("  no switch point stated (no two adjacent stable bins differ)")
            settled = self.settled
            lines.append(
                f"  settled: {settled[1]} from n ≈ {settled[0]:,} on"
                if settled
                else "  not settled: the preference at the largest N is unstable across orders"
            )
        if self.linear_or_deeper is not None:
            lines.append(str(self.linear_or_deeper))
        return "\n".join(lines)

    __repr__ = __str__


TIE = 1e-3


def _one_task(reports: Any) -> tuple[list, list[str]]:
    """``(reports, readout names)``: one Report or several, checked to be of one task
    (same name and N) and one set of readouts; names in the first report's order."""
    reps = [reports] if hasattr(reports, "readout_matrix") else list(reports)
    if not reps or not all(hasattr(r, "readout_matrix") for r in reps):
        raise ValueError("reports: expected a Report or a non-empty sequence of Reports")
    first = reps[0]
    for r in reps[1:]:
        if r.task_name != first.task_name or r.n != first.n:
            raise ValueError(
                f"reports: mix tasks ({first.task_name!r}, N={first.n} vs "
                f"{r.task_name!r}, N={r.n}); pass reports of one task"
            )
    names = list(dict.fromkeys(first.readouts))
    for r in reps[1:]:
        if set(r.readouts) != set(names):
            raise ValueError(
                f"reports: boards differ in readouts ({sorted(set(names))} vs "
                f"{sorted(set(r.readouts))})"
            )
    return reps, names


def _bin_mass(reps: list, names: list[str], edges: np.ndarray) -> np.ndarray:
    """``mass[r, b, j]``: report r's mean posterior of readout ``names[j]`` over the
    examples of bin b (``edges[b]`` to ``edges[b + 1]``)."""
    mass = np.empty((len(reps), len(edges) - 1, len(names)))
    for i, r in enumerate(reps):
        uniq, mat = r.readout_matrix()
        mat = mat[:, [uniq.index(nm) for nm in names]]
        for b, (lo, hi) in enumerate(zip(edges[:-1], edges[1:])):
            mass[i, b] = mat[lo:hi].mean(axis=0)
    return mass


def _top(m: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(…, J) masses → (preferred index, or J on a tie within :data:`TIE`; the
    first; the second), the order stable on equal masses."""
    none = m.shape[-1]
    o = np.argsort(-m, axis=-1, kind="stable")
    first_, second_ = o[..., 0], o[..., min(1, m.shape[-1] - 1)]
    gap = (
        np.take_along_axis(m, first_[..., None], -1) - np.take_along_axis(m, second_[..., None], -1)
    )[..., 0]
    tied = (gap <= TIE) & (m.shape[-1] > 1)
    return np.where(tied, none, first_), first_, second_


def readout_preference(
    reports: Any, *, per_decade: int = 3, min_agreement: float = 1.0
) -> ReadoutPreference:
    """Readout preference on log-spaced bins of data size, with its stability across orders.

    Args:
      reports: one :class:`~mdlnb.api.evaluation.Report` or several of the same
        task (same name, N and readouts), e.g. ``[evaluate(task, seed=s) for s
        in range(3)]``; different seeds give different example orders.
      per_decade: bins per factor of 10 of examples seen (:func:`log_bins`).
      min_agreement: fraction of reports that must prefer a bin's readout for
        the bin to be stable (with at least two distinct orders).
    """
    import pandas as pd

    if not 0.0 < float(min_agreement) <= 1.0:
        raise ValueError(f"min_agreement: must lie in (0, 1], got {min_agreement!r}")
    reps, names = _one_task(reports)
    first = reps[0]
    orders = len({np.asarray(r.losses.order).tobytes() for r in reps})
    start = max(int(r.losses.batch_size) for r in reps)
    if first.n <= start:
        raise ValueError(
            f"reports: N = {first.n} <= batch size {start}: no readout was "
            "trained, there is no preference to report"
        )
    edges = log_bins(first.n, start=start, per_decade=per_decade)
    mass = _bin_mass(reps, names, edges)
    mean = mass.mean(axis=0)
    none = len(names)  # "no preferred readout": a tie
    best, lead, second = _top(mean)
    own = _top(mass)[0]  # (R, B)
    agreement = (own == best[None, :]).mean(axis=0)
    stable = (agreement >= float(min_agreement) - 1e-12) & (orders >= 2) & (best != none)
    b_idx = np.arange(len(best))
    table = pd.DataFrame(
        {
            "n_from": edges[:-1],
            "n_to": edges[1:],
            "readout": [names[j] for j in lead],
            "mass": mean[b_idx, lead],
            "mass_sd": mass[:, b_idx, lead].std(axis=0),
            "runner_up": [names[j] for j in second],
            "runner_up_mass": mean[b_idx, second],
            "tie": best == none,
            "agreement": agreement,
            "stable": stable,
        }
    )
    switches = tuple(
        (int(edges[b + 1]), names[best[b]], names[best[b + 1]])
        for b in range(len(best) - 1)
        if stable[b] and stable[b + 1] and best[b] != best[b + 1]
    )
    depth = (
        _depth.linear_or_deeper(mass, names, edges, orders)
        if _depth.LINEAR in names and len(names) > 1
        else None
    )
    return ReadoutPreference(table, switches, orders, first.task_name, first.n, depth)


def whole_run_preference(report: Any) -> tuple[str, float]:
    """``(readout, mass)``: argmax_ρ (1/N) Σ_t p(ρ | D_<t) over one whole run (paper
    Fig. 2's summary) — one order's average, not a stable fact."""
    uniq, mat = report.readout_matrix()
    avg = mat.mean(axis=0)
    j = int(np.argmax(avg))
    return uniq[j], float(avg[j])
