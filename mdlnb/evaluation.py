"""One call from a task to a codelength: ``mdlnb.evaluate`` and its ``Report``.

``evaluate`` runs stage 1 (:func:`mdlnb.prequential.run`: a board of readout
experts trained online, next-step log-losses L[t, k] in nats) and stage 2
(:func:`mdlnb.switching.codelength`: a switching strategy over those losses),
and wraps the result in a :class:`Report`: totals in nats and bits, the best
single expert for comparison, the posterior over experts and readouts as a
function of data size, and plots.

Which number ranks encoders: the switching code ``Report.total_nats`` (the
paper's MDL score, Eq. 1). It is a code fixed before seeing the data. The best
single expert's code ``best_expert_nats`` is picked in hindsight among K and
does not pay for that choice, so it is shown for comparison only. The switching
code can exceed it, by at most the prior's cost of never switching
(``regret_bound_nats``, :func:`mdlnb.switching.never_switch_cost`, paper App.
A.1).

Everything besides the data that decides the codelength — board, batch size,
switching strategy and its m, standardisation, seed — is a
:class:`mdlnb.Protocol` (``protocol=``, default ``"default"``: fixed share with
decreasing switching rate α_t = (m − 1)/t, paper Eq. 2, m = :data:`DEFAULT_M`
= 2). The paper's protocols are the presets ``"paper-vtab"`` (α_t = 10/t,
m = 11, App. A.5.1) and ``"paper-imagenet"`` (α_t = 1/t, m = 2, App. A.5.2).
The :class:`Report` records the protocol it ran (:attr:`Report.protocol`).
"""

from __future__ import annotations

import dataclasses
import functools
import html
import math
import warnings
from typing import Any, Mapping, Sequence

import numpy as np

from mdlnb import _diagnostics, _targets
from mdlnb._signature import data_first, extra_positional
from mdlnb._task import Task
from mdlnb._units import LN2, Codelength
from mdlnb._warnings import ResultWarning
from mdlnb.switching.strategies import DEFAULT_M  # noqa: F401  (the default protocol's m = 2)


#: The forms :func:`evaluate` accepts, quoted by its errors.
ACCEPTED_FORMS = ("evaluate(x, y, ...), evaluate(x=x, y=y, ...), evaluate(task, ...), "
                  "evaluate((x, y), ...) or evaluate({'x': x, 'y': y, 'name': ...}, ...); "
                  "everything after the data by keyword (experts=, strategy=, protocol=, ...)")


def _looks_like_board(value: Any) -> bool:
    """An expert preset name, an Expert, or a non-empty list of Experts."""
    from mdlnb.experts import PRESETS, Expert

    if isinstance(value, str):
        return value in PRESETS
    if isinstance(value, Expert):
        return True
    return isinstance(value, (list, tuple)) and bool(value) and \
        all(isinstance(v, Expert) for v in value)


def _a_value(v: Any) -> str:
    return f"the string {v!r}" if isinstance(v, str) else f"a {type(v).__name__}"


