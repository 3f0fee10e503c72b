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

This module reads the arguments and runs the two stages. The :class:`Report`
(also ``mdlnb.Report``) is :mod:`mdlnb.api._report`, its printout and tables
:mod:`mdlnb.api._report_views`, the tidy posterior format
(:func:`posterior_frame`) :mod:`mdlnb.switching._posterior`, the strategy arguments
shared with :func:`mdlnb.compare` :mod:`mdlnb.board._arguments`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mdlnb import prequential
from mdlnb.api._report import Report
from mdlnb.api._signature import data_first, extra_positional
from mdlnb.board._arguments import looks_like_board, resolve_protocol
from mdlnb.core._checks import as_array, check_int
from mdlnb.core._task import Task
from mdlnb.switching._posterior import posterior_frame  # noqa: F401  (mdlnb.api.evaluation.posterior_frame)
from mdlnb.switching.strategies import (
    DEFAULT_M,  # noqa: F401  (the default protocol's m = 2)
    strategy_label,  # noqa: F401  (mdlnb.api.evaluation.strategy_label)
)

#: The forms :func:`evaluate` accepts, quoted by its errors.
ACCEPTED_FORMS = (
    "evaluate(x, y, ...), evaluate(x=x, y=y, ...), evaluate(task, ...), "
    "evaluate((x, y), ...) or evaluate({'x': x, 'y': y, 'name': ...}, ...); "
    "everything after the data by keyword (experts=, strategy=, protocol=, ...)"
)


def _a_value(v: Any) -> str:
    return f"the string {v!r}" if isinstance(v, str) else f"a {type(v).__name__}"


def as_task(
    x: Any, y: Any = None, *, name: str | None = None, num_classes: int | None = None
) -> Task:
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
            hint = (
                " (a board: pass it as experts=...)"
                if looks_like_board(y)
                else " (a name: pass experts=, strategy= or protocol= by keyword)"
                if isinstance(y, str)
                else " (its labels are task.y)"
            )
            raise TypeError(
                f"y: evaluate(task) takes the labels from the Task; got a second "
                f"positional argument{hint}. Accepted: {ACCEPTED_FORMS}"
            )
        if name is not None or num_classes is not None:
            raise TypeError(
                "name, num_classes: only for arrays; a Task has its own (task.replace(name=...))"
            )
        return x
    if y is None:
        if isinstance(x, Mapping):
            missing = {"x", "y"} - set(x)
            extra = set(x) - {"x", "y", "name", "num_classes"}
            if missing or extra:
                raise ValueError(
                    f"x: a mapping needs keys 'x' and 'y' (optional 'name', "
                    f"'num_classes'); missing {sorted(missing)}, unknown "
                    f"{sorted(extra)}"
                )
            return as_task(
                x["x"],
                x["y"],
                name=x.get("name", name),
                num_classes=x.get("num_classes", num_classes),
            )
        if isinstance(x, tuple) and len(x) == 2:
            return as_task(x[0], x[1], name=name, num_classes=num_classes)
        if isinstance(x, (str, bytes)) or not (hasattr(x, "__array__") or isinstance(x, list)):
            raise TypeError(
                f"evaluate: cannot read data from a {type(x).__name__}; use {ACCEPTED_FORMS}"
            )
        raise TypeError(f"y: missing; features x need their labels. Use {ACCEPTED_FORMS}")
    if isinstance(x, (Task, Mapping, str, bytes)) or not (
        hasattr(x, "__array__") or isinstance(x, (list, tuple))
    ):
        raise TypeError(
            f"x: expected a feature array with labels y, got a "
            f"{type(x).__name__}. Use {ACCEPTED_FORMS}"
        )
    if looks_like_board(y):
        raise TypeError(
            "y: got a board of experts where the labels go; pass the board by "
            f"keyword: evaluate(x, y, experts=board). Accepted: {ACCEPTED_FORMS}"
        )
    if isinstance(y, (str, bytes, Mapping)):
        raise TypeError(
            f"y: got {_a_value(y)} where the labels go; pass experts=, strategy= "
            f"or protocol= by keyword. Accepted: {ACCEPTED_FORMS}"
        )
    xa = as_array(x, "x")
    if xa.ndim > 2:
        flat = (xa.shape[0], int(np.prod(xa.shape[1:])))
        warnings.warn(
            f"x: features of shape {xa.shape} are flattened to {flat} (one row per "
            "example); pass x.reshape(len(x), -1) to say so, or an encoder's features "
            "(mdlnb.encoders)",
            UserWarning,
            stacklevel=3,
        )
        xa = xa.reshape(flat)
    return Task.from_arrays(xa, y, name=name, num_classes=num_classes)


@data_first
def evaluate(
    x: Any = None,
    y: Any = None,
    *more: Any,
    experts: Any = None,
    strategy: Any = None,
    m: float | None = None,
    protocol: Any = None,
    batch_size: int | None = None,
    seed: int | None = None,
    standardize: str | bool | None = None,
    replay_streams: int | None = None,
    name: str | None = None,
    num_classes: int | None = None,
    progress: Any = None,
    cache: bool = True,
    seeds: Sequence[int] | None = None,
) -> Report | tuple[Report, ...]:
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
      seeds: several data orders at once (instead of ``seed``): a tuple of
        Reports, one per seed, in order; their stage 1 runs as one batch of
        streams (:func:`mdlnb.prequential.run_streams`: on a CPU one after
        another, each bit-identical to ``evaluate(..., seed=s)``; on an
        accelerator stacked into one compiled program).

    With N ≤ B no readout is trained (every example is in the first batch,
    coded uniformly): the report is the uniform code, with a warning, and no
    training program is compiled (:func:`mdlnb.prequential.run` decides it, for
    every caller).

    Returns:
      a :class:`Report` (totals in nats and bits, posterior, plots); with
      ``seeds``, a tuple of them.
    """
    if more:  # a third positional argument: the package's error, not Python's
        raise extra_positional("evaluate", ACCEPTED_FORMS, more)
    task = as_task(x, y, name=name, num_classes=num_classes)
    proto = resolve_protocol(  # validated before stage 1
        protocol,
        experts,
        strategy=strategy,
        m=m,
        batch_size=batch_size,
        seed=seed,
        standardize=standardize,
        replay_streams=replay_streams,
    )
    if seeds is not None:
        return tuple(
            Report.from_losses(lm, proto.strategy)
            for lm in prequential.run_streams(
                [(task, s) for s in _seeds(seeds, seed)],
                protocol=proto,
                progress=progress,
                cache=cache,
            )
        )
    lm = prequential.run(task, protocol=proto, progress=progress, cache=cache)  # N ≤ B: no compile
    return Report.from_losses(lm, proto.strategy)


def _seeds(seeds: Any, seed: Any) -> list[int]:
    """``evaluate``'s ``seeds`` as a list of distinct ints >= 0 (not with ``seed``)."""
    if seed is not None:
        raise TypeError("seed, seeds: give one data order (seed=) or several (seeds=), not both")
    if isinstance(seeds, (str, bytes)) or not hasattr(seeds, "__iter__"):
        raise TypeError(f"seeds: expected a sequence of ints, got {type(seeds).__name__}")
    out = [check_int("seeds", s, minimum=0, what=f"ints >= 0 (got {seeds!r})") for s in seeds]
    if not out or len(set(out)) != len(out):
        raise ValueError(f"seeds: expected distinct ints >= 0, got {seeds!r}")
    return out
