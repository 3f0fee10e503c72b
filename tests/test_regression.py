"""Regression tasks (real targets): the Task kind, the Gaussian readout code of stage 1
against a NumPy re-implementation, the first-batch convention, units (a density
codelength shifts by log a when y is scaled by a), reports and compare."""

import math

import jax
import numpy as np
import pytest
from scipy import stats

import mdlnb
from mdlnb import prequential
from mdlnb.board import readouts
from mdlnb.board.experts import Expert
from mdlnb.core import _targets

LOG_2PI = math.log(2 * math.pi)


def _stream(n=200, d=3, p=1, seed=0, noise=0.3, offset=50.0, scale=20.0):
    rng = np.random.default_rng(seed)
    x = (rng.normal(size=(n, d)) * [1, 3, 0.5][:d] + 2).astype(np.float32)
    w = rng.normal(size=(d, p))
    y = offset + scale * (x @ w + noise * rng.normal(size=(n, p)))
    return x, (y[:, 0] if p == 1 else y)


# --------------------------------------------------------------------- Task kind


def test_regression_task_views_and_validation():
    x, y = _stream()
    t = mdlnb.Task("r", x, y, kind="regression")
    assert t.kind == "regression" and t.num_classes is None and t.target_dims == 1
    assert t.out_dim == 2 and t.y.dtype == np.float64 and t.y.shape == (200,)
    assert "kind='regression'" in repr(t)
    t2 = mdlnb.Task("r2", x, np.c_[y, -y], kind="regression")
    assert t2.target_dims == 2 and t2.out_dim == 4
    sub = t2.subsample(50, seed=1)
    assert sub.kind == "regression" and sub.y.shape == (50, 2)
    np.testing.assert_array_equal(mdlnb.Task.from_arrays(x, y, kind="regression").y, y)


@pytest.mark.parametrize(
    "kw, arg",
    [
        (dict(kind="ordinal"), "kind"),
        (dict(num_classes=3), "num_classes"),
        (dict(y=np.r_[np.nan, np.zeros(199)]), "y"),
        (dict(y=np.zeros((200, 2, 2))), "y"),
        (dict(y=np.zeros((200, 0))), "y"),
        (dict(y=np.array(["a"] * 200)), "y"),
        (dict(y=np.zeros(10)), "x and y"),
    ],
)
def test_regression_task_rejects_bad_input_naming_the_argument(kw, arg):
    x, y = _stream()
    args = dict(name="r", x=x, y=y, kind="regression")
    args.update(kw)
    with pytest.raises(ValueError, match=f"^{arg}"):
        mdlnb.Task(**args)


def test_float_labels_point_to_the_regression_kind():
    x, y = _stream()
    with pytest.raises(ValueError, match="kind='regression'"):
        mdlnb.Task("c", x, y, 3)
    with pytest.raises(ValueError, match="^num_classes"):
        mdlnb.Task("c", x, np.zeros(200, int))  # classification needs C
    with pytest.raises(ValueError, match="^num_classes"):
        mdlnb.Task.from_arrays(x, y, num_classes=3, kind="regression")


def test_regression_task_npz_roundtrip(tmp_path):
    x, y = _stream()
    t = mdlnb.Task("r", x, np.c_[y, y], kind="regression")
    t.to_npz(tmp_path / "r.npz")
    back = mdlnb.Task.from_npz(tmp_path / "r.npz")
    assert back.kind == "regression"
    np.testing.assert_array_equal(back.y, t.y)


# --------------------------------------------------------------------- the Gaussian code


def test_gaussian_nll_matches_scipy():
    rng = np.random.default_rng(0)
    out = rng.normal(size=(7, 4)) * 3  # P = 2: means, raw log-variances
    z = rng.normal(size=(7, 2))
    s = _targets.LOGVAR_BOUND * np.tanh(out[:, 2:] / _targets.LOGVAR_BOUND)
    ref = -stats.norm.logpdf(z, out[:, :2], np.exp(s / 2)).sum(1)
    got = np.asarray(_targets.gaussian_nll(jax.numpy.asarray(out), jax.numpy.asarray(z)))
    np.testing.assert_allclose(got, ref, rtol=1e-5)
    np.testing.assert_allclose(_targets.gaussian_nll_np(out[:, :2], np.exp(s), z), ref, rtol=1e-12)


