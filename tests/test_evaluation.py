"""``mdlnb.evaluate`` and ``Report``: totals agree with stage 2 run directly,
units, posterior bookkeeping, and the two information extremes (separable
labels vs random labels). All runs share N, D, C and the board so stage 1
compiles once."""

import dataclasses
import math

import matplotlib
import numpy as np
import pandas as pd
import pytest

import mdlnb
from mdlnb import switching
from mdlnb.api.evaluation import DEFAULT_M, Report, as_task, evaluate
from mdlnb.board.experts import preset

matplotlib.use("Agg")

N, C, D = 400, 4, 6
BOARD = preset("small")


def _task(separable: bool, seed: int = 0) -> mdlnb.Task:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, C, N)
    if separable:
        x = (rng.normal(size=(C, D)) * 6.0)[y] + rng.normal(size=(N, D))
    else:
        x = rng.normal(size=(N, D))  # labels independent of the features
    return mdlnb.Task("separable" if separable else "random", x.astype(np.float32), y, C)


@pytest.fixture(scope="module")
def report() -> Report:
    return evaluate(_task(True), experts=BOARD)


def test_separable_task_codes_far_below_uniform(report):
    assert report.nats_per_example < 0.35 * math.log(C)
    assert report.total_nats < 0.35 * report.uniform_nats
    assert report.uniform_nats == pytest.approx(N * math.log(C), rel=1e-12)


def test_totals_agree_with_switching_on_the_loss_matrix(report):
    direct = switching.codelength(report.losses.losses, switching.FixedShare(m=DEFAULT_M))
    assert report.total_nats == pytest.approx(direct.total_nats, rel=1e-12)
    np.testing.assert_allclose(report.per_step_nats, direct.per_step_nats, rtol=1e-12)
    assert report.per_step_nats.sum() == pytest.approx(report.total_nats, rel=1e-9)
    assert DEFAULT_M == 2.0  # the default protocol (docs/protocols.md); paper-vtab uses 11


def test_devices_come_from_the_loss_matrix(report):
    import jax

    assert report.devices == report.losses.meta["devices"]
    assert report.devices["count"] == jax.device_count()
    assert report.devices["platform"] == jax.devices()[0].platform
    assert Report(dataclasses.replace(report.losses, meta={}), report.switch).devices is None


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
    np.testing.assert_allclose(
        post["probability"].to_numpy().reshape(N, -1),
        np.exp(report.switch.log_posterior.astype(np.float64)),
        rtol=1e-12,
    )
    # readout posterior = the expert posterior summed over each readout's hyperparameters
    rp = report.readout_posterior()
    by_hand = post.groupby(["t", "readout"], observed=True)["probability"].sum()
    np.testing.assert_allclose(
        rp.set_index(["t", "readout"])["probability"].sort_index(), by_hand.sort_index(), rtol=1e-12
    )
    np.testing.assert_allclose(rp.groupby("t")["probability"].sum(), 1.0, atol=1e-5)
    assert set(rp["readout"]) == {"linear", "mlp1x64"}
    # the first prediction uses the prior: uniform over the K experts
    np.testing.assert_allclose(post[post.t == 0]["probability"], 1 / len(BOARD), rtol=1e-6)
    mean = rp.groupby("readout", observed=True)["probability"].mean()
    assert report.preferred_readout == mean.idxmax()


def test_random_labels_cost_n_log_c():
    r = evaluate(_task(False), experts=BOARD)
    assert r.total_nats == pytest.approx(N * math.log(C), rel=0.03)


def test_input_forms_strategies_and_m(report):
    task = _task(True)
    # (x, y) tuple and dict give the same code as the Task (same stream, cached stage 1)
    r_tuple = evaluate((task.x, task.y), experts=BOARD)
    r_dict = evaluate({"x": task.x, "y": task.y, "num_classes": C}, experts=BOARD)
    assert r_tuple.total_nats == pytest.approx(report.total_nats, rel=1e-9)
    assert r_dict.total_nats == pytest.approx(report.total_nats, rel=1e-9)
    # m and strategy names reach stage 2
    r2 = evaluate(task, experts=BOARD, m=2)
    assert r2.total_nats == pytest.approx(
        switching.codelength(report.losses.losses, switching.FixedShare(m=2)).total_nats, rel=1e-12
    )
    bayes = evaluate(task, experts=BOARD, strategy="bayes")
    totals = report.losses.totals().to_numpy()
    lse = -np.log(np.mean(np.exp(-(totals - totals.min())))) + totals.min()
    assert bayes.total_nats == pytest.approx(lse, rel=1e-6)  # closed form of the Bayes mixture
    assert report.with_strategy("bayes").total_nats == pytest.approx(bayes.total_nats, rel=1e-12)


