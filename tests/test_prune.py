"""Pruning the board (mdlnb/prequential/_prune.py, mdlnb/switching/pruned.py; issue 13).

References: a plain float64 NumPy forward pass of fixed share restricted to
the survivors (written here from the definition: condition the predictive
distribution on the survivors at each pruning step, share α among them),
explicit per-label expert predictions (the mixture's label distribution must
sum to 1), the unpruned run (threshold 0 is bit-identical; survivors' losses
match it), and the closed-form regret bound of fixed share.
"""

import math

import numpy as np
import pytest

import mdlnb
from mdlnb import Prune, prequential, switching
from mdlnb.board import readouts
from mdlnb.board.experts import expert_grid
from mdlnb.prequential._prune import bucket, expert_updates, simulate
from mdlnb.switching import FixedShare, codelength_pruned, never_switch_cost


def _fixed_share_pruned_numpy(L, m, weights, pruned_at):
    """Float64 reference: per-step losses and predictive posteriors (N, K)."""
    n, k = L.shape
    w = np.asarray(weights, np.float64)
    pi = w.copy()
    per_step, post = np.empty(n), np.zeros((n, k))
    for t in range(n):
        alive = pruned_at > t
        pi = np.where(alive, pi, 0.0)
        pi = pi / pi.sum()  # condition on the survivors
        post[t] = pi
        p = np.where(alive, np.exp(-np.where(alive, L[t], 0.0)), 0.0)
        z = np.sum(pi * p)
        per_step[t] = -math.log(z)
        f = pi * p / z
        ws = np.where(alive, w, 0.0)
        ws = ws / ws.sum()  # α shared among the survivors only
        a = min(1.0, (m - 1.0) / (t + 2))  # transition into 1-indexed step t + 2
        pi = (1.0 - a) * f + a * ws
    return per_step, post