def _reference_gaussian_linear(x, y, e: Expert, b, seed, standardize=True):
    """NumPy float64 re-implementation of stage 1 for one linear Gaussian expert (P = 1):
    prefix-standardised features (clipped ±10) and targets, output layer zero-initialised,
    (μ, r) = z_x W + c, log σ² = L tanh(r/L), AdamW on the mean density code, EMA; coded
    loss −log N(y; ·) of the raw target, first batch by its own ML Gaussian."""
    L = _targets.LOGVAR_BOUND
    n = len(y)
    key = jax.random.PRNGKey(seed)
    order = np.asarray(jax.random.permutation(jax.random.fold_in(key, 0), n))
    x, y = x[order].astype(np.float64), y[order].astype(np.float32).astype(np.float64)
    w, bias = np.zeros((x.shape[1], 2)), np.zeros(2)
    ew, eb = w.copy(), bias.copy()
    m = [np.zeros_like(w), np.zeros_like(bias)]
    v = [np.zeros_like(w), np.zeros_like(bias)]
    count, out = 0, np.zeros(n)
    xm = xs = None  # the prefix's feature mean and std, from the first block on
    view = (
        (lambda a, mu, sd: np.clip((a - mu) / sd, -10, 10))
        if standardize
        else (lambda a, mu, sd: a)
    )
    for i in range(math.ceil(n / b)):
        lo, hi = i * b, min((i + 1) * b, n)
        if i == 0:
            mu1, sd1 = y[:hi].mean(), y[:hi].std()
            out[lo:hi] = 0.5 * (LOG_2PI + ((y[:hi] - mu1) / sd1) ** 2) + math.log(sd1)
        else:
            ym, ys = (y[:lo].mean(), y[:lo].std()) if standardize else (0.0, 1.0)
            o = view(x[lo:hi], xm, xs) @ ew + eb
            s = L * np.tanh(o[:, 1] / L)
            out[lo:hi] = -stats.norm.logpdf(y[lo:hi], ym + ys * o[:, 0], ys * np.exp(s / 2))
        xm, xs = x[:hi].mean(0), x[:hi].std(0)
        ym, ys = (y[:hi].mean(), y[:hi].std()) if standardize else (0.0, 1.0)
        for r in range(e.replay_streams):
            k = jax.random.fold_in(jax.random.fold_in(jax.random.fold_in(key, 2), i), r)
            pos = np.asarray(jax.random.randint(k, (b,), 0, hi))
            xr, zr = view(x[pos], xm, xs), (y[pos] - ym) / ys
            o = xr @ w + bias
            th = np.tanh(o[:, 1] / L)
            s = L * th
            g = np.stack(
                [
                    -(zr - o[:, 0]) * np.exp(-s),
                    0.5 * (1 - (zr - o[:, 0]) ** 2 * np.exp(-s)) * (1 - th**2),
                ],
                1,
            )
            grads = [xr.T @ g / b, g.mean(0)]
            count += 1
            for j, (pr, gr) in enumerate(zip((w, bias), grads)):
                m[j] = e.b1 * m[j] + (1 - e.b1) * gr
                v[j] = 0.999 * v[j] + 0.001 * gr**2
                mhat, vhat = m[j] / (1 - e.b1**count), v[j] / (1 - 0.999**count)
                pr -= e.learning_rate * (mhat / (np.sqrt(vhat) + 1e-8) + e.weight_decay * pr)
            ew = (1 - e.ema) * ew + e.ema * w
            eb = (1 - e.ema) * eb + e.ema * bias
    return order, out


@pytest.mark.parametrize("standardize", [True, False])
def test_stage1_matches_numpy_reference(standardize):
    x, y = _stream(
        n=50, d=3, offset=0.0 if not standardize else 50.0, scale=1.0 if not standardize else 20.0
    )
    task = mdlnb.Task("r", x, y, kind="regression")
    e = Expert(readouts.linear(), 3e-2, b1=0.7, weight_decay=1e-2, ema=0.4, replay_streams=3)
    lm = prequential.run(
        task,
        [e],
        batch_size=8,
        seed=5,
        cache=False,
        standardize="prefix" if standardize else "none",
    )
    order, ref = _reference_gaussian_linear(x, y, e, 8, 5, standardize)
    np.testing.assert_array_equal(lm.order, order)
    np.testing.assert_allclose(lm.losses[:, 0], ref, rtol=2e-5, atol=2e-5)
    assert lm.kind == "regression" and lm.num_classes == 0
    assert lm.meta["target"]["dims"] == 1 and "delta" in lm.meta["target"]["caveat"]
    assert ref[-16:].mean() < ref[8:24].mean() - 0.3  # it learned: not vacuous