def test_plot_regret_values(report):
    name = report.expert_names[0]
    ax = report.plot_regret(name)
    line = ax.lines[0]
    x, yv = line.get_xdata(), line.get_ydata()
    assert x[-1] == N
    expected = report.total_nats - report.losses.totals()[name]
    assert yv[-1] == pytest.approx(expected, rel=1e-9, abs=1e-6)
    assert len(ax.lines) == 2  # the curve and the zero baseline
    ax_self = report.plot_regret(report)  # against itself: identically zero
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


@pytest.mark.parametrize(
    "args, kw, name",
    [
        (({"x": np.zeros((3, 2))},), {}, "lacks|missing"),
        ((_task(True),), {"experts": []}, "experts"),
        ((_task(True),), {"experts": BOARD, "strategy": switching.BayesianMixture(), "m": 3}, "m"),
        ((_task(True),), {"experts": BOARD, "strategy": "no-such-strategy"}, "strategy"),
        ((_task(True),), {"experts": BOARD, "m": 0.5}, "m"),
    ],
)
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
    assert as_task(t.x, t.y, name="mine").name == "mine"


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
    np.testing.assert_allclose(
        tab["vs best expert [nats]"], tab["total [nats]"] - report.best_expert_nats, rtol=1e-12
    )
    assert report.expert() is report.losses.experts[int(np.argmin(totals))]
    with pytest.raises(ValueError, match="name"):
        report.expert("nope")


# --------------------------------------------------------------------------- issue 15: honest reports

from itertools import product  # noqa: E402

from mdlnb.board.experts import expert_grid  # noqa: E402
from mdlnb.board.readouts import linear, mlp  # noqa: E402
from mdlnb.prequential import LossMatrix  # noqa: E402
from mdlnb.switching import never_switch_cost  # noqa: E402


def _fs_sequence_logprob(seq, k, *, m=None, alpha=None, w=None, p1=None):
    """log p(ξ_{1:N} = seq) under fixed share, straight from Eq. 2 (no HMM code)."""
    w = np.full(k, 1 / k) if w is None else np.asarray(w)
    p1 = w if p1 is None else np.asarray(p1)
    lp = math.log(p1[seq[0]])
    for t in range(2, len(seq) + 1):
        a = alpha if alpha is not None else min(1.0, (m - 1) / t)
        stay = seq[t - 1] == seq[t - 2]
        lp += math.log((1 - a) * stay + a * w[seq[t - 1]])
    return lp


@pytest.mark.parametrize(
    "kw",
    [
        dict(m=3.0),
        dict(m=11.0),
        dict(alpha=0.2),
        dict(m=2.0, w=(0.5, 0.3, 0.2), p1=(0.2, 0.2, 0.6)),
    ],
)
def test_never_switch_cost_fixed_share_by_enumeration(kw):
    """Bound = −log p(constant sequence): checked against Eq. 2 directly, and as the
    exact maximum of L_switch − L_k, by enumerating all K^N sequences."""
    n, k = 6, 3
    st = switching.FixedShare(
        m=kw.get("m"), alpha=kw.get("alpha"), weights=kw.get("w"), initial=kw.get("p1")
    )
    law = {s: _fs_sequence_logprob(s, k, **kw) for s in product(range(k), repeat=n)}
    assert sum(math.exp(v) for v in law.values()) == pytest.approx(1.0, abs=1e-12)
    for e in range(k):
        assert never_switch_cost(st, n, k, e) == pytest.approx(-law[(e,) * n], rel=1e-12)
    # the bound holds on random losses and is attained when the other experts never predict
    L = np.random.default_rng(0).exponential(1.0, size=(n, k))
    brute = -np.logaddexp.reduce([v - L[np.arange(n), list(s)].sum() for s, v in law.items()])
    for e in range(k):
        assert brute - L[:, e].sum() <= never_switch_cost(st, n, k, e) + 1e-9
    L_one = np.full((n, k), 60.0)
    L_one[:, 1] = 0.0
    total = switching.codelength(L_one.astype(np.float32), st).total_nats
    assert total == pytest.approx(never_switch_cost(st, n, k, 1), rel=1e-5)


