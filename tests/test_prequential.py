"""Stage 1 (prequential): protocol against a NumPy re-implementation, information-theoretic
bounds, vmap-vs-alone equality, determinism, resume, cache, compile count, bad input."""

import math

import jax
import numpy as np
import pytest

import mdlnb
from mdlnb import prequential
from mdlnb.board import readouts
from mdlnb.board.experts import Expert, expert_grid
from mdlnb.prequential import _groups, _program

N, D, C, B = 200, 6, 3, 16  # 13 batches, the last one partial (8 examples)
CHUNK = 4  # 4 chunks, the last padded with 3 empty batches


def _board():
    return [
        Expert(readouts.linear(), 1e-2, ema=0.3, replay_streams=3),
        Expert(
            readouts.linear(),
            3e-3,
            b1=0.5,
            weight_decay=1e-2,
            label_smoothing=0.1,
            replay_streams=5,
        ),
        Expert(readouts.mlp(1, 16), 3e-3, ema=0.5, replay_streams=4),
    ]


def _task(seed=0, n=N, d=D, c=C, name="toy"):
    rng = np.random.default_rng(seed)
    x = (rng.normal(size=(n, d)) * [1, 2, 3, 4, 5, 6][:d] + 3).astype(np.float32)
    y = (x @ rng.normal(size=(d, c))).argmax(1)
    return mdlnb.Task(name, x, y, c)


def _run(task, experts, **kw):
    kw = {"batch_size": B, "cache": False, "chunk_batches": CHUNK, **kw}
    return prequential.run(task, experts, **kw)


# --------------------------------------------------------------------- NumPy reference


def _reference_linear(task, e: Expert, b, seed, standardize="prefix"):
    """Plain NumPy float64 re-implementation of the protocol for one linear expert
    (``standardize="none"``: the features as given, never shifted, scaled or clipped)."""
    view = (
        (lambda v, mean, inv: np.clip((v - mean) * inv, -10, 10))
        if standardize == "prefix"
        else (lambda v, mean, inv: v)
    )
    n, c = task.n, task.num_classes
    key = jax.random.PRNGKey(seed)
    order = np.asarray(jax.random.permutation(jax.random.fold_in(key, 0), n))
    x, y = task.features[order].astype(np.float64), task.y[order]
    w, bias = np.zeros((x.shape[1], c)), np.zeros(c)  # zero-initialised output layer
    ew, eb = w.copy(), bias.copy()
    m = [np.zeros_like(w), np.zeros_like(bias)]
    v = [np.zeros_like(w), np.zeros_like(bias)]
    count = 0
    mean, inv = None, None
    out = np.zeros(n)

    def logsoftmax(z):
        z = z - z.max(1, keepdims=True)
        return z - np.log(np.exp(z).sum(1, keepdims=True))

    for i in range(math.ceil(n / b)):
        lo, hi = i * b, min((i + 1) * b, n)
        if i == 0:
            out[lo:hi] = math.log(c)
        else:
            lp = logsoftmax(view(x[lo:hi], mean, inv) @ ew + eb)
            out[lo:hi] = -lp[np.arange(hi - lo), y[lo:hi]]
        mean = x[:hi].mean(0)  # prefix statistics [0, t_end)
        inv = 1 / x[:hi].std(0)
        for r in range(e.replay_streams):
            k = jax.random.fold_in(jax.random.fold_in(jax.random.fold_in(key, 2), i), r)
            pos = np.asarray(jax.random.randint(k, (b,), 0, hi))
            xr, yr = view(x[pos], mean, inv), y[pos]
            target = np.full((b, c), e.label_smoothing / c)
            target[np.arange(b), yr] += 1 - e.label_smoothing
            g = np.exp(logsoftmax(xr @ w + bias)) - target
            grads = [xr.T @ g / b, g.mean(0)]
            count += 1
            for j, (p, gr) in enumerate(zip((w, bias), grads)):
                m[j] = e.b1 * m[j] + (1 - e.b1) * gr
                v[j] = 0.999 * v[j] + 0.001 * gr**2
                mhat, vhat = m[j] / (1 - e.b1**count), v[j] / (1 - 0.999**count)
                p -= e.learning_rate * (mhat / (np.sqrt(vhat) + 1e-8) + e.weight_decay * p)
            ew = (1 - e.ema) * ew + e.ema * w
            eb = (1 - e.ema) * eb + e.ema * bias
    return order, out