def as_task(x: Any, y: Any = None, *, name: str | None = None,
            num_classes: int | None = None) -> Task:
    """The :class:`Task` that :func:`evaluate`'s data arguments describe.

    Accepted: features ``x`` (N, D) with labels ``y`` (N,); a :class:`Task`
    (``y`` None); an ``(x, y)`` pair; a mapping with ``x``, ``y`` (and
    optionally ``num_classes``, ``name``). Arrays without a name are named
    after their content, ``arrays-<8 hex>`` (:meth:`Task.from_arrays`); give
    ``name="digits|pca16"`` (or the mapping's ``name``) to name the
    representation. Features of more than two dimensions, e.g. images
    (N, 28, 28), are flattened to (N, D) with a ``UserWarning``. Anything else
    is a ``TypeError`` naming the accepted forms; a board given as ``y`` (the
    old positional ``evaluate(task, board)``) says to pass ``experts=``.
    """
    if x is None:
        raise TypeError(f"evaluate: no data given; use {ACCEPTED_FORMS}")
    if isinstance(x, Task):
        if y is not None:
            hint = (" (a board: pass it as experts=...)" if _looks_like_board(y) else
                    " (a name: pass experts=, strategy= or protocol= by keyword)"
                    if isinstance(y, str) else " (its labels are task.y)")
            raise TypeError(f"y: evaluate(task) takes the labels from the Task; got a second "
                            f"positional argument{hint}. Accepted: {ACCEPTED_FORMS}")
        if name is not None or num_classes is not None:
            raise TypeError("name, num_classes: only for arrays; a Task has its own "
                            "(task.replace(name=...))")
        return x
    if y is None:
        if isinstance(x, Mapping):
            missing = {"x", "y"} - set(x)
            extra = set(x) - {"x", "y", "name", "num_classes"}
            if missing or extra:
                raise ValueError(f"x: a mapping needs keys 'x' and 'y' (optional 'name', "
                                 f"'num_classes'); missing {sorted(missing)}, unknown "
                                 f"{sorted(extra)}")
            return as_task(x["x"], x["y"], name=x.get("name", name),
                           num_classes=x.get("num_classes", num_classes))
        if isinstance(x, tuple) and len(x) == 2:
            return as_task(x[0], x[1], name=name, num_classes=num_classes)
        if isinstance(x, (str, bytes)) or not (hasattr(x, "__array__") or isinstance(x, list)):
            raise TypeError(f"evaluate: cannot read data from a {type(x).__name__}; use "
                            f"{ACCEPTED_FORMS}")
        raise TypeError(f"y: missing; features x need their labels. Use {ACCEPTED_FORMS}")
    if isinstance(x, (Task, Mapping, str, bytes)) or not (hasattr(x, "__array__")
                                                          or isinstance(x, (list, tuple))):
        raise TypeError(f"x: expected a feature array with labels y, got a "
                        f"{type(x).__name__}. Use {ACCEPTED_FORMS}")
    if _looks_like_board(y):
        raise TypeError("y: got a board of experts where the labels go; pass the board by "
                        f"keyword: evaluate(x, y, experts=board). Accepted: {ACCEPTED_FORMS}")
    if isinstance(y, (str, bytes, Mapping)):
        raise TypeError(f"y: got {_a_value(y)} where the labels go; pass experts=, strategy= "
                        f"or protocol= by keyword. Accepted: {ACCEPTED_FORMS}")
    from mdlnb._checks import as_array

    xa = as_array(x, "x")
    if xa.ndim > 2:
        flat = (xa.shape[0], int(np.prod(xa.shape[1:])))
        warnings.warn(f"x: features of shape {xa.shape} are flattened to {flat} (one row per "
                      "example); pass x.reshape(len(x), -1) to say so, or an encoder's features "
                      "(mdlnb.encoders)", UserWarning, stacklevel=3)
        xa = xa.reshape(flat)
    return Task.from_arrays(xa, y, name=name, num_classes=num_classes)


def resolve_strategy(strategy: Any = None, m: float | None = None, *, default: Any = None) -> Any:
    """The switching strategy: ``default`` (a protocol's strategy; ``FixedShare()``,
    m = :data:`DEFAULT_M`, if None) when ``strategy`` is None, with ``m`` replacing
    fixed share's m; a name (with ``m`` passed on for fixed share) or a strategy
    object otherwise."""
    from mdlnb import switching

    if strategy is None:
        base = switching.FixedShare() if default is None else switching.get_strategy(default)
        if m is None:
            return base
        if not isinstance(base, switching.FixedShare):
            raise ValueError(f"m: the protocol's strategy {type(base).__name__} has no m")
        return switching.FixedShare(m=m, weights=base.weights, initial=base.initial)
    if m is not None:
        if isinstance(strategy, str):
            return switching.get_strategy(strategy, m=m)
        raise ValueError("m: only used with the default strategy or a strategy name; "
                         "set m on the strategy object instead")
    return switching.get_strategy(strategy)


def strategy_label(strategy: Any) -> str:
    """Short label, e.g. ``FixedShare(m=11)``: the class name and the fields that are set
    (a strategy's own ``label``, the same as its ``repr``)."""
    if hasattr(strategy, "label"):
        return str(strategy.label)
    if not dataclasses.is_dataclass(strategy):
        return repr(strategy)
    fields = {f.name: getattr(strategy, f.name) for f in dataclasses.fields(strategy)}
    args = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v!r}"
                     for k, v in fields.items() if v is not None)
    return f"{type(strategy).__name__}({args})"


def _readout_of(expert: Any) -> str:
    return expert.readout.name