@pytest.mark.parametrize("weights", [None, (0.1, 0.3, 0.2, 0.25, 0.15)])
def test_pruned_code_matches_numpy_and_sums_to_one(weights):
    rng = np.random.default_rng(0)
    n, k, c, seg = 96, 5, 4, 16
    probs = rng.dirichlet(np.ones(c), size=(n, k))  # expert k's label distribution at t
    y = rng.integers(0, c, n)
    L = -np.log(probs[np.arange(n), :, y]).astype(np.float32)
    at = np.array([32, 96, 48, 96, 16])
    L_stored = np.where(np.arange(n)[:, None] >= at[None, :], np.inf, L).astype(np.float32)
    strat = FixedShare(m=3.0, weights=weights)
    res = codelength_pruned(L_stored, strat, at, segment_rows=seg)
    ref_ps, ref_post = _fixed_share_pruned_numpy(
        L.astype(np.float64), 3.0, np.full(k, 1 / k) if weights is None else weights, at
    )
    np.testing.assert_allclose(res.per_step_nats, ref_ps, rtol=2e-5, atol=1e-6)
    assert res.total_nats == pytest.approx(ref_ps.sum(), rel=1e-6)
    post = res.posterior
    np.testing.assert_allclose(post, ref_post, rtol=1e-4, atol=1e-7)
    assert (post[np.arange(n)[:, None] >= at[None, :]] == 0).all()  # pruned: zero mass
    # the mixture's label distribution sums to 1 over labels and codes y with per_step
    q = np.einsum("tk,tkc->tc", post, probs)
    np.testing.assert_allclose(q.sum(axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(-np.log(q[np.arange(n), y]), res.per_step_nats, rtol=1e-4, atol=1e-5)
    # regret bound against every surviving expert (the unpruned bound)
    tot = L.astype(np.float64).sum(axis=0)
    for j in np.flatnonzero(at == n):
        assert res.total_nats <= tot[j] + never_switch_cost(strat, n, k, j) + 1e-6


def test_no_schedule_is_the_ordinary_code_bit_for_bit():
    L = np.random.default_rng(1).exponential(1.0, (70, 6)).astype(np.float32)
    a = codelength_pruned(L, FixedShare(m=11.0), np.full(6, 70), segment_rows=7)
    b = switching.codelength(L, FixedShare(m=11.0))
    assert a.total_nats == b.total_nats
    assert np.array_equal(a.per_step_nats, b.per_step_nats)
    assert np.array_equal(a.log_posterior, b.log_posterior)


@pytest.fixture(scope="module")
def task():
    return mdlnb.data.load("digits").take(np.arange(192))


def _board():
    # 2 architectures × 3 learning rates × 2 EMA × 2 replay counts = 24 experts
    return expert_grid(
        [readouts.linear(), readouts.mlp(1, 16)],
        learning_rate=[1e-3, 1e-2, 1e-1],
        ema=[0.1, 1.0],
        replay_streams=[1, 2],
    )


def _proto(prune):
    return mdlnb.Protocol(
        board=tuple(_board()), batch_size=16, strategy=FixedShare(m=2.0), prune=prune
    )


@pytest.fixture(scope="module")
def unpruned(task):
    return prequential.run(task, protocol=_proto(None), cache=False)


def test_threshold_zero_is_bit_identical(task, unpruned):
    lm = prequential.run(
        task, protocol=_proto(Prune(threshold=0.0, window=16, segment_batches=4)), cache=False
    )
    assert np.array_equal(lm.losses, unpruned.losses)
    assert lm.meta["prune"]["num_pruned"] == 0
    assert lm.meta["prune"]["expert_updates"] == lm.meta["prune"]["expert_updates_unpruned"]
    a = mdlnb.Report.from_losses(unpruned, warn=False)
    b = mdlnb.Report.from_losses(lm, warn=False)
    assert a.total_nats == b.total_nats
    assert np.array_equal(a.switch.log_posterior, b.switch.log_posterior)


def test_pruned_run_is_exact_and_saves_updates(task, unpruned):
    prune = Prune(threshold=0.05, window=32, segment_batches=2)
    lm = prequential.run(task, protocol=_proto(prune), cache=False)
    rec = lm.meta["prune"]
    at = lm.pruned_at
    n, b = task.n, 16
    assert rec["segment_rows"] == 32 and rec["num_pruned"] == int((at < n).sum()) > 0
    assert (at[at < n] % 32 == 0).all() and (at[at < n] >= 32).all()  # after a full window
    rows = np.arange(n)[:, None]
    assert np.isinf(lm.losses[rows >= at]).all() and np.isfinite(lm.losses[rows < at]).all()
    # before its pruning step, every expert learnt exactly as on the unpruned board;
    # afterwards the survivors' state was carried over intact (compacted blocks may
    # round the last bit differently)
    first = at.min()
    assert np.array_equal(lm.losses[:first], unpruned.losses[:first])
    live = rows < at
    np.testing.assert_allclose(lm.losses[live], unpruned.losses[live], rtol=1e-4, atol=1e-5)
    assert lm.diverged() == []
    assert np.array_equal(simulate(unpruned, prune).pruned_at, at)  # replayed offline
    # accounting: expert k trained after every batch that started before pruned_at[k]
    replay = np.array([e.replay_streams for e in lm.experts])
    done = sum(int(r) * len(range(0, int(a), b)) for r, a in zip(replay, at))
    assert rec["expert_updates"] == done
    assert rec["expert_updates_unpruned"] == int(replay.sum()) * n // b
    assert rec["updates_ratio"] == pytest.approx(rec["expert_updates_unpruned"] / done)
    assert done <= rec["expert_updates_computed"] < rec["expert_updates_unpruned"]
    # the Report's code is fixed share restricted to the survivors (NumPy, float64)
    rep = mdlnb.Report.from_losses(lm, warn=False)
    assert rep.prune["pruned_at"] == at.tolist() and "pruned board" in str(rep)
    ref, _ = _fixed_share_pruned_numpy(
        lm.losses.astype(np.float64), 2.0, np.full(lm.k, 1 / lm.k), at
    )
    assert rep.total_nats == pytest.approx(ref.sum(), rel=1e-6)
    best = lm.losses[:, at == n].sum(axis=0, dtype=np.float64).min()
    assert rep.total_nats <= best + never_switch_cost(FixedShare(m=2.0), n, lm.k)
    # the LossMatrix and protocol round-trip with the schedule
    assert lm.protocol.prune == prune
    assert mdlnb.Protocol.from_dict(lm.protocol.to_dict(), experts=lm.experts).prune == prune


def test_keep_per_readout_keeps_every_architecture(unpruned):
    plain = simulate(unpruned, Prune(threshold=0.05, window=32, segment_batches=2))
    kept = simulate(
        unpruned, Prune(threshold=0.05, window=32, segment_batches=2, keep_per_readout=1)
    )
    arch = np.array([e.readout.name for e in unpruned.experts])
    n = unpruned.n
    assert {a for a in arch if not (plain.pruned_at[arch == a] == n).any()}  # one dies
    for a in set(arch):  # with keep_per_readout=1, none does
        assert (kept.pruned_at[arch == a] == n).any()
    assert kept.expert_updates >= plain.expert_updates


def test_bucket_sizes():
    assert [bucket(s, 8) for s in (1, 2, 3, 5, 8, 9, 17)] == [1, 2, 4, 8, 8, 16, 24]
    assert bucket(3, 2) == 2 * 2


def test_expert_updates_closed_form():
    rec = expert_updates([3, 10], [64, 100], n=100, batch_size=32)
    assert rec["expert_updates_unpruned"] == 13 * 4
    assert rec["expert_updates"] == 3 * 2 + 10 * 4


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"threshold": 1.0}, "threshold"),
        ({"threshold": -0.1}, "threshold"),
        ({"threshold": float("nan")}, "threshold"),
        ({"threshold": "0.1"}, "threshold"),
        ({"window": 0}, "window"),
        ({"window": 2.5}, "window"),
        ({"window": True}, "window"),
        ({"segment_batches": 0}, "segment_batches"),
        ({"keep_per_readout": -1}, "keep_per_readout"),
        ({"keep_per_readout": 1.0}, "keep_per_readout"),
    ],
)
def test_bad_prune_arguments(kwargs, name):
    with pytest.raises(ValueError, match=name):
        Prune(**kwargs)