def test_matches_numpy_reference_protocol():
    task = _task(1, n=50, d=4, c=3)  # 50 = 6·8 + 2: partial last batch
    e = Expert(
        readouts.linear(),
        3e-2,
        b1=0.7,
        weight_decay=1e-2,
        ema=0.4,
        label_smoothing=0.2,
        replay_streams=3,
    )
    lm = prequential.run(task, [e], batch_size=8, seed=5, cache=False)
    order, ref = _reference_linear(task, e, 8, 5)
    np.testing.assert_array_equal(lm.order, order)
    np.testing.assert_allclose(lm.losses[:, 0], ref, rtol=2e-5, atol=1e-6)
    assert np.all(lm.losses[:8, 0] == np.float32(math.log(3)))
    assert ref[-8:].mean() < math.log(3) - 0.3  # it learned: the check is not vacuous


def test_matches_numpy_reference_without_standardisation():
    """Protocol ``standardize="none"`` (the paper's): raw features reach the readout,
    not clipped to ±10 (features here reach ±60), via ``protocol=``."""
    task = _task(1, n=50, d=4, c=3)
    task = mdlnb.Task("big", task.x * 4.0, task.y, 3)
    assert np.abs(task.x).max() > 30
    e = Expert(readouts.linear(), 3e-3, b1=0.7, weight_decay=1e-2, ema=0.4, replay_streams=3)
    proto = mdlnb.Protocol(board=[e], batch_size=8, seed=5, standardize="none")
    lm = prequential.run(task, protocol=proto, cache=False)
    assert lm.protocol == proto and lm.batch_size == 8 and lm.seed == 5
    order, ref = _reference_linear(task, e, 8, 5, standardize="none")
    np.testing.assert_array_equal(lm.order, order)
    np.testing.assert_allclose(lm.losses[:, 0], ref, rtol=2e-5, atol=1e-5)
    clipped = _reference_linear(task, e, 8, 5, standardize="prefix")[1]
    assert np.abs(clipped - ref).max() > 0.1  # the two views do differ here


# --------------------------------------------------------------------- information bounds


def _entropy(counts):
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log(p)).sum())


@pytest.mark.parametrize("probs", [(0.25,) * 4, (0.55, 0.25, 0.1, 0.1)])
def test_random_labels_carry_no_information(probs):
    rng = np.random.default_rng(7)
    n = 1024
    x = rng.normal(size=(n, 16)).astype(np.float32)
    y = rng.choice(4, size=n, p=probs)
    lm = prequential.run(
        mdlnb.Task("noise", x, y, 4), mdlnb.board.experts.preset("small"), cache=False
    )
    totals = lm.totals().to_numpy()
    h_emp = n * _entropy(np.bincount(y, minlength=4))  # ML code in hindsight, nats
    assert np.all(totals >= h_emp - 2 * math.log(n))
    if len(set(probs)) == 1:
        _, best = lm.best_expert()
        assert abs(best / (n * math.log(4)) - 1) <= 0.03


def test_expert_codes_are_the_totals_in_nats_and_bits_per_example():
    """``expert_codes``: every expert's own code, shortest first, nats and nats / N / ln 2."""
    rng = np.random.default_rng(3)
    losses = rng.uniform(0.1, 2.0, size=(40, 3)).astype(np.float32)
    experts = mdlnb.board.experts.preset("small")[:3]
    lm = prequential.LossMatrix(losses, experts, np.arange(40), "toy", 4, 0, 8)
    codes = lm.expert_codes()
    totals = lm.totals().sort_values()
    assert list(codes.columns) == ["codelength [nats]", "per example [bits]"]
    assert list(codes.index) == list(totals.index)
    np.testing.assert_array_equal(codes["codelength [nats]"], totals)
    np.testing.assert_array_equal(codes["per example [bits]"], totals / 40 / math.log(2))


