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

When the runner-up is within :data:`~mdlnb.api._comparison.CLOSE_SD` paired sd
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
a preset name, a Protocol, or a mapping of its fields —
:func:`mdlnb.board._arguments.resolve_protocol`.

This module is the driver: it reads the arguments (the inputs:
:mod:`mdlnb.api._compare_inputs`; the protocol) and runs the encoders ×
orders, stage 1 of all of them as one batch of streams
(:func:`mdlnb.prequential.run_streams`: on a CPU one after another, each
bit-identical to its own run; on an accelerator the streams of one shape
stacked into one compiled program), stage 2 of each as soon as its loss
matrix is done. The result types, :class:`~mdlnb.api._comparison.Comparison` (also
``mdlnb.Comparison``) and :class:`~mdlnb.api._comparison.StandardizeCheck`, with
the statistics above, are :mod:`mdlnb.api._comparison`.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from mdlnb import prequential
from mdlnb.api._compare_inputs import ACCEPTED_FORMS, Inputs, check_encoders, read_inputs
from mdlnb.api._comparison import Comparison, Rerun
from mdlnb.api._report import Report
from mdlnb.api._signature import data_first, extra_positional
from mdlnb.board._arguments import resolve_protocol
from mdlnb.core._task import Task
from mdlnb.infra import _progress

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
      protocol: see :func:`mdlnb.board._arguments.resolve_protocol` (default ``"default"``); the
        arguments above and ``batch_size``, ``standardize``, ``replay_streams``
        override its fields.
      seeds: one data order per seed (≥ 3); the same orders for every encoder.
      num_classes: C when ``y`` is an array (default max(y) + 1).
      progress: a progress bar over (encoder, seed) runs: ``None`` (default:
        when interactive and the runs are long, :func:`mdlnb.infra._progress.wanted`),
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
    seeds = check_encoders(encoders, seeds)
    plan = resolve_protocol(
        protocol,
        experts,
        strategy=strategy,
        m=m,
        batch_size=batch_size,
        standardize=standardize,
        replay_streams=replay_streams,
    )
    inputs = read_inputs(encoders, y, num_classes)
    jobs = [(e, s) for s in seeds for e in inputs.features]
    runs = _run_all(inputs, jobs, plan, progress=progress, cache=cache)
    texts = _issue(runs.warnings_by_run(jobs), seeds)
    return _comparison(inputs, jobs, runs, plan, seeds, texts, cache)


# ----------------------------------------------------------------------------- the runs


class _Runs(NamedTuple):
    """Stage 2's results as the runs finish: the table rows by run index; the reports,
    per-step codes and readout masses by (encoder, seed); each warning's runs; the
    order each seed gave (every encoder must get the same)."""

    rows: dict[int, dict[str, Any]]
    reports: dict[tuple[str, int], Report]
    per_step: dict[tuple[str, int], np.ndarray]
    mass: dict[tuple[str, int], dict[str, float]]
    found: dict[tuple[str, type], list[tuple[str, int]]]
    orders: dict[int, np.ndarray]

    def warnings_by_run(self, jobs: list) -> dict[tuple[str, type], list[tuple[str, int]]]:
        """Each warning's runs, in the order of ``jobs``."""
        return {k: sorted(v, key=lambda es: jobs.index(es)) for k, v in self.found.items()}


def _run_all(inputs: Inputs, jobs: list, plan: Any, *, progress, cache) -> _Runs:
    """Stage 1 of every run in one batch of streams (the same orders for every
    encoder), stage 2 of each as soon as its loss matrix is done, with the
    progress bar or the batch-mode lines."""
    tasks = {
        e: Task(f"{inputs.name}:{e}", x, inputs.y, inputs.num_classes, kind=inputs.kind)
        for e, x in inputs.features.items()
    }
    runs = _Runs({}, {}, {}, {}, {}, {})
    bar, lines = _progress_of(jobs, len(inputs.y) * len(plan.experts()), progress)
    t0, finished = time.perf_counter(), [time.perf_counter()]

    def stage2(i: int, lm: Any) -> None:
        e, s = jobs[i]
        rep = _collect(runs, i, e, s, lm, plan, inputs.kind)
        if bar is not None:
            bar.update(1)
        if lines:
            _say(e, s, rep, len(runs.rows) - 1, len(jobs), t0, finished[0])
        finished[0] = time.perf_counter()

    try:
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
    return runs


def _collect(runs: _Runs, i: int, e: str, s: int, lm: Any, plan: Any, kind: str) -> Report:
    """Stage 2 of run ``i`` (encoder ``e``, order ``s``, its loss matrix ``lm``) into
    ``runs``; returns its report."""
    rep, raised = _code(lm, plan, s, runs.orders)
    runs.reports[(e, s)] = rep
    for key in raised:
        runs.found.setdefault(key, []).append((e, s))
    ros, mat = rep.readout_matrix()
    runs.mass[(e, s)] = dict(zip(ros, mat.mean(axis=0).tolist()))
    runs.per_step[(e, s)] = rep.per_step_nats.astype(np.float64)
    runs.rows[i] = _row(e, s, rep, kind)
    return rep


def _row(e: str, s: int, rep: Report, kind: str) -> dict[str, Any]:
    """The ``Comparison.runs`` row of encoder ``e``, order ``s``."""
    return {
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


def _comparison(
    inputs: Inputs, jobs: list, runs: _Runs, plan: Any, seeds: tuple, texts: tuple, cache: bool
) -> Comparison:
    """The :class:`Comparison` of the finished runs (in the order of ``jobs``)."""
    regression = inputs.kind == "regression"
    return Comparison(
        runs=pd.DataFrame([runs.rows[i] for i in range(len(jobs))]),
        per_step_nats=runs.per_step,
        readout_mass=runs.mass,
        protocol=plan,
        n=len(inputs.y),
        num_classes=inputs.num_classes or 0,
        seeds=seeds,
        task_name=inputs.name,
        reports={job: runs.reports[job] for job in jobs},
        warnings=texts,
        inputs=Rerun(
            inputs.features,
            inputs.task if regression else inputs.y,  # type: ignore[arg-type]
            inputs.num_classes,
            cache,
            compare,
        ),
        kind=inputs.kind,
    )


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
