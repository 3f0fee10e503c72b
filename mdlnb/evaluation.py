"""One call from a task to a codelength: ``mdlnb.evaluate`` and its ``Report``.

``evaluate`` runs stage 1 (:func:`mdlnb.prequential.run`: a board of readout
experts trained online, next-step log-losses L[t, k] in nats) and stage 2
(:func:`mdlnb.switching.codelength`: a switching strategy over those losses),
and wraps the result in a :class:`Report`: totals in nats and bits, the best
single expert for comparison, the posterior over experts and readouts as a
function of data size, and plots.

Default strategy: fixed share with decreasing switching rate α_t = (m − 1)/t
(paper Eq. 2), where m − 1 is the expected number of switches. The paper uses
α_t = 10/t (m = 11) for frozen encoders on VTAB (App. A.5.1) and α_t = 1/t
(m = 2) on ImageNet (App. A.5.2); mdlnb's default board is VTAB-like (several
readouts on small-to-medium tasks), so :data:`DEFAULT_M` = 11.
"""

from __future__ import annotations

import dataclasses
import functools
import html
import math
import warnings
from typing import Any, Mapping, Sequence

import numpy as np

from mdlnb._task import Task
from mdlnb._units import LN2, Codelength


#: m of fixed share with α_t = (m − 1)/t: the paper's VTAB setting α_t = 10/t.
DEFAULT_M = 11.0


def as_task(task_or_arrays: Any, *, name: str = "user") -> Task:
    """A :class:`Task` from a Task, an ``(x, y)`` tuple, or a mapping with ``x``, ``y``
    (and optionally ``num_classes``, ``name``)."""
    if isinstance(task_or_arrays, Task):
        return task_or_arrays
    if isinstance(task_or_arrays, Mapping):
        missing = {"x", "y"} - set(task_or_arrays)
        if missing:
            raise ValueError(f"task_or_arrays: mapping lacks {sorted(missing)}")
        d = task_or_arrays
        return Task.from_arrays(d["x"], d["y"], name=d.get("name", name),
                                num_classes=d.get("num_classes"))
    if isinstance(task_or_arrays, (tuple, list)) and len(task_or_arrays) == 2:
        x, y = task_or_arrays
        return Task.from_arrays(x, y, name=name)
    raise ValueError("task_or_arrays: expected an mdlnb.Task, an (x, y) tuple or a dict with "
                     f"'x' and 'y', got {type(task_or_arrays).__name__}")


def resolve_strategy(strategy: Any = None, m: float | None = None) -> Any:
    """The switching strategy: ``FixedShare(m=m or DEFAULT_M)`` when ``strategy`` is None;
    a name (with ``m`` passed on for fixed share) or a strategy object otherwise."""
    from mdlnb import switching

    if strategy is None:
        return switching.FixedShare(m=DEFAULT_M if m is None else m)
    if m is not None:
        if isinstance(strategy, str):
            return switching.get_strategy(strategy, m=m)
        raise ValueError("m: only used with the default strategy or a strategy name; "
                         "set m on the strategy object instead")
    return switching.get_strategy(strategy)


def strategy_label(strategy: Any) -> str:
    """Short label, e.g. ``FixedShare(m=11)``: the class name and the fields that are set."""
    if not dataclasses.is_dataclass(strategy):
        return repr(strategy)
    fields = {f.name: getattr(strategy, f.name) for f in dataclasses.fields(strategy)}
    args = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v!r}"
                     for k, v in fields.items() if v is not None)
    return f"{type(strategy).__name__}({args})"


def _readout_of(expert: Any) -> str:
    return expert.readout.name