def test_separable_task_is_compressed():
    rng = np.random.default_rng(3)
    n = 1024
    y = rng.integers(0, 4, n)
    x = (rng.normal(size=(4, 16))[y] * 2.5 + rng.normal(size=(n, 16))).astype(np.float32)
    from sklearn.linear_model import LogisticRegression

    assert LogisticRegression(C=100).fit(x, y).score(x, y) == 1.0  # linearly separable
    lm = prequential.run(
        mdlnb.Task("sep", x, y, 4), mdlnb.board.experts.preset("small"), cache=False
    )
    _, best = lm.best_expert()
    assert best / n < 0.2 * math.log(4)
    # the last quarter is coded far better still, and better than the first
    late = lm.losses[-256:].mean(0)
    assert late.min() < 0.02 * math.log(4)
    assert np.all(late < lm.losses[32:288].mean(0))


# --------------------------------------------------------------------- batching and determinism


def test_vmapped_board_equals_each_expert_alone():
    task, board = _task(), _board()
    together = _run(task, board)
    assert together.names == [e.name for e in board]
    for k, e in enumerate(board):
        alone = _run(task, [e])
        np.testing.assert_allclose(together.losses[:, k], alone.losses[:, 0], rtol=1e-5, atol=1e-7)
    # the experts really differ, so a column mix-up would be caught
    assert np.abs(together.losses[B:, 0] - together.losses[B:, 2]).max() > 1e-2


def test_deterministic_and_seed_dependent():
    task, board = _task(), _board()
    a, b = _run(task, board), _run(task, board)
    np.testing.assert_array_equal(a.losses, b.losses)
    c = _run(task, board, seed=1)
    assert not np.array_equal(np.sort(a.order), a.order) and not np.array_equal(a.order, c.order)
    assert np.abs(a.totals().to_numpy() - c.totals().to_numpy()).max() > 1e-3


def test_replay_override_and_zero_replay_is_uniform():
    task = _task()
    lm = _run(task, _board(), replay_streams=0)
    assert all(e.replay_streams == 0 for e in lm.experts)
    np.testing.assert_allclose(lm.losses, math.log(C), rtol=1e-6)  # never trained: uniform code


def test_no_peeking_at_future_examples():
    task, board = _task(), _board()
    base = _run(task, board)
    cut = 5 * B  # start of batch 5
    x = task.x.copy()
    future = base.order[cut:]
    x[future] = x[future] * 10 - 7  # change every later example
    y = task.y.copy()
    y[future] = (y[future] + 1) % C
    other = _run(mdlnb.Task("toy", x, y, C), board)
    np.testing.assert_array_equal(base.losses[:cut], other.losses[:cut])
    assert not np.allclose(base.losses[cut:], other.losses[cut:])


def test_standardization_makes_losses_affine_invariant():
    task, board = _task(), _board()
    a = _run(task, board)
    scaled = mdlnb.Task("toy", task.x * np.float32(100) - 40, task.y, C)
    np.testing.assert_allclose(_run(scaled, board).losses, a.losses, rtol=2e-3, atol=2e-4)
    raw = _run(scaled, board, standardize=False)
    assert np.abs(raw.losses - a.losses).max() > 0.1


# --------------------------------------------------------------------- runtime behaviour


def test_compiles_once_per_run():
    task = _task(n=150)  # a chunk of 3 batches: a new shape, one compile
    before = prequential.trace_count()
    _run(task, _board(), chunk_batches=3)  # 10 batches in 4 chunks
    assert prequential.trace_count() == before + 1
    _run(task, _board(), chunk_batches=3)
    assert prequential.trace_count() == before + 1  # reused, not retraced


def _kill_at_second_report():
    """A progress callback that kills the run at its second report (after 2 chunks)."""
    seen = []

    def killer(done, total, best):
        seen.append(done)
        if len(seen) == 2:
            raise KeyboardInterrupt("simulated kill")

    return killer


def test_kill_and_resume_is_bit_identical(tmp_path, monkeypatch):
    task, board = _task(), _board()
    full = _run(task, board)

    with pytest.raises(KeyboardInterrupt):
        _run(
            task,
            board,
            checkpoint_dir=tmp_path,
            checkpoint_every_s=0,
            progress=_kill_at_second_report(),
        )
    assert len(list(tmp_path.glob("*.ckpt.npz"))) == 1
    resumed_at, built = [], []
    init_group = _groups._init_group

    def recording(*args):  # whether the initial state was built (not just traced)
        out = init_group(*args)
        built.append(not isinstance(jax.tree_util.tree_leaves(out)[0], jax.core.Tracer))
        return out

    monkeypatch.setattr(_groups, "_init_group", recording)
    res = _run(
        task,
        board,
        checkpoint_dir=tmp_path,
        checkpoint_every_s=0,
        progress=lambda d, t, b: resumed_at.append(d),
    )
    assert resumed_at[0] == 3 * CHUNK * B  # resumed after chunk 2, not from 0
    assert built and not any(built)  # its state: from the file only
    np.testing.assert_array_equal(res.losses, full.losses)
    assert not list(tmp_path.glob("*.ckpt.npz"))  # removed when finished


