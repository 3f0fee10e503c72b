"""Forward calibration (``Expert(calibrate=True)``, :mod:`mdlnb.prequential._calibration`)
against a NumPy/SciPy re-derivation: β_t = argmin of the log-loss of the examples
coded before batch t under the logits they were coded with (scipy.optimize), no
leakage, β = 1 / calibration-off equivalence, the protocol and cache key, and
validation."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import optimize, special

import mdlnb
from mdlnb import prequential
from mdlnb.baselines.blockwise import blockwise
from mdlnb.board import readouts as R
from mdlnb.prequential import _calibration as cal

B = 16


@dataclasses.dataclass(frozen=True)
class _Fixed(R.Readout):
    """A readout whose output layer starts at N(0, 1) weights (not zeros), so that with
    ``replay_streams=0`` its logits are a fixed, non-trivial function of x."""

    def init(self, key, in_dim, num_classes):
        layers = list(super().init(key, in_dim, num_classes))
        w = jax.random.normal(jax.random.fold_in(key, 7), layers[-1]["w"].shape)
        layers[-1] = {"w": w, "b": layers[-1]["b"]}
        return tuple(layers)


def _toy(n=200, c=5, d=6, seed=0, scale=3.0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)).astype(np.float32)
    w = rng.normal(size=(d, c))
    y = np.array([rng.choice(c, p=special.softmax(scale * xi @ w)) for xi in x])
    return mdlnb.Task("toy", x, y, c)


def _loss(u, z, y):
    """Σ ℓ_i(e^u) in float64: logsumexp(β z_i) − β z_{i,y_i}."""
    b = np.exp(u)
    return float(np.sum(special.logsumexp(b * z, axis=1) - b * z[np.arange(len(y)), y]))


def _reference(z, y, bs, fit):
    """Per-example losses of the forward-calibrated code of logits ``z`` (N, C):
    batch 0 uniform, batch 1 at β = 1, batch t ≥ 2 at exp(fit(z[bs:t·bs], y[bs:t·bs]))."""
    z = np.asarray(z, np.float64)
    n, c = z.shape
    out = np.empty(n)
    for lo in range(0, n, bs):
        t, sl = lo // bs, slice(lo, lo + bs)
        if t == 0:
            out[sl] = np.log(c)
            continue
        beta = 1.0 if t == 1 else np.exp(fit(z[bs:lo], y[bs:lo]))
        logp = beta * z[sl] - special.logsumexp(beta * z[sl], axis=1, keepdims=True)
        out[sl] = -logp[np.arange(len(y[sl])), y[sl]]
    return out


def _scipy_fit(z, y):
    """The exact minimiser of the past log-loss in log β on [−4, 4] (scipy)."""
    return optimize.minimize_scalar(
        lambda u: _loss(u, z, y),
        bounds=(cal.LOG_BETA_MIN, cal.LOG_BETA_MAX),
        method="bounded",
        options={"xatol": 1e-9},
    ).x


def _grid_fit(z, y):
    """The module's rule re-derived in NumPy: grid minimiser, then the parabola's vertex."""
    u = np.linspace(cal.LOG_BETA_MIN, cal.LOG_BETA_MAX, cal.GRID)
    f = np.array([_loss(v, z, y) for v in u])
    i = int(np.argmin(f))
    if i in (0, cal.GRID - 1):
        return u[i]
    f0, f1, f2 = f[i - 1 : i + 2]
    return u[i] + (u[1] - u[0]) * 0.5 * (f0 - f2) / (f0 - 2 * f1 + f2)


def _fixed_run(task, seed=3, **kw):
    """Stage 1 on one fixed-logit expert (replay 0), calibrated and not; its logits in
    stream order."""
    e = mdlnb.Expert(_Fixed("linear", "linear", 0, 0), 1e-3, replay_streams=0, calibrate=True)
    lm, params = prequential.run_with_params(
        task,
        [e, e.replace(calibrate=False)],
        batch_size=B,
        seed=seed,
        standardize="none",
        cache=False,
        progress=False,
        **kw,
    )
    z = np.asarray(_Fixed("linear", "linear", 0, 0).apply(params[0]["ema"], task.x[lm.order]))
    return lm, z, np.asarray(task.y)[lm.order]


@pytest.fixture(scope="module")
def fixed():
    return _fixed_run(_toy())


# ----------------------------------------------------------------------------- the rule


def test_stage1_matches_numpy_reference_of_the_grid_rule(fixed):
    lm, z, y = fixed
    ref = _reference(z, y, B, _grid_fit)
    np.testing.assert_allclose(lm.losses[:, 0], ref, rtol=0, atol=2e-5)
    assert abs(lm.losses[:, 0].sum(dtype=np.float64) - ref.sum()) < 1e-3


def test_stage1_near_the_exact_scipy_minimiser(fixed):
    lm, z, y = fixed
    exact = _reference(z, y, B, _scipy_fit)
    # the grid + parabola log β is within 1e-2 of the exact argmin (measured ≤ 0.008
    # here); the code differs at second order
    for lo in range(2 * B, len(y), B):
        assert abs(_grid_fit(z[B:lo], y[B:lo]) - _scipy_fit(z[B:lo], y[B:lo])) < 1e-2
    np.testing.assert_allclose(lm.losses[:, 0], exact, rtol=0, atol=1e-2)
    assert abs(lm.losses[:, 0].sum(dtype=np.float64) - exact.sum()) < 0.05
    # and calibration pays here: the fixed logits are far too cold or too hot
    assert lm.losses[:, 0].sum() < lm.losses[:, 1].sum() - 5


@pytest.mark.parametrize("u0", [0.0, 0.3, -1.234, 2.5])
def test_log_beta_exact_on_a_quadratic(u0):
    u = np.asarray(cal.grid(), np.float64)
    s = jnp.asarray((u - u0) ** 2 * 7.0, jnp.float32)
    assert float(cal.log_beta(s)) == pytest.approx(u0, abs=1e-5)


@pytest.mark.parametrize("u0,end", [(9.0, cal.LOG_BETA_MAX), (-9.0, cal.LOG_BETA_MIN)])
def test_log_beta_clipped_to_the_grid(u0, end):
    u = np.asarray(cal.grid(), np.float64)
    assert float(cal.log_beta(jnp.asarray((u - u0) ** 2, jnp.float32))) == pytest.approx(end)


def test_grid_fit_agrees_with_scipy_on_random_streams():
    rng = np.random.default_rng(1)
    for _ in range(5):
        z = rng.normal(size=(80, 4)) * rng.uniform(0.2, 5)
        y = rng.integers(0, 4, 80)
        y[:60] = z[:60].argmax(1)  # mostly right: β* well inside the grid
        assert abs(_grid_fit(z, y) - _scipy_fit(z, y)) < 5e-3


def test_code_function_is_the_program(fixed):
    lm, z, y = fixed
    np.testing.assert_array_equal(np.asarray(cal.code(z, y, B)), lm.losses[:, 0])


# ----------------------------------------------------------------------------- no leakage


def test_changing_a_later_label_never_changes_an_earlier_loss():
    task = _toy(n=160)
    board = mdlnb.expert_grid(
        [R.linear(), R.mlp(1, 16)], learning_rate=[1e-2], replay_streams=[2], calibrate=True
    )
    kw = dict(batch_size=B, seed=0, cache=False, progress=False)
    lm = prequential.run(task, board, **kw)
    p = 90  # stream position in batch 5
    y2 = np.asarray(task.y).copy()
    i = lm.order[p]
    y2[i] = (y2[i] + 1) % task.num_classes
    lm2 = prequential.run(mdlnb.Task("toy", task.x, y2, task.num_classes), board, **kw)
    np.testing.assert_array_equal(lm.losses[:p], lm2.losses[:p])
    rest = np.r_[p + 1 : (p // B + 1) * B]  # the rest of its batch: coded before it is seen
    np.testing.assert_array_equal(lm.losses[rest], lm2.losses[rest])
    assert not np.array_equal(lm.losses[(p // B + 1) * B :], lm2.losses[(p // B + 1) * B :])


def test_code_uses_only_earlier_batches():
    rng = np.random.default_rng(2)
    z = rng.normal(size=(100, 3)) * 4
    y = rng.integers(0, 3, 100)
    base = np.asarray(cal.code(z, y, B))
    for p in (20, 50, 99):
        z2, y2 = z.copy(), y.copy()
        z2[p] *= -3
        y2[p] = (y2[p] + 1) % 3
        out = np.asarray(cal.code(z2, y2, B))
        end = (p // B + 1) * B
        keep = np.r_[:p, p + 1 : min(end, 100)]
        np.testing.assert_array_equal(out[keep], base[keep])


# ----------------------------------------------------------------------------- β = 1 / off


def test_first_two_batches_are_the_uncalibrated_code(fixed):
    lm, _, _ = fixed
    # batch 0 uniform, batch 1 at β = 1: the calibrated expert's first 2B losses are
    # exactly its uncalibrated twin's (same parameters: training does not see β)
    np.testing.assert_array_equal(lm.losses[: 2 * B, 0], lm.losses[: 2 * B, 1])
    assert not np.array_equal(lm.losses[2 * B :, 0], lm.losses[2 * B :, 1])


def test_calibration_does_not_change_training_or_the_uncalibrated_experts():
    task = _toy(n=120)
    board = mdlnb.expert_grid([R.linear(), R.mlp(1, 16)], learning_rate=[3e-3], replay_streams=[2])
    kw = dict(batch_size=B, seed=1, progress=False)
    plain, p_plain = prequential.run_with_params(task, board, cache=False, **kw)
    twins = mdlnb.expert_grid(
        [R.linear(), R.mlp(1, 16)],
        learning_rate=[3e-3],
        replay_streams=[2],
        calibrate=[False, True],
    )
    both, p_both = prequential.run_with_params(task, twins, cache=False, **kw)
    np.testing.assert_array_equal(both.losses[:, ::2], plain.losses)
    # and a calibrated expert's losses do not depend on the rest of the board (what
    # slicing a board by memory relies on)
    alone = prequential.run(task, twins[1::2], cache=False, **kw)
    np.testing.assert_array_equal(both.losses[:, 1::2], alone.losses)
    for k in range(len(board)):  # the calibrated twin trained to the same parameters
        for a, b in zip(
            jax.tree_util.tree_leaves(p_both[2 * k + 1]), jax.tree_util.tree_leaves(p_plain[k])
        ):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_uncalibrated_config_name_and_cache_key_unchanged():
    e = mdlnb.Expert(R.mlp(2), 3e-4, weight_decay=1e-4, ema=1e-2)
    assert e.name == "mlp2-lr3e-4-wd1e-4-ema1e-2-r10"
    assert "calibrate" not in e.config()
    assert e.replace(calibrate=True).name == "mlp2-lr3e-4-wd1e-4-ema1e-2-r10-cal"
    assert e.replace(calibrate=True).config()["calibrate"] is True
    for x in (e, e.replace(calibrate=True)):
        assert mdlnb.Expert.from_config(x.config()) == x
    p = mdlnb.protocol("default")
    assert p.resolve(calibrate=False).stage1() == p.stage1()
    assert p.resolve(calibrate=True).stage1() != p.stage1()
    assert "calibrate" not in p.to_dict()


def test_protocol_records_calibration():
    p = mdlnb.protocol("small", calibrate=True)
    assert all(e.calibrate for e in p.experts())
    assert p.to_dict()["calibrate"] is True
    assert mdlnb.Protocol.from_dict(p.to_dict()) == p
    assert "calibrate=True" in repr(p)
    task = _toy(n=64)
    lm = prequential.run(task, protocol=p, cache=False, progress=False)
    assert lm.protocol.calibrate is True
    assert all(e.name.endswith("-cal") for e in lm.experts)


def test_cached_calibrated_run_is_read_back(tmp_path, monkeypatch):
    monkeypatch.setenv("MDLNB_CACHE", str(tmp_path))
    task = _toy(n=64)
    kw = dict(batch_size=B, seed=0, progress=False)
    board = mdlnb.expert_grid(
        R.linear(), learning_rate=[1e-2], replay_streams=[1], calibrate=[False, True]
    )
    a = prequential.run(task, board, **kw)
    b = prequential.run(task, board, **kw)
    np.testing.assert_array_equal(a.losses, b.losses)
    off = prequential.run(task, board[:1], **kw)
    assert off.meta["cache_key"] != a.meta["cache_key"]


# ----------------------------------------------------------------------------- validation


@pytest.mark.parametrize("bad", ["yes", 1, None, 0.0])
def test_expert_rejects_non_bool(bad):
    with pytest.raises(ValueError, match="calibrate"):
        mdlnb.Expert(R.linear(), 1e-3, calibrate=bad)


def test_grid_validation():
    with pytest.raises(ValueError, match="calibrate: must not be empty"):
        mdlnb.expert_grid(R.linear(), calibrate=[])
    with pytest.raises(ValueError, match="repeats"):
        mdlnb.expert_grid(R.linear(), calibrate=[True, True])
    g = mdlnb.expert_grid(R.linear(), learning_rate=[1e-3, 1e-2], calibrate=[False, True])
    assert [e.calibrate for e in g] == [False, True, False, True]


def test_protocol_rejects_non_bool():
    with pytest.raises(ValueError, match="calibrate"):
        mdlnb.protocol("small", calibrate="on")


def test_offline_estimators_reject_calibrated_experts():
    e = mdlnb.Expert(R.linear(), 1e-3, calibrate=True)
    task = _toy(n=64)
    with pytest.raises(ValueError, match="calibrate"):
        blockwise(task, e)
    with pytest.raises(ValueError, match="calibrate"):
        mdlnb.baselines.curves.loss_data_curve(task, e, sizes=[16, 32])


# ----------------------------------------------------------------------------- the machinery


def test_pruned_calibrated_run_keeps_the_survivors_losses():
    task = mdlnb.data.load("digits").take(np.arange(96))
    board = tuple(
        mdlnb.expert_grid([R.linear(), R.mlp(1, 32)], learning_rate=[1e-3, 1e-2], calibrate=True)
    )
    proto = mdlnb.protocol("default", board=board)
    full = prequential.run(task, protocol=proto, cache=False, progress=False, memory_budget=None)
    pruned = prequential.run(
        task,
        protocol=proto.replace(prune=mdlnb.Prune(threshold=0.6, window=32, segment_batches=1)),
        cache=False,
        progress=False,
        memory_budget=None,
    )
    at = np.asarray(pruned.meta["prune"]["pruned_at"])
    assert 0 < (at < task.n).sum() < len(board)
    # exact up to the first pruning step; then the compacted groups carry their
    # summaries along (compacted blocks may round the last bit differently, as in
    # tests/test_prune.py)
    np.testing.assert_array_equal(pruned.losses[: at.min()], full.losses[: at.min()])
    live = np.arange(task.n)[:, None] < at
    np.testing.assert_allclose(pruned.losses[live], full.losses[live], rtol=1e-4, atol=1e-5)


def test_checkpoint_round_trip_holds_the_summaries(tmp_path):
    from mdlnb.prequential import _checkpointer, _groups

    board = mdlnb.expert_grid(
        [R.linear(), R.mlp(1, 16)], learning_rate=[1e-3], calibrate=[False, True]
    )
    _, _, _, state, _ = _groups._layout(board, 1, 6, 5, B, 0, None, "float32")
    assert [g.calib is None for g in state] == [True, False, True, False]
    state = tuple(g._replace(calib=g.calib + 1.5) if g.calib is not None else g for g in state)
    like = _groups._layout(board, 1, 6, 5, B, 0, None, "float32", build=False)[3]
    path = tmp_path / "c.ckpt.npz"
    _checkpointer._save_checkpoint(
        path, "k", state, np.zeros((4, 4)), (np.zeros(6), np.zeros(6), 0.0), 3
    )
    back = _checkpointer._load_checkpoint(path, "k", like)[0]
    for a, b in zip(jax.tree_util.tree_leaves(state), jax.tree_util.tree_leaves(back)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert float(back[1].calib[0, 0]) == 1.5