def test_never_switch_cost_other_strategies_from_their_definitions():
    n, k = 7, 3
    # Bayes: only the first draw; elementwise: a fresh draw every step
    assert never_switch_cost(switching.BayesianMixture(), n, k) == pytest.approx(math.log(k))
    assert never_switch_cost(switching.ElementwiseMixture(), n, k) == pytest.approx(n * math.log(k))
    # switch distribution: enumerate the block starts S ⊆ {2..N} (hazard 1/t while
    # unstable, each block stable w.p. θ), every block drawing expert e from w = 1/K
    theta = 0.3
    total = 0.0
    for mask in product([0, 1], repeat=n - 1):
        starts = [t for t, b in zip(range(2, n + 1), mask) if b]
        p, prev = 1.0, 1
        for s in starts:
            p *= (1 - theta) * np.prod([1 - 1 / t for t in range(prev + 1, s)]) / s
            prev = s
        p *= theta + (1 - theta) * np.prod([1 - 1 / t for t in range(prev + 1, n + 1)])
        total += p * (1 / k) ** (len(starts) + 1)
    sd = switching.SwitchDistribution(stable=theta)
    assert never_switch_cost(sd, n, k) == pytest.approx(-math.log(total), rel=1e-5)
    # run-length with one tail phase: documented block-length law, segmentations of 1..N
    R = 3

    def pmf(r):
        return 1 / (r * (r + 1)) if r < R else (1 / R) * (1 / (R + 1)) * (R / (R + 1)) ** (r - R)

    def surv(r):  # P(length >= r)
        return 1 - sum(pmf(j) for j in range(1, r))

    def ways(rest):  # Σ over segmentations of `rest` steps, each block drawing e (w = 1/K)
        out = surv(rest)  # one last (censored) block
        for r in range(1, rest):
            out += pmf(r) * (1 / k) * ways(rest - r)
        return out

    rl = switching.RunLength(max_run=R, phases=1)
    assert never_switch_cost(rl, n, k) == pytest.approx(-math.log(ways(n) / k), rel=1e-5)
    with pytest.raises(ValueError, match="expert"):
        never_switch_cost(sd, n, k, expert=k)


def _lm(losses, experts, *, order=None, batch_size=32, task="synthetic", seed=0):
    n = losses.shape[0]
    return LossMatrix(
        np.asarray(losses, np.float32),
        tuple(experts),
        np.arange(n) if order is None else order,
        task,
        4,
        seed,
        batch_size,
    )


def test_regret_bound_on_a_real_report_and_attained(report):
    k = len(BOARD)
    t = np.arange(2, N + 1)
    alpha = np.minimum(1.0, (DEFAULT_M - 1) / t)
    closed = math.log(k) - np.sum(np.log1p(-alpha * (k - 1) / k))
    assert report.regret_bound_nats == pytest.approx(closed, rel=1e-12)
    assert report.regret_nats <= report.regret_bound_nats
    # one expert predicts, the others never do: the regret is the bound exactly
    L = np.full((N, k), 50.0)
    L[:, 2] = 0.1
    tight = Report.from_losses(_lm(L, BOARD), warn=False)
    assert tight.regret_nats == pytest.approx(tight.regret_bound_nats, rel=1e-5)
    s = str(report)
    assert "rank encoders by this" in s and f"{report.regret_bound_nats:+,.1f}" in s
    assert "prior's cost" in s and f"K={k}" in s


BOARD3 = expert_grid(
    [linear(), mlp(1, 8)],
    learning_rate=[1e-4, 1e-3, 1e-2],
    weight_decay=[0.0, 1e-4],
    ema=[1e-2, 1.0],
)


