"""The outcome of :func:`mdlnb.evaluate`: a :class:`Report` over one loss matrix.

A Report holds the stage-1 ``LossMatrix`` L[t, k] (nats) and the stage-2
``SwitchResult`` of a switching strategy over it, and derives everything else:
totals in nats and bits, the best single expert and the regret bound against
it (paper App. A.1), the posterior over experts and readouts as a function of
data size, warnings, and plots. Its printout, summary row and table of codes
are :mod:`mdlnb.api._report_views`. ``mdlnb.Report`` and ``mdlnb.api.evaluation.Report``
name this class.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from mdlnb import switching
from mdlnb.api import _diagnostics, plots, preference
from mdlnb.api import _report_views as _views
from mdlnb.board._arguments import resolve_strategy
from mdlnb.core import _targets
from mdlnb.core._units import Codelength
from mdlnb.infra._warnings import ResultWarning
from mdlnb.switching._posterior import posterior_frame
from mdlnb.switching.divergence import DivergenceWarning, describe
from mdlnb.switching.strategies import strategy_label


def _readout_of(expert: Any) -> str:
    return expert.readout.name


@dataclasses.dataclass(frozen=True, eq=False)
class Report(Codelength):
    """The outcome of :func:`mdlnb.evaluate` (all codelengths in nats unless named bits).

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
    def from_losses(
        cls, losses: Any, strategy: Any = None, *, m: float | None = None, warn: bool = True
    ) -> Report:
        """Stage 2 on an existing ``LossMatrix``; the default strategy is the one of the
        protocol it records (else ``FixedShare()``), with ``m`` if given. ``warn``: issue
        the report's :attr:`warnings` as ``UserWarning``."""
        if not hasattr(losses, "losses") or not hasattr(losses, "experts"):
            raise ValueError(f"losses: expected an mdlnb LossMatrix, got {type(losses).__name__}")
        proto = getattr(losses, "protocol", None)
        strat = resolve_strategy(strategy, m, default=None if proto is None else proto.strategy)
        # a pruned board (Protocol.prune): the strategy restricted to the survivors
        at = getattr(losses, "pruned_at", None)
        seg = (getattr(losses, "meta", None) or {}).get("prune", {}).get("segment_rows", 1)
        if getattr(losses, "kind", "classification") == "regression":
            # density codes may be negative: stage 2 on rows shifted by their minimum, the
            # shift added back per step (exact: mdlnb.core._targets.shift_rows)
            rows, shift = _targets.shift_rows(losses.losses)
            result = switching.codelength_pruned(rows, strat, at, posterior=True, segment_rows=seg)
            ps = result.per_step_nats + shift.astype(np.float64)
            result = dataclasses.replace(result, total_nats=float(np.sum(ps)), per_step_nats=ps)
        else:
            result = switching.codelength_pruned(
                losses.losses, strat, at, posterior=True, segment_rows=seg
            )
        report = cls(losses, result)
        if warn:
            for text in report.warnings:
                warnings.warn(text, ResultWarning, stacklevel=2)
        if report.diverged:
            warnings.warn(
                f"{report.task_name}: "
                + describe(
                    [
                        (k, t)
                        for k, t in switching.diverged(losses.losses)
                        if at is None or t <= at[k]
                    ],
                    report.expert_names,
                ),
                DivergenceWarning,
                stacklevel=2,
            )
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

    def with_strategy(self, strategy: Any, *, m: float | None = None) -> Report:
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
        quantisation, −log δ nats per example and output (:mod:`mdlnb.core._targets`)."""
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
        warnings.warn(
            "Report.per_step is deprecated: use per_step_nats (the unit in the name)",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.per_step_nats

    @property
    def uniform_nats(self) -> float:
        """``N log C``: the codelength without learning anything, nats. Regression: the
        untrained readout's density code (the prefix's Gaussian, features unused,
        :func:`mdlnb.core._targets.untrained_nats`)."""
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
        return switching.never_switch_cost(
            self.strategy, self.n, len(self.expert_names), self.losses.best_expert()[0]
        )

    def prior_cost_line(self) -> str:
        """One line: what the regret bound is made of."""
        k = len(self.expert_names)
        first = -float(self.strategy.log_first(k)[self.losses.best_expert()[0]])
        rest = self.regret_bound_nats - first
        text = (
            f"{self.regret_bound_nats:,.1f} nats = {first:.1f} to name 1 of K={k} experts"
            f" + {rest:,.1f} to keep the option to switch over N={self.n}"
        )
        return text + "; switching wins only when later readouts repay it"

    @functools.cached_property
    def grid_edges(self) -> list:
        """:class:`mdlnb.api._diagnostics.GridEdge` for each hyperparameter axis of the board on
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
            worse = _diagnostics.worse_than_uniform(
                self.total_nats, self.uniform_nats, regression=self.kind == "regression"
            )
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

    def codelength_table(self, strategies: Sequence[Any] | None = None) -> pd.DataFrame:
        """Codelengths of the same loss matrix under several codes, one row each:
        the given switching strategies (default: Bayesian mixture, elementwise
        mixture, fixed share with m = 2 and m = 11, switch distribution,
        run-length), the best single expert and the uniform code. Columns
        ``code``, ``total [nats]``, ``total [bits]``, ``per example [bits]``,
        ``vs best expert [nats]``."""
        return _views.codelength_table(self, strategies)

    # -- posterior -----------------------------------------------------------
    @functools.cached_property
    def _posterior(self) -> np.ndarray:
        return self.switch.posterior  # (N, K) float64

    @property
    def posterior(self) -> pd.DataFrame:
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

    def readout_posterior(self) -> pd.DataFrame:
        """Tidy DataFrame of p(readout | D_<t): columns ``t``, ``readout``, ``probability``."""
        uniq, mat = self.readout_matrix()
        n, r = mat.shape
        return pd.DataFrame(
            {
                "t": np.repeat(np.arange(n), r),
                "readout": pd.Categorical(np.tile(np.asarray(uniq, object), n), categories=uniq),
                "probability": mat.reshape(-1),
            }
        )

    @property
    def preferred_readout(self) -> str | None:
        """argmax_r (1/N) Σ_t p(r | D_<t): the readout the posterior prefers on average
        over this run (paper Fig. 2); None when no readout was trained (N ≤ B).

        One order's summary: it changes with the seed and the strategy. For
        "which readout from how many examples on" use :meth:`readout_preference`
        and :func:`mdlnb.readout_preference` over several seeds.
        """
        return preference.whole_run_preference(self)[0] if self.trained else None

    def readout_preference(self, *, per_decade: int = 3):
        """Preferred readout and its posterior mass on log-spaced bins of examples
        seen (:func:`mdlnb.readout_preference` on this one order: no bin is
        called stable)."""
        return preference.readout_preference(self, per_decade=per_decade)

    # -- presentation (the words: mdlnb.api._report_views) ----------------------
    def summary(self) -> pd.DataFrame:
        """One-row DataFrame (units in the column names)."""
        return _views.summary(self)

    def __str__(self) -> str:
        return _views.text(self)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        return _views.html_text(self)

    def plot_posterior(self, by: str = "readout", *, ax: Any = None, max_points: int = 400) -> Any:
        """Stacked area of the posterior over readouts (``by="readout"``) or experts
        (``by="expert"``) against examples seen, log x axis. Returns the Axes."""
        if by == "readout":
            frame = self.readout_posterior()
        elif by == "expert":
            frame = self.posterior
        else:
            raise ValueError(f"by: must be 'readout' or 'expert', got {by!r}")
        return plots.posterior_area(
            frame,
            by=by,
            ax=ax,
            max_points=max_points,
            title=f"{self.task_name}: posterior over {by}s",
        )

    def baseline_per_step(self, baseline: Any) -> tuple[str, np.ndarray]:
        """(label, (N,) per-step nats) of an expert (name or column index) or another Report.

        Another Report must code the same task's examples in the same order
        (same task name, N and example order): per-step codelengths of
        different orders are not comparable, so a mismatch is a ``ValueError``.
        """
        if isinstance(baseline, Report):
            if baseline.task_name != self.task_name:
                raise ValueError(
                    f"baseline: codes task {baseline.task_name!r}, this report "
                    f"{self.task_name!r}; compare reports of one task"
                )
            if baseline.n != self.n:
                raise ValueError(f"baseline: has N={baseline.n}, this report N={self.n}")
            if not np.array_equal(np.asarray(baseline.losses.order), np.asarray(self.losses.order)):
                raise ValueError(
                    f"baseline: its examples came in a different order (seed "
                    f"{baseline.losses.seed} vs {self.losses.seed}); per-step "
                    "regret needs one order: evaluate both with the same seed"
                )
            return (
                f"{baseline.task_name} ({strategy_label(baseline.strategy)})",
                baseline.per_step_nats,
            )
        names = self.expert_names
        if isinstance(baseline, (int, np.integer)) and not isinstance(baseline, bool):
            if not 0 <= baseline < len(names):
                raise ValueError(
                    f"baseline: expert index must be in [0, {len(names)}), got {baseline}"
                )
            k = int(baseline)
        elif isinstance(baseline, str) and baseline in names:
            k = names.index(baseline)
        else:
            raise ValueError(
                f"baseline: expected an expert name, index or Report, got {baseline!r}"
            )
        return names[k], np.asarray(self.losses.losses[:, k], np.float64)

    def plot_regret(
        self, baseline: Any = None, *, ax: Any = None, units: str = "nats", label: str | None = None
    ) -> Any:
        """Cumulative codelength of this report's switching code minus a baseline's
        (an expert name/index, default the best single expert, or another Report),
        against examples coded. Returns the Axes."""
        base_label, base = self.baseline_per_step(
            self.best_expert if baseline is None else baseline
        )
        mine = label or f"switching ({strategy_label(self.strategy)})"
        return plots.regret(
            {mine: self.per_step_nats}, base, baseline_label=base_label, ax=ax, units=units
        )