def posterior_frame(posterior: np.ndarray, names: Sequence[str],
                    readouts: Sequence[str] | None = None):
    """The one tidy posterior format (``Report.posterior``, ``mdlnb switch/evaluate
    --posterior``): one row per (t, expert), columns

    * ``t``: examples seen before the prediction, 0 … N−1 (row t of the loss
      matrix; ``t = 0`` is the prior p(ξ_1));
    * ``expert``: the expert's name (its column index as text when unknown);
    * ``readout``: the expert's readout name (missing — empty in a CSV — when unknown);
    * ``probability``: p(ξ = expert | D_<t), the switching posterior before
      seeing example t + 1's label.
    """
    import pandas as pd

    post = np.asarray(posterior)
    n, k = post.shape
    names = [str(x) for x in names]
    ros = [None] * k if readouts is None else [str(r) for r in readouts]
    if len(names) != k or len(ros) != k:
        raise ValueError(f"names: need K = {k} expert names and readouts, got {len(names)} "
                         f"and {len(ros)}")
    return pd.DataFrame({
        "t": np.repeat(np.arange(n), k),
        "expert": pd.Categorical(np.tile(np.asarray(names, object), n),
                                 categories=list(dict.fromkeys(names))),
        "readout": pd.Categorical(np.tile(np.asarray(ros, object), n),
                                  categories=[r for r in dict.fromkeys(ros) if r is not None]),
        "probability": post.reshape(-1),
    })