def _best_is(name, n=100):
    L = np.full((n, len(BOARD3)), 1.0)
    L[:, [e.name for e in BOARD3].index(name)] = 0.5
    return _lm(L, BOARD3)


def test_grid_edge_warning_fires_on_an_edge():
    edge = "mlp1x8-lr1e-2-wd1e-4-ema1e-2-r10"  # largest lr, smallest ema
    with pytest.warns(UserWarning, match=r"learning_rate = 0.01 is the largest"):
        rep = Report.from_losses(_best_is(edge))
    axes = {(e.axis, e.side) for e in rep.grid_edges}
    # weight decay {0, 1e-4} and EMA {1e-2, 1} are on/off switches (one value the domain's
    # bound): neither choice is an edge (the default board's EMA warned on every run)
    assert axes == {("learning_rate", "largest")}
    assert len(rep.warnings) == 1 and "warning" in str(rep)
    assert rep.summary().iloc[0]["warnings"] == 1
    # a two-value axis of two inner values: every best is on an edge, and the sentence says
    # so (no "widen"), pointing to a board that brackets it, never back to its own
    two = expert_grid([linear()], learning_rate=[1e-3, 3e-3], b1=[0.5, 0.7])
    L = np.full((100, len(two)), 1.0)
    L[:, 0] = 0.5
    for board in (None, "default"):
        lm = _lm(L, two)
        rep = Report.from_losses(lm, warn=False)
        texts = [e.message(rep.best_expert, board) for e in rep.grid_edges]
        lr, b1 = sorted(texts, key=lambda t: "b1" in t)
        assert "only two values of learning_rate" in lr and "always on an edge" in lr
        assert "may lie beyond" not in lr
        assert ("the 'default' protocol's" in lr) == (board is None)
        assert "the 'deep' protocol's" in lr or board is None
        assert "protocol's" not in b1 and "mdlnb.expert_grid(..., b1=[...])" in b1


def test_grid_edge_warning_silent_inside_the_grid():
    import warnings as _w

    inside = "linear-lr1e-3-wd0-ema1-r10"  # middle lr; wd 0 and ema 1 are domain bounds
    with _w.catch_warnings():
        _w.simplefilter("error")
        rep = Report.from_losses(_best_is(inside))
    assert rep.grid_edges == [] and rep.warnings == ()
    # with_strategy never repeats the warnings
    with _w.catch_warnings():
        _w.simplefilter("error")
        Report.from_losses(_best_is("mlp1x8-lr1e-2-wd1e-4-ema1e-2-r10"), warn=False).with_strategy(
            "bayes"
        )


def test_fewer_examples_than_a_batch_trains_no_readout():
    from sklearn.datasets import load_digits

    d = load_digits()
    with pytest.warns(UserWarning, match="no readout trained"):
        rep = evaluate(
            {"x": d.data[:10], "y": d.target[:10], "num_classes": 10, "name": "d10"}, experts=BOARD
        )
    assert not rep.trained and rep.preferred_readout is None
    assert rep.total_nats == pytest.approx(10 * math.log(10), rel=1e-6)  # all uniform
    s = str(rep)
    assert "no readout trained" in s and "readout        : none" in s
    assert rep.summary().iloc[0]["whole-run readout (one order)"] == "none (no readout trained)"


def _switching_lm(order_seed, *, flip_at=200, n=600, noise=0.0, batch_size=32):
    """linear is better before `flip_at` examples, mlp1 after (per-step losses)."""
    rng = np.random.default_rng(order_seed)
    board = expert_grid([linear(), mlp(1, 8)], learning_rate=[1e-3])
    L = np.empty((n, 2))
    L[:, 0] = np.where(np.arange(n) < flip_at, 0.5, 1.5)
    L[:, 1] = np.where(np.arange(n) < flip_at, 1.5, 0.5)
    L[:batch_size] = math.log(4)  # the uniform first batch
    L += noise * rng.normal(size=L.shape)
    return _lm(np.abs(L), board, order=rng.permutation(n), seed=order_seed, batch_size=batch_size)