def test_losses_do_not_depend_on_the_chunk_size_and_resume_under_another(tmp_path):
    task, board = _task(), _board()
    full = _run(task, board)  # chunks of 4 batches
    for chunk in (1, 5, 128, "auto"):
        np.testing.assert_array_equal(_run(task, board, chunk_batches=chunk).losses, full.losses)

    with pytest.raises(KeyboardInterrupt):  # killed after batch 6 of 13
        _run(
            task,
            board,
            chunk_batches=3,
            checkpoint_dir=tmp_path,
            checkpoint_every_s=0,
            progress=_kill_at_second_report(),
        )
    resumed_at = []
    res = _run(
        task,
        board,
        chunk_batches=5,
        checkpoint_dir=tmp_path,
        checkpoint_every_s=0,
        progress=lambda d, t, b: resumed_at.append(d),
    )
    assert resumed_at == [11 * B, N]  # batches 7-11, then 12-13
    np.testing.assert_array_equal(res.losses, full.losses)


def test_slow_checkpoints_are_spaced_by_their_cost(tmp_path, monkeypatch):
    import time

    from mdlnb.prequential import _checkpointer

    saves = []
    save = _checkpointer._save_checkpoint

    def slow_save(*a, **k):  # a checkpoint that takes 0.5 s to write (the vtab state: ~1 min)
        saves.append(time.perf_counter())
        time.sleep(0.5)
        return save(*a, **k)

    monkeypatch.setattr(_checkpointer, "_save_checkpoint", slow_save)
    task, board = _task(), _board()
    kw = dict(chunk_batches=1, checkpoint_dir=tmp_path)
    _run(task, board, checkpoint_every_s=0, **kw)  # 0: after every chunk, as asked
    assert len(saves) == 12
    saves.clear()
    res = _run(task, board, checkpoint_every_s=1e-3, **kw)  # then not within 0.5 s / 0.1 = 5 s
    assert 1 <= len(saves) <= 2 and all(np.diff(saves) >= 5.0)
    np.testing.assert_array_equal(res.losses, _run(task, board).losses)