@dataclasses.dataclass(frozen=True, eq=False)
class Report(Codelength):
    """The outcome of :func:`evaluate` (all codelengths in nats unless named bits).

    **Rank encoders by** ``total_nats``, the switching code (paper Eq. 1): a
    code fixed before the data, the same protocol for every encoder. The best
    single expert (``best_expert_nats``) is chosen in hindsight among K experts
    and its code does not pay for that choice; it is a comparison, not a score.
    ``regret_nats = total_nats − best_expert_nats`` is at most
    ``regret_bound_nats`` = −log p(best expert throughout), the prior's cost of
    keeping the option to switch (paper App. A.1; for fixed share with
    α_t = (m − 1)/t about log K + (m − 1) log N). A positive regret means the
    readouts' order of merit did not change enough with N to repay it.

    **Readout preference** is a function of data size and of the example
    order: :meth:`readout_preference` (log-spaced bins) and
    :func:`mdlnb.readout_preference` over several seeds, which states a switch
    point only where the preference is stable across orders. The
    ``preferred_readout`` property (whole-run average) is one order's summary
    and is printed as such.

    Attributes:
      losses: the stage-1 ``LossMatrix`` (N, K) in nats.
      switch: the stage-2 ``SwitchResult`` (total, per-step mixture loss, log posterior).

    Warnings (``warnings``, also issued as ``UserWarning`` by :meth:`from_losses`):
    the best expert on an edge of a hyperparameter axis of the board, a switching
    code longer than the uniform code N log C, and N ≤ B (no readout trained).
    """

    losses: Any
    switch: Any

    # -- construction --------------------------------------------------------
    @classmethod
    def from_losses(cls, losses: Any, strategy: Any = None, *, m: float | None = None,
                    warn: bool = True) -> "Report":
        """Stage 2 on an existing ``LossMatrix``; the default strategy is the one of the
        protocol it records (else ``FixedShare()``), with ``m`` if given. ``warn``: issue
        the report's :attr:`warnings` as ``UserWarning``."""
        from mdlnb import switching

        if not hasattr(losses, "losses") or not hasattr(losses, "experts"):
            raise ValueError(f"losses: expected an mdlnb LossMatrix, got {type(losses).__name__}")
        proto = getattr(losses, "protocol", None)
        strat = resolve_strategy(strategy, m, default=None if proto is None else proto.strategy)
        # a pruned board (Protocol.prune): the strategy restricted to the survivors
        at = getattr(losses, "pruned_at", None)
        seg = (getattr(losses, "meta", None) or {}).get("prune", {}).get("segment_rows", 1)
        if getattr(losses, "kind", "classification") == "regression":
            # density codes may be negative: stage 2 on rows shifted by their minimum, the
            # shift added back per step (exact: mdlnb._targets.shift_rows)
            rows, shift = _targets.shift_rows(losses.losses)
            result = switching.codelength_pruned(rows, strat, at, posterior=True,
                                                 segment_rows=seg)
            ps = result.per_step_nats + shift.astype(np.float64)
            result = dataclasses.replace(result, total_nats=float(np.sum(ps)), per_step_nats=ps)
        else:
            result = switching.codelength_pruned(losses.losses, strat, at, posterior=True,
                                                 segment_rows=seg)
        report = cls(losses, result)
        if warn:
            for text in report.warnings:
                warnings.warn(text, ResultWarning, stacklevel=2)
        if report.diverged:
            from mdlnb.switching.divergence import DivergenceWarning, describe

            warnings.warn(f"{report.task_name}: " + describe(
                [(k, t) for k, t in switching.diverged(losses.losses) if at is None or t <= at[k]],
                report.expert_names),
                          DivergenceWarning, stacklevel=2)
        return report

    @property
    def prune(self) -> dict | None:
        """The pruning record of stage 1 (``LossMatrix.meta["prune"]``: option, schedule
        ``pruned_at``, expert-updates done/unpruned/computed), or None (board not pruned).
        The codelength is then the strategy restricted to the survivors
        (:func:`mdlnb.switching.codelength_pruned`)."""
        return (getattr(self.losses, "meta", None) or {}).get("prune")

    @property
    def devices(self) -> dict | None:
        """What stage 1 ran on (``LossMatrix.meta["devices"]``): ``{"count", "kind",
        "platform", "processes"}``, e.g. ``{"count": 4, "kind": "cpu", "platform": "cpu",
        "processes": 1}`` for a board sharded over 4 CPU devices; None for a loss
        matrix that does not record it. A loss matrix read from the cache records the
        devices of the run that computed it."""
        return (getattr(self.losses, "meta", None) or {}).get("devices")

    @property
    def diverged(self) -> list[tuple[str, int]]:
        """``[(expert name, t), ...]``: experts whose losses became NaN/inf (a learning
        rate that overflows), with their first such step t (1-indexed). The switching
        code gives them probability 0 from then on; ``from_losses`` warns."""
        return self.losses.diverged()

    def with_strategy(self, strategy: Any, *, m: float | None = None) -> "Report":
        """The same loss matrix scored with another switching strategy (no repeated warnings)."""
        return Report.from_losses(self.losses, strategy, m=m, warn=False)

    # -- numbers -------------------------------------------------------------
    @property
    def strategy(self) -> Any:
        return self.switch.strategy

    @property
    def protocol(self) -> Any:
        """The :class:`mdlnb.Protocol` that produced this report: the loss matrix's,
        with the strategy stage 2 used (None for a loss matrix without one)."""
        proto = getattr(self.losses, "protocol", None)
        if proto is None or proto.strategy == self.strategy:
            return proto
        return proto.replace(strategy=self.strategy)

    @property
    def n(self) -> int:
        return int(self.losses.n)

    @property
    def num_classes(self) -> int:
        return int(self.losses.num_classes)

    @property
    def kind(self) -> str:
        """``"classification"`` or ``"regression"``: a regression report's codelengths
        are density codelengths (:attr:`caveat`)."""
        return getattr(self.losses, "kind", "classification")

    @property
    def target(self) -> dict:
        """A regression report's ``meta["target"]`` (P, code, first-batch convention,
        caveat); empty for classification."""
        return dict((getattr(self.losses, "meta", None) or {}).get("target") or {})

    @property
    def caveat(self) -> str | None:
        """Regression: a density codelength equals a codelength only up to the targets'
        quantisation, −log δ nats per example and output (:mod:`mdlnb._targets`)."""
        return _targets.QUANTISATION_NOTE if self.kind == "regression" else None

    @property
    def task_name(self) -> str:
        return str(self.losses.task_name)

    @property
    def total_nats(self) -> float:
        return float(self.switch.total_nats)

    @property
    def per_step_nats(self) -> np.ndarray:
        """(N,) the switching mixture's next-step loss in nats (sums to ``total_nats``)."""
        return np.asarray(self.switch.per_step_nats)

    @property
    def per_step(self) -> np.ndarray:
        """Deprecated alias of :attr:`per_step_nats`."""
        warnings.warn("Report.per_step is deprecated: use per_step_nats (the unit in the name)",
                      DeprecationWarning, stacklevel=2)
        return self.per_step_nats

    @property
    def uniform_nats(self) -> float:
        """``N log C``: the codelength without learning anything, nats. Regression: the
        untrained readout's density code (the prefix's Gaussian, features unused,
        :func:`mdlnb._targets.untrained_nats`)."""
        if self.kind == "regression":
            return float(self.target.get("untrained_nats", math.nan))
        return self.n * math.log(self.num_classes)

    @property
    def expert_names(self) -> list[str]:
        return list(self.losses.names)

    @property
    def readouts(self) -> list[str]:
        """Readout name of each expert (column order)."""
        return [_readout_of(e) for e in self.losses.experts]

    @property
    def best_expert(self) -> str:
        """Name of the single expert with the shortest prequential codelength."""
        return self.expert_names[self.losses.best_expert()[0]]

    @property
    def best_expert_nats(self) -> float:
        return float(self.losses.best_expert()[1])

    @property
    def regret_nats(self) -> float:
        """``total_nats − best_expert_nats``: negative when switching beats every single expert."""
        return self.total_nats - self.best_expert_nats

    @functools.cached_property
    def regret_bound_nats(self) -> float:
        """Guaranteed bound on :attr:`regret_nats`: −log p(ξ_1 = … = ξ_N = best expert)
        under the strategy's prior, nats (:func:`mdlnb.switching.never_switch_cost`;
        paper App. A.1, Eq. 4 with the best single expert as comparator)."""
        from mdlnb.switching import never_switch_cost

        return never_switch_cost(self.strategy, self.n, len(self.expert_names),
                                 self.losses.best_expert()[0])

    def prior_cost_line(self) -> str:
        """One line: what the regret bound is made of."""
        k = len(self.expert_names)
        first = -float(self.strategy.log_first(k)[self.losses.best_expert()[0]])
        rest = self.regret_bound_nats - first
        text = (f"{self.regret_bound_nats:,.1f} nats = {first:.1f} to name 1 of K={k} experts"
                f" + {rest:,.1f} to keep the option to switch over N={self.n}")
        return text + "; switching wins only when later readouts repay it"

    @functools.cached_property
    def grid_edges(self) -> list:
        """:class:`mdlnb._diagnostics.GridEdge` for each hyperparameter axis of the board on
        whose edge the best single expert sits (empty: every axis brackets it)."""
        return _diagnostics.grid_edges(self.losses.experts, self.losses.best_expert()[0])

    @property
    def trained(self) -> bool:
        """False when N ≤ B: every example was coded uniformly, no readout trained."""
        return _diagnostics.nothing_trained(self.n, int(self.losses.batch_size)) is None

    @property
    def warnings(self) -> tuple[str, ...]:
        """Plain sentences: no readout trained (N ≤ B); a switching code longer than the
        uniform code N log C; best expert on a grid edge."""
        out = []
        untrained = _diagnostics.nothing_trained(self.n, int(self.losses.batch_size))
        if untrained:
            out.append(untrained)
        else:
            worse = _diagnostics.worse_than_uniform(self.total_nats, self.uniform_nats,
                                                    regression=self.kind == "regression")
            if worse:
                out.append(worse)
            proto = getattr(self.losses, "protocol", None)
            board = proto.board if proto is not None and isinstance(proto.board, str) else None
            out += [e.message(self.best_expert, board) for e in self.grid_edges]
        return tuple(out)

    def expert(self, name: str | None = None) -> Any:
        """The ``Expert`` called ``name`` (default: the best single expert)."""
        names = self.expert_names
        name = self.best_expert if name is None else name
        if name not in names:
            raise ValueError(f"name: no expert {name!r} in this report")
        return self.losses.experts[names.index(name)]

    def codelength_table(self, strategies: Sequence[Any] | None = None):
        """Codelengths of the same loss matrix under several codes, one row each:
        the given switching strategies (default: Bayesian mixture, elementwise
        mixture, fixed share with m = 2 and m = 11, switch distribution,
        run-length), the best single expert and the uniform code. Columns
        ``code``, ``total [nats]``, ``total [bits]``, ``per example [bits]``,
        ``vs best expert [nats]``."""
        import pandas as pd

        from mdlnb import switching

        if strategies is None:
            strategies = [switching.BayesianMixture(), switching.ElementwiseMixture(),
                          switching.FixedShare(m=2.0), switching.FixedShare(m=11.0),
                          switching.SwitchDistribution(), switching.RunLength()]
        codes = [(strategy_label(r.strategy), r.total_nats)
                 for r in (self.with_strategy(st) for st in strategies)]
        codes += [(f"best single expert ({self.best_expert})", self.best_expert_nats),
                  ("untrained readout (prefix Gaussian)" if self.kind == "regression"
                   else "uniform (N log C)", self.uniform_nats)]
        if self.kind == "regression":  # density codes: nats only, the caveat in the column name
            return pd.DataFrame({
                "code": [c for c, _ in codes],
                "total [density nats]": [v for _, v in codes],
                "per example [density nats]": [v / self.n for _, v in codes],
                "vs best expert [nats]": [v - self.best_expert_nats for _, v in codes],
            })
        return pd.DataFrame({
            "code": [c for c, _ in codes],
            "total [nats]": [v for _, v in codes],
            "total [bits]": [v / LN2 for _, v in codes],
            "per example [bits]": [v / LN2 / self.n for _, v in codes],
            "vs best expert [nats]": [v - self.best_expert_nats for _, v in codes],
        })

    # -- posterior -----------------------------------------------------------
    @functools.cached_property
    def _posterior(self) -> np.ndarray:
        return self.switch.posterior  # (N, K) float64

    @property
    def posterior(self):
        """Tidy DataFrame of p(ξ_t = expert | D_<t): columns ``t`` (examples seen
        before the prediction, 0 … N−1), ``expert``, ``readout``, ``probability``
        (:func:`posterior_frame`, the format of the CLI's ``--posterior`` files)."""
        return posterior_frame(self._posterior, self.expert_names, self.readouts)

    def readout_matrix(self) -> tuple[list[str], np.ndarray]:
        """(readout names R, (N, R) posterior summed over each readout's hyperparameters)."""
        ros = self.readouts
        uniq = list(dict.fromkeys(ros))
        onehot = np.zeros((len(ros), len(uniq)))
        onehot[np.arange(len(ros)), [uniq.index(r) for r in ros]] = 1.0
        return uniq, self._posterior @ onehot

    def readout_posterior(self):
        """Tidy DataFrame of p(readout | D_<t): columns ``t``, ``readout``, ``probability``."""
        import pandas as pd

        uniq, mat = self.readout_matrix()
        n, r = mat.shape
        return pd.DataFrame({
            "t": np.repeat(np.arange(n), r),
            "readout": pd.Categorical(np.tile(np.asarray(uniq, object), n), categories=uniq),
            "probability": mat.reshape(-1),
        })

    @property
    def preferred_readout(self) -> str | None:
        """argmax_r (1/N) Σ_t p(r | D_<t): the readout the posterior prefers on average
        over this run (paper Fig. 2); None when no readout was trained (N ≤ B).

        One order's summary: it changes with the seed and the strategy. For
        "which readout from how many examples on" use :meth:`readout_preference`
        and :func:`mdlnb.readout_preference` over several seeds.
        """
        from mdlnb.preference import whole_run_preference

        return whole_run_preference(self)[0] if self.trained else None

    def readout_preference(self, *, per_decade: int = 3):
        """Preferred readout and its posterior mass on log-spaced bins of examples
        seen (:func:`mdlnb.readout_preference` on this one order: no bin is
        called stable)."""
        from mdlnb.preference import readout_preference

        return readout_preference(self, per_decade=per_decade)

    def _preference_text(self) -> str:
        if not self.trained:
            return "none: no readout trained"
        from mdlnb.preference import whole_run_preference

        ro, mass = whole_run_preference(self)
        bins = self.readout_preference(per_decade=1).table
        by_size = " | ".join(f"[{r.n_from:,},{r.n_to:,}) {r.readout} {r.mass:.2f}"
                             for r in bins.itertuples(index=False))
        return (f"{by_size}  (mean posterior by examples seen; one order, stability across "
                f"orders unchecked: mdlnb.readout_preference([reports of several seeds]); "
                f"whole-run average {ro} {mass:.2f})")

    # -- presentation --------------------------------------------------------
    def summary(self):
        """One-row DataFrame (units in the column names)."""
        import pandas as pd

        if self.trained:
            from mdlnb.preference import whole_run_preference

            ro, mass = whole_run_preference(self)
        else:
            ro, mass = "none (no readout trained)", float("nan")
        if self.kind == "regression":  # density codelengths: per example, nats, the caveat
            return pd.DataFrame([{
                "task": self.task_name,
                "kind": "regression",
                "N": self.n,
                "P": int(self.target.get("dims", 0)),
                "K": len(self.expert_names),
                "strategy": strategy_label(self.strategy),
                "total [density nats]": self.total_nats,
                "per example [density nats]": self.nats_per_example,
                "untrained readout [density nats]": self.uniform_nats,
                "best expert": self.best_expert,
                "best expert [density nats]": self.best_expert_nats,
                "regret vs best expert [nats]": self.regret_nats,
                "regret bound [nats]": self.regret_bound_nats,
                "whole-run readout (one order)": ro,
                "whole-run readout mass": mass,
                "warnings": len(self.warnings),
                "caveat": "up to -log(delta) nats per example and output (target quantisation)",
            }])
        return pd.DataFrame([{
            "task": self.task_name,
            "N": self.n,
            "C": self.num_classes,
            "K": len(self.expert_names),
            "strategy": strategy_label(self.strategy),
            "total [nats]": self.total_nats,
            "total [bits]": self.total_bits,
            "per example [nats]": self.nats_per_example,
            "per example [bits]": self.bits_per_example,
            "uniform [nats]": self.uniform_nats,
            "best expert": self.best_expert,
            "best expert [nats]": self.best_expert_nats,
            "regret vs best expert [nats]": self.regret_nats,
            "regret bound [nats]": self.regret_bound_nats,
            "whole-run readout (one order)": ro,
            "whole-run readout mass": mass,
            "warnings": len(self.warnings),
        }])

    def __str__(self) -> str:
        if self.kind == "regression":
            return self._str_regression()
        lines = [
            f"MDL report: task {self.task_name!r}, N={self.n}, C={self.num_classes}, "
            f"K={len(self.expert_names)} experts, {strategy_label(self.strategy)}",
            f"  switching code : {self.total_nats:,.1f} nats = {self.total_bits:,.1f} bits "
            f"({self.bits_per_example:.4f} bits/example)  <- the score: rank encoders by this",
            f"  best expert    : {self.best_expert_nats:,.1f} nats ({self.best_expert}; picked in "
            "hindsight, for comparison)",
            f"  regret vs best : {self.regret_nats:+,.1f} nats (guaranteed <= "
            f"{self.regret_bound_nats:+,.1f}: the prior's cost)",
            f"  prior's cost   : {self.prior_cost_line()}",
            f"  uniform code   : {self.uniform_nats:,.1f} nats",
            f"  readout        : {self._preference_text()}",
        ]
        if self.prune:
            p = self.prune
            lines.append(f"  pruned board   : {p['num_pruned']} of {len(self.expert_names)} experts "
                         f"pruned (posterior < {p['threshold']:g} for {p['window']:,} examples); "
                         f"{p['expert_updates']:,} of {p['expert_updates_unpruned']:,} "
                         f"expert-updates ({p['updates_ratio']:.1f}x fewer)")
        lines += [f"  warning        : {w}" for w in self.warnings]
        return "\n".join(lines)

    def _str_regression(self) -> str:
        p = int(self.target.get("dims", 0))
        lines = [
            f"MDL report (regression, density codelengths): task {self.task_name!r}, N={self.n}, "
            f"P={p} targets, K={len(self.expert_names)} experts, {strategy_label(self.strategy)}",
            f"  switching code : {self.total_nats:,.1f} nats ({self.nats_per_example:.4f} "
            "nats/example)  <- the score: rank representations of these targets by this",
            f"  best expert    : {self.best_expert_nats:,.1f} nats ({self.best_expert}; picked in "
            "hindsight, for comparison)",
            f"  regret vs best : {self.regret_nats:+,.1f} nats (guaranteed <= "
            f"{self.regret_bound_nats:+,.1f}: the prior's cost)",
            f"  untrained code : {self.uniform_nats:,.1f} nats (prefix Gaussian, features unused)",
            f"  readout        : {self._preference_text()}",
            "  units          : -log p(y), a density: a codelength only up to the targets' "
            "quantisation, -log(delta) nats per example and output; not comparable with "
            "classification codelengths",
        ]
        lines += [f"  warning        : {w}" for w in self.warnings]
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        head = html.escape(f"MDL report: {self.task_name} ({strategy_label(self.strategy)})")
        return f"<div><b>{head}</b>{self.summary().to_html(index=False, float_format='%.4g')}</div>"

    def plot_posterior(self, by: str = "readout", *, ax: Any = None, max_points: int = 400) -> Any:
        """Stacked area of the posterior over readouts (``by="readout"``) or experts
        (``by="expert"``) against examples seen, log x axis. Returns the Axes."""
        from mdlnb import plots

        if by == "readout":
            frame = self.readout_posterior()
        elif by == "expert":
            frame = self.posterior
        else:
            raise ValueError(f"by: must be 'readout' or 'expert', got {by!r}")
        return plots.posterior_area(frame, by=by, ax=ax, max_points=max_points,
                                    title=f"{self.task_name}: posterior over {by}s")

    def baseline_per_step(self, baseline: Any) -> tuple[str, np.ndarray]:
        """(label, (N,) per-step nats) of an expert (name or column index) or another Report.

        Another Report must code the same task's examples in the same order
        (same task name, N and example order): per-step codelengths of
        different orders are not comparable, so a mismatch is a ``ValueError``.
        """
        if isinstance(baseline, Report):
            if baseline.task_name != self.task_name:
                raise ValueError(f"baseline: codes task {baseline.task_name!r}, this report "
                                 f"{self.task_name!r}; compare reports of one task")
            if baseline.n != self.n:
                raise ValueError(f"baseline: has N={baseline.n}, this report N={self.n}")
            if not np.array_equal(np.asarray(baseline.losses.order), np.asarray(self.losses.order)):
                raise ValueError(f"baseline: its examples came in a different order (seed "
                                 f"{baseline.losses.seed} vs {self.losses.seed}); per-step "
                                 "regret needs one order: evaluate both with the same seed")
            return f"{baseline.task_name} ({strategy_label(baseline.strategy)})", baseline.per_step_nats
        names = self.expert_names
        if isinstance(baseline, (int, np.integer)) and not isinstance(baseline, bool):
            if not 0 <= baseline < len(names):
                raise ValueError(f"baseline: expert index must be in [0, {len(names)}), got {baseline}")
            k = int(baseline)
        elif isinstance(baseline, str) and baseline in names:
            k = names.index(baseline)
        else:
            raise ValueError(f"baseline: expected an expert name, index or Report, got {baseline!r}")
        return names[k], np.asarray(self.losses.losses[:, k], np.float64)

    def plot_regret(self, baseline: Any = None, *, ax: Any = None, units: str = "nats",
                    label: str | None = None) -> Any:
        """Cumulative codelength of this report's switching code minus a baseline's
        (an expert name/index, default the best single expert, or another Report),
        against examples coded. Returns the Axes."""
        from mdlnb import plots

        base_label, base = self.baseline_per_step(self.best_expert if baseline is None else baseline)
        return plots.regret({label or f"switching ({strategy_label(self.strategy)})": self.per_step_nats}, base,
                            baseline_label=base_label, ax=ax, units=units)