def test_readout_preference_bins_masses_and_switch_point():
    reps = [Report.from_losses(_switching_lm(s), warn=False) for s in range(3)]
    pref = mdlnb.readout_preference(reps, per_decade=4)
    tab = pref.table
    assert tab["n_from"].iloc[0] == 32 and tab["n_to"].iloc[-1] == 600  # from B to N
    # masses: the per-report readout posterior averaged over the bin and the reports, by pandas
    rp = pd.concat([r.readout_posterior().assign(rep=i) for i, r in enumerate(reps)])
    for row in tab.itertuples():
        sel = rp[(rp.t >= row.n_from) & (rp.t < row.n_to) & (rp.readout == row.readout)]
        assert row.mass == pytest.approx(sel.groupby("rep")["probability"].mean().mean(), rel=1e-9)
    assert pref.orders == 3 and pref.stable
    assert tab["readout"].iloc[0] == "linear" and tab["readout"].iloc[-1] == "mlp1x8"
    # exactly one switch, stated at a bin edge after the change of the losses at 200
    assert len(pref.switch_points) == 1
    n_at, a, b = pref.switch_points[0]
    assert (a, b) == ("linear", "mlp1x8") and n_at in set(tab["n_from"]) and 200 <= n_at <= 400
    assert pref.settled == (n_at, "mlp1x8")
    assert "switch points: linear → mlp1x8" in str(pref)


def test_readout_preference_is_not_stated_when_unstable_or_from_one_order():
    one = mdlnb.readout_preference(Report.from_losses(_switching_lm(0), warn=False))
    assert one.orders == 1 and not one.table["stable"].any() and one.switch_points == ()
    assert "stability unknown" in str(one)
    # orders that disagree: mlp1 takes over at 100 in one run, at 500 in another
    reps = [
        Report.from_losses(_switching_lm(s, flip_at=f), warn=False)
        for s, f in ((0, 100), (1, 500), (2, 300))
    ]
    pref = mdlnb.readout_preference(reps, per_decade=4)
    assert not pref.stable and pref.switch_points == ()
    unstable = pref.table[~pref.table["stable"]]
    assert (unstable["agreement"] < 1).all() and len(unstable) >= 1
    # two readouts that predict alike: a tie is no preference, never stable
    lm = _switching_lm(0)
    same = np.repeat(lm.losses[:, :1], 2, axis=1)
    tie = mdlnb.readout_preference(
        [
            Report.from_losses(_lm(same, lm.experts, order=o), warn=False)
            for o in (lm.order, lm.order[::-1])
        ]
    )
    assert tie.table["tie"].all() and not tie.table["stable"].any()
    assert set(tie.table["readout"]) <= {"linear", "mlp1x8"} and "none" not in str(tie)
    assert "(tie)" in str(tie)  # named, and said to be a tie
    with pytest.raises(ValueError, match="reports"):
        mdlnb.readout_preference([reps[0], Report.from_losses(_switching_lm(0, n=500), warn=False)])


def test_report_text_does_not_state_one_orders_preference_as_a_fact(report):
    s = str(report)
    assert "preferred readout:" not in s
    assert "one order, stability across orders unchecked" in s
    row = report.summary().iloc[0]
    assert "preferred readout" not in row.index
    assert row["whole-run readout (one order)"] == report.preferred_readout


def test_plot_regret_refuses_other_orders_and_tasks():
    a = Report.from_losses(_switching_lm(0), warn=False)
    b = Report.from_losses(_switching_lm(1), warn=False)
    with pytest.raises(ValueError, match="different order"):
        a.plot_regret(b)
    c = Report.from_losses(
        _lm(a.losses.losses, a.losses.experts, order=a.losses.order, task="other"), warn=False
    )
    with pytest.raises(ValueError, match="task"):
        a.plot_regret(c)
    same = Report.from_losses(
        _lm(a.losses.losses, a.losses.experts, order=a.losses.order), "bayes", warn=False
    )
    ax = a.plot_regret(same)  # same order: fine
    assert ax.lines[0].get_ydata()[-1] == pytest.approx(a.total_nats - same.total_nats, rel=1e-9)
    import matplotlib.pyplot as plt

    plt.close("all")


