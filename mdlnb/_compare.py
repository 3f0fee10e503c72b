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

When the runner-up is within :data:`~mdlnb._comparison.CLOSE_SD` paired sd
of the best, the printout says that their order may depend on the protocol
(input standardisation can reorder close encoders) and
:meth:`Comparison.check_standardize` reruns the two under the other
standardisation. Every run's :class:`mdlnb.Report` is kept
(``Comparison.reports``); the runs' warnings are issued once each, with the
runs they came from. Without a progress bar (batch mode,
``MDLNB_PROGRESS=0``) one line per finished run goes to stdout: encoder,
order, its code, its time, and an estimate of the time left.

The protocol (board of experts, batch size B, switching strategy and its m,
input standardisation) is one :class:`mdlnb.Protocol`, given as ``protocol``:
a preset name, a Protocol, or a mapping of its fields — :func:`resolve_protocol`.

This module is the driver: it reads the arguments and runs the encoders ×
orders, stage 1 of all of them as one batch of streams
(:func:`mdlnb.prequential.run_streams`: on a CPU one after another, each
bit-identical to its own run; on an accelerator the streams of one shape
stacked into one compiled program), stage 2 of each as soon as its loss
matrix is done. The result types, :class:`~mdlnb._comparison.Comparison` (also
``mdlnb.Comparison``) and :class:`~mdlnb._comparison.StandardizeCheck`, with
the statistics above, are :mod:`mdlnb._comparison`.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from mdlnb import _progress, prequential
from mdlnb._arguments import looks_like_board, resolve_strategy
from mdlnb._checks import check_labels, check_matrix
from mdlnb._comparison import Comparison, Rerun
from mdlnb._protocol import Protocol
from mdlnb._protocol import protocol as preset
from mdlnb._report import Report
from mdlnb._signature import data_first, extra_positional
from mdlnb._task import Task, warn_label_alphabet, warn_missing_classes
from mdlnb.encoders import Encoder, features

MIN_ORDERS = 3

#: The forms :func:`compare` accepts, quoted by its errors.
ACCEPTED_FORMS = (
    "compare({name: features, ...}, y, ...) or compare({name: features or Encoder, "
    "...}, task, ...); everything after the labels by keyword (experts=, "
    "strategy=, m=, protocol=, seeds=, ...)"
)


# ----------------------------------------------------------------------------- protocol


#: Fields a mapping may give (those of :class:`mdlnb.Protocol`, ``experts`` as
#: another name for ``board``, and ``m`` for fixed share's m).
_FIELDS = (
    "name",
    "board",
    "experts",
    "batch_size",
    "strategy",
    "m",
    "standardize",
    "clip",
    "replay_streams",
    "seed",
)


def resolve_protocol(protocol: Any = None) -> Any:
    """The :class:`mdlnb.Protocol` that ``protocol`` names or describes.

    ``protocol`` is None (``"default"``), a preset name (:func:`mdlnb.protocol`),
    a :class:`mdlnb.Protocol`, or a mapping of its fields (``experts`` may stand
    for ``board``; ``m`` sets fixed share's m) applied to the ``"default"``
    protocol.
    """
    try:
        if protocol is None or isinstance(protocol, (str, Protocol)):
            return preset("default" if protocol is None else protocol)
        if not isinstance(protocol, Mapping):
            raise ValueError(
                f"expected None, a preset name, a Protocol or a mapping, "
                f"got {type(protocol).__name__}"
            )
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
    if isinstance(value, Encoder):
        if task is None or task.x.ndim != 4:
            raise ValueError(
                f"encoders: {name!r} is an Encoder; y must then be a Task of images (N, H, W, C)"
            )
        return features(value, task).x.astype(np.float32)
    if isinstance(value, Task):
        x = value.x.reshape(value.n, -1)
    else:
        x = np.asarray(value)
        if x.ndim > 2:
            flat = (x.shape[0], int(np.prod(x.shape[1:])))
            warnings.warn(
                f"encoders: {name!r}: features of shape {x.shape} are flattened to "
                f"{flat} (one row per example); pass x.reshape(len(x), -1) to say "
                "so",
                UserWarning,
                stacklevel=4,
            )
            x = x.reshape(flat)  # type: ignore[assignment]
    try:
        x = check_matrix(x, "x")
    except ValueError as e:
        raise ValueError(f"encoders: {name!r}: {e}") from None
    if x.shape[0] != len(y):
        raise ValueError(f"encoders: {name!r} has {x.shape[0]} examples, the labels {len(y)}")
    if isinstance(value, Task) and value.kind != (
        task.kind if task is not None else "classification"
    ):
        kind = task.kind if task is not None else "classification"
        raise ValueError(
            f"encoders: {name!r} is a {value.kind} task and y a {kind} one; one "
            "comparison codes one kind of target (density codelengths of real "
            "targets are never comparable with classification codelengths)"
        )
    if isinstance(value, Task) and not np.array_equal(value.y, y):
        raise ValueError(f"encoders: {name!r} is a Task whose labels differ from y")
    return np.asarray(x, np.float32)


