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
* the preferred readout: argmax_r (1/(S·N)) Σ_s Σ_t p(r | D_<t) — the
  paper's Fig. 2 statistic averaged over orders.

The protocol (board of experts, batch size B, switching strategy and its m,
input standardisation) is one :class:`mdlnb.Protocol`, given as ``protocol``:
a preset name, a Protocol, or a mapping of its fields — :func:`resolve_protocol`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping, Sequence

import numpy as np

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
    if isinstance(value, Task) and not np.array_equal(value.y, y):
        raise ValueError(f"encoders: {name!r} is a Task whose labels differ from y")
    return np.asarray(x, np.float32)


def _labels(y: Any, num_classes: int | None) -> tuple[Task | None, np.ndarray, int]:
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


@dataclasses.dataclass(frozen=True, eq=False)
class Comparison:
    """The outcome of :func:`compare`.

    Attributes:
      runs: tidy DataFrame, one row per (encoder, seed): ``total [nats]``,
        ``per example [bits]``, ``best expert [nats]``, ``preferred readout``.
      per_step_nats: ``{(encoder, seed): (N,) float64}`` the switching code's
        next-step loss in nats, stream order (the same order for every encoder).
      readout_mass: ``{(encoder, seed): {readout: (1/N) Σ_t p(readout | D_<t)}}``.
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

    def totals(self) -> np.ndarray:
        """(E, S) codelengths in nats, encoders × seeds (:attr:`encoders`, :attr:`seeds` order)."""
        w = self.runs.pivot(index="encoder", columns="seed", values="total [nats]")
        return w.loc[self.encoders, list(self.seeds)].to_numpy(np.float64)

    @property
    def best(self) -> str:
        """The encoder with the lowest mean codelength over orders."""
        return self.encoders[int(np.argmin(self.totals().mean(axis=1)))]

    def preferred_readout(self, encoder: str) -> str:
        """argmax_r of the posterior mass of readout r averaged over t and orders."""
        acc: dict[str, float] = {}
        for s in self.seeds:
            for r, v in self.readout_mass[(encoder, s)].items():
                acc[r] = acc.get(r, 0.0) + v / len(self.seeds)
        return max(acc, key=acc.get)

    def table(self):
        """One row per encoder, best first (units in the column names; std over orders, ddof 1)."""
        import pandas as pd

        tot = self.totals()
        best = int(np.argmin(tot.mean(axis=1)))
        diff = tot - tot[best]
        first = (tot == tot.min(axis=0, keepdims=True)).sum(axis=1)
        n = self.n
        df = pd.DataFrame({
            "encoder": self.encoders,
            "total [nats]": tot.mean(axis=1),
            "total std [nats]": tot.std(axis=1, ddof=1),
            "per example [bits]": tot.mean(axis=1) / LN2 / n,
            "per example std [bits]": tot.std(axis=1, ddof=1) / LN2 / n,
            "vs best [nats]": diff.mean(axis=1),
            "vs best std [nats]": diff.std(axis=1, ddof=1),
            "rank": pd.Series(tot.mean(axis=1)).rank(method="min").astype(int).to_numpy(),
            "orders ranked first": first.astype(int),
            "preferred readout": [self.preferred_readout(e) for e in self.encoders],
        })
        df.insert(1, "orders", len(self.seeds))
        return df.sort_values(["rank", "encoder"]).reset_index(drop=True)

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
        sns.barplot(data=self.runs, x="encoder", y="per example [bits]", order=list(tab["encoder"]),
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

    def __str__(self) -> str:
        from mdlnb.report import to_markdown

        return (f"compare: task {self.task_name!r}, N={self.n}, C={self.num_classes}, "
                f"{len(self.seeds)} orders, {self.protocol!r}\n"
                + to_markdown(self.table(), digits=3))

    __repr__ = __str__


# ----------------------------------------------------------------------------- compare


def compare(encoders: Mapping[str, Any], y: Any = None, *, experts: Any = None,
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
        ``True`` or ``False``.
      cache: stage-1 loss matrices are cached on disk (:func:`mdlnb.prequential.run`).

    Returns:
      a :class:`Comparison` (``.table()``, ``.plot()``, ``.runs``).
    """
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
    jobs = [(e, s) for s in seeds for e in feats]
    it = jobs
    if _progress.wanted(progress, long=len(jobs) * len(y) * len(plan.experts()) >= 2_000_000):
        it = _progress.bar(jobs, desc="compare", unit="run")
    rows, per_step, mass, orders = [], {}, {}, {}
    for e, s in it:
        t = Task(f"{task_name}:{e}", feats[e], y, c)
        lm = prequential.run(t, protocol=plan, seed=s, progress=False, cache=cache)
        if s in orders and not np.array_equal(orders[s], lm.order):
            raise RuntimeError("compare: two encoders got different data orders for one seed")
        orders[s] = lm.order
        rep = Report.from_losses(lm, plan.strategy, warn=False)
        ros, mat = rep.readout_matrix()
        mass[(e, s)] = dict(zip(ros, mat.mean(axis=0).tolist()))
        per_step[(e, s)] = rep.per_step_nats.astype(np.float64)
        rows.append({"encoder": e, "seed": s, "total [nats]": rep.total_nats,
                     "per example [bits]": rep.bits_per_example,
                     "best expert [nats]": rep.best_expert_nats,
                     "preferred readout": rep.preferred_readout})
    runs = pd.DataFrame(rows)
    return Comparison(runs=runs, per_step_nats=per_step, readout_mass=mass, protocol=plan, n=len(y),
                      num_classes=c, seeds=seeds, task_name=task_name)