def test_overlaid_regret_curves_get_distinct_colours_and_one_baseline(report):
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_hex

    ax = report.plot_regret()
    report.with_strategy("bayes").plot_regret(ax=ax)
    report.with_strategy("fixed-share", m=2).plot_regret(ax=ax)
    curves = [ln for ln in ax.lines if ln.get_linestyle() == "-"]
    assert len(curves) == 3 and len({to_hex(ln.get_color()) for ln in curves}) == 3
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert sum(t.startswith("baseline") for t in labels) == 1 and len(labels) == 4
    plt.close("all")


def test_strategies_print_one_way(report):
    assert (
        repr(switching.FixedShare(m=11)) == "FixedShare(m=11)" == switching.FixedShare(m=11).label
    )
    assert repr(switching.FixedShare()) == "FixedShare(m=2)"
    assert repr(switching.SwitchDistribution()) == "SwitchDistribution(stable=0.5)"
    assert (
        repr(switching.ElementwiseMixture(weights=[0.2] * 5))
        == "ElementwiseMixture(weights=<5 values>)"
    )
    assert (
        f"{report.strategy!r}" in str(report)
        and report.summary().iloc[0]["strategy"] == "FixedShare(m=2)"
    )


# --------------------------------------------------------------------------- issue 25: one signature


def test_every_data_form_gives_the_same_code(report):
    """evaluate(x, y), evaluate(x=x, y=y), evaluate(task), evaluate((x, y)) and the mapping
    form run the same stream: one codelength, bit for bit (stage 1 cached)."""
    task = _task(True)
    forms = [
        evaluate(task.x, task.y, experts=BOARD, num_classes=C),
        evaluate(x=task.x, y=task.y, experts=BOARD),
        evaluate((task.x, task.y), experts=BOARD),
        evaluate({"x": task.x, "y": task.y}, experts=BOARD),
        evaluate(task, experts=BOARD),
    ]
    for rep in forms:
        assert rep.total_nats == report.total_nats
        np.testing.assert_array_equal(rep.per_step_nats, report.per_step_nats)
    named = evaluate(task.x, task.y, experts=BOARD, name="sep|raw")
    assert named.task_name == "sep|raw" and named.total_nats == report.total_nats


def test_the_old_positional_board_is_a_type_error_saying_experts():
    task = _task(True)
    with pytest.raises(TypeError, match="experts="):
        evaluate(task, BOARD)
    with pytest.raises(TypeError, match="experts="):
        evaluate(task.x, BOARD)
    with pytest.raises(TypeError, match="experts="):
        evaluate((task.x, task.y), "small")
    # keyword-only past the data: the package's error naming the forms, not Python's
    for extra, hint in ((BOARD, "experts="), ("small", "experts="), (0.5, "by keyword")):
        with pytest.raises(
            TypeError,
            match=f"evaluate: got 3 positional arguments.*{hint}"
            r".*Accepted: evaluate\(x, y, \.\.\.\)",
        ) as err:
            evaluate(task.x, task.y, extra)
        assert "evaluate(task, ...)" in str(err.value) and "evaluate((x, y), ...)" in str(err.value)


@pytest.mark.parametrize(
    "args, kw, match",
    [
        ((), {}, "no data"),
        (("not a task",), {}, "evaluate\\(x, y"),
        ((np.zeros((5, 2)),), {}, "y: missing"),
        (({"x": 1, "y": 2}, [0, 1]), {}, "x: expected a feature array"),
        ((_task(True), _task(True).y), {}, "labels from the Task"),
        ((_task(True),), {"name": "other"}, "name"),
    ],
)
def test_other_forms_are_type_errors_naming_the_accepted_ones(args, kw, match):
    with pytest.raises(TypeError, match=match) as err:
        evaluate(*args, **kw)
    assert "evaluate(task" in str(err.value) or "Task" in str(err.value)


def test_labels_one_hot_and_regression_targets_are_refused_with_the_reason():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(50, 3)), rng.integers(0, 3, 50)
    with pytest.raises(ValueError, match=r"one-hot of shape \(50, 3\).*argmax"):
        evaluate(x, np.eye(3)[y])
    with pytest.raises(ValueError, match="regression task kind"):
        evaluate(x, y + 0.5)
    with pytest.raises(ValueError, match="regression task kind"):
        mdlnb.compare({"a": x, "b": x}, y * 0.1)
    # integer-valued floats are class indices in disguise: the same task as the integers
    assert np.array_equal(as_task(x, y.astype(np.float64)).y, as_task(x, y).y)