def test_bad_protocol_and_schedule_arguments():
    with pytest.raises(ValueError, match="prune"):
        mdlnb.Protocol(prune="yes")
    with pytest.raises(ValueError, match="prune"):
        mdlnb.Protocol(prune={"treshold": 0.1})
    assert mdlnb.Protocol(prune={"threshold": 0.1}).prune == Prune(threshold=0.1)
    L = np.ones((40, 3), np.float32)
    for at in ([40, 40], [40, 41, 40], [40, 15, 40], [0, 40, 40], [40.0, 40.0, 40.0]):
        with pytest.raises(ValueError, match="pruned_at"):
            codelength_pruned(L, None, np.asarray(at), segment_rows=10)
    with pytest.raises(ValueError, match="pruned_at"):
        codelength_pruned(L, None, np.array([10, 20, 30]), segment_rows=10)  # prunes all
    with pytest.raises(ValueError, match="segment_rows"):
        codelength_pruned(L, None, np.array([10, 40, 40]), segment_rows=0)


def test_prune_is_in_the_cache_key():
    a, b = mdlnb.Protocol(), mdlnb.Protocol(prune=Prune())
    assert "prune" not in a.stage1()  # existing cache keys unchanged
    assert b.stage1()["prune"] == Prune().to_dict() and "strategy" in b.stage1()
    assert "prune=" in repr(b)