def _labels(y: Any, num_classes: int | None) -> tuple[Task | None, np.ndarray, int | None]:
    """``(task or None, labels, C)``; a regression Task gives its targets and C = None."""
    if isinstance(y, Task):
        if num_classes is not None:
            raise TypeError("num_classes: only for an array of labels; a Task has its own")
        return y, y.y, y.num_classes
    if y is None:
        raise TypeError(f"y: missing; use {ACCEPTED_FORMS}")
    if isinstance(y, (Mapping, str, bytes)) or looks_like_board(y):
        hint = " (a board: pass it as experts=...)" if looks_like_board(y) else ""
        raise TypeError(
            f"y: expected labels (N,) or a Task, got a {type(y).__name__}{hint}; "
            f"use {ACCEPTED_FORMS}"
        )
    y = check_labels(y, num_classes, "y")
    c = int(num_classes) if num_classes is not None else max(int(y.max()) + 1, 2)
    if num_classes is None and not warn_label_alphabet(y, c, "labels"):
        warn_missing_classes(y, c, "labels")
    return None, y, c


# ----------------------------------------------------------------------------- compare


@data_first
def compare(
    encoders: Mapping[str, Any],
    y: Any = None,
    *more: Any,
    experts: Any = None,
    strategy: Any = None,
    m: float | None = None,
    protocol: Any = None,
    batch_size: int | None = None,
    standardize: str | bool | None = None,
    replay_streams: int | None = None,
    seeds: Sequence[int] = (0, 1, 2),
    num_classes: int | None = None,
    progress: bool | None = None,
    cache: bool = True,
) -> Comparison:
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
    if more:  # a third positional argument: the package's error, not Python's
        raise extra_positional("compare", ACCEPTED_FORMS, more)
    seeds = _check_encoders(encoders, seeds)
    plan = prequential.resolve_protocol(
        resolve_protocol(protocol),
        experts,
        batch_size=batch_size,
        standardize=standardize,
        replay_streams=replay_streams,
    )
    plan = plan.resolve(strategy=resolve_strategy(strategy, m, default=plan.strategy))
    task, y, c = _labels(y, num_classes)
    feats = {k: _features_of(k, v, task, y) for k, v in encoders.items()}
    task_name = task.name if task is not None else "labels"
    kind = task.kind if task is not None else "classification"
    jobs = [(e, s) for s in seeds for e in feats]
    tasks = {e: Task(f"{task_name}:{e}", feats[e], y, c, kind=kind) for e in feats}
    bar, lines = _progress_of(jobs, len(y) * len(plan.experts()), progress)
    done: dict[int, dict[str, Any]] = {}
    per_step, mass, orders, reports, found = {}, {}, {}, {}, {}  # type: ignore[var-annotated]
    t0, finished = time.perf_counter(), [time.perf_counter()]

    def stage2(i: int, lm: Any) -> None:  # each run as soon as its stage 1 is done
        e, s = jobs[i]
        rep, raised = _code(lm, plan, s, orders)
        reports[(e, s)] = rep
        for key in raised:
            found.setdefault(key, []).append((e, s))
        ros, mat = rep.readout_matrix()
        mass[(e, s)] = dict(zip(ros, mat.mean(axis=0).tolist()))
        per_step[(e, s)] = rep.per_step_nats.astype(np.float64)
        done[i] = {
            "encoder": e,
            "seed": s,
            "total [nats]": rep.total_nats,
            **(
                {"per example [density nats]": rep.nats_per_example}
                if kind == "regression"
                else {"per example [bits]": rep.bits_per_example}
            ),
            "best expert [nats]": rep.best_expert_nats,
            "whole-run readout": rep.preferred_readout,
        }
        if bar is not None:
            bar.update(1)
        if lines:
            _say(e, s, rep, len(done) - 1, len(jobs), t0, finished[0])
        finished[0] = time.perf_counter()

    try:  # stage 1 of every run in one batch of streams (the same orders for every encoder)
        prequential.run_streams(
            [(tasks[e], s) for e, s in jobs],
            protocol=plan,
            progress=False,
            cache=cache,
            on_result=stage2,
        )
    finally:
        if bar is not None:
            bar.close()
    rows = [done[i] for i in range(len(jobs))]
    reports = {jobs[i]: reports[jobs[i]] for i in range(len(jobs))}
    found = {k: sorted(v, key=lambda es: jobs.index(es)) for k, v in found.items()}
    texts = _issue(found, seeds)
    return Comparison(
        runs=pd.DataFrame(rows),
        per_step_nats=per_step,
        readout_mass=mass,
        protocol=plan,
        n=len(y),
        num_classes=c or 0,
        seeds=seeds,
        task_name=task_name,
        reports=reports,
        warnings=texts,
        inputs=Rerun(feats, task if kind == "regression" else y, c, cache, compare),  # type: ignore[arg-type]
        kind=kind,
    )


