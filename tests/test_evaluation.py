"""``mdlnb.evaluate`` and ``Report``: totals agree with stage 2 run directly,
units, posterior bookkeeping, and the two information extremes (separable
labels vs random labels). All runs share N, D, C and the board so stage 1
compiles once."""

import math

import matplotlib
import numpy as np
import pandas as pd
import pytest

import mdlnb
from mdlnb import switching
from mdlnb.evaluation import DEFAULT_M, Report, as_task, evaluate
from mdlnb.experts import preset

matplotlib.use("Agg")

N, C, D = 400, 4, 6
BOARD = preset("small")


def _task(separable: bool, seed: int = 0) -> mdlnb.Task:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, C, N)
    if separable:
        x = (rng.normal(size=(C, D)) * 6.0)[y] + rng.normal(size=(N, D))
    else:
        x = rng.normal(size=(N, D))          # labels independent of the features
    return mdlnb.Task("separable" if separable else "random", x.astype(np.float32), y, C)


@pytest.fixture(scope="module")
def report() -> Report:
    return evaluate(_task(True), BOARD)


def test_separable_task_codes_far_below_uniform(report):
    assert report.nats_per_example < 0.35 * math.log(C)
    assert report.total_nats < 0.35 * report.uniform_nats
    assert report.uniform_nats == pytest.approx(N * math.log(C), rel=1e-12)


def test_totals_agree_with_switching_on_the_loss_matrix(report):
    direct = switching.codelength(report.losses.losses, switching.FixedShare(m=DEFAULT_M))
    assert report.total_nats == pytest.approx(direct.total_nats, rel=1e-12)
    np.testing.assert_allclose(report.per_step, direct.per_step, rtol=1e-12)
    assert report.per_step.sum() == pytest.approx(report.total_nats, rel=1e-9)
    assert DEFAULT_M == 2.0    # the default protocol (README "Protocols"); paper-vtab uses 11


def test_units(report):
    assert report.total_bits == pytest.approx(report.total_nats / math.log(2), rel=1e-12)
    assert report.bits_per_example == pytest.approx(report.total_nats / N / math.log(2), rel=1e-12)
    assert report.nats_per_example == pytest.approx(report.total_nats / N, rel=1e-12)
    row = report.summary().iloc[0]
    assert row["total [nats]"] == report.total_nats
    assert row["total [bits]"] == pytest.approx(row["total [nats]"] / math.log(2), rel=1e-12)
    assert row["per example [bits]"] == pytest.approx(report.bits_per_example, rel=1e-12)


def test_best_expert_is_the_min_of_the_loss_matrix_totals(report):
    totals = report.losses.totals()
    assert report.best_expert_nats == pytest.approx(totals.min(), rel=1e-12)
    assert report.best_expert == totals.idxmin()
    assert report.regret_nats == pytest.approx(report.total_nats - totals.min(), rel=1e-12)
    # Fixed-share regret bound (paper Sec. 3), switching vs the best constant expert:
    # -log p(no switch) <= log K + sum_t -log(1 - alpha_t (K-1)/K).
    k = len(BOARD)
    t = np.arange(2, N + 1)
    alpha = np.minimum(1.0, (DEFAULT_M - 1) / t)
    bound = math.log(k) - np.sum(np.log1p(-alpha * (k - 1) / k))
    assert report.regret_nats <= bound + 1e-6


def test_posterior_frames(report):
    post = report.posterior
    assert list(post.columns) == ["t", "expert", "readout", "probability"]
    assert len(post) == N * len(BOARD)
    np.testing.assert_allclose(post["probability"].to_numpy().reshape(N, -1),
                               np.exp(report.switch.log_posterior.astype(np.float64)), rtol=1e-12)
    # readout posterior = the expert posterior summed over each readout's hyperparameters
    rp = report.readout_posterior()
    by_hand = post.groupby(["t", "readout"], observed=True)["probability"].sum()
    np.testing.assert_allclose(rp.set_index(["t", "readout"])["probability"].sort_index(),
                               by_hand.sort_index(), rtol=1e-12)
    np.testing.assert_allclose(rp.groupby("t")["probability"].sum(), 1.0, atol=1e-5)
    assert set(rp["readout"]) == {"linear", "mlp1x64"}
    # the first prediction uses the prior: uniform over the K experts
    np.testing.assert_allclose(post[post.t == 0]["probability"], 1 / len(BOARD), rtol=1e-6)
    mean = rp.groupby("readout", observed=True)["probability"].mean()
    assert report.preferred_readout == mean.idxmax()


def test_random_labels_cost_n_log_c():
    r = evaluate(_task(False), BOARD)
    assert r.total_nats == pytest.approx(N * math.log(C), rel=0.03)