@pytest.mark.parametrize(
    "strategy",
    [
        switching.SwitchDistribution(stable=0.5),
        switching.RunLength(max_run=4, phases=3),
        switching.BayesianMixture(),
        switching.ElementwiseMixture(),
    ],
)
def test_other_strategies_give_a_valid_pruned_code(strategy):
    rng = np.random.default_rng(2)
    n, k, c = 64, 4, 3
    probs = rng.dirichlet(np.ones(c), size=(n, k))
    y = rng.integers(0, c, n)
    L = -np.log(probs[np.arange(n), :, y]).astype(np.float32)
    at = np.array([16, 64, 32, 64])
    res = codelength_pruned(L, strategy, at, segment_rows=16)
    post = res.posterior
    assert (post[np.arange(n)[:, None] >= at[None, :]] == 0).all()
    q = np.einsum("tk,tkc->tc", post, probs)  # label distribution per step
    np.testing.assert_allclose(q.sum(axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(-np.log(q[np.arange(n), y]), res.per_step_nats, rtol=1e-4, atol=1e-5)
    tot = L.astype(np.float64).sum(axis=0)
    for j in (1, 3):  # the survivors' regret bound
        assert res.total_nats <= tot[j] + never_switch_cost(strategy, n, k, j) + 1e-5


def test_a_pruned_board_is_not_sliced():
    """Pruning couples the experts: under the "auto" budget a pruned board runs in one
    pass even when the free memory would slice it; an explicit budget it exceeds is
    refused, naming the argument."""
    from unittest import mock

    from mdlnb.prequential import _memory

    task = mdlnb.data.load("digits").take(np.arange(96))
    board = tuple(
        mdlnb.expert_grid(
            [mdlnb.board.readouts.linear(), mdlnb.board.readouts.mlp(1, 32)],
            learning_rate=[1e-3, 1e-2],
        )
    )
    proto = mdlnb.protocol(
        "default", board=board, prune=mdlnb.Prune(threshold=0.6, window=32, segment_batches=1)
    )
    one = prequential.run(task, protocol=proto, cache=False, memory_budget=None)
    assert 0 < one.meta["prune"]["num_pruned"] < len(board)
    fixed = _memory.plan(board, task.n, 64, 10, budget_bytes=2**40).fixed_bytes
    with mock.patch.object(_memory, "available_bytes", lambda device=None: fixed):
        assert len(_memory.plan(board, task.n, 64, 10).slices) > 1  # "auto" would slice it
        auto = prequential.run(task, protocol=proto, cache=False)
    np.testing.assert_array_equal(auto.losses, one.losses)
    assert auto.meta["prune"]["pruned_at"] == one.meta["prune"]["pruned_at"]
    with pytest.raises(ValueError, match="memory_budget: a pruned board must run in one slice"):
        prequential.run(task, protocol=proto, cache=False, memory_budget=fixed + 1)


def test_simulate_pruning_returns_a_frozen_result(unpruned):
    import dataclasses

    from mdlnb.switching import codelength, codelength_pruned

    p = Prune(threshold=0.05, window=32, segment_batches=2)
    sim = mdlnb.simulate_pruning(unpruned, p)
    assert isinstance(sim, mdlnb.PruningSimulation) and sim.prune == p
    with pytest.raises(dataclasses.FrozenInstanceError):
        sim.total_nats = 0.0
    strat = unpruned.protocol.strategy
    assert sim.unpruned_nats == codelength(unpruned.losses, strat, posterior=False).total_nats
    n = unpruned.n
    stored = np.where(
        np.arange(n)[:, None] >= sim.pruned_at[None, :], np.float32(np.inf), unpruned.losses
    )
    assert (
        sim.total_nats
        == codelength_pruned(
            stored, strat, sim.pruned_at, posterior=False, segment_rows=2 * unpruned.batch_size
        ).total_nats
    )
    assert sim.num_pruned == int((sim.pruned_at < n).sum()) > 0
    assert sim.change_nats == sim.total_nats - sim.unpruned_nats
    assert (
        sim.to_dict()["updates_ratio"]
        == sim.updates_ratio
        == pytest.approx(sim.expert_updates_unpruned / sim.expert_updates)
    )
    assert "experts pruned" in str(sim)
