"""Memory plan for stage 1: how many experts fit at once, and slices that do.

Experts are independent in stage 1 (paper App. A.3): expert ``k``'s
initialisation key depends only on its name and the seed, and the replay
positions of step ``r`` after batch ``i`` are the same for every expert
(:func:`mdlnb.prequential.replay_positions`). So a board can be trained in
slices, one after another, and the columns assembled into the same
:class:`~mdlnb.prequential.LossMatrix`. Slices are made of whole *blocks* of
the full board's groups (:func:`mdlnb.prequential._groups._group`): every block then
has the same width and members as in one pass, and the result is
bit-identical, not only close (XLA's CPU matmuls round differently at
different widths).

Memory model, per expert in flight (bytes)::

    state   = 4 copies (params, Adam μ, Adam ν, EMA) × 4 B × num_params
    column  = 4 B × N        (its float32 losses, kept on the host)
    in flight ≈ STATE_OVERHEAD × state + column

The state is donated to the compiled chunk program and updated in place
(blocks are written back with ``dynamic_update_slice``), so the program needs
the state once plus a working set of about one block (:func:`~mdlnb.prequential.block_bytes`).
Measured on ``vtab`` slices (1/8 of each architecture, 64 examples, CPU):
XLA's memory analysis of the compiled chunk program gives (arguments +
temporaries) / state = 1.25 (it was 3.9 before donation and in-place blocks:
11.2 MB per expert); the peak RSS grows by 3.94 MiB per expert between 64
and 512 experts whose state is 2.89 MiB each, 1.36×. ``STATE_OVERHEAD`` is
1.4; the fixed part (the JAX runtime and compiling the program, 1.1 GiB at
the intercept) is ``FIXED_BYTES`` plus the features.
``benchmarks/bench_scale.py`` repeats these measurements.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Sequence

import jax
import numpy as np

from mdlnb.board.experts import Expert
from mdlnb.core._checks import check_int
from mdlnb.prequential._groups import _blocked

STATE_OVERHEAD = 1.4  # measured: peak-RSS slope 3.94 MiB per vtab expert of 2.89 MiB state (1.36)
FIXED_BYTES = (
    1280 * 2**20
)  # measured: RSS intercept 1.1 GiB (JAX runtime, compiling a 32-group program)
SAFE_FRACTION = 0.6  # default budget: this fraction of the available memory


def state_bytes(expert: Expert, in_dim: int, num_classes: int) -> int:
    """Bytes of one expert's training state: params, Adam μ and ν, EMA (float32)."""
    return 16 * int(expert.readout.num_params(int(in_dim), int(num_classes)))


def bytes_per_expert(expert: Expert, n: int, in_dim: int, num_classes: int) -> int:
    """Planned bytes of one expert in flight on an ``n``-example task (module docstring)."""
    return int(STATE_OVERHEAD * state_bytes(expert, in_dim, num_classes)) + 4 * int(n)


def available_bytes(device=None) -> int:
    """Memory a run may use now: free device memory where the device reports it
    (GPU/TPU ``memory_stats``), else the host's ``MemAvailable`` (Linux), else
    physical memory."""
    if device is not None:
        stats = getattr(device, "memory_stats", lambda: None)()
        if stats and "bytes_limit" in stats:
            return int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0))
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def _greedy(costs: Sequence[int], per_slice: int) -> list[list[int]]:
    """Block indices in order, a slice filled until the next block would exceed ``per_slice``."""
    slices: list[list[int]] = []
    used = math.inf
    for j, cost in enumerate(costs):
        if used + cost > per_slice:
            slices.append([])
            used = 0
        slices[-1].append(j)
        used += cost
    return slices


def _balanced(blocks, costs, per_slice: int) -> list[list[int]]:
    """The blocks cut in order into as many slices as the greedy fill
    (:func:`_greedy`) needs, of about equal cost (cut j after the first block
    whose cumulative cost reaches j/count of the total); the greedy fill where
    such a slice would exceed ``per_slice``. Returns the expert indices of
    each slice."""
    greedy = _greedy(costs, per_slice)
    count = len(greedy)
    cum = np.cumsum(costs)
    cuts = (
        [0]
        + [int(np.searchsorted(cum, cum[-1] * j / count)) + 1 for j in range(1, count)]
        + [len(blocks)]
    )
    groups = [list(range(a, b)) for a, b in zip(cuts[:-1], cuts[1:])]
    if any(not g for g in groups) or any(
        len(g) > 1 and sum(costs[j] for j in g) > per_slice for g in groups
    ):
        groups = greedy
    return [[i for j in g for i in blocks[j]] for g in groups]


