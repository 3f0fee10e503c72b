"""The outcome of :func:`mdlnb.compare`: a :class:`Comparison` of encoders over paired
data orders, and the :class:`StandardizeCheck` of its top two.

Codelengths L_{e,s} of encoder e under order s are in nats (bits = nats / ln 2).
A :class:`Comparison` keeps one row per run and derives the per-encoder table
(mean and sd over orders, the paired difference Δ_{e,s} = L_{e,s} − L_{b,s} to
the best encoder b, where the cumulative paired difference last changes sign,
the readout preference by data size), its notes and its printout; the printed
table and the figure are drawn by :mod:`mdlnb.api._comparison_views`. The
statistics are defined in :mod:`mdlnb.api._compare`'s docstring, which runs them.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from mdlnb.api import _comparison_views, preference
from mdlnb.api.output import to_markdown
from mdlnb.core import _targets
from mdlnb.core._task import Task
from mdlnb.core._units import LN2
from mdlnb.infra import _warnings


class Rerun(NamedTuple):
    """What :meth:`Comparison.check_standardize` needs to rerun encoders: their (N, D)
    features, the labels (a regression task: the Task), C, the cache flag, and the
    driver itself
    (:func:`mdlnb.compare`, handed over by it, so that the result type does not
    import the driver that builds it)."""

    features: Mapping[str, np.ndarray]
    y: np.ndarray | Task
    num_classes: int | None
    cache: bool
    compare: Callable[..., Comparison]


#: A gap to the best within this many paired sd is a close call (:attr:`Comparison.close_call`).
CLOSE_SD = 2.0


def last_sign_change(d: np.ndarray) -> int | None:
    """n (examples coded, 1-based) at which the cumulative difference ``d`` (d[t−1] after
    t examples) last changes sign: the first n after the last change whose d(n) is
    nonzero with the final sign; zeros are skipped. None when it never changes sign."""
    d = np.asarray(d, np.float64)
    nz = np.flatnonzero(np.sign(d))
    if nz.size < 2:
        return None
    sg = np.sign(d[nz])
    flips = np.flatnonzero(sg[1:] != sg[:-1])
    return None if flips.size == 0 else int(nz[flips[-1] + 1]) + 1


@dataclasses.dataclass(frozen=True, eq=False)
class StandardizeCheck:
    """The top two encoders of a :class:`Comparison` rerun under the other input
    standardisation (:meth:`Comparison.check_standardize`).

    Attributes:
      encoders: (best, second) in the original comparison.
      standardize: (original, other), e.g. ``("prefix", "none")``.
      gap_nats, gap_sd_nats: second − best, mean and paired sd, originally.
      rerun: the :class:`Comparison` of the two under the other standardisation.
      held: True when the rerun keeps the best first.
    """

    encoders: tuple[str, str]
    standardize: tuple[str, str]
    gap_nats: float
    gap_sd_nats: float
    rerun: Comparison
    held: bool

    def __str__(self) -> str:
        a, b = self.encoders
        tab = self.rerun.table().set_index("encoder")
        loser = b if self.held else a
        gap, sd = tab.loc[loser, "vs best [nats]"], tab.loc[loser, "vs best std [nats]"]
        verdict = "the order held" if self.held else "the order flipped"
        return (
            f"standardize={self.standardize[0]!r}: {a} first, {b} {self.gap_nats:+.1f} "
            f"± {self.gap_sd_nats:.1f} nats; standardize={self.standardize[1]!r}: "
            f"{self.rerun.best} first, {loser} {gap:+.1f} ± {sd:.1f} nats — {verdict}"
        )

    __repr__ = __str__


@dataclasses.dataclass(frozen=True, eq=False)
class Comparison:
    """The outcome of :func:`mdlnb.compare`.

    Attributes:
      runs: tidy DataFrame, one row per (encoder, seed): ``total [nats]``,
        ``per example [bits]``, ``best expert [nats]``, ``whole-run readout``
        (one order's whole-run argmax, see :meth:`readout_preference` instead).
      per_step_nats: ``{(encoder, seed): (N,) float64}`` the switching code's
        next-step loss in nats, stream order (the same order for every encoder).
      readout_mass: ``{(encoder, seed): {readout: (1/N) Σ_t p(readout | D_<t)}}``.
      reports: ``{(encoder, seed): Report}``, every run's :class:`mdlnb.Report`
        (loss matrix and posterior: (N, K) each; for a large board this is
        most of the memory a Comparison holds).
      warnings: the runs' warnings, each sentence once, with the runs it came from.
      protocol: the :class:`mdlnb.Protocol` it ran (its seed is replaced by each
        order's); n, num_classes, seeds, task_name.
      inputs: the :class:`Rerun` that :meth:`check_standardize` needs (None: a
        Comparison built by hand, which cannot rerun).
      kind: ``"classification"``, or ``"regression"``: density codelengths
        (:mod:`mdlnb.core._targets`), per example in density nats instead of bits.
    """

    runs: Any
    per_step_nats: Mapping[tuple[str, int], np.ndarray]
    readout_mass: Mapping[tuple[str, int], Mapping[str, float]]
    protocol: Any
    n: int
    num_classes: int
    seeds: tuple[int, ...]
    task_name: str
    reports: Mapping[tuple[str, int], Any] = dataclasses.field(default_factory=dict, repr=False)
    warnings: tuple[str, ...] = ()
    inputs: Rerun | None = dataclasses.field(default=None, repr=False)
    kind: str = "classification"  # "regression": density codelengths (mdlnb.core._targets)

    @property
    def per_step(self) -> Mapping[tuple[str, int], np.ndarray]:
        """Deprecated alias of :attr:`per_step_nats`."""
        warnings.warn(
            "Comparison.per_step is deprecated: use per_step_nats (the unit in the name)",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.per_step_nats

    @property
    def encoders(self) -> list[str]:
        return list(dict.fromkeys(self.runs["encoder"]))

    def _wide(self, column: str) -> np.ndarray:
        w = self.runs.pivot(index="encoder", columns="seed", values=column)
        return w.loc[self.encoders, list(self.seeds)].to_numpy(np.float64)

    def totals(self) -> np.ndarray:
        """(E, S) codelengths in nats, encoders × seeds (:attr:`encoders`, :attr:`seeds` order)."""
        return self._wide("total [nats]")

    def best_expert_totals(self) -> np.ndarray:
        """(E, S) the best single expert's code in nats (min over the loss matrix's column
        totals; picked in hindsight, for comparison)."""
        return self._wide("best expert [nats]")

    @property
    def best(self) -> str:
        """The encoder with the lowest mean codelength over orders."""
        return self.encoders[int(np.argmin(self.totals().mean(axis=1)))]

    def preferred_readout(self, encoder: str) -> str:
        """argmax_r of the posterior mass of readout r averaged over t and orders (a
        whole-run summary; :meth:`readout_preference` says it per data size)."""
        acc: dict[str, float] = {}
        for s in self.seeds:
            for r, v in self.readout_mass[(encoder, s)].items():
                acc[r] = acc.get(r, 0.0) + v / len(self.seeds)
        return max(acc, key=acc.__getitem__)

    def readout_preference(self, encoder: str, *, per_decade: int = 3):
        """:func:`mdlnb.readout_preference` over the kept reports of ``encoder`` (all orders):
        the preferred readout per data-size bin and its agreement across orders."""
        if encoder not in self.encoders:
            raise ValueError(f"encoder: {encoder!r} is not one of {self.encoders}")
        return preference.readout_preference(
            [self.reports[(encoder, s)] for s in self.seeds], per_decade=per_decade
        )

    def readout_text(self, encoder: str) -> str:
        """``"mlp1 from n ≈ 1,004"`` when every order prefers one readout from n on to N
        (:attr:`ReadoutPreference.settled`), else ``"no agreement (…)"`` with each
        order's choice in the last bin."""
        reps = [self.reports.get((encoder, s)) for s in self.seeds]
        if any(r is None for r in reps):
            return "unknown (reports not kept)"
        if not reps[0].trained:  # type: ignore[union-attr]
            return "no readout trained (N ≤ B)"
        pref = self.readout_preference(encoder)
        settled = pref.settled
        if settled is not None:
            return f"{settled[1]} from n ≈ {settled[0]:,}"
        own = [str(preference.readout_preference(r).table["readout"].iloc[-1]) for r in reps]
        return f"no agreement ({', '.join(own)} at n ≥ {int(pref.table['n_from'].iloc[-1]):,})"

    def linear_or_deeper(self, encoder: str):
        """*Linear or deeper?* for ``encoder`` over its orders: the posterior mass of all
        readouts but ``linear`` together per data-size bin, its 95 % interval over orders,
        the n from which the answer holds and the orders it needs
        (:class:`mdlnb.api._depth.LinearOrDeeper`); None when no readout was trained or the
        board has no linear readout beside others."""
        reps = [self.reports.get((encoder, s)) for s in self.seeds]
        first = reps[0]
        if first is None or any(r is None for r in reps) or not first.trained:
            return None
        return self.readout_preference(encoder).linear_or_deeper

    def _depth_columns(self) -> dict[str, list]:
        """The table's linear-or-deeper columns, from :meth:`linear_or_deeper`."""
        cols: dict[str, list] = {
            k: []
            for k in (
                "linear or deeper",
                "deeper from [n]",
                "deeper mass (last bin)",
                "deeper mass low (last bin)",
                "deeper mass high (last bin)",
                "orders needed",
            )
        }
        for e in self.encoders:
            d = self.linear_or_deeper(e)
            last = None if d is None else d.table.iloc[-1]
            settled = None if d is None else d.settled
            cols["linear or deeper"].append("unknown" if d is None else d.text())
            cols["deeper from [n]"].append(np.nan if settled is None else float(settled[0]))
            for k, src in (
                ("deeper mass (last bin)", "deeper mass"),
                ("deeper mass low (last bin)", "deeper low"),
                ("deeper mass high (last bin)", "deeper high"),
            ):
                cols[k].append(np.nan if last is None else float(last[src]))
            need = None if d is None else d.needed
            cols["orders needed"].append(np.nan if need is None else float(need))
        return cols

    def sign_changes(self):
        """Where the paired difference to the best encoder last changes sign, one row per
        encoder, from each order's own cumulative difference Σ_{u≤n} (loss_e − loss_best)
        (:func:`last_sign_change`): ``last sign change [n]`` (mean over the orders whose
        difference changes sign; NaN when none does), ``last sign change std [n]`` (sd,
        ddof 1, over the same orders; NaN for fewer than two), ``orders with a sign
        change``, and ``mean curve's last sign change [n]`` (of the mean over orders of
        the cumulative difference; NaN: never) — the curve :meth:`plot` draws."""
        best = self.best
        rows = []
        for e in self.encoders:
            cum = np.stack(
                [
                    np.cumsum(self.per_step_nats[(e, s)] - self.per_step_nats[(best, s)])
                    for s in self.seeds
                ]
            )
            mean_n = last_sign_change(cum.mean(axis=0))
            own = [n for n in (last_sign_change(c) for c in cum) if n is not None]
            rows.append(
                {
                    "encoder": e,
                    "last sign change [n]": float(np.mean(own)) if own else np.nan,
                    "last sign change std [n]": (
                        float(np.std(own, ddof=1)) if len(own) >= 2 else np.nan
                    ),
                    "orders with a sign change": len(own),
                    "mean curve's last sign change [n]": np.nan
                    if mean_n is None
                    else float(mean_n),
                }
            )
        return pd.DataFrame(rows)

    def table(self):
        """One row per encoder, best first (units in the column names; std over orders, ddof 1).

        Columns: the switching code (``total``, ``per example``; the score),
        the paired difference to the best encoder (``vs best``), the best
        single expert's code (``best expert``: picked in hindsight, for
        comparison), where the paired difference last changes sign
        (:meth:`sign_changes`), rank, orders ranked first, the readout
        preference by data size across orders (:meth:`readout_text`), and *linear
        or deeper?* (:meth:`linear_or_deeper`: its statement, the n it holds from,
        the deeper readouts' mass in the last bin with its 95 % interval over
        orders, and the orders it needs).
        """
        tot = self.totals()
        bex = self.best_expert_totals()
        best = int(np.argmin(tot.mean(axis=1)))
        diff = tot - tot[best]
        first = (tot == tot.min(axis=0, keepdims=True)).sum(axis=1)
        n = self.n
        sc = self.sign_changes()
        df = pd.DataFrame(
            {
                "encoder": self.encoders,
                "total [nats]": tot.mean(axis=1),
                "total std [nats]": tot.std(axis=1, ddof=1),
                f"per example [{self.per_example_unit}]": tot.mean(axis=1) / self._per_unit / n,
                f"per example std [{self.per_example_unit}]": tot.std(axis=1, ddof=1)
                / self._per_unit
                / n,
                "vs best [nats]": diff.mean(axis=1),
                "vs best std [nats]": diff.std(axis=1, ddof=1),
                "best expert [nats]": bex.mean(axis=1),
                "best expert std [nats]": bex.std(axis=1, ddof=1),
                "last sign change [n]": sc["last sign change [n]"].to_numpy(),
                "last sign change std [n]": sc["last sign change std [n]"].to_numpy(),
                "orders with a sign change": sc["orders with a sign change"].to_numpy(),
                "rank": pd.Series(tot.mean(axis=1)).rank(method="min").astype(int).to_numpy(),
                "orders ranked first": first.astype(int),
                "readout by data size": [self.readout_text(e) for e in self.encoders],
                **self._depth_columns(),
            }
        )
        df.insert(1, "orders", len(self.seeds))
        return df.sort_values(["rank", "encoder"]).reset_index(drop=True)

    @property
    def per_example_unit(self) -> str:
        """``"bits"``, or ``"density nats"`` for regression (:mod:`mdlnb.core._targets`)."""
        return "density nats" if self.kind == "regression" else "bits"

    @property
    def _per_unit(self) -> float:
        return 1.0 if self.kind == "regression" else LN2

    def summary(self):
        """The same as :meth:`table` (one row per encoder)."""
        return self.table()

    @property
    def close_call(self) -> tuple[str, str, float, float] | None:
        """``(best, second, gap, paired sd)`` in nats when the second encoder's mean paired
        difference to the best is within :data:`CLOSE_SD` paired sd (the order of the two
        may then depend on the protocol), else None."""
        tab = self.table()
        if len(tab) < 2:
            return None
        gap, sd = float(tab["vs best [nats]"].iloc[1]), float(tab["vs best std [nats]"].iloc[1])
        if not gap <= CLOSE_SD * sd:
            return None
        return str(tab["encoder"].iloc[0]), str(tab["encoder"].iloc[1]), gap, sd

    def check_standardize(self, *, progress: bool | None = None) -> StandardizeCheck:
        """Rerun the top two encoders under the other input standardisation
        (``"none"`` ↔ the default ``"prefix"``), same board, strategy and orders,
        and say whether their order held. Returns a :class:`StandardizeCheck`."""
        if self.inputs is None:
            raise ValueError("check_standardize: this Comparison keeps no inputs; rerun compare")
        feats, y, c, cache, compare = self.inputs
        tab = self.table()
        a, b = str(tab["encoder"].iloc[0]), str(tab["encoder"].iloc[1])
        old = self.protocol.standardize
        other = "none" if old == "prefix" else "prefix"
        rerun = compare(
            {a: feats[a], b: feats[b]},
            y,
            protocol=self.protocol.replace(standardize=other),
            seeds=self.seeds,
            num_classes=None if isinstance(y, Task) else c,
            progress=progress,
            cache=cache,
        )
        return StandardizeCheck(
            (a, b),
            (old, other),
            float(tab["vs best [nats]"].iloc[1]),
            float(tab["vs best std [nats]"].iloc[1]),
            rerun,
            rerun.best == a,
        )

    def cumulative_difference(self):
        """Tidy DataFrame: ``encoder``, ``seed``, ``t`` (examples coded), ``vs best [nats]``
        = Σ_{u≤t} (loss_e − loss_best) in the shared stream order."""
        best = self.best
        frames = []
        t = np.arange(1, self.n + 1)
        for e in self.encoders:
            for s in self.seeds:
                d = np.cumsum(self.per_step_nats[(e, s)] - self.per_step_nats[(best, s)])
                frames.append(pd.DataFrame({"encoder": e, "seed": s, "t": t, "vs best [nats]": d}))
        return pd.concat(frames, ignore_index=True)

    def plot(self, *, max_points: int = 200):
        """One figure: (left) bits/example, mean ± std over orders; (right) the
        cumulative paired difference to the best encoder along the stream,
        mean ± std over orders, log x. Returns the Figure (:mod:`._comparison_views`)."""
        return _comparison_views.plot(self, max_points=max_points)

    def display_table(self):
        """:meth:`table` as text, one "mean ± sd" cell per quantity: what ``print`` shows
        (:mod:`._comparison_views`)."""
        return _comparison_views.display_table(self)

    def notes(self) -> list[str]:
        """The lines printed under the table: how to read it, a close call, the warnings."""
        lines = [
            f"ranked by the switching code (mean ± sd over {len(self.seeds)} orders); "
            "'best single expert' is picked in hindsight per run, for comparison; "
            "'vs best changes sign': the last n at which an order's cumulative paired "
            "difference to the best changes sign, mean ± sd over the orders where it "
            "does (k/S of them; 'never': in none)"
        ]
        close = self.close_call
        if close is not None:
            a, b, gap, sd = close
            lines.append(
                f"close call: {b} is {gap:+.1f} ± {sd:.1f} nats behind {a}, within "
                f"{CLOSE_SD:g} paired sd: {len(self.seeds)} orders do not settle the "
                f"order of the top two, and it may depend on the protocol "
                f"(standardize={self.protocol.standardize!r}); "
                "cmp.check_standardize() reruns them under the other standardisation "
                "and says whether the order held"
            )
        if self.kind == "regression":
            lines.append(f"units: {_targets.QUANTISATION_NOTE}")
        lines += [f"warning: {w}" for w in self.warnings]
        _warnings.printed(self.warnings)  # shown here: not again at the end of the cell
        return lines

    def __str__(self) -> str:
        what = (
            "regression (density codelengths: see the units line below)"
            if self.kind == "regression"
            else f"C={self.num_classes}"
        )
        return (
            f"compare: task {self.task_name!r}, N={self.n}, {what}, "
            f"{len(self.seeds)} orders, {self.protocol!r}\n"
            + to_markdown(self.display_table(), digits=3)
            + "\n"
            + "\n".join(f"  {line}" for line in self.notes())
        )

    __repr__ = __str__
