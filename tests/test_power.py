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
