"""The encoder grid's power analysis against brute force and the t quantile."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from mdlnb.studies.encoders import _power


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

    board = mdlnb.expert_grid([mdlnb.readouts.linear(), mdlnb.readouts.mlp(1, 256)],
                              learning_rate=[1e-3], replay_streams=[10])
    lin, mlp = 2 * 64 * 10, 2 * (64 * 256 + 256 * 10)
    assert _power.stream_flops(board, 64, 10, 100) == 100 * 31 * (lin + mlp)


def test_grid_cost_sums_pairs_and_orders():
    from mdlnb.studies.encoders import EncodersConfig

    cfg = EncodersConfig(encoders=("lite0@32", "random:vit_S"), tasks=("digits", "lfw_faces"),
                         train_size=400, seeds=(0, 1, 2), protocol="small")
    g = _power.grid_cost(cfg, gflops=100.0, efficiency=0.5).set_index(["encoder", "task"])
    assert list(g["D"]) == [1280, 1280, 64, 64]
    assert g.loc[("lite0@32", "lfw_faces"), "N"] == 160           # the whole split, < 400
    assert g.loc[("random:vit_S", "digits"), "N"] == 400
    one = _power.stream_flops("small", 64, 10, 400) * 3
    assert g.loc[("random:vit_S", "digits"), "flops"] == pytest.approx(one)
    assert g.loc[("random:vit_S", "digits"), "minutes"] == pytest.approx(one / 50e9 / 60)
    with pytest.raises(ValueError, match="efficiency"):
        _power.grid_cost(cfg, efficiency=0.0)
