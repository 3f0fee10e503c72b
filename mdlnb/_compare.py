"""``mdlnb.compare``: several encoders, one task, the same data orders — which codes shortest?

The question a researcher with a few checkpoints and one labelled dataset
asks first. For every encoder and every order ``s`` in ``seeds`` the labels
are coded by MDL with readout-model switching (stage 1
:func:`mdlnb.prequential.run`, stage 2 :func:`mdlnb.switching.codelength`)
under one protocol. The order of the examples is
``stream_order(seed, N)`` (:mod:`mdlnb.prequential`), a function of the seed
and N only, so every encoder sees **the same examples in the same order**
for a given seed — the comparison is paired.

Reported per encoder ``e`` (codelengths L_{e,s} in nats; bits = nats / ln 2):

* mean and standard deviation (ddof = 1) of L_{e,s} over the S orders, total
  and per example;
* the paired difference to the best encoder b (lowest mean codelength),
  Δ_{e,s} = L_{e,s} − L_{b,s}, its mean and standard deviation over orders.
  The order-to-order noise is largely shared between encoders (a hard
  example early in the stream costs every encoder), so std(Δ) is usually far
  below std(L) (paper App. A.7 reports std 134 nats on a 55,906-nat total and
  neighbours ~5,000 nats away);
* the rank by mean codelength (1 = shortest) and how many orders each
  encoder ranks first in;
* the best single expert's code (min over the loss matrix's column totals,
  mean ± sd over orders): picked in hindsight, for comparison — a switching
  code far above it means switching paid its prior's cost without a gain;
* where the paired difference to the best changes sign for the last time:
  the last n at which the mean over orders of the cumulative difference
  Σ_{u≤n} (loss_e − loss_best) changes sign, with the sd over orders of each
  order's own last change (or "never"). An encoder that leads early and is
  overtaken late shows it here;
* the readout preference by data size with its agreement across orders
  (:func:`mdlnb.readout_preference` over the kept reports): "mlp1 from
  n ≈ 1,004" when every order prefers one readout from there to N, else
  "no agreement" with each order's choice.

When the runner-up is within :data:`CLOSE_SD` paired sd of the best, the
printout says that their order may depend on the protocol (input
standardisation can reorder close encoders) and
:meth:`Comparison.check_standardize` reruns the two under the other
standardisation. Every run's :class:`mdlnb.Report` is kept
(``Comparison.reports``); the runs' warnings are issued once each, with the
runs they came from. Without a progress bar (batch mode,
``MDLNB_PROGRESS=0``) one line per finished run goes to stdout: encoder,
order, its code, its time, and an estimate of the time left.

The protocol (board of experts, batch size B, switching strategy and its m,
input standardisation) is one :class:`mdlnb.Protocol`, given as ``protocol``:
a preset name, a Protocol, or a mapping of its fields — :func:`resolve_protocol`.
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from typing import Any, Mapping, Sequence

import numpy as np

from mdlnb import _targets
from mdlnb._signature import data_first, extra_positional
from mdlnb._task import Task
from mdlnb._units import LN2

MIN_ORDERS = 3

#: The forms :func:`compare` accepts, quoted by its errors.
ACCEPTED_FORMS = ("compare({name: features, ...}, y, ...) or compare({name: features or Encoder, "
                  "...}, task, ...); everything after the labels by keyword (experts=, "
                  "strategy=, m=, protocol=, seeds=, ...)")


# ----------------------------------------------------------------------------- protocol


#: Fields a mapping may give (those of :class:`mdlnb.Protocol`, ``experts`` as
#: another name for ``board``, and ``m`` for fixed share's m).
_FIELDS = ("name", "board", "experts", "batch_size", "strategy", "m", "standardize", "clip",
           "replay_streams", "seed")


def resolve_protocol(protocol: Any = None) -> Any:
    """The :class:`mdlnb.Protocol` that ``protocol`` names or describes.

    ``protocol`` is None (``"default"``), a preset name (:func:`mdlnb.protocol`),
    a :class:`mdlnb.Protocol`, or a mapping of its fields (``experts`` may stand
    for ``board``; ``m`` sets fixed share's m) applied to the ``"default"``
    protocol.
    """
    from mdlnb._protocol import Protocol
    from mdlnb._protocol import protocol as preset
    from mdlnb.evaluation import resolve_strategy

    try:
        if protocol is None or isinstance(protocol, (str, Protocol)):
            return preset("default" if protocol is None else protocol)
        if not isinstance(protocol, Mapping):
            raise ValueError(f"expected None, a preset name, a Protocol or a mapping, "
                             f"got {type(protocol).__name__}")
        spec = dict(protocol)
        unknown = set(spec) - set(_FIELDS)
        if unknown:
            raise ValueError(f"unknown fields {sorted(unknown)}; use {list(_FIELDS)}")
        if "experts" in spec:
            if "board" in spec:
                raise ValueError("give the board as 'board' or 'experts', not both")
            spec["board"] = spec.pop("experts")
        m = spec.pop("m", None)
        if m is not None or isinstance(spec.get("strategy"), str):
            spec["strategy"] = resolve_strategy(spec.get("strategy"), m)
        return preset("default").replace(**spec)
    except ValueError as e:
        raise ValueError(f"protocol: {e}") from None


# ----------------------------------------------------------------------------- inputs


def _features_of(name: str, value: Any, task: Task | None, y: np.ndarray) -> np.ndarray:
    """(N, D) float32 features of one entry of ``encoders``."""
    from mdlnb._checks import check_matrix
    from mdlnb.encoders import Encoder, features

    if isinstance(value, Encoder):
        if task is None or task.x.ndim != 4:
            raise ValueError(f"encoders: {name!r} is an Encoder; y must then be a "
                             "Task of images (N, H, W, C)")
        return features(value, task).x.astype(np.float32)
    if isinstance(value, Task):
        x = value.x.reshape(value.n, -1)
    else:
        x = np.asarray(value)
        if x.ndim > 2:
            import warnings

            flat = (x.shape[0], int(np.prod(x.shape[1:])))
            warnings.warn(f"encoders: {name!r}: features of shape {x.shape} are flattened to "
                          f"{flat} (one row per example); pass x.reshape(len(x), -1) to say "
                          "so", UserWarning, stacklevel=4)
            x = x.reshape(flat)
    try:
        x = check_matrix(x, "x")
    except ValueError as e:
        raise ValueError(f"encoders: {name!r}: {e}") from None
    if x.shape[0] != len(y):
        raise ValueError(f"encoders: {name!r} has {x.shape[0]} examples, the labels {len(y)}")
    if isinstance(value, Task) and value.kind != (task.kind if task is not None
                                                  else "classification"):
        kind = task.kind if task is not None else "classification"
        raise ValueError(f"encoders: {name!r} is a {value.kind} task and y a {kind} one; one "
                         "comparison codes one kind of target (density codelengths of real "
                         "targets are never comparable with classification codelengths)")
    if isinstance(value, Task) and not np.array_equal(value.y, y):
        raise ValueError(f"encoders: {name!r} is a Task whose labels differ from y")
    return np.asarray(x, np.float32)


def _labels(y: Any, num_classes: int | None) -> tuple[Task | None, np.ndarray, int | None]:
    """``(task or None, labels, C)``; a regression Task gives its targets and C = None."""
    from mdlnb._checks import check_labels
    from mdlnb._task import warn_label_alphabet, warn_missing_classes
    from mdlnb.evaluation import _looks_like_board

    if isinstance(y, Task):
        if num_classes is not None:
            raise TypeError("num_classes: only for an array of labels; a Task has its own")
        return y, y.y, y.num_classes
    if y is None:
        raise TypeError(f"y: missing; use {ACCEPTED_FORMS}")
    if isinstance(y, (Mapping, str, bytes)) or _looks_like_board(y):
        hint = " (a board: pass it as experts=...)" if _looks_like_board(y) else ""
        raise TypeError(f"y: expected labels (N,) or a Task, got a {type(y).__name__}{hint}; "
                        f"use {ACCEPTED_FORMS}")
    y = check_labels(y, num_classes, "y")
    c = int(num_classes) if num_classes is not None else max(int(y.max()) + 1, 2)
    if num_classes is None and not warn_label_alphabet(y, c, "labels"):
        warn_missing_classes(y, c, "labels")
    return None, y, c


# ----------------------------------------------------------------------------- result


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
    rerun: "Comparison"
    held: bool

    def __str__(self) -> str:
        a, b = self.encoders
        tab = self.rerun.table().set_index("encoder")
        loser = b if self.held else a
        gap, sd = tab.loc[loser, "vs best [nats]"], tab.loc[loser, "vs best std [nats]"]
        verdict = "the order held" if self.held else "the order flipped"
        return (f"standardize={self.standardize[0]!r}: {a} first, {b} {self.gap_nats:+.1f} "
                f"± {self.gap_sd_nats:.1f} nats; standardize={self.standardize[1]!r}: "
                f"{self.rerun.best} first, {loser} {gap:+.1f} ± {sd:.1f} nats — {verdict}")

    __repr__ = __str__


@dataclasses.dataclass(frozen=True, eq=False)
class Comparison:
    """The outcome of :func:`compare`.

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
    inputs: Any = dataclasses.field(default=None, repr=False)  # (features, y, C, cache) for reruns
    kind: str = "classification"  # "regression": density codelengths (mdlnb._targets)

    @property
    def per_step(self) -> Mapping[tuple[str, int], np.ndarray]:
        """Deprecated alias of :attr:`per_step_nats`."""
        import warnings

        warnings.warn("Comparison.per_step is deprecated: use per_step_nats (the unit in the "
                      "name)", DeprecationWarning, stacklevel=2)
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
        return max(acc, key=acc.get)

    def readout_preference(self, encoder: str, *, per_decade: int = 3):
        """:func:`mdlnb.readout_preference` over the kept reports of ``encoder`` (all orders):
        the preferred readout per data-size bin and its agreement across orders."""
        from mdlnb.preference import readout_preference

        if encoder not in self.encoders:
            raise ValueError(f"encoder: {encoder!r} is not one of {self.encoders}")
        return readout_preference([self.reports[(encoder, s)] for s in self.seeds],
                                  per_decade=per_decade)

    def readout_text(self, encoder: str) -> str:
        """``"mlp1 from n ≈ 1,004"`` when every order prefers one readout from n on to N
        (:attr:`ReadoutPreference.settled`), else ``"no agreement (…)"`` with each
        order's choice in the last bin."""
        from mdlnb.preference import readout_preference

        reps = [self.reports.get((encoder, s)) for s in self.seeds]
        if any(r is None for r in reps):
            return "unknown (reports not kept)"
        if not reps[0].trained:
            return "none (no readout trained)"
        pref = self.readout_preference(encoder)
        settled = pref.settled
        if settled is not None:
            return f"{settled[1]} from n ≈ {settled[0]:,}"
        own = [str(readout_preference(r).table["readout"].iloc[-1]) for r in reps]
        return f"no agreement ({', '.join(own)} at n ≥ {int(pref.table['n_from'].iloc[-1]):,})"

    def sign_changes(self):
        """Where the paired difference to the best encoder last changes sign, one row per
        encoder: ``last sign change [n]`` of the mean over orders of the cumulative
        difference Σ_{u≤n} (loss_e − loss_best) (NaN: never), ``last sign change std [n]``
        (sd, ddof 1, over the orders whose own cumulative difference changes sign; NaN
        for fewer than two) and ``orders with a sign change``."""
        import pandas as pd

        best = self.best
        rows = []
        for e in self.encoders:
            cum = np.stack([np.cumsum(self.per_step_nats[(e, s)] - self.per_step_nats[(best, s)])
                            for s in self.seeds])
            mean_n = last_sign_change(cum.mean(axis=0))
            own = [n for n in (last_sign_change(c) for c in cum) if n is not None]
            rows.append({"encoder": e,
                         "last sign change [n]": np.nan if mean_n is None else float(mean_n),
                         "last sign change std [n]": (float(np.std(own, ddof=1))
                                                      if len(own) >= 2 else np.nan),
                         "orders with a sign change": len(own)})
        return pd.DataFrame(rows)

    def table(self):
        """One row per encoder, best first (units in the column names; std over orders, ddof 1).

        Columns: the switching code (``total``, ``per example``; the score),
        the paired difference to the best encoder (``vs best``), the best
        single expert's code (``best expert``: picked in hindsight, for
        comparison), where the paired difference last changes sign
        (:meth:`sign_changes`), rank, orders ranked first, and the readout
        preference by data size across orders (:meth:`readout_text`).
        """
        import pandas as pd

        tot = self.totals()
        bex = self.best_expert_totals()
        best = int(np.argmin(tot.mean(axis=1)))
        diff = tot - tot[best]
        first = (tot == tot.min(axis=0, keepdims=True)).sum(axis=1)
        n = self.n
        sc = self.sign_changes()
        df = pd.DataFrame({
            "encoder": self.encoders,
            "total [nats]": tot.mean(axis=1),
            "total std [nats]": tot.std(axis=1, ddof=1),
            f"per example [{self.per_example_unit}]": tot.mean(axis=1) / self._per_unit / n,
            f"per example std [{self.per_example_unit}]": tot.std(axis=1, ddof=1) / self._per_unit / n,
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
        })
        df.insert(1, "orders", len(self.seeds))
        return df.sort_values(["rank", "encoder"]).reset_index(drop=True)

    @property
    def per_example_unit(self) -> str:
        """``"bits"``, or ``"density nats"`` for regression (:mod:`mdlnb._targets`)."""
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
        feats, y, c, cache = self.inputs
        tab = self.table()
        a, b = str(tab["encoder"].iloc[0]), str(tab["encoder"].iloc[1])
        old = self.protocol.standardize
        other = "none" if old == "prefix" else "prefix"
        rerun = compare({a: feats[a], b: feats[b]}, y, protocol=self.protocol.replace(
            standardize=other), seeds=self.seeds, num_classes=None if isinstance(y, Task) else c,
            progress=progress, cache=cache)
        return StandardizeCheck((a, b), (old, other), float(tab["vs best [nats]"].iloc[1]),
                                float(tab["vs best std [nats]"].iloc[1]), rerun,
                                rerun.best == a)

    def cumulative_difference(self):
        """Tidy DataFrame: ``encoder``, ``seed``, ``t`` (examples coded), ``vs best [nats]``
        = Σ_{u≤t} (loss_e − loss_best) in the shared stream order."""
        import pandas as pd

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
        mean ± std over orders, log x. Returns the Figure."""
        import matplotlib.pyplot as plt
        import seaborn as sns

        from mdlnb.plots import log_spaced

        tab = self.table()
        fig, (a0, a1) = plt.subplots(1, 2, figsize=(11, 3.8),
                                     gridspec_kw={"width_ratios": [1, 1.6]})
        pal = dict(zip(tab["encoder"], sns.color_palette("colorblind", len(tab))))
        sns.barplot(data=self.runs, x="encoder", y=f"per example [{self.per_example_unit}]",
                    order=list(tab["encoder"]),
                    hue="encoder", palette=pal, errorbar="sd", ax=a0, legend=False)
        a0.set_xlabel("")
        a0.set_title(f"{self.task_name}: codelength, ±1 sd over {len(self.seeds)} orders")
        a0.tick_params(axis="x", rotation=30)
        cum = self.cumulative_difference()
        cum = cum[cum["t"].isin(log_spaced(self.n + 1, max_points, start=1))]
        sns.lineplot(data=cum, x="t", y="vs best [nats]", hue="encoder", palette=pal,
                     errorbar="sd", ax=a1, hue_order=list(tab["encoder"]))
        a1.axhline(0.0, color="0.3", lw=0.8)
        a1.set_xscale("log")
        a1.set_xlabel("examples coded")
        a1.set_title(f"paired difference to {self.best} (cumulative), ±1 sd")
        fig.tight_layout()
        return fig

    def display_table(self):
        """:meth:`table` as text, one "mean ± sd" cell per quantity: what ``print`` shows."""
        import pandas as pd

        tab = self.table()
        s = len(self.seeds)

        def crossing(r) -> str:
            if r["encoder"] == tab["encoder"].iloc[0]:
                return "—"
            if np.isnan(r["last sign change [n]"]):
                return "never"
            sd = r["last sign change std [n]"]
            spread = "" if np.isnan(sd) else f" ± {sd:,.0f}"
            return (f"n ≈ {r['last sign change [n]']:,.0f}{spread} "
                    f"({r['orders with a sign change']}/{s} orders)")

        def pm(r, col: str, fmt: str, sd: str = ",.1f") -> str:
            return f"{r[f'{col} [{unit(col)}]']:{fmt}} ± {r[f'{col} std [{unit(col)}]']:{sd}}"

        def unit(col: str) -> str:
            return self.per_example_unit if col == "per example" else "nats"

        rows = [{
            "encoder": r["encoder"],
            f"per example [{self.per_example_unit}]": pm(r, "per example", ".3f", ".3f"),
            "total [nats]": pm(r, "total", ",.1f"),
            "vs best [nats] (paired)": "0" if i == 0 else pm(r, "vs best", "+,.1f"),
            "best single expert [nats]": pm(r, "best expert", ",.1f"),
            "vs best changes sign": crossing(r),
            "rank": int(r["rank"]),
            "orders first": f"{int(r['orders ranked first'])}/{s}",
            "readout by data size": r["readout by data size"],
        } for i, (_, r) in enumerate(tab.iterrows())]
        return pd.DataFrame(rows)

    def notes(self) -> list[str]:
        """The lines printed under the table: how to read it, a close call, the warnings."""
        lines = [f"ranked by the switching code (mean ± sd over {len(self.seeds)} orders); "
                 "'best single expert' is picked in hindsight per run, for comparison; "
                 "'vs best changes sign': the last n at which the mean cumulative paired "
                 "difference to the best changes sign (± sd over the orders that change)"]
        close = self.close_call
        if close is not None:
            a, b, gap, sd = close
            lines.append(f"close call: {b} is {gap:+.1f} ± {sd:.1f} nats behind {a}, within "
                         f"{CLOSE_SD:g} paired sd: {len(self.seeds)} orders do not settle the "
                         f"order of the top two, and it may depend on the protocol "
                         f"(standardize={self.protocol.standardize!r}); "
                         "cmp.check_standardize() reruns them under the other standardisation "
                         "and says whether the order held")
        lines += [f"warning: {w}" for w in self.warnings]
        return lines

    def __str__(self) -> str:
        from mdlnb.report import to_markdown

        what = (f"regression (density codelengths: {_targets.QUANTISATION_NOTE})"
                if self.kind == "regression" else f"C={self.num_classes}")
        return (f"compare: task {self.task_name!r}, N={self.n}, {what}, "
                f"{len(self.seeds)} orders, {self.protocol!r}\n"
                + to_markdown(self.display_table(), digits=3) + "\n"
                + "\n".join(f"  {line}" for line in self.notes()))

    __repr__ = __str__


# ----------------------------------------------------------------------------- compare


@data_first
def compare(encoders: Mapping[str, Any], y: Any = None, *more: Any, experts: Any = None,
            strategy: Any = None, m: float | None = None, protocol: Any = None,
            batch_size: int | None = None, standardize: str | bool | None = None,
            replay_streams: int | None = None, seeds: Sequence[int] = (0, 1, 2),
            num_classes: int | None = None, progress: bool | None = None,
            cache: bool = True) -> Comparison:
    """Rank encoders on one task by MDL with readout switching, paired over data orders.

    The same shape as :func:`mdlnb.evaluate`: the representations, then the
    labels or the task, positionally; everything else keyword-only, in the
    same order (``experts``, ``strategy``, ``m``, ``protocol``, …).

    Args:
      encoders: ``{name: features}``; each value an (N, D) array of features
        (more dimensions are flattened, with a warning), a :class:`mdlnb.Task`
        of features (same labels), or an :class:`mdlnb.encoders.Encoder` (then
        ``y`` must be a Task of images; features are extracted and cached).
      y: the (N,) integer labels, or a Task (its labels; its images for Encoders).
      experts: the board (a list of Experts or a preset name); default the protocol's.
      strategy, m: the switching strategy and fixed share's m, as in
        :func:`mdlnb.evaluate`; default the protocol's.
      protocol: see :func:`resolve_protocol` (default ``"default"``); the
        arguments above and ``batch_size``, ``standardize``, ``replay_streams``
        override its fields.
      seeds: one data order per seed (≥ 3); the same orders for every encoder.
      num_classes: C when ``y`` is an array (default max(y) + 1).
      progress: a progress bar over (encoder, seed) runs: ``None`` (default:
        when interactive and the runs are long, :func:`mdlnb._progress.wanted`),
        ``True`` or ``False``. Where no bar is drawn — batch mode
        (``MDLNB_PROGRESS=0``), or long runs no one watches — one line per
        finished run goes to stdout (encoder, order, code, seconds, elapsed,
        an estimate of the rest); ``False`` silences them too.
      cache: stage-1 loss matrices are cached on disk (:func:`mdlnb.prequential.run`),
        keyed by content and protocol, not by the encoder's name.

    Returns:
      a :class:`Comparison` (``.table()``, ``print``, ``.plot()``, ``.runs``,
      ``.reports``, ``.warnings``, ``.check_standardize()``). The runs'
      warnings are issued once each, naming the runs they came from.
    """
    if more:   # a third positional argument: the package's error, not Python's
        raise extra_positional("compare", ACCEPTED_FORMS, more)
    import pandas as pd

    from mdlnb import _progress, prequential
    from mdlnb.evaluation import Report, resolve_strategy

    if not isinstance(encoders, Mapping) or len(encoders) < 2:
        raise ValueError("encoders: expected a mapping {name: features} with at least 2 entries")
    if any(not isinstance(k, str) or not k for k in encoders):
        raise ValueError("encoders: names must be non-empty strings")
    seeds = tuple(int(s) for s in seeds)
    if len(seeds) < MIN_ORDERS or len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds: need at least {MIN_ORDERS} distinct data orders, got {seeds}")
    plan = prequential.resolve_protocol(resolve_protocol(protocol), experts,
                                        batch_size=batch_size, standardize=standardize,
                                        replay_streams=replay_streams)
    plan = plan.resolve(strategy=resolve_strategy(strategy, m, default=plan.strategy))
    task, y, c = _labels(y, num_classes)
    feats = {k: _features_of(k, v, task, y) for k, v in encoders.items()}
    task_name = task.name if task is not None else "labels"
    kind = task.kind if task is not None else "classification"
    jobs = [(e, s) for s in seeds for e in feats]
    it = jobs
    long = len(jobs) * len(y) * len(plan.experts()) >= 2_000_000
    bar = _progress.enabled() and _progress.wanted(progress, long=long)
    if bar:
        it = _progress.bar(jobs, desc="compare", unit="run")
    # no bar (batch mode, MDLNB_PROGRESS=0, or not watched): one line per finished run
    lines = not bar and progress is not False and (not _progress.enabled() or long
                                                   or progress is True)
    rows, per_step, mass, orders, reports, found = [], {}, {}, {}, {}, {}
    t0 = time.perf_counter()
    for i, (e, s) in enumerate(it):
        t_run = time.perf_counter()
        t = Task(f"{task_name}:{e}", feats[e], y, c, kind=kind)
        lm = prequential.run(t, protocol=plan, seed=s, progress=False, cache=cache)
        if s in orders and not np.array_equal(orders[s], lm.order):
            raise RuntimeError("compare: two encoders got different data orders for one seed")
        orders[s] = lm.order
        with warnings.catch_warnings(record=True) as caught:  # e.g. DivergenceWarning
            warnings.simplefilter("always")
            rep = Report.from_losses(lm, plan.strategy, warn=False)
        reports[(e, s)] = rep
        for text, category in [(w, UserWarning) for w in rep.warnings] + \
                [(str(w.message), w.category) for w in caught]:
            found.setdefault((text, category), []).append((e, s))
        ros, mat = rep.readout_matrix()
        mass[(e, s)] = dict(zip(ros, mat.mean(axis=0).tolist()))
        per_step[(e, s)] = rep.per_step_nats.astype(np.float64)
        rows.append({"encoder": e, "seed": s, "total [nats]": rep.total_nats,
                     **({"per example [density nats]": rep.nats_per_example}
                        if kind == "regression" else
                        {"per example [bits]": rep.bits_per_example}),
                     "best expert [nats]": rep.best_expert_nats,
                     "whole-run readout": rep.preferred_readout})
        if lines:
            now = time.perf_counter()
            left = (now - t0) / (i + 1) * (len(jobs) - i - 1)
            print(f"compare: {e}, order {s} ({i + 1}/{len(jobs)}): {rep.total_nats:,.1f} nats "
                  + (f"({rep.nats_per_example:.3f} density nats/example)" if kind == "regression"
                     else f"({rep.bits_per_example:.3f} bits/example)")
                  + f" in {now - t_run:.1f} s; "
                  f"{_clock(now - t0)} elapsed, about {_clock(left)} left", flush=True)
    runs = pd.DataFrame(rows)
    texts = []
    for (w, category), at in found.items():  # each sentence once, with the runs it came from
        texts.append(f"{w} [{_where(at, seeds)}]")
        warnings.warn(f"compare: {texts[-1]}", category, stacklevel=2)
    texts = tuple(texts)
    return Comparison(runs=runs, per_step_nats=per_step, readout_mass=mass, protocol=plan, n=len(y),
                      num_classes=c or 0, seeds=seeds, task_name=task_name, reports=reports,
                      warnings=texts, inputs=(feats, task if kind == "regression" else y,
                                              c, cache), kind=kind)


def _clock(seconds: float) -> str:
    """``41 s``, ``9.6 min``, ``2.1 h``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def _where(at: Sequence[tuple[str, int]], seeds: Sequence[int]) -> str:
    """``"pixels (all orders); pca16 (order 1)"``: the runs a warning came from."""
    by: dict[str, list[int]] = {}
    for e, s in at:
        by.setdefault(e, []).append(s)
    return "; ".join(f"{e} (all orders)" if len(ss) == len(seeds) else
                     f"{e} (order{'s' if len(ss) > 1 else ''} {', '.join(map(str, ss))})"
                     for e, ss in by.items())
