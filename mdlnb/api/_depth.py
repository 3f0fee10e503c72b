"""*Linear or deeper?* — the readout question a user asks, answered per data-size bin
from several orders, with what the answer rests on.

The posterior mass of one readout (mlp1, say) splits across its neighbours
(mlp2, mlp3 code almost the same) and flickers between orders, so "which MLP"
is often unsettled where "an MLP or a linear readout" is not. This module
sums the mass of every readout other than ``linear`` — the deeper readouts
together — and states, per bin of examples seen (the bins of
:func:`mdlnb.api.preference.readout_preference`):

* ``deeper mass``: for each order r, the mean over the bin's t of
  Σ_{ρ ≠ linear} p(ρ | D_<t); then its mean over the R orders and a 95 %
  interval over orders, mean ± t_{0.975, R−1} · sd / √R (sd with ddof 1),
  clipped to [0, 1];
* ``answer``: ``"deeper"`` when that interval lies above ½ (most of the
  posterior on deeper readouts, beyond the order-to-order noise),
  ``"linear"`` when it lies below ½, else ``"undecided"``;
* ``orders needed``: the smallest R* ≥ 2 with t_{0.975, R*−1} · sd / √R* <
  |mean − ½|, the sd taken as measured: how many orders the bin's answer
  needs at its present spread (more than it has: the answer is
  ``"undecided"``; None when the mean sits at ½ or only one order was run);
* the statement: the answer of the last bin and the first n from which every
  later bin gives it — "deeper from n ≈ 121" — with the orders it needs
  (the most over those bins).

One order gives no interval: then nothing is decided, and the text says to
pass the reports of several seeds. A board without a ``linear`` readout, or
with nothing else, has no such question (a ValueError).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from scipy import stats

#: Orders searched for :func:`orders_needed` before giving up.
MAX_ORDERS = 1000
LINEAR = "linear"


def orders_needed(
    mean: float, sd: float, *, level: float = 0.95, cap: int = MAX_ORDERS
) -> int | None:
    """Smallest R ≥ 2 with t_{(1+level)/2, R−1} · sd / √R < |mean − ½|, or None
    when no R ≤ ``cap`` does (a mean at ½, or a spread too wide)."""
    gap = abs(float(mean) - 0.5)
    if not np.isfinite(sd) or gap == 0.0:
        return None
    if sd == 0.0:
        return 2
    r = np.arange(2, cap + 1)
    ok = stats.t.ppf(0.5 + level / 2, r - 1) * sd / np.sqrt(r) < gap
    return int(r[np.argmax(ok)]) if ok.any() else None


@dataclasses.dataclass(frozen=True)
class LinearOrDeeper:
    """The answer per bin and overall; see the module docstring for the rule.

    Attributes:
      table: one row per bin: ``n_from``, ``n_to``, ``deeper mass`` (mean over
        orders), ``deeper low``, ``deeper high`` (its 95 % interval over orders; NaN
        for one order), ``deeper min``, ``deeper max`` (over orders), ``answer``,
        ``orders needed``.
      orders: R, the distinct example orders.
      deeper: the readouts counted as deeper (every readout but ``linear``).
    """

    table: Any
    orders: int
    deeper: tuple[str, ...]

    @property
    def settled(self) -> tuple[int, str] | None:
        """``(n, answer)``: from n examples on every bin gives the last bin's answer,
        which is decided; None when the last bin is ``"undecided"``."""
        ans = list(self.table["answer"])
        if not ans or ans[-1] == "undecided":
            return None
        i = len(ans) - 1
        while i > 0 and ans[i - 1] == ans[-1]:
            i -= 1
        return int(self.table["n_from"].iloc[i]), str(ans[-1])

    @property
    def needed(self) -> int | None:
        """Orders the statement needs: the most :func:`orders_needed` over the bins it
        rests on (the settled ones, else the last bin); None if unknown."""
        t = self.table
        settled = self.settled
        rows = t[t["n_from"] >= settled[0]] if settled else t.iloc[-1:]
        vals = rows["orders needed"].dropna()
        return None if vals.empty or len(vals) < len(rows) else int(vals.max())

    def text(self) -> str:
        """One line: the statement, the deeper mass in the last bin with its interval, and
        the orders it needs (a table cell; :meth:`__str__` adds the bins)."""
        last = self.table.iloc[-1]
        at = f"n ≥ {int(last['n_from']):,}"
        if self.orders < 2:
            return (
                f"deeper mass {last['deeper mass']:.2f} at {at} (one order: run several "
                "seeds to decide)"
            )
        mass = (
            f"mass {last['deeper mass']:.2f} [{last['deeper low']:.2f}, {last['deeper high']:.2f}]"
        )
        settled, need = self.settled, self.needed
        if settled is not None:
            return (
                f"{settled[1]} from n ≈ {settled[0]:,}: {mass} at {at}; needs {need} "
                f"orders ({self.orders} run)"
            )
        more = (
            "no number of orders settles it at this spread"
            if need is None
            else f"needs ≈ {need} orders ({self.orders} run)"
        )
        return f"undecided at {at}: {mass}; {more}"

    def __str__(self) -> str:
        lines = [
            f"linear or deeper ({', '.join(self.deeper)} together), {self.orders} "
            f"order{'s' if self.orders != 1 else ''}: {self.text()}"
        ]
        for _, r in self.table.iterrows():
            span = "" if self.orders < 2 else f" [{r['deeper low']:.2f}, {r['deeper high']:.2f}]"
            need = r["orders needed"]
            lines.append(
                f"  [{int(r['n_from']):>6,}, {int(r['n_to']):>6,})  deeper mass "
                f"{r['deeper mass']:.2f}{span}  {r['answer']:<9}"
                + ("" if np.isnan(need) else f"  needs {int(need)} orders")
            )
        return "\n".join(lines)

    __repr__ = __str__


def linear_or_deeper(
    mass: np.ndarray, names: list[str], edges: np.ndarray, orders: int
) -> LinearOrDeeper:
    """The answer from ``mass[r, b, j]`` (report r's mean posterior of readout
    ``names[j]`` over bin b, :func:`mdlnb.api.preference.readout_preference`)."""
    import pandas as pd

    if LINEAR not in names or len(names) < 2:
        raise ValueError(
            f"reports: linear or deeper needs a board with a 'linear' readout and "
            f"at least one other, got readouts {names}"
        )
    keep = [j for j, n in enumerate(names) if n != LINEAR]
    d = mass[:, :, keep].sum(axis=2)  # (R, B) deeper mass per order
    r = d.shape[0]
    mean = d.mean(axis=0)
    sd = d.std(axis=0, ddof=1) if r > 1 else np.full(d.shape[1], np.nan)
    half = stats.t.ppf(0.975, r - 1) * sd / np.sqrt(r) if r > 1 else np.full(d.shape[1], np.nan)
    low, high = np.clip(mean - half, 0, 1), np.clip(mean + half, 0, 1)
    decided = orders >= 2
    answer = np.where(
        decided & (low > 0.5), "deeper", np.where(decided & (high < 0.5), "linear", "undecided")
    )
    need = [orders_needed(m, s) if decided else None for m, s in zip(mean, sd)]
    table = pd.DataFrame(
        {
            "n_from": edges[:-1],
            "n_to": edges[1:],
            "deeper mass": mean,
            "deeper low": low if decided else np.nan,
            "deeper high": high if decided else np.nan,
            "deeper min": d.min(axis=0),
            "deeper max": d.max(axis=0),
            "answer": answer,
            "orders needed": np.array([np.nan if v is None else v for v in need], dtype=float),
        }
    )
    return LinearOrDeeper(table, orders, tuple(names[j] for j in keep))