@dataclasses.dataclass(frozen=True, eq=False)
class Report(Codelength):
    """The outcome of :func:`evaluate` (all codelengths in nats unless named bits).

    Attributes:
      losses: the stage-1 ``LossMatrix`` (N, K) in nats.
      switch: the stage-2 ``SwitchResult`` (total, per-step mixture loss, log posterior).
    """

    losses: Any
    switch: Any

    # -- construction --------------------------------------------------------
    @classmethod
    def from_losses(cls, losses: Any, strategy: Any = None, *, m: float | None = None) -> "Report":
        """Stage 2 on an existing ``LossMatrix`` (default strategy as in :func:`evaluate`)."""
        from mdlnb import switching

        if not hasattr(losses, "losses") or not hasattr(losses, "experts"):
            raise ValueError(f"losses: expected an mdlnb LossMatrix, got {type(losses).__name__}")
        result = switching.codelength(losses.losses, resolve_strategy(strategy, m), posterior=True)
        report = cls(losses, result)
        if report.diverged:
            from mdlnb.switching.divergence import DivergenceWarning, describe

            warnings.warn(f"{report.task_name}: " + describe(switching.diverged(losses.losses),
                                                             report.expert_names),
                          DivergenceWarning, stacklevel=2)
        return report

    @property
    def diverged(self) -> list[tuple[str, int]]:
        """``[(expert name, t), ...]``: experts whose losses became NaN/inf (a learning
        rate that overflows), with their first such step t (1-indexed). The switching
        code gives them probability 0 from then on; ``from_losses`` warns."""
        return self.losses.diverged()

    def with_strategy(self, strategy: Any, *, m: float | None = None) -> "Report":
        """The same loss matrix scored with another switching strategy."""
        return Report.from_losses(self.losses, strategy, m=m)

    # -- numbers -------------------------------------------------------------
    @property
    def strategy(self) -> Any:
        return self.switch.strategy

    @property
    def n(self) -> int:
        return int(self.losses.n)

    @property
    def num_classes(self) -> int:
        return int(self.losses.num_classes)

    @property
    def task_name(self) -> str:
        return str(self.losses.task_name)

    @property
    def total_nats(self) -> float:
        return float(self.switch.total_nats)

    @property
    def per_step(self) -> np.ndarray:
        """(N,) the switching mixture's next-step loss in nats (sums to ``total_nats``)."""
        return np.asarray(self.switch.per_step)

    @property
    def uniform_nats(self) -> float:
        """``N log C``: the codelength without learning anything, nats."""
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
                          switching.FixedShare(m=2.0), switching.FixedShare(m=DEFAULT_M),
                          switching.SwitchDistribution(), switching.RunLength()]
        codes = [(strategy_label(r.strategy), r.total_nats)
                 for r in (self.with_strategy(st) for st in strategies)]
        codes += [(f"best single expert ({self.best_expert})", self.best_expert_nats),
                  ("uniform (N log C)", self.uniform_nats)]
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
        before the prediction, 0 … N−1), ``expert``, ``readout``, ``probability``."""
        import pandas as pd

        post = self._posterior
        n, k = post.shape
        names, ros = self.expert_names, self.readouts
        return pd.DataFrame({
            "t": np.repeat(np.arange(n), k),
            "expert": pd.Categorical(np.tile(np.asarray(names, object), n), categories=names),
            "readout": pd.Categorical(np.tile(np.asarray(ros, object), n),
                                      categories=list(dict.fromkeys(ros))),
            "probability": post.reshape(-1),
        })

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
    def preferred_readout(self) -> str:
        """argmax_r (1/N) Σ_t p(r | D_<t): the readout the posterior prefers over the
        whole sequence (paper Fig. 2)."""
        uniq, mat = self.readout_matrix()
        return uniq[int(np.argmax(mat.mean(axis=0)))]

    # -- presentation --------------------------------------------------------
    def summary(self):
        """One-row DataFrame (units in the column names)."""
        import pandas as pd

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
            "preferred readout": self.preferred_readout,
        }])

    def __str__(self) -> str:
        return "\n".join([
            f"MDL report: task {self.task_name!r}, N={self.n}, C={self.num_classes}, "
            f"K={len(self.expert_names)} experts, {strategy_label(self.strategy)}",
            f"  switching code : {self.total_nats:,.1f} nats = {self.total_bits:,.1f} bits "
            f"({self.bits_per_example:.4f} bits/example)",
            f"  best expert    : {self.best_expert_nats:,.1f} nats ({self.best_expert})",
            f"  regret vs best : {self.regret_nats:+,.1f} nats",
            f"  uniform code   : {self.uniform_nats:,.1f} nats",
            f"  preferred readout: {self.preferred_readout}",
        ])

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
        """(label, (N,) per-step nats) of an expert (name or column index) or another Report."""
        if isinstance(baseline, Report):
            if baseline.n != self.n:
                raise ValueError(f"baseline: has N={baseline.n}, this report N={self.n}")
            return f"{baseline.task_name} ({strategy_label(baseline.strategy)})", baseline.per_step
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
        return plots.regret({label or f"switching ({strategy_label(self.strategy)})": self.per_step}, base,
                            baseline_label=base_label, ax=ax, units=units)


def evaluate(task_or_arrays: Any, experts: Sequence[Any] | None = None, strategy: Any = None, *,
             batch_size: int = 32, seed: int = 0, m: float | None = None,
             progress: Any = None, cache: bool = True) -> Report:
    """MDL with readout-model switching, stage 1 + stage 2, in one call.

    Args:
      task_or_arrays: a :class:`mdlnb.Task`, an ``(x, y)`` tuple or a dict with ``x``, ``y``.
      experts: the board; default ``mdlnb.experts.preset("default")`` (linear +
        MLP 1–3 under a small hyperparameter grid).
      strategy: a switching strategy object or name; default fixed share with
        α_t = (m − 1)/t.
      batch_size, seed, progress, cache: passed to :func:`mdlnb.prequential.run`.
      m: fixed share's m (m − 1 = expected number of switches); default
        :data:`DEFAULT_M` = 11, the paper's VTAB setting (α_t = 10/t).

    Returns:
      a :class:`Report` (totals in nats and bits, posterior, plots).
    """
    from mdlnb import experts as _experts
    from mdlnb import prequential

    task = as_task(task_or_arrays)
    board = _experts.preset("default") if experts is None else list(experts)
    if not board:
        raise ValueError("experts: is empty")
    strat = resolve_strategy(strategy, m)   # validate before the long stage 1
    lm = prequential.run(task, board, batch_size=batch_size, seed=seed, progress=progress,
                         cache=cache)
    return Report.from_losses(lm, strat)