@data_first
def evaluate(x: Any = None, y: Any = None, *more: Any, experts: Any = None,
             strategy: Any = None, m: float | None = None, protocol: Any = None,
             batch_size: int | None = None, seed: int | None = None, standardize: str | bool | None = None,
             replay_streams: int | None = None, name: str | None = None,
             num_classes: int | None = None, progress: Any = None,
             cache: bool = True) -> Report:
    """MDL with readout-model switching, stage 1 + stage 2, in one call.

    The data come first, positionally, in one of these forms (anything else
    is a ``TypeError`` naming them)::

        evaluate(x, y, ...)          # features (N, D) and integer labels (N,)
        evaluate(x=x, y=y, ...)
        evaluate(task, ...)          # an mdlnb.Task
        evaluate((x, y), ...)        # a pair
        evaluate({"x": x, "y": y, "name": "digits|pca16"}, ...)

    Everything else is keyword-only, in the same order as :func:`mdlnb.compare`.

    Args:
      x: the features (N, D) — more dimensions are flattened, with a warning —
        or a :class:`mdlnb.Task`, an ``(x, y)`` pair, or a mapping with ``x``,
        ``y`` (optionally ``name``, ``num_classes``).
      y: the labels, integers in [0, C) (floats only if integer-valued; one-hot
        or continuous targets are a ``ValueError``), when ``x`` is features.
      experts: the board (a list of Experts or an expert preset name); default
        the protocol's (``"default"``: linear + MLP 1–3 × 5 learning rates × 2
        EMA steps = 40 experts).
      strategy: a switching strategy object or name; default the protocol's
        (fixed share with α_t = (m − 1)/t).
      m: fixed share's m (m − 1 = expected number of switches); default the
        protocol's (``"default"``: :data:`DEFAULT_M` = 2; ``"paper-vtab"``: 11).
      protocol: a :class:`mdlnb.Protocol` or a preset name
        (:func:`mdlnb.protocol`; default ``"default"``). The other keyword
        arguments override its fields; the report records the result
        (:attr:`Report.protocol`).
      batch_size, seed, standardize, replay_streams: override the protocol's
        (see :func:`mdlnb.prequential.run`).
      name, num_classes: the task's name and C for arrays (default: a content
        hash, ``arrays-<8 hex>``, and max(y) + 1).
      progress: ``None`` (default: a bar when interactive and the run is long),
        ``True`` or ``False``; passed to :func:`mdlnb.prequential.run`.
      cache: stage-1 loss matrices are cached on disk.

    With N ≤ B no readout is trained (every example is in the first batch,
    coded uniformly): the report is the uniform code, with a warning, and no
    training program is compiled (:func:`mdlnb.prequential.run` decides it, for
    every caller).

    Returns:
      a :class:`Report` (totals in nats and bits, posterior, plots).
    """
    if more:   # a third positional argument: the package's error, not Python's
        raise extra_positional("evaluate", ACCEPTED_FORMS, more)
    from mdlnb import prequential

    task = as_task(x, y, name=name, num_classes=num_classes)
    proto = prequential.resolve_protocol(protocol, experts, batch_size=batch_size, seed=seed,
                                         standardize=standardize, replay_streams=replay_streams)
    strat = resolve_strategy(strategy, m, default=proto.strategy)  # validate before stage 1
    proto = proto.resolve(strategy=strat)
    lm = prequential.run(task, protocol=proto, progress=progress, cache=cache)  # N ≤ B: no compile
    return Report.from_losses(lm, strat)