def test_continuous_looking_labels_warn_specifically():
    from sklearn.datasets import load_diabetes

    x, y = load_diabetes(return_X_y=True)  # targets 25..346, integer-valued floats
    with pytest.warns(
        UserWarning,
        match=r"C = max\(y\) \+ 1 = 347 classes for N = 442.*"
        r"C > N/10.*continuous quantity.*regression",
    ) as rec:
        as_task(x, y)
    assert not any("never occur" in str(w.message) for w in rec)  # not the generic warning
    # C > N/10 alone (dense labels, few examples per class)
    with pytest.warns(UserWarning, match=r"C = max\(y\) \+ 1 = 20 classes for N = 100.*C > N/10"):
        as_task(np.zeros((100, 2)), np.arange(100) % 20)
    import warnings as _w

    with _w.catch_warnings():  # 10 examples per class: no warning
        _w.simplefilter("error")
        as_task(np.zeros((100, 2)), np.arange(100) % 10)
        as_task(np.zeros((100, 2)), np.arange(100) % 20, num_classes=20)  # C given: trusted


def test_images_are_flattened_with_a_warning():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 4, 3)).astype(np.float32)
    y = rng.integers(0, 3, 60)
    with pytest.warns(UserWarning, match=r"shape \(60, 4, 3\) are flattened to \(60, 12\)"):
        t = as_task(x, y)
    assert t.x.shape == (60, 12) and np.array_equal(t.x, x.reshape(60, 12))


def test_a_code_worse_than_uniform_is_flagged():
    n, k = 100, len(BOARD)
    bad = np.full((n, k), math.log(C) + 0.1)  # every expert worse than uniform
    rep = Report.from_losses(_lm(bad, BOARD), warn=False)
    assert rep.total_nats > rep.uniform_nats
    assert any("longer than the uniform code" in w for w in rep.warnings)
    assert f"{rep.total_nats:,.1f} nats" in [w for w in rep.warnings if "uniform" in w][0]
    good = Report.from_losses(_lm(np.full((n, k), 0.5), BOARD), warn=False)
    assert not any("uniform" in w for w in good.warnings)


def test_n_at_most_b_short_circuits_to_the_uniform_code(monkeypatch):
    from mdlnb import prequential
    from mdlnb.prequential import _run as stage1

    def boom(*a, **kw):
        raise AssertionError("stage 1 must not run when N <= B")

    # prequential.run decides it (for every caller): its compiled driver is never entered
    monkeypatch.setattr(stage1, "run_pass", boom)
    monkeypatch.setattr(stage1._slicing, "run_sliced", boom)
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(20, 3)), np.arange(20) % 5
    with pytest.warns(UserWarning, match="no readout trained"):
        rep = evaluate(x, y, experts=BOARD, num_classes=5, seed=3)
    assert rep.losses.losses.dtype == np.float32
    assert np.all(rep.losses.losses == np.float32(math.log(5)))
    assert rep.total_nats == pytest.approx(20 * math.log(5), rel=1e-6)
    assert np.array_equal(rep.losses.order, prequential.stream_order(3, 20))
    assert rep.protocol.seed == 3 and not rep.trained


def test_per_step_is_a_deprecated_alias(report):
    with pytest.warns(DeprecationWarning, match="per_step_nats"):
        old = report.per_step
    np.testing.assert_array_equal(old, report.per_step_nats)
    with pytest.warns(DeprecationWarning, match="per_step_nats"):
        report.switch.per_step  # noqa: B018 - the access warns


def test_a_name_where_the_labels_go_says_to_use_keywords():
    task = _task(True)
    with pytest.raises(TypeError, match="strategy= or protocol= by keyword"):
        evaluate(task, "bayes")
    with pytest.raises(TypeError, match="the string 'bayes' where the labels go"):
        evaluate(task.x, "bayes")
