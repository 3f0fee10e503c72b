"""Which shapes stage 1 compiles (``mdlnb.prequential``, "Which shapes compile").

The stream is padded to a row bucket and a short stream's chunk to a power of
two of batches, so the chunk program does not follow N; both paddings are
bit-identical to the unpadded program. ``pad_features=True`` appends zero
features up to a dimension bucket: one program for every D of a bucket,
exact in real arithmetic (equal to float round-off here; XLA:CPU's GEMM tiles
follow the shape, so not always bit for bit: off by default).
"""

import numpy as np
import pytest

import mdlnb
from mdlnb import prequential
from mdlnb.board import readouts
from mdlnb.board.experts import Expert
from mdlnb.core import _standardize
from mdlnb.prequential import _chunking, _groups, _setup

B = 16


def _board():
    return [
        Expert(readouts.linear(), 1e-2, ema=0.3, replay_streams=3),
        Expert(readouts.mlp(1, 16), 3e-3, ema=0.5, replay_streams=4),
        Expert(readouts.mlp(2, 8), 1e-2, replay_streams=2),
    ]


def _task(n, d, c=3, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.normal(size=(n, d)) * np.linspace(1, 4, d) + 2).astype(np.float32)
    x[:, 1] = 0.0  # a constant-zero real feature
    y = (x @ rng.normal(size=(d, c))).argmax(1)
    return mdlnb.Task(f"shapes{n}x{d}", x, y, c)


def _run(task, **kw):
    return prequential.run(task, _board(), batch_size=B, cache=False, memory_budget=None, **kw)


def test_buckets():
    assert [
        _groups.padded_dim(d)
        for d in (1, 12, 16, 17, 33, 100, 256, 257, 300, 768, 1000, 1280, 2048, 2049)
    ] == [16, 16, 16, 32, 48, 112, 256, 288, 320, 768, 1024, 1280, 2048, 2304]
    for d in range(17, 5000, 7):  # < 12.5 % more above 128
        assert d <= _groups.padded_dim(d) < d + max(16, d / 8)
    assert [_chunking.row_bucket(n) for n in (1, 1024, 1025, 1500, 4097)] == [
        1024,
        1024,
        1152,
        1536,
        4608,
    ]
    assert [_chunking.chunk_bucket(t, 128) for t in (1, 2, 3, 13, 128, 129, 1000)] == [
        1,
        2,
        4,
        16,
        128,
        128,
        128,
    ]


def test_row_and_chunk_padding_are_bit_identical(monkeypatch):
    task = _task(200, 6)  # 13 batches: chunk 16, rows 1024
    padded = _run(task)
    monkeypatch.setattr(_setup, "row_bucket", lambda n: n)
    monkeypatch.setattr(_setup, "chunk_bucket", lambda t, c: min(int(c), t))
    np.testing.assert_array_equal(_run(task).losses, padded.losses)
    np.testing.assert_array_equal(_run(task, chunk_batches=5).losses, padded.losses)


def test_chunk_program_does_not_follow_n():
    _run(_task(300, 6, seed=1))  # 19 batches → chunks of 32
    before = prequential.trace_count()
    other = _run(_task(410, 6, seed=2))  # 26 batches: the same program
    assert prequential.trace_count() == before
    assert other.losses.shape == (410, 3)


def test_zero_feature_stays_zero_under_prefix_standardization():
    s1, s2 = np.zeros((3, 2)), np.zeros((3, 2))
    s1[:, 0], s2[:, 0] = [1.0, 3.0, 4.0], [1.0, 5.0, 6.0]
    m = _standardize.from_sums(s1, s2, np.array([1.0, 2.0, 3.0]))
    assert (m.mean[:, 1] == 0).all() and (m.inv_std[:, 1] == 1).all()  # only centred, at 0
    z = _standardize.apply(np.zeros((3, 2)), m, clip=10.0)
    assert (z[:, 1] == 0).all()


@pytest.mark.parametrize("standardize", ["prefix", "none"])
def test_pad_features_is_exact_to_round_off(standardize):
    task = _task(260, 12)  # bucket 16
    plain = _run(task, standardize=standardize)
    padded = _run(task, standardize=standardize, pad_features=True)
    assert padded.meta["padded_dim"] == 16 and "padded_dim" not in plain.meta
    assert padded.meta["cache_key"] != plain.meta["cache_key"]
    np.testing.assert_allclose(padded.losses, plain.losses, rtol=1e-4, atol=1e-4)


def test_pad_features_shares_one_program_and_returns_unpadded_params():
    _run(_task(200, 10, seed=3), pad_features=True)
    before = prequential.trace_count()
    lm, params = prequential.run_with_params(
        _task(200, 13, seed=4), _board(), batch_size=B, cache=False, pad_features=True
    )
    assert prequential.trace_count() == before  # D = 10 and 13: one program
    assert lm.meta["padded_dim"] == 16
    for p in params:
        assert p["params"][0]["w"].shape[0] == 13 and p["ema"][0]["w"].shape[0] == 13


