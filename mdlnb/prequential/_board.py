"""The board as stage 1's chunk loop holds it, and what pruning does to it.

:class:`Board` is the loop's state besides the losses: the expert groups, the
compiled program's static spec, the column map, the stacked expert states and
hyperparameters, and the chunk program. A pruning decision
(:class:`mdlnb.prequential._prune.Pruner`) compacts it to the survivors
(:func:`compact`); at the end, :func:`expert_params` reads each expert's
parameters back from it and :func:`prune_meta` records the schedule.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from mdlnb.prequential import _program, _prune, _sharding
from mdlnb.prequential._groups import _block_fit, _members_spec, unpad_first_layer


class Board(NamedTuple):
    """The experts in flight: ``groups`` (readout, member indices; -1: padding),
    the program's static ``spec``, ``column[j]`` the expert of output column ``j``
    (-1: padding), the stacked ``state`` and ``hypers`` of each group, and the chunk
    ``program(state, hypers, x_all, y_all, seed_key, xs) -> (state, losses)``."""

    groups: list
    spec: Any
    column: np.ndarray
    state: Any
    hypers: Any
    program: Callable

    def updates_per_example(self) -> int:
        """Expert-updates one example of a chunk costs, the padding rows included
        (Σ over groups of rows × replay count)."""
        return sum(len(idx) * mr for (_, idx), mr in zip(self.groups, self.spec.max_replay))


def compact(
    board: Board, alive, experts, d: int, c: int, b: int, clip, matmul_dtype, targets: int = 0
) -> Board:
    """After a pruning decision: the board compacted to the ``alive`` experts
    (:func:`mdlnb.prequential._prune.compact`, one device), with its new spec
    (``targets``: P of a regression task, 0 for classes), columns and program."""
    mask = np.zeros(len(experts), bool)
    mask[alive] = True
    groups, state, hypers = _prune.compact(
        board.groups,
        board.state,
        board.hypers,
        mask,
        lambda ro: _block_fit(ro.num_params(d, c), getattr(ro, "max_block", None)),
    )
    _, spec = _members_spec(groups, experts, 1, d, c, b, clip, matmul_dtype)
    spec = dataclasses.replace(spec, targets=targets)
    return Board(
        groups,
        spec,
        _sharding.columns(groups, 1),
        state,
        hypers,
        partial(_program._run_groups, spec),
    )


def prune_meta(prune, pruner, experts, n, b, computed) -> dict:
    """``meta["prune"]``: the option, the schedule and the expert-updates."""
    return {
        **prune.to_dict(),
        "segment_rows": pruner.segment_rows,
        "pruned_at": pruner.pruned_at.tolist(),
        "num_pruned": int((pruner.pruned_at < n).sum()),
        **_prune.expert_updates([e.replay_streams for e in experts], pruner.pruned_at, n, b),
        "expert_updates_computed": int(computed),
    }


def expert_params(groups, state, k: int, d: int, dp: int) -> list:
    """Each expert's ``{"params", "ema"}`` pytrees from the stacked group state (``None``
    for an expert no group holds: pruned), for the task's ``d`` features (the zero
    rows of a padded first layer dropped)."""
    params: list = [None] * k
    for (_, idx), g in zip(groups, state):
        g = jax.tree_util.tree_map(_sharding.to_host, {"params": g.params, "ema": g.ema_params})
        if dp != d:
            g = {name: unpad_first_layer(p, d) for name, p in g.items()}
        for row, j in enumerate(idx):
            if j >= 0:
                params[j] = jax.tree_util.tree_map(lambda a, row=row: jnp.asarray(a[row]), g)
    return params