def test_input_forms_strategies_and_m(report):
    task = _task(True)
    # (x, y) tuple and dict give the same code as the Task (same stream, cached stage 1)
    r_tuple = evaluate((task.x, task.y), BOARD)
    r_dict = evaluate({"x": task.x, "y": task.y, "num_classes": C}, BOARD)
    assert r_tuple.total_nats == pytest.approx(report.total_nats, rel=1e-9)
    assert r_dict.total_nats == pytest.approx(report.total_nats, rel=1e-9)
    # m and strategy names reach stage 2
    r2 = evaluate(task, BOARD, m=2)
    assert r2.total_nats == pytest.approx(
        switching.codelength(report.losses.losses, switching.FixedShare(m=2)).total_nats, rel=1e-12)
    bayes = evaluate(task, BOARD, "bayes")
    totals = report.losses.totals().to_numpy()
    lse = -np.log(np.mean(np.exp(-(totals - totals.min())))) + totals.min()
    assert bayes.total_nats == pytest.approx(lse, rel=1e-6)   # closed form of the Bayes mixture
    assert report.with_strategy("bayes").total_nats == pytest.approx(bayes.total_nats, rel=1e-12)


def test_plot_regret_values(report):
    name = report.expert_names[0]
    ax = report.plot_regret(name)
    line = ax.lines[0]
    x, yv = line.get_xdata(), line.get_ydata()
    assert x[-1] == N
    expected = report.total_nats - report.losses.totals()[name]
    assert yv[-1] == pytest.approx(expected, rel=1e-9, abs=1e-6)
    assert len(ax.lines) == 2           # the curve and the zero baseline
    ax_self = report.plot_regret(report)   # against itself: identically zero
    np.testing.assert_array_equal(ax_self.lines[0].get_ydata(), 0.0)
    ax_bits = report.plot_regret(name, units="bits")
    assert ax_bits.lines[0].get_ydata()[-1] == pytest.approx(expected / math.log(2), rel=1e-9)
    import matplotlib.pyplot as plt
    plt.close("all")


def test_text_and_html(report):
    s = str(report)
    assert f"{report.total_nats:,.1f} nats" in s and report.best_expert in s
    h = report._repr_html_()
    assert "<table" in h and "total [bits]" in h


@pytest.mark.parametrize("args, kw, name", [
    (("not a task",), {}, "task_or_arrays"),
    (({"x": np.zeros((3, 2))},), {}, "task_or_arrays"),
    ((_task(True), []), {}, "experts"),
    ((_task(True), BOARD, switching.BayesianMixture()), {"m": 3}, "m"),
    ((_task(True), BOARD, "no-such-strategy"), {}, "strategy"),
    ((_task(True), BOARD), {"m": 0.5}, "m"),
])
def test_bad_input_names_the_argument(args, kw, name):
    with pytest.raises(ValueError, match=name):
        evaluate(*args, **kw)


def test_bad_baseline(report):
    for bad in ("nope", len(BOARD), True):
        with pytest.raises(ValueError, match="baseline"):
            report.plot_regret(bad)
    with pytest.raises(ValueError, match="by"):
        report.plot_posterior(by="layer")


def test_as_task_passthrough():
    t = _task(True)
    assert as_task(t) is t
    assert as_task((t.x, t.y)).num_classes == C


def test_codelength_table(report):
    tab = report.codelength_table().set_index("code")
    assert tab.loc["FixedShare(m=2)", "total [nats]"] == pytest.approx(report.total_nats, rel=1e-12)
    totals = report.losses.totals().to_numpy()
    lse = -np.log(np.mean(np.exp(-(totals - totals.min())))) + totals.min()
    assert tab.loc["BayesianMixture()", "total [nats]"] == pytest.approx(lse, rel=1e-6)
    ew = -np.sum(np.log(np.mean(np.exp(-report.losses.losses.astype(np.float64)), axis=1)))
    assert tab.loc["ElementwiseMixture()", "total [nats]"] == pytest.approx(ew, rel=1e-5)
    assert tab.loc["uniform (N log C)", "total [nats]"] == pytest.approx(N * math.log(C))
    np.testing.assert_allclose(tab["total [bits]"], tab["total [nats]"] / math.log(2), rtol=1e-12)
    np.testing.assert_allclose(tab["vs best expert [nats]"],
                               tab["total [nats]"] - report.best_expert_nats, rtol=1e-12)
    assert report.expert() is report.losses.experts[int(np.argmin(totals))]
    with pytest.raises(ValueError, match="name"):
        report.expert("nope")
