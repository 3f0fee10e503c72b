"""Checks a :class:`mdlnb.Report` runs on its board and stream, each a plain sentence.

* :func:`grid_edges` — the best single expert sits on an edge of a
  hyperparameter axis of the board (learning rate, weight decay, EMA, AdamW
  β1, label smoothing, replay streams): the grid did not bracket the best
  value, so a wider grid may find a shorter code.
* :func:`nothing_trained` — N ≤ B: the whole stream is the first batch, coded
  by the uniform distribution before any readout took a step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

#: Hyperparameter axes checked, with the bound of each parameter's domain
#: (side, value) at which an edge is no search failure: a grid cannot go below
#: zero weight decay, smoothing, β1 or replay, nor above EMA step 1 (no averaging).
AXES = {
    "learning_rate": None,
    "weight_decay": ("smallest", 0.0),
    "ema": ("largest", 1.0),
    "b1": ("smallest", 0.0),
    "label_smoothing": ("smallest", 0.0),
    "replay_streams": ("smallest", 0),
}


#: The CPU-sized presets whose grid has >= 3 values of an axis: the advice of a two-value
#: grid's warning names one, never the board that warned (whose advice would lead back).
BRACKETING = {"learning_rate": ("default", "deep")}


class GridEdge(NamedTuple):
    """The best expert's ``value`` is the ``side`` (``"smallest"``/``"largest"``) of
    ``grid``, the board's values of ``axis`` for the best expert's readout."""

    axis: str
    value: float
    side: str
    grid: tuple

    def message(self, expert: str, board: str | None = None) -> str:
        """The warning's sentence; ``board`` names the board (e.g. the preset ``"small"``)."""
        vals = ", ".join(f"{v:g}" for v in self.grid)
        which = f"the {board!r} board's" if board else "the board's"
        if len(self.grid) == 2:  # two values: whichever wins is an "edge"; say what it means
            wider = [b for b in BRACKETING.get(self.axis, ()) if b != board]
            named = f"the {wider[0]!r} protocol's, or " if wider else ""
            return (
                f"best expert {expert}: {which} grid tries only two values of "
                f"{self.axis} ({{{vals}}}), so its best ({self.value:g}) is always on an "
                f"edge, and that edge says nothing about what lies beyond — to bracket "
                f"{self.axis}, use a board with >= 3 values ({named}"
                f"mdlnb.expert_grid(..., {self.axis}=[...]))"
            )
        return (
            f"best expert {expert} sits on the edge of {which} grid: "
            f"{self.axis} = {self.value:g} is the {self.side} of {{{vals}}}; the best value "
            f"may lie beyond it — widen that axis (mdlnb.expert_grid(..., {self.axis}=[...]))"
        )


def grid_edges(experts: Sequence[Any], best: int) -> list[GridEdge]:
    """Axes on whose edge expert ``best`` sits, among the experts of its readout.

    An axis counts when the best expert's readout is trained with at least two
    values of it; an edge at the bound of the parameter's domain (:data:`AXES`)
    is not reported, and neither is a two-value axis one of whose values is that
    bound: it is a switch, not a range (the ``"default"`` board's EMA {1e-2, 1}
    is averaging on or off; weight decay {0, x} likewise), so neither choice
    is an edge of anything. With exactly two other values the best is always on
    an edge (the ``"small"`` board's two learning rates): :meth:`GridEdge.message`
    says so rather than suggesting the optimum lies beyond.
    """
    if not 0 <= best < len(experts):
        raise ValueError(f"best: must be in [0, {len(experts)}), got {best!r}")
    chosen = experts[best]
    same = [e for e in experts if getattr(e.readout, "name", None) == chosen.readout.name]
    out = []
    for axis, domain_bound in AXES.items():
        if not hasattr(chosen, axis):
            continue
        grid = tuple(sorted({getattr(e, axis) for e in same}))
        if len(grid) < 2:
            continue
        value = getattr(chosen, axis)
        side = "smallest" if value == grid[0] else "largest" if value == grid[-1] else None
        if side is None or (domain_bound is not None and domain_bound == (side, value)):
            continue
        if len(grid) == 2 and domain_bound is not None and domain_bound[1] in grid:
            continue  # on/off: the other value is the domain's bound
        out.append(GridEdge(axis, value, side, grid))
    return out


def nothing_trained(n: int, batch_size: int) -> str | None:
    """The sentence to report when no readout was trained before a prediction, else None."""
    if n > batch_size:
        return None
    return (
        f"no readout trained: N = {n} <= batch size B = {batch_size}, so every example "
        "was coded by the uniform distribution (log C nats each) before any training "
        "step; use a smaller batch_size or more data"
    )


def worse_than_uniform(
    total_nats: float, uniform_nats: float, *, regression: bool = False
) -> str | None:
    """The sentence to report when the switching code is longer than the uniform code
    N log C (the readouts learned nothing that pays for itself), else None.
    ``regression``: against the untrained readout's density code instead."""
    if not total_nats > uniform_nats:
        return None
    if regression:
        return (
            f"the switching code ({total_nats:,.1f} nats) is longer than the untrained "
            f"readout's density code ({uniform_nats:,.1f} nats, the prefix Gaussian): the "
            "readouts found no usable relation between these features and the targets"
        )
    return (
        f"the switching code ({total_nats:,.1f} nats) is longer than the uniform code "
        f"N log C ({uniform_nats:,.1f} nats): the readouts found no usable relation "
        "between these features and the labels (labels independent of the features, "
        "too few examples, or a board unsuited to them)"
    )