def _check_encoders(encoders: Any, seeds: Sequence[int]) -> tuple[int, ...]:
    """The seeds as a tuple, after checking ``encoders`` (a mapping of ≥ 2 named entries)
    and ``seeds`` (≥ :data:`MIN_ORDERS` distinct orders)."""
    if not isinstance(encoders, Mapping) or len(encoders) < 2:
        raise ValueError("encoders: expected a mapping {name: features} with at least 2 entries")
    if any(not isinstance(k, str) or not k for k in encoders):
        raise ValueError("encoders: names must be non-empty strings")
    seeds = tuple(int(s) for s in seeds)
    if len(seeds) < MIN_ORDERS or len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds: need at least {MIN_ORDERS} distinct data orders, got {seeds}")
    return seeds


def _progress_of(jobs: list, size: int, progress: bool | None) -> tuple[Any, bool]:
    """(a bar over the runs when one is wanted, else ``None``; whether to print one line
    per finished run instead). ``size``: examples × experts of one run."""
    long = len(jobs) * size >= 2_000_000
    bar = _progress.enabled() and _progress.wanted(progress, long=long)
    it = _progress.bar(total=len(jobs), desc="compare", unit="run") if bar else None
    # no bar (batch mode, MDLNB_PROGRESS=0, or not watched): one line per finished run
    lines = (
        not bar and progress is not False and (not _progress.enabled() or long or progress is True)
    )
    return it, lines


def _code(
    lm: Any, plan: Any, seed: int, orders: dict[int, np.ndarray]
) -> tuple[Report, list[tuple[str, type]]]:
    """Stage 2 of one run (its stage-1 loss matrix ``lm``, order ``seed``, checked
    against the order the other encoders got, ``orders``), and the (sentence,
    category) of every warning it raised, not yet issued."""
    if seed in orders and not np.array_equal(orders[seed], lm.order):
        raise RuntimeError("compare: two encoders got different data orders for one seed")
    orders[seed] = lm.order
    with warnings.catch_warnings(record=True) as caught:  # e.g. DivergenceWarning
        warnings.simplefilter("always")
        rep = Report.from_losses(lm, plan.strategy, warn=False)
    return rep, [(w, UserWarning) for w in rep.warnings] + [
        (str(w.message), w.category) for w in caught
    ]


def _say(e: str, s: int, rep: Report, i: int, total: int, t0: float, t_run: float) -> None:
    """The line printed for run ``i`` of ``total`` (encoder ``e``, order ``s``) in batch mode."""
    now = time.perf_counter()
    left = (now - t0) / (i + 1) * (total - i - 1)
    print(
        f"compare: {e}, order {s} ({i + 1}/{total}): {rep.total_nats:,.1f} nats "
        + (
            f"({rep.nats_per_example:.3f} density nats/example)"
            if rep.kind == "regression"
            else f"({rep.bits_per_example:.3f} bits/example)"
        )
        + f" in {now - t_run:.1f} s; "
        f"{_clock(now - t0)} elapsed, about {_clock(left)} left",
        flush=True,
    )


def _issue(
    found: Mapping[tuple[str, type], list[tuple[str, int]]], seeds: Sequence[int]
) -> tuple[str, ...]:
    """Issue each warning sentence once, with the runs it came from (attributed to
    :func:`compare`'s caller); returns the sentences as issued."""
    texts = []
    for (w, category), at in found.items():
        texts.append(f"{w} [{_where(at, seeds)}]")
        warnings.warn(f"compare: {texts[-1]}", category, stacklevel=3)
    return tuple(texts)


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
    return "; ".join(
        f"{e} (all orders)"
        if len(ss) == len(seeds)
        else f"{e} (order{'s' if len(ss) > 1 else ''} {', '.join(map(str, ss))})"
        for e, ss in by.items()
    )