def test_first_batch_is_its_own_ml_gaussian():
    x, y = _stream(n=100, p=2)
    task = mdlnb.Task("r", x, y, kind="regression")
    lm = prequential.run(task, mdlnb.board.experts.preset("small"), batch_size=16, cache=False)
    first = task.y[lm.order[:16]]
    var = first.var(0)  # ML (biased) variance
    want = 0.5 * 16 * np.sum(np.log(2 * np.pi * var) + 1)  # B/2 Σ_p (log 2πσ̂² + 1)
    np.testing.assert_allclose(lm.losses[:16].astype(np.float64).sum(0), want, rtol=1e-5)
    assert np.all(lm.losses[:16] == lm.losses[:16, :1])  # the same for every expert


def test_density_codelength_shifts_by_log_scale():
    """p(a·y + c) = p(y)/a: the recorded density code of rescaled, shifted targets is
    the same code plus N log a (prefix standardisation makes training invariant)."""
    x, y = _stream(n=160)
    board = mdlnb.expert_grid([readouts.linear(), readouts.mlp(1, 16)], learning_rate=1e-2)
    a = 1000.0
    base = prequential.run(
        mdlnb.Task("r", x, y, kind="regression"), board, batch_size=16, cache=False
    ).losses.astype(np.float64)
    moved = prequential.run(
        mdlnb.Task("r", x, a * y - 7.0, kind="regression"), board, batch_size=16, cache=False
    ).losses.astype(np.float64)
    np.testing.assert_allclose(moved.sum(0) - base.sum(0), 160 * math.log(a), rtol=1e-3)


def test_untrained_readout_baseline_and_learning():
    """Features that determine y beat the untrained readout's code (the prefix Gaussian);
    noise features do not beat it by more than the board's cost."""
    x, y = _stream(n=400, noise=0.05)
    rep = mdlnb.evaluate(
        mdlnb.Task("r", x, y, kind="regression"), experts="small", progress=False, cache=False
    )
    ref = _targets.untrained_nats(_targets.as_targets(y[rep.losses.order]), 32, True)
    np.testing.assert_allclose(rep.uniform_nats, ref.sum(), rtol=1e-12)
    assert rep.total_nats < rep.uniform_nats - 0.5 * 400


def test_regression_report_units_and_caveat():
    x, y = _stream(n=300)
    rep = mdlnb.evaluate(
        mdlnb.Task("r", x, y, kind="regression"), experts="small", progress=False, cache=False
    )
    assert rep.kind == "regression" and "delta" in rep.caveat
    row = rep.summary().iloc[0]
    assert row["kind"] == "regression" and row["P"] == 1
    assert row["per example [density nats]"] == pytest.approx(rep.total_nats / 300)
    assert not any("bits" in c for c in rep.summary().columns)  # never a classification unit
    text = str(rep)
    assert "density" in text and "quantisation" in text and "C=" not in text
    table = rep.codelength_table()
    assert "total [density nats]" in table.columns and "untrained readout" in table["code"].iloc[-1]


def test_small_regression_task_is_coded_by_its_own_gaussian():
    x, y = _stream(n=20)
    rep = mdlnb.evaluate(
        mdlnb.Task("r", x, y, kind="regression"), experts="small", progress=False, cache=False
    )
    want = 0.5 * 20 * (math.log(2 * math.pi * y.var()) + 1)
    assert rep.best_expert_nats == pytest.approx(want, rel=1e-5)
    assert not rep.trained


def test_label_smoothing_is_refused_for_regression():
    x, y = _stream(n=60)
    e = Expert(readouts.linear(), 1e-2, label_smoothing=0.1)
    with pytest.raises(ValueError, match="^experts: label smoothing"):
        prequential.run(mdlnb.Task("r", x, y, kind="regression"), [e], cache=False)


def test_compare_regression_and_mixing_kinds():
    x, y = _stream(n=240, d=3, noise=0.05)
    task = mdlnb.Task("r", x, y, kind="regression")
    noise = np.random.default_rng(1).normal(size=x.shape).astype(np.float32)
    cmp = mdlnb.compare(
        {"signal": x, "noise": noise}, task, experts="small", progress=False, cache=False
    )
    assert cmp.kind == "regression" and cmp.best == "signal"
    assert "density codelengths" in str(cmp)
    tab = cmp.table().set_index("encoder")
    assert "per example [bits]" not in tab.columns  # density nats, not bits
    assert tab.loc["signal", "per example [density nats]"] == pytest.approx(
        cmp.runs[cmp.runs.encoder == "signal"]["total [nats]"].mean() / 240
    )
    clf = mdlnb.Task("c", x, (y > np.median(y)).astype(int), 2)
    with pytest.raises(ValueError, match="^encoders: 'c' is a classification task"):
        mdlnb.compare({"c": clf, "signal": x}, task, experts="small", progress=False, cache=False)


