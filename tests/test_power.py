"""The encoder grid's power analysis against brute force and the t quantile."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from mdlnb.studies.encoder_grid import _power


@pytest.mark.parametrize("k", [3, 4, 5, 6])
def test_tau_sd_is_the_sd_over_all_orders(k):
    ref = np.arange(k)
    taus = [stats.kendalltau(ref, p).statistic for p in itertools.permutations(range(k))]
    assert _power.tau_sd(k) == pytest.approx(np.std(taus), rel=1e-12)


def test_tasks_to_decide_is_the_first_size_whose_half_width_fits():
    sd, effect = 0.3, 0.14
    t = _power.tasks_to_decide(sd, effect)
    half = lambda n: stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n)  # noqa: E731
    assert half(t) <= 0.07 < half(t - 1)
    assert _power.tasks_to_decide(sd, effect, margin=1.0) < t
    assert _power.tasks_to_decide(0.0, effect) == 2
    with pytest.raises(ValueError, match="effect"):
        _power.tasks_to_decide(sd, 0.0)


def test_plan_pools_encoders_and_grows_with_n():
    a = _power.plan(encoders=14, n=1000).set_index("claim")
    b = _power.plan(encoders=6, n=2000).set_index("claim")
    assert a.loc["a2", "per-task sd"] < b.loc["a2", "per-task sd"] == pytest.approx(0.30)
    assert b.loc["f", "tasks to decide"] < a.loc["f", "tasks to decide"]


def test_stream_flops_counts_each_matmul_by_hand():
    """linear 64→10 and MLP 64→256→10 (biases are not FLOPs): per example one coding
    forward plus r updates of 3 forwards each."""
    import mdlnb

    board = mdlnb.expert_grid(
        [mdlnb.board.readouts.linear(), mdlnb.board.readouts.mlp(1, 256)],
        learning_rate=[1e-3],
        replay_streams=[10],
    )
    lin, mlp = 2 * 64 * 10, 2 * (64 * 256 + 256 * 10)
    assert _power.stream_flops(board, 64, 10, 100) == 100 * 31 * (lin + mlp)


def test_grid_cost_sums_pairs_and_orders():
    from mdlnb.studies.encoder_grid import EncodersConfig

    cfg = EncodersConfig(
        encoders=("lite0@32", "random:vit_S"),
        tasks=("digits", "lfw_faces"),
        train_size=400,
        seeds=(0, 1, 2),
        protocol="small",
    )
    g = _power.grid_cost(cfg, gflops=100.0, efficiency=0.5).set_index(["encoder", "task"])
    assert list(g["D"]) == [1280, 1280, 64, 64]
    assert g.loc[("lite0@32", "lfw_faces"), "N"] == 160  # the whole split, < 400
    assert g.loc[("random:vit_S", "digits"), "N"] == 400
    one = _power.stream_flops("small", 64, 10, 400) * 3
    assert g.loc[("random:vit_S", "digits"), "flops"] == pytest.approx(one)
    assert g.loc[("random:vit_S", "digits"), "minutes"] == pytest.approx(one / 50e9 / 60)
    with pytest.raises(ValueError, match="efficiency"):
        _power.grid_cost(cfg, efficiency=0.0)


def test_spreads_match_scipy_on_a_synthetic_grid():
    """a2's per-task Δτ from scipy's τ_b on the per-task ranks; f from the order sd and
    nearest-neighbour gaps by hand; d1 from a posterior whose depth moves by a known
    amount per task."""
    import types

    import pandas as pd
    from scipy import stats

    rng = np.random.default_rng(5)
    encs, tasks, seeds = ["a", "b", "c", "d", "e"], [f"t{i}" for i in range(6)], [0, 1, 2]
    rows, post = [], []
    want_a2, want_f, want_d1 = [], [], []
    for i, t in enumerate(tasks):
        mdl = rng.normal(size=(5, 3)) * 0.3 + np.arange(5)[:, None] * (1 + i)
        lin, mlp = rng.uniform(size=5), rng.uniform(size=5)
        for j, e in enumerate(encs):
            for s in seeds:
                rows.append(
                    dict(
                        encoder=e,
                        task=t,
                        group="natural",
                        seed=s,
                        metric="codelength [nats]",
                        value=mdl[j, s],
                    )
                )
            for metric, v in (("linear accuracy", lin[j]), ("mlp accuracy", mlp[j])):
                rows.append(
                    dict(encoder=e, task=t, group="natural", seed=0, metric=metric, value=v)
                )
        m = mdl.mean(1)
        want_a2.append(stats.kendalltau(-mlp, m).statistic - stats.kendalltau(-mlp, -lin).statistic)
        sd = mdl.std(1, ddof=1)
        gap = np.array([np.min(np.abs(np.delete(m, j) - m[j])) for j in range(5)])
        want_f.append(-np.log10(np.median(sd / gap)))
        move = 0.25 * i  # depth moves from 0 to `move` hidden layers
        for e in encs:
            for s in seeds:
                for t0, t1, depth in ((64, 128, 0.0), (128, 256, 0.5), (256, 512, move)):
                    p1 = depth / 2  # mass on mlp2, the rest on linear
                    post += [
                        dict(
                            encoder=e,
                            task=t,
                            group="natural",
                            seed=s,
                            t_start=t0,
                            t_end=t1,
                            readout=r,
                            probability=p,
                        )
                        for r, p in (("linear", 1 - p1), ("mlp2", p1))
                    ]
        want_d1.append(move)
    res = types.SimpleNamespace(
        frame=pd.DataFrame(rows),
        posterior=pd.DataFrame(post),
        config=types.SimpleNamespace(protocol="small"),
    )
    got = _power.spreads(res).set_index("claim")
    for claim, want in (("a2", want_a2), ("f", want_f), ("d1", want_d1)):
        assert got.loc[claim, "tasks"] == len(tasks)
        assert got.loc[claim, "mean"] == pytest.approx(np.mean(want), rel=1e-9, abs=1e-12)
        assert got.loc[claim, "per-task sd"] == pytest.approx(np.std(want, ddof=1), rel=1e-9)
