"""Stage 1 in slices of the expert axis, assembled into one ``LossMatrix``.

:func:`run_sliced` trains the slices of a :class:`mdlnb.prequential._memory.SlicePlan`
one after another, each in one pass (:func:`mdlnb.prequential._onepass.run_pass`,
cached and checkpointed like a whole board), and writes each slice's
columns into the full ``(N, K)`` matrix. Experts are independent in stage 1
and slices are made of whole blocks, so the result is bit-identical to one
pass (``tests/test_scale.py`` checks it). Each slice is cached and
checkpointed on its own, so an interrupted sliced run resumes at its first
unfinished slice.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from mdlnb.board._arguments import resolve_protocol
from mdlnb.board.experts import Expert
from mdlnb.core._task import Task
from mdlnb.infra import _aligned, _progress
from mdlnb.prequential import _memory
from mdlnb.prequential._loss_matrix import LossMatrix
from mdlnb.prequential._onepass import run_pass

if TYPE_CHECKING:
    from mdlnb.board._protocol import Protocol


def _slice_progress(progress, index: int, count: int):
    """Progress of one slice mapped onto the whole run (``done`` counts example·slices)."""
    if not callable(progress):
        return progress

    def report(done, total, best):
        progress(index * total + done, count * total, best)

    return report


def announce(plan: _memory.SlicePlan, progress, n: int) -> dict:
    """Print the plan line (standard output: information, not an error) when progress is shown (``progress`` truthy, or
    ``None`` when interactive for N·K ≥ 2e6: :func:`mdlnb.infra._progress.wanted`); return
    it as ``meta["memory_plan"]``."""
    line = plan.describe()
    if callable(progress) or _progress.wanted(progress, long=n * plan.num_experts >= 2_000_000):
        print(line, flush=True)
    eb = np.asarray(plan.expert_bytes, np.float64)
    return {
        "line": line,
        "bytes_per_expert_mean": float(eb.mean()),
        "budget_bytes": plan.budget_bytes,
        "slice_sizes": [len(s) for s in plan.slices],
    }


def run_sliced(
    task: Task,
    experts: Sequence[Expert] | str | None = None,
    batch_size: int | None = None,
    seed: int | None = None,
    *,
    protocol: Protocol | str | None = None,
    memory_plan: _memory.SlicePlan | None = None,
    budget_bytes: int | None = None,
    progress=None,
    replay_streams: int | None = None,
    standardize=None,
    **kwargs,
):
    """:func:`mdlnb.prequential.run` over slices of the board; same ``LossMatrix``.

    Args:
      task, experts, batch_size, seed, protocol, replay_streams, standardize: as
        for :func:`~mdlnb.prequential.run`; resolved into one
        :class:`mdlnb.Protocol`, each slice runs ``protocol.replace(board=slice)``
        and the assembled result records the full board's protocol.
      memory_plan: the slices; ``None`` → :func:`mdlnb.prequential._memory.plan` with
        ``budget_bytes``.
      budget_bytes: memory one slice may use (``None``: a safe fraction of
        the available memory).
      progress: as for ``run``; when on (or ``None`` on a terminal), the plan
        (bytes per expert, slices) is printed first (standard output).
      **kwargs: passed to each slice's ``run`` (cache, checkpoint_dir, …).

    Returns:
      The :class:`~mdlnb.prequential.LossMatrix` of the whole board, with
      ``meta["memory_plan"]`` (the plan line, bytes per expert, slice sizes)
      and ``meta["slice_seconds"]``.
    """
    protocol = resolve_protocol(
        protocol,
        experts,
        batch_size=batch_size,
        seed=seed,
        replay_streams=replay_streams,
        standardize=standardize,
    )
    experts = protocol.experts()
    n, d = np.shape(task.features)
    if memory_plan is None:
        memory_plan = _memory.plan(experts, n, d, task.out_dim, budget_bytes=budget_bytes)
    if memory_plan.num_experts != len(experts) or sorted(
        i for s in memory_plan.slices for i in s
    ) != list(range(len(experts))):
        raise ValueError("memory_plan: its slices are not a partition of the experts")
    plan_meta = announce(memory_plan, progress, n)
    losses = _aligned.empty((n, len(experts)))  # stage 2 reads it in place (mdlnb.infra._aligned)
    seconds, first = [], None
    for i, idx in enumerate(memory_plan.slices):
        t0 = time.perf_counter()
        part, _ = run_pass(
            task,
            protocol.replace(board=tuple(experts[k] for k in idx)),
            progress=_slice_progress(progress, i, len(memory_plan.slices)),
            **kwargs,
        )
        losses[:, list(idx)] = part.losses
        seconds.append(round(time.perf_counter() - t0, 3))
        first = first or part
    assert first is not None  # a plan has at least one slice
    meta = {
        **{k: v for k, v in first.meta.items() if k not in ("cache_key", "seconds")},
        "seconds": round(sum(seconds), 3),
        "slice_seconds": seconds,
        "memory_plan": plan_meta,
    }
    return LossMatrix(
        losses=losses,
        experts=tuple(experts),
        order=first.order,
        task_name=first.task_name,
        num_classes=first.num_classes,
        seed=first.seed,
        batch_size=first.batch_size,
        meta=meta,
        protocol=protocol,
    )