def test_boards_that_cannot_be_padded_are_not():
    class Custom:
        name = "custom"

    assert _groups.pads_features(readouts.linear())
    assert _groups.pads_features(readouts.with_matmul_dtype(readouts.mlp(1), "bfloat16"))
    assert not _groups.pads_features(Custom())
    board = [Expert(readouts.linear(), 1e-2)]
    assert _groups.board_dim(board, 12) == 16


@pytest.mark.parametrize("readout", [readouts.linear(), readouts.mlp(2, 8)])
def test_compiled_initial_state_equals_the_eager_one(readout):
    """A group's initial state comes from one compiled program; the same bits (signs of
    zeros included) as the op-by-op computation it replaced."""
    import jax
    import jax.numpy as jnp

    from mdlnb.core import _fit
    from mdlnb.prequential import expert_key

    members = [Expert(readout, lr, ema=ema) for lr in (1e-3, 1e-2) for ema in (0.1, 1.0)]
    keys = jnp.stack([expert_key(3, e) for e in members])
    np.testing.assert_array_equal(_groups.expert_keys(3, members), keys)
    params = jax.vmap(lambda k: readout.init(k, 7, 4))(keys)
    eager = jax.vmap(_fit.state_of)(params)._replace(ema_params=params)
    compiled = _groups._init_group(readout, members, 3, 7, 4)
    for a, b in zip(jax.tree_util.tree_leaves(eager), jax.tree_util.tree_leaves(compiled)):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()
    padded = _groups._init_group(readout, members, 3, 7, 4, dp=16)
    w = np.asarray(padded.params[0]["w"])
    assert w.shape[-2] == 16 and not w[:, 7:].any()
    np.testing.assert_array_equal(w[:, :7], np.asarray(compiled.params[0]["w"]))


# ------------------------------------------------------------------ block widths per machine


def test_block_budget_scales_with_cpu_cores_and_is_wide_on_accelerators():
    import os

    unit = _groups.BLOCK_BYTES
    assert [_groups.block_bytes("cpu", n) for n in (1, 2, 3, 4, 16)] == [
        unit,
        unit,
        unit,
        2 * unit,
        8 * unit,
    ]
    assert (
        _groups.block_bytes("gpu", 2)
        == _groups.block_bytes("tpu")
        == _groups.ACCELERATOR_BLOCK_BYTES
        == 2**30
    )
    # this process: JAX's backend and the cores its affinity mask allows (where the OS has one)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert _groups.block_bytes() == _groups.block_bytes("cpu", cores)


def _mlp2x256_board():
    # the long stream's board: 64 MLPs 64 → 256 → 256 → 10, 85,002 parameters each
    return mdlnb.expert_grid(
        readouts.mlp(2, 256),
        learning_rate=[1e-4, 3e-4, 1e-3, 3e-3],
        weight_decay=[0.0, 1e-5, 1e-4, 1e-3],
        ema=[0.01, 0.03, 0.1, 1.0],
    )


@pytest.mark.parametrize("cores, widths", [(2, None), (3, None), (16, [[64, 64]])])
def test_the_cache_key_names_block_widths_only_where_they_differ_from_two_cores(
    monkeypatch, cores, widths
):
    board = _mlp2x256_board()
    assert len(board) == 64 and board[0].readout.num_params(64, 10) == 85002
    monkeypatch.setattr(_groups, "block_bytes", lambda: _groups.BLOCK_BYTES * max(1, cores // 2))
    # 2 cores: 32 MB // (20 B × 85,002) = 19 experts per block: groups of 57 and 7
    assert _groups._widths(board, 64, 10, _groups.BLOCK_BYTES) == [[57, 19], [7, 7]]
    assert _groups.layout_key(board, 64, 10) == ({} if widths is None else {"blocks": widths})
    # a board whose groups fit one block on 2 cores keys alike on every machine
    assert _groups.layout_key(mdlnb.board.experts.preset("default"), 64, 10) == {}


def test_a_wider_block_changes_the_key_and_only_round_off(monkeypatch):
    task = _task(96, 8)
    board = mdlnb.expert_grid(readouts.mlp(1, 16), learning_rate=[1e-3, 3e-3, 1e-2, 3e-2])
    per = 20 * board[0].readout.num_params(8, 3)
    monkeypatch.setattr(_groups, "BLOCK_BYTES", per)  # 2 cores lay blocks of 1 expert
    runs = {}
    for width in (1, 4):
        monkeypatch.setattr(_groups, "block_bytes", lambda w=width: w * per)
        runs[width] = prequential.run(task, board, batch_size=B, cache=False, memory_budget=None)
    narrow, wide = runs[1], runs[4]
    assert "blocks" not in narrow.meta and wide.meta["blocks"] == [[4, 4]]
    assert narrow.meta["cache_key"] != wide.meta["cache_key"]
    np.testing.assert_allclose(wide.losses, narrow.losses, rtol=1e-5, atol=1e-5)