@dataclasses.dataclass(frozen=True)
class SlicePlan:
    """Experts split into slices that each fit ``budget_bytes``.

    Attributes:
      slices: expert indices (board order) of each slice; together a partition
        of ``range(K)``.
      expert_bytes: (K,) planned bytes in flight of each expert.
      budget_bytes: the memory budget of one slice.
      fixed_bytes: planned memory besides the experts (runtime, features).
    """

    slices: tuple[tuple[int, ...], ...]
    expert_bytes: tuple[int, ...]
    budget_bytes: int
    fixed_bytes: int

    @property
    def num_experts(self) -> int:
        return len(self.expert_bytes)

    def slice_bytes(self) -> list[int]:
        """Planned peak bytes of each slice (fixed part included)."""
        eb = np.asarray(self.expert_bytes, np.int64)
        return [self.fixed_bytes + int(eb[list(s)].sum()) for s in self.slices]

    def describe(self) -> str:
        """One line for the progress output."""
        mib = lambda v: f"{v / 2**20:,.0f} MiB"  # noqa: E731
        eb = np.asarray(self.expert_bytes, np.float64)
        sizes = [len(s) for s in self.slices]
        return (
            f"memory plan: {self.num_experts} experts, {eb.mean() / 2**20:.2f} MiB per expert "
            f"(min {eb.min() / 2**20:.2f}, max {eb.max() / 2**20:.2f}), budget "
            f"{mib(self.budget_bytes)} → {len(self.slices)} slice(s) of {min(sizes)}–{max(sizes)} "
            f"experts, peak ≤ {mib(max(self.slice_bytes()))}"
        )


def plan(
    experts: Sequence[Expert],
    n: int,
    in_dim: int,
    num_classes: int,
    *,
    budget_bytes: int | None = None,
    devices: int = 1,
) -> SlicePlan:
    """Split ``experts`` into slices of whole blocks that fit ``budget_bytes``.

    Args:
      experts: the board, in column order.
      n, in_dim, num_classes: the task's size (examples, features, classes).
      budget_bytes: memory one slice may use (``None``: ``SAFE_FRACTION`` of
        :func:`available_bytes` of the first local device, and never less than
        the fixed part plus the largest block).
      devices: devices the slice is spread over; the budget is per device.

    Blocks (the unit of a slice) come from the same grouping as one pass
    (:func:`mdlnb.prequential._groups._group`), taken in order. The number of
    slices is the fewest a greedy fill reaches; the blocks are then cut into
    that many slices of about equal bytes (:func:`_balanced`), so the plan, and
    with it the slices' cache keys and checkpoints, does not move when the
    free memory (the ``"auto"`` budget) differs a little between a run and its
    resumption. A single block larger than the budget gets a slice of its
    own (it cannot be split further).
    """
    experts = list(experts)
    if not experts:
        raise ValueError("experts: must contain at least one Expert")
    for name, v in (
        ("n", n),
        ("in_dim", in_dim),
        ("num_classes", num_classes),
        ("devices", devices),
    ):
        check_int(name, v, minimum=1)
    fixed = FIXED_BYTES + 4 * int(n) * (int(in_dim) + 1)
    eb = [bytes_per_expert(e, n, in_dim, num_classes) for e in experts]
    blocks = [
        idx[i : i + w]
        for _, idx, w in _blocked(experts, int(in_dim), int(num_classes))
        for i in range(0, len(idx), w)
    ]
    costs = [sum(eb[i] for i in blk) for blk in blocks]
    if budget_bytes is None:
        # on a busy machine at least the fixed part and the largest block: the plan
        # slices as finely as it can instead of refusing (XLA reports a real shortage)
        budget_bytes = max(
            int(SAFE_FRACTION * available_bytes(jax.local_devices()[0])),
            fixed + max(costs) // int(devices) + 1,
        )
    check_int(
        "budget_bytes",
        budget_bytes,
        minimum=fixed + 1,
        what=f"an int above the fixed {fixed} bytes (runtime and features)",
    )
    per_slice = (int(budget_bytes) - fixed) * int(devices)
    slices = _balanced(blocks, costs, per_slice)
    return SlicePlan(
        slices=tuple(tuple(sorted(s)) for s in slices),
        expert_bytes=tuple(eb),
        budget_bytes=int(budget_bytes),
        fixed_bytes=fixed,
    )


def stream_bytes(experts: Sequence[Expert], n: int, in_dim: int, num_classes: int) -> int:
    """Planned bytes of one stream of a stacked call (:func:`mdlnb.prequential.run_streams`):
    its whole board in flight (:func:`bytes_per_expert`) and its features and labels."""
    return sum(bytes_per_expert(e, n, in_dim, num_classes) for e in experts) + 4 * int(n) * (
        int(in_dim) + 1
    )


def streams_per_call(
    experts: Sequence[Expert],
    n: int,
    in_dim: int,
    num_classes: int,
    *,
    budget_bytes: int | None = None,
) -> int:
    """How many streams of one shape bucket one stacked call takes: the most whose
    :func:`stream_bytes` fit ``budget_bytes`` less :data:`FIXED_BYTES`, rounded down
    to a power of two (the width is named in the streams' cache keys, so it should
    not follow small changes in free memory); at least 1.

    ``budget_bytes``: ``None`` is :data:`SAFE_FRACTION` of :func:`available_bytes` of
    the first local device."""
    experts = list(experts)
    if not experts:
        raise ValueError("experts: must contain at least one Expert")
    if budget_bytes is None:
        budget_bytes = int(SAFE_FRACTION * available_bytes(jax.local_devices()[0]))
    check_int("budget_bytes", budget_bytes, minimum=1)
    fit = (int(budget_bytes) - FIXED_BYTES) // stream_bytes(experts, n, in_dim, num_classes)
    return 1 << (max(1, int(fit)).bit_length() - 1)