def test_classification_only_tools_refuse_a_regression_task():
    from mdlnb.baselines import blockwise, curves, probes

    x, y = _stream(n=60)
    task = mdlnb.Task("r", x, y, kind="regression")
    e = Expert(readouts.linear(), 1e-2)
    for call in (
        lambda: blockwise.blockwise(task, e),
        lambda: probes.accuracy(task),
        lambda: curves.loss_data_curve(task),
    ):
        with pytest.raises(ValueError, match="^task: .* is a regression task"):
            call()


def test_negative_density_codes_switch_exactly():
    """Densities above 1 give negative losses; stage 2 runs on rows shifted by their
    minimum. Bayesian mixture in closed form: −log (1/K) Σ_k exp(−Σ_t L_tk), float64."""
    from scipy.special import logsumexp

    from mdlnb import switching

    x, y = _stream(n=300, noise=0.01, scale=0.01, offset=0.0)  # σ ≈ 1e-4: densities ≫ 1
    lm = prequential.run(
        mdlnb.Task("r", x, y, kind="regression"), mdlnb.board.experts.preset("small"), cache=False
    )
    assert (lm.losses < 0).any()
    rep = mdlnb.Report.from_losses(lm, switching.BayesianMixture(), warn=False)
    L = lm.losses.astype(np.float64)
    want = -logsumexp(-L.sum(0)) + math.log(L.shape[1])
    assert rep.total_nats == pytest.approx(want, abs=1e-3)
    assert rep.per_step_nats.sum() == pytest.approx(rep.total_nats)
    fs = mdlnb.Report.from_losses(lm, switching.FixedShare(), warn=False)
    assert fs.total_nats <= rep.best_expert_nats + fs.regret_bound_nats + 1e-3


def test_pruned_regression_board_with_negative_codes():
    """Stage 1's pruner switches over (shifted) density codes: threshold 0 prunes
    nothing and gives the unpruned losses bit for bit; a real threshold prunes and the
    report still sums its steps."""
    from mdlnb.prequential._prune import Prune
    from mdlnb.switching import FixedShare

    x, y = _stream(n=256, noise=0.01, scale=0.01, offset=0.0)
    task = mdlnb.Task("r", x, y, kind="regression")
    board = tuple(
        mdlnb.expert_grid([readouts.linear(), readouts.mlp(1, 16)], learning_rate=[1e-3, 1e-1])
    )
    proto = lambda p: mdlnb.Protocol(
        board=board,
        batch_size=16,
        strategy=FixedShare(m=2.0),  # noqa: E731
        prune=p,
    )
    base = prequential.run(task, protocol=proto(None), cache=False)
    assert (base.losses < 0).any()
    same = prequential.run(
        task, protocol=proto(Prune(threshold=0.0, window=16, segment_batches=4)), cache=False
    )
    np.testing.assert_array_equal(same.losses, base.losses)
    pruned = prequential.run(
        task, protocol=proto(Prune(threshold=0.05, window=32, segment_batches=2)), cache=False
    )
    assert pruned.meta["prune"]["num_pruned"] > 0
    rep = mdlnb.Report.from_losses(pruned, warn=False)
    assert np.isfinite(rep.total_nats) and rep.per_step_nats.sum() == pytest.approx(rep.total_nats)


def test_one_batch_regression_stream_is_coded_by_its_own_gaussian():
    """N ≤ B: nothing is trained (prequential.run's short-circuit), and every expert's
    column is the first batch's code, B/2·Σ(log 2πσ̂² + 1) in total (σ̂² the batch's ML
    variance, re-derived here with NumPy)."""
    from mdlnb import prequential

    rng = np.random.default_rng(4)
    y = rng.normal(3.0, 2.0, size=20)
    task = mdlnb.Task("one-batch", rng.normal(size=(20, 3)), y, kind="regression")
    lm = prequential.run(task, "small", batch_size=32, progress=False, cache=False)
    assert lm.meta["untrained"] and lm.losses.shape == (20, 4)
    total = 0.5 * 20 * (np.log(2 * np.pi * y.var()) + 1.0)
    np.testing.assert_allclose(lm.losses.sum(axis=0), total, rtol=1e-5)
    assert np.all(lm.losses == lm.losses[:, :1])


def test_calibrated_experts_are_refused_on_regression_targets():
    rng = np.random.default_rng(5)
    task = mdlnb.Task("reg", rng.normal(size=(80, 3)), rng.normal(size=80), kind="regression")
    board = mdlnb.expert_grid([readouts.linear()], learning_rate=[1e-3], calibrate=[True])
    with pytest.raises(ValueError, match="calibration"):
        prequential.run(task, board, batch_size=16, progress=False, cache=False)