def test_auto_chunk_batches_bounds_the_flops_of_one_call():
    from mdlnb.prequential import _run as run_module

    one = Expert(readouts.mlp(2, 256), 1e-3, replay_streams=10)
    # B · flops · (1 + 3 · replay): 32 · 2·(64·256 + 256·256 + 256·10) · 31 = 1.66e8 per batch
    per_batch = 32 * 2 * (64 * 256 + 256 * 256 + 256 * 10) * 31
    assert run_module.auto_chunk_batches([one], 64, 10, 32) == prequential.DEFAULT_CHUNK_BATCHES
    k = 500  # 8.4e10 per batch: 23 batches
    assert (
        run_module.auto_chunk_batches([one] * k, 64, 10, 32)
        == int(run_module.CHUNK_FLOPS // (k * per_batch))
        == 23
    )
    vtab = mdlnb.protocol("paper-vtab").experts()  # seconds per batch on a CPU
    assert run_module.auto_chunk_batches(vtab, 64, 10, 32) == 1
    with pytest.raises(ValueError, match="chunk_batches: must be an int >= 1 or 'auto'"):
        _run(_task(), _board(), chunk_batches="big")


def test_cache_hit(monkeypatch, tmp_path):
    monkeypatch.setenv("MDLNB_CACHE", str(tmp_path))
    task, board = _task(), _board()
    first = _run(task, board, cache=True)
    files = list((tmp_path / "losses").glob("*.npz"))
    assert len(files) == 1

    def boom(*a, **k):
        raise AssertionError("recomputed despite cache")

    monkeypatch.setattr(_program, "_run_chunk", boom)
    second = _run(task, board, cache=True)
    np.testing.assert_array_equal(second.losses, first.losses)
    assert second.names == first.names and second.meta == first.meta
    with pytest.raises(AssertionError, match="recomputed"):
        _run(task, board, cache=True, seed=3)  # different key: not a hit


def test_loss_matrix_roundtrip_and_summaries(tmp_path):
    lm = _run(_task(), _board())
    path = lm.save(tmp_path / "lm.npz")
    back = prequential.LossMatrix.load(path)
    np.testing.assert_array_equal(back.losses, lm.losses)
    np.testing.assert_array_equal(back.order, lm.order)
    assert back.experts == lm.experts and back.seed == 0 and back.batch_size == B
    sums = lm.losses.astype(np.float64).sum(0)
    np.testing.assert_allclose(lm.totals().to_numpy(), sums)
    assert lm.best_expert() == (int(np.argmin(sums)), pytest.approx(sums.min()))
    assert mdlnb.LossMatrix is prequential.LossMatrix


# --------------------------------------------------------------------- bad input


def _nan_task():
    t = _task()
    x = t.x.copy()
    x[3, 2] = np.nan
    object.__setattr__(t, "x", x)  # bypass Task's own check
    return t


def _bad_label_task():
    t = _task()
    object.__setattr__(t, "y", np.full(N, C, np.int32))
    return t


@pytest.mark.parametrize(
    "make, kwargs, arg",
    [
        (lambda: "not a task", {}, "task"),
        (_nan_task, {}, "task.x"),
        (_bad_label_task, {}, "task.y"),
        (_task, {"batch_size": 0}, "batch_size"),
        (_task, {"experts": []}, "experts"),
        (_task, {"experts": ["linear"]}, "experts"),
        (_task, {"seed": -1}, "seed"),
        (_task, {"replay_streams": -2}, "replay_streams"),
        (_task, {"checkpoint_every_s": -1}, "checkpoint_every_s"),
    ],
)
def test_bad_input(make, kwargs, arg):
    kwargs = {"experts": _board(), **kwargs}
    with pytest.raises(ValueError, match=arg):
        prequential.run(make(), cache=False, **kwargs)


def test_empty_task_and_nan_features_rejected_at_construction():
    with pytest.raises(ValueError, match="x"):
        mdlnb.Task("e", np.zeros((0, 3), np.float32), np.zeros(0, int), 2)
    with pytest.raises(ValueError, match="x"):
        mdlnb.Task("e", np.full((4, 3), np.nan, np.float32), np.zeros(4, int), 2)
    with pytest.raises(ValueError, match="y"):
        mdlnb.Task("e", np.zeros((4, 3), np.float32), np.array([0, 1, 2, 5]), 3)


def test_expert_grid_board_runs_with_mixed_replay():
    grid = expert_grid([readouts.linear()], learning_rate=[1e-2], replay_streams=[1, 3])
    lm = _run(_task(), grid)
    # one more replay step per batch learns faster on a separable task
    assert lm.totals().iloc[1] < lm.totals().iloc[0]


def test_standardisation_is_robust_to_features_constant_in_the_prefix():
    """A feature that is constant up to 1e-6 noise in the first batches of the
    stream and then informative must not blow the code up: its variance
    estimate is tiny, and unclipped z-scores of ~1e5 cost tens of nats."""
    rng = np.random.default_rng(3)
    n, c = 256, 2
    y = rng.integers(0, c, n)
    x = rng.normal(size=(n, 4)).astype(np.float32)
    t = np.empty(n, int)
    t[prequential.stream_order(0, n)] = np.arange(n)  # stream position of each example
    x[:, 0] = np.where(t < 64, 1e-6 * rng.normal(size=n), 2.0 * y - 1.0)
    task = mdlnb.Task("dead-unit", x, y, c)
    board = [
        Expert(readouts.linear(), 1e-2, replay_streams=4),
        Expert(readouts.linear(), 1e-1, replay_streams=10),
    ]
    losses = prequential.run(task, board, batch_size=32, seed=0, cache=False, progress=False).losses
    assert losses.max() < 20 * math.log(c)  # unclipped: > 1e4 nats
    assert losses[-64:].mean(0).min() < 0.5 * math.log(c)  # the feature is used once informative
