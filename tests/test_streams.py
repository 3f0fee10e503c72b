"""Stage 1 over a batch of streams (:func:`mdlnb.prequential.run_streams`): the exactness
contract of each layout against solo runs, one compiled program per shape bucket, the
cache and checkpoints of stacked calls, the memory plan's width, bad input; and the
callers that batch their streams (``evaluate(seeds=...)``, the encoder grid's pinned
workers)."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import mdlnb
from mdlnb import data, prequential
from mdlnb.board.experts import Expert, expert_grid
from mdlnb.board.readouts import linear, mlp
from mdlnb.prequential import _memory, _stacked, _streams

B = 32


def _digits(n=160, seed=0, offset=0.0, name=None):
    """Real inputs: sklearn's digits (8×8 pixels, D = 64, C = 10), a stratified subsample;
    ``offset`` shifts the pixels, a second representation of the same labels."""
    t = data.load("digits", size=n, seed=seed)
    x = t.x.reshape(t.n, -1).astype(np.float32) + np.float32(offset)
    return mdlnb.Task(name or f"digits{offset:g}", x, t.y, t.num_classes)


def _board():
    return [
        Expert(linear(), 1e-2, ema=0.5, replay_streams=3),
        Expert(mlp(1, 32), 3e-3, replay_streams=2),
    ]


def _solo(task, seed, **kw):
    return prequential.run(
        task, _board(), batch_size=B, seed=seed, cache=False, progress=False, **kw
    )


def test_sequential_streams_are_their_solo_runs_bit_for_bit_under_the_same_key():
    tasks = [_digits(), _digits(offset=0.5)]
    streams = [(t, s) for t in tasks for s in (0, 1)]
    solo = [_solo(t, s) for t, s in streams]
    got = prequential.run_streams(streams, _board(), batch_size=B, layout="sequential", cache=False)
    for a, b in zip(solo, got):
        np.testing.assert_array_equal(b.losses, a.losses)
        np.testing.assert_array_equal(b.order, a.order)
        assert b.meta["cache_key"] == a.meta["cache_key"]
        assert "streams" not in b.meta and b.seed == a.seed and b.task_name == a.task_name


def test_a_bucket_compiles_one_program_whatever_the_number_of_streams():
    t = _digits()
    task = mdlnb.Task("digits-48", t.x[:, 8:56], t.y, 10)  # D = 48: a shape no other test uses
    before = prequential.trace_count()
    prequential.run_streams(
        [(task, s) for s in (0, 1, 2)], _board(), batch_size=B, layout="sequential", cache=False
    )
    assert prequential.trace_count() == before + 1
    prequential.run_streams(
        [(task, s) for s in range(3, 8)], _board(), batch_size=B, layout="sequential", cache=False
    )
    assert prequential.trace_count() == before + 1  # 5 more streams, no new program


def test_stacked_streams_agree_with_their_solo_runs_to_round_off_under_a_key_naming_w():
    tasks = [_digits(), _digits(offset=0.5)]
    streams = [(tasks[0], 0), (tasks[1], 0), (tasks[0], 3)]
    before = prequential.trace_count()
    got = prequential.run_streams(streams, _board(), batch_size=B, layout="stacked", cache=False)
    assert prequential.trace_count() == before + 1  # one stacked program for the bucket
    for (t, s), b in zip(streams, got):
        a = _solo(t, s)
        assert b.meta["streams"] == 3  # the bucket's streams, in one call
        assert b.meta["cache_key"] != a.meta["cache_key"]
        np.testing.assert_array_equal(b.order, a.order)
        # batch 0 is coded uniformly; the first trained batch differs by round-off at most
        np.testing.assert_array_equal(b.losses[:B], np.float32(np.log(10)))
        np.testing.assert_allclose(b.losses[B : 2 * B], a.losses[B : 2 * B], rtol=0, atol=1e-4)
        # later, training amplifies it, but each expert's code stays that of the protocol
        np.testing.assert_allclose(b.losses.sum(axis=0), a.losses.sum(axis=0), rtol=2e-2)


def test_calls_of_a_bucket_share_one_stacked_program():
    task = _digits(offset=2.0)
    budget = _memory.FIXED_BYTES + int(2.5 * _memory.stream_bytes(_board(), task.n, 64, 10))
    before = prequential.trace_count()
    got = prequential.run_streams(
        [(task, s) for s in range(20, 25)],
        _board(),
        batch_size=B,
        layout="stacked",
        cache=False,
        memory_budget=budget,
    )
    assert prequential.trace_count() == before + 1  # 3 calls of W = 2, one program
    assert {lm.meta["streams"] for lm in got} == {2}


def test_copies_of_one_stream_in_a_stacked_call_get_identical_losses():
    task = _digits()
    got = prequential.run_streams(
        [(task, 2)] * 3, _board(), batch_size=B, layout="stacked", cache=False
    )
    for lm in got[1:]:
        np.testing.assert_array_equal(lm.losses, got[0].losses)


def test_stacked_results_are_cached_under_their_keys(monkeypatch):
    streams = [(_digits(), 0), (_digits(offset=1.0), 0)]
    first = prequential.run_streams(streams, _board(), batch_size=B, layout="stacked")
    monkeypatch.setattr(_stacked, "_compute_call", lambda *a, **k: pytest.fail("recomputed"))
    again = prequential.run_streams(streams, _board(), batch_size=B, layout="stacked")
    for a, b in zip(first, again):
        np.testing.assert_array_equal(b.losses, a.losses)
        assert b.meta["cache_key"] == a.meta["cache_key"]


def _kill_at_second_report():
    seen = []

    def killer(done, total, best):
        seen.append(done)
        if len(seen) == 2:
            raise KeyboardInterrupt("simulated kill")

    return killer


def test_a_killed_stacked_call_resumes_from_its_checkpoint_bit_identically(tmp_path):
    streams = [(_digits(), 5), (_digits(offset=0.5), 6)]  # seeds no other test caches
    kw = dict(batch_size=B, layout="stacked", cache=False, chunk_batches=1)
    full = prequential.run_streams(streams, _board(), **kw)
    opts = dict(kw, cache=True, checkpoint_dir=tmp_path, checkpoint_every_s=0)
    with pytest.raises(KeyboardInterrupt):
        prequential.run_streams(streams, _board(), progress=_kill_at_second_report(), **opts)
    assert len(list(tmp_path.glob("*.ckpt.npz"))) == 1  # one file for the call
    seen = []
    res = prequential.run_streams(
        streams, _board(), progress=lambda d, t, b: seen.append(d), **opts
    )
    assert seen[0] == 3 * 2 * B  # resumed after batch 2 of 5
    for a, b in zip(full, res):
        np.testing.assert_array_equal(b.losses, a.losses)
    assert not list(tmp_path.glob("*.ckpt.npz"))


def test_regression_and_calibrated_boards_stack():
    t = _digits()
    reg = mdlnb.Task("digits-reg", t.x, t.x[:, :2].sum(1) + t.y, kind="regression")
    board = [Expert(linear(), 3e-3, replay_streams=2), Expert(mlp(1, 16), 3e-3, replay_streams=2)]
    got = prequential.run_streams(
        [(reg, 0), (reg, 1)], board, batch_size=B, layout="stacked", cache=False
    )
    for s, b in zip((0, 1), got):
        a = prequential.run(reg, board, batch_size=B, seed=s, cache=False, progress=False)
        np.testing.assert_array_equal(b.losses[:B], a.losses[:B])  # the first batch's own code
        np.testing.assert_allclose(b.losses.sum(0), a.losses.sum(0), rtol=2e-2)
        assert b.meta["target"] == a.meta["target"]
    cal = [e.replace(calibrate=True) for e in _board()]
    got = prequential.run_streams(
        [(t, 0), (t, 1)], cal, batch_size=B, layout="stacked", cache=False
    )
    for s, b in zip((0, 1), got):
        a = prequential.run(t, cal, batch_size=B, seed=s, cache=False, progress=False)
        np.testing.assert_allclose(b.losses.sum(0), a.losses.sum(0), rtol=2e-2)


def test_streams_that_cannot_stack_run_on_their_own_keys():
    short = _digits(n=20)  # N <= B: coded uniformly, nothing trained
    alone = _digits(n=96)  # a bucket of one stream
    got = prequential.run_streams(
        [(short, 0), (alone, 0)], _board(), batch_size=B, layout="stacked", cache=False
    )
    assert got[0].meta["untrained"]
    np.testing.assert_array_equal(got[1].losses, _solo(alone, 0).losses)
    assert "streams" not in got[1].meta


def test_on_result_sees_every_stream_once_and_results_keep_the_input_order():
    streams = [(_digits(n=96, offset=o), s) for o in (0.0, 0.25) for s in (4, 5)]
    seen = []
    got = prequential.run_streams(
        streams,
        _board(),
        batch_size=B,
        cache=False,
        on_result=lambda i, lm: seen.append((i, lm.seed)),
    )
    assert sorted(seen) == [(0, 4), (1, 5), (2, 4), (3, 5)]
    assert [lm.seed for lm in got] == [4, 5, 4, 5]
    assert [lm.task_name for lm in got] == [t.name for t, _ in streams]


def test_streams_per_call_is_the_largest_power_of_two_that_fits():
    board = expert_grid([mlp(2, 64)], learning_rate=[1e-3, 3e-3])
    per = _memory.stream_bytes(board, 1000, 32, 10)
    # by hand: 2 experts × (1.4 × 16 B × params + 4 B × N) + 4 B × N × (D + 1)
    params = 32 * 64 + 64 + 64 * 64 + 64 + 64 * 10 + 10
    assert per == 2 * (int(1.4 * 16 * params) + 4000) + 4 * 1000 * 33
    for fit in (1, 2, 3, 7, 8, 100):
        budget = _memory.FIXED_BYTES + fit * per
        w = _memory.streams_per_call(board, 1000, 32, 10, budget_bytes=budget)
        assert w <= fit < 2 * w and w & (w - 1) == 0
    assert _memory.streams_per_call(board, 1000, 32, 10, budget_bytes=1) == 1


def test_bad_streams_and_layouts_are_refused_by_name():
    t = _digits(n=40)
    with pytest.raises(ValueError, match="streams: is empty"):
        prequential.run_streams([], _board())
    with pytest.raises(TypeError, match="streams"):
        prequential.run_streams(t, _board())
    with pytest.raises(TypeError, match="streams"):
        prequential.run_streams([(t.x, 0)], _board())
    with pytest.raises(ValueError, match="streams: must be .* a seed an int >= 0"):
        prequential.run_streams([(t, -1)], _board())
    with pytest.raises(ValueError, match="layout"):
        prequential.run_streams([(t, 0)], _board(), layout="diagonal")


def test_default_layout_stacks_only_on_accelerators():
    assert _streams.default_layout("cpu") == "sequential"
    assert _streams.default_layout("gpu") == "stacked"
    assert _streams.default_layout("tpu") == "stacked"


def test_evaluate_with_several_seeds_is_each_seed_evaluated_alone():
    t = _digits()
    reps = mdlnb.evaluate(t, experts=_board(), batch_size=B, seeds=[0, 3], cache=False)
    assert len(reps) == 2
    for s, rep in zip((0, 3), reps):
        one = mdlnb.evaluate(t, experts=_board(), batch_size=B, seed=s, cache=False)
        assert rep.total_nats == one.total_nats
    with pytest.raises(TypeError, match="seed, seeds"):
        mdlnb.evaluate(t, experts=_board(), seed=1, seeds=[0, 1])
    with pytest.raises(ValueError, match="seeds"):
        mdlnb.evaluate(t, experts=_board(), seeds=[0, 0])


def test_worker_cores_deal_the_cores_out_in_turn():
    from mdlnb.studies.encoder_grid._run import worker_cores

    assert worker_cores(2, [0, 1]) == [[0], [1]]
    assert worker_cores(2, [0, 1, 2, 3, 4]) == [[0, 2, 4], [1, 3]]
    assert worker_cores(3, [5, 6]) == [[5], [6], [5]]
    assert worker_cores(2, []) == [[], []]


@pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
    reason="needs two cores and an affinity mask",
)
def test_a_stream_on_one_core_is_bit_identical_to_one_on_all(tmp_path):
    """The encoder grid pins each worker to its own core: XLA then runs one compute
    thread instead of several, which must not change a single bit."""
    board = [
        Expert(mlp(2, 64), 3e-2, ema=0.5, replay_streams=3),
        Expert(linear(), 1e-2, replay_streams=3),
    ]
    t = _digits()
    here = prequential.run(t, board, batch_size=B, seed=1, cache=False, progress=False)
    script = textwrap.dedent(f"""
        import os, sys
        os.sched_setaffinity(0, {{{min(os.sched_getaffinity(0))}}})
        import numpy as np
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        from test_streams import _digits
        from mdlnb import prequential
        from mdlnb.board.experts import Expert
        from mdlnb.board.readouts import linear, mlp
        board = [Expert(mlp(2, 64), 3e-2, ema=0.5, replay_streams=3),
                 Expert(linear(), 1e-2, replay_streams=3)]
        lm = prequential.run(_digits(), board, batch_size={B}, seed=1, cache=False,
                             progress=False)
        np.save({str(tmp_path / "one.npy")!r}, lm.losses)
    """)
    subprocess.run([sys.executable, "-c", script], check=True, env=os.environ.copy(), timeout=600)
    np.testing.assert_array_equal(np.load(tmp_path / "one.npy"), here.losses)
