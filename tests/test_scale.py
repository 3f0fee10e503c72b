"""Memory plan and sliced stage 1 (mdlnb/prequential/_memory.py, mdlnb/prequential/_slicing.py).

References: a one-pass run of the same board (slices must reproduce it bit
for bit), the closed-form state size of a linear readout, and XLA's own
memory analysis of the compiled chunk program (donation and in-place blocks).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mdlnb
from mdlnb import prequential
from mdlnb.board import readouts
from mdlnb.board.experts import expert_grid
from mdlnb.prequential import _groups, _inputs, _memory, _program


@pytest.fixture(scope="module")
def task():
    return mdlnb.data.load("digits").take(np.arange(160))


def _board():
    # 2 architectures × 3 learning rates × 2 EMA × 2 replay counts = 24 experts,
    # groups of 6 per (architecture, replay count)
    return expert_grid(
        [readouts.linear(), readouts.mlp(1, 16)],
        learning_rate=[1e-3, 3e-3, 1e-2],
        ema=[0.1, 1.0],
        replay_streams=[1, 2],
    )


def test_sliced_run_is_bit_identical_to_one_pass(task, monkeypatch):
    d, c = 64, 10
    # blocks of 2 experts, so the plan can cut a group between slices
    two = 20 * 2 * readouts.mlp(1, 16).num_params(d, c)
    monkeypatch.setattr(_groups, "block_bytes", lambda: two)
    board = _board()
    one = prequential.run(task, board, 16, 7, cache=False, memory_budget=None)
    per = _memory.bytes_per_expert(board[-1], task.n, d, c)
    budget = _memory.FIXED_BYTES + 4 * task.n * (d + 1) + 5 * per
    plan = _memory.plan(board, task.n, d, c, budget_bytes=budget)
    assert len(plan.slices) >= 3
    assert sorted(i for s in plan.slices for i in s) == list(range(len(board)))
    assert all(b <= budget for b in plan.slice_bytes())
    # some (architecture, replay) group is cut between two slices
    key = lambda i: (board[i].readout.name, board[i].replay_streams)  # noqa: E731
    assert any(
        {key(i) for i in a} & {key(i) for i in b} for a, b in zip(plan.slices, plan.slices[1:])
    )
    sliced = prequential.run(task, board, 16, 7, cache=False, memory_budget=budget)
    assert sliced.meta["memory_plan"]["slice_sizes"] == [len(s) for s in plan.slices]
    assert len(sliced.meta["slice_seconds"]) == len(plan.slices)
    np.testing.assert_array_equal(sliced.losses, one.losses)
    np.testing.assert_array_equal(sliced.order, one.order)
    assert sliced.names == one.names
    # the assembled result records the full board's protocol, not a slice's
    assert sliced.protocol is not None and sliced.protocol.to_dict() == one.protocol.to_dict()


def test_slices_that_change_a_groups_block_count_stay_bit_identical(task, monkeypatch):
    # One group of 4 one-expert blocks, run whole and as 2 + 2: XLA:CPU's batched
    # matmul rounds by its batch size, so losses evaluated by one vmap over the
    # group differed in the last bits (up to 1.4e-6 nats here) before the
    # evaluation went block by block.
    from mdlnb.prequential import _slicing

    ro = readouts.mlp(1, 256)
    monkeypatch.setattr(_groups, "block_bytes", lambda: 20 * ro.num_params(64, 10))
    board = expert_grid([ro], learning_rate=[1e-3, 3e-3, 1e-2, 3e-2])
    sub = task.take(np.arange(128))
    one = prequential.run(sub, board, 32, 0, cache=False, memory_budget=None)
    plan = _memory.SlicePlan(
        slices=((0, 1), (2, 3)), expert_bytes=(1,) * 4, budget_bytes=1 << 40, fixed_bytes=0
    )
    sliced = _slicing.run_sliced(sub, board, 32, 0, memory_plan=plan, cache=False)
    np.testing.assert_array_equal(sliced.losses, one.losses)


def test_bytes_per_expert_closed_form():
    lin = expert_grid(readouts.linear(), learning_rate=[1e-3])[0]
    # linear readout on D = 64, C = 10: (64 + 1)·10 parameters, 4 float32 copies
    assert _memory.state_bytes(lin, 64, 10) == 4 * 4 * 650
    assert _memory.bytes_per_expert(lin, 1000, 64, 10) == int(_memory.STATE_OVERHEAD * 10400) + 4000


def test_vtab_plan_is_balanced_and_does_not_move_with_the_free_memory():
    """The issue's case: a run planned with 14,063 MiB free and resumed with 13,860
    MiB cut the board at another block (3,924 | 684, then 3,896 | 712 experts), so
    the slices' cache keys changed and the resumed run started over. Now the slice
    count comes from the budget and the cuts from the board alone."""
    from mdlnb.board.experts import preset

    board = preset("vtab")
    plans = [
        _memory.plan(board, 1000, 64, 10, budget_bytes=mib * 2**20)
        for mib in (14_063, 13_860, 12_500)
    ]
    assert len({p.slices for p in plans}) == 1 and len(plans[0].slices) == 2
    p = plans[0]
    assert sorted(i for s in p.slices for i in s) == list(range(len(board)))
    cost = [b - p.fixed_bytes for b in p.slice_bytes()]
    blocks = max(_memory.bytes_per_expert(e, 1000, 64, 10) for e in board) * 64
    assert abs(cost[0] - cost[1]) <= blocks  # equal up to one block
    assert all(b <= p.budget_bytes for b in p.slice_bytes())
    # a budget that needs a third slice gives three
    assert len(_memory.plan(board, 1000, 64, 10, budget_bytes=8_000 * 2**20).slices) == 3


def test_auto_budget_on_a_busy_machine_slices_instead_of_refusing(task, monkeypatch):
    # 1 GiB available: 60 % of it is below the fixed part (runtime, features);
    # "auto" then slices as finely as it must (it raised a ValueError before)
    monkeypatch.setattr(_memory, "available_bytes", lambda device=None: 2**30)
    board, d, c = _board(), task.x.shape[1], task.num_classes
    plan = _memory.plan(board, task.n, d, c)
    assert plan.budget_bytes > plan.fixed_bytes and len(plan.slices) >= 1
    one = prequential.run(task, board, 16, 7, cache=False, memory_budget=None)
    busy = prequential.run(task, board, 16, 7, cache=False)
    np.testing.assert_array_equal(busy.losses, one.losses)
    with pytest.raises(ValueError, match="budget_bytes"):  # an explicit budget is checked
        _memory.plan(board, task.n, d, c, budget_bytes=2**20)


def test_plan_rejects_bad_budget_and_run_rejects_bad_option(task):
    with pytest.raises(ValueError, match="budget_bytes"):
        _memory.plan(_board(), 100, 64, 10, budget_bytes=1000)
    with pytest.raises(ValueError, match="memory_budget"):
        prequential.run(task, _board(), 16, cache=False, memory_budget="lots")


def test_small_board_runs_in_one_pass_by_default(task):
    plan = _memory.plan(_board(), task.n, 64, 10)
    assert len(plan.slices) == 1 and "1 slice(s)" in plan.describe()


def test_chunk_program_updates_state_in_place():
    """XLA's memory analysis: the state is donated (output aliases it) and the
    temporaries stay a small fraction of it (blocks are updated in place)."""
    d, c, b = 64, 10, 16
    board = expert_grid(
        [readouts.mlp(2, 64)],
        learning_rate=[1e-3, 3e-3],
        ema=[0.1, 1.0],
        weight_decay=[0.0, 1e-4],
        replay_streams=[2],
    )  # 8 experts
    groups = _groups._group(board, d, c)
    members, spec = _groups._members_spec(groups, board, 1, d, c, b, prequential.CLIP_Z)
    state = tuple(_groups._init_group(ro, m, 0, d, c) for (ro, _), m in zip(groups, members))
    hypers = tuple(_groups._hypers(m) for m in members)
    state_bytes = sum(x.nbytes for x in jax.tree_util.tree_leaves(state))
    assert state_bytes == sum(_memory.state_bytes(e, d, c) for e in board) + 4 * len(
        board
    )  # + Adam counts
    x = np.random.default_rng(0).normal(size=(64, d)).astype(np.float32)
    y = np.arange(64, dtype=np.int32) % c
    xs, _ = _inputs._chunk_inputs(x, y, 0, 4, b, (np.zeros(d), np.zeros(d), 0.0), True)
    ma = (
        _program._run_chunk.lower(
            spec, state, hypers, jnp.asarray(x), jnp.asarray(y), jax.random.PRNGKey(0), xs
        )
        .compile()
        .memory_analysis()
    )
    assert ma.alias_size_in_bytes >= state_bytes
    assert (
        ma.argument_size_in_bytes + ma.temp_size_in_bytes
        <= _memory.STATE_OVERHEAD * state_bytes + 64 * 1024 * 8
    )
