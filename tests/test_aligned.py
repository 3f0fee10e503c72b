"""64-byte-aligned loss matrices (mdlnb/infra/_aligned.py): stage 1 and LossMatrix.load
produce them, and XLA's CPU client then reads them without a copy; the .npz
reader returns what numpy.load returns for every kind of array."""

import io
import zipfile

import jax
import numpy as np
import pytest

from mdlnb import prequential
from mdlnb.board import readouts
from mdlnb.board.experts import expert_grid
from mdlnb.infra import _aligned
from mdlnb.infra._io import atomic_savez, read_npz
from mdlnb.switching._transport import to_device as _to_device


@pytest.mark.parametrize("shape", [(1,), (3, 5), (1000, 7), 0, (0, 4)])
def test_empty_is_aligned_float32(shape):
    for _ in range(5):
        a = _aligned.empty(shape)
        assert a.dtype == np.float32 and a.flags.c_contiguous and a.flags.writeable
        assert _aligned.is_aligned(a) and (a.size == 0 or a.ctypes.data % _aligned.ALIGN == 0)
        assert a.shape == ((shape,) if np.isscalar(shape) else shape)


def test_read_npz_matches_numpy_load(tmp_path):
    rng = np.random.default_rng(0)
    arrays = {
        "f32": rng.standard_normal((37, 5)).astype(np.float32),
        "f32_fortran": np.asfortranarray(rng.standard_normal((4, 6)).astype(np.float32)),
        "f32_big_endian": rng.standard_normal(9).astype(">f4"),
        "f64": rng.standard_normal((3, 3)),
        "i64": np.arange(7),
        "scalar": np.float32(2.5),
        "text": np.array('{"a": 1}'),
        "empty": np.zeros((0, 3), np.float32),
    }
    path = atomic_savez(tmp_path / "x.npz", **arrays)
    got = read_npz(path)
    with np.load(path) as z:
        for k in arrays:
            assert got[k].dtype == z[k].dtype and got[k].shape == z[k].shape, k
            np.testing.assert_array_equal(got[k], z[k])
    assert _aligned.is_aligned(got["f32"]) and _aligned.is_aligned(got["empty"])
    np.testing.assert_array_equal(got["f32"], arrays["f32"])


def test_read_npy_refuses_truncated_data():
    buf = io.BytesIO()
    np.save(buf, np.arange(10, dtype=np.float32))
    short = io.BytesIO(buf.getvalue()[:-8])
    with pytest.raises(ValueError, match="truncated"):
        _aligned.read_npy(short)


def test_a_damaged_member_is_still_caught(tmp_path):
    path = atomic_savez(tmp_path / "y.npz", a=np.arange(1000, dtype=np.float32))
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("a.npy")
    data[info.header_offset + 30 + len(info.filename) + 200] ^= 0xFF  # a byte of the array data
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="y.npz"):
        read_npz(path)


def test_loss_matrices_are_read_in_place(tmp_path):
    task = __import__("mdlnb").data.load("digits").take(np.arange(64))
    board = expert_grid([readouts.linear()], learning_rate=[1e-3, 1e-2])
    lm = prequential.run(task, board, batch_size=16, seed=1, cache=False)
    assert _aligned.is_aligned(lm.losses)
    loaded = prequential.LossMatrix.load(lm.save(tmp_path / "lm.npz"))
    assert _aligned.is_aligned(loaded.losses)
    np.testing.assert_array_equal(loaded.losses, lm.losses)
    if jax.default_backend() == "cpu":  # aliased, not copied
        for m in (lm, loaded):
            assert np.shares_memory(np.asarray(_to_device(m.losses)), m.losses)
    # a float64 or NaN-holding input gets an aligned copy (NaN → +inf); a float32 one is kept
    L = lm.losses.astype(np.float64)
    L[3, 1] = np.nan
    m = prequential.LossMatrix(
        losses=L,
        experts=lm.experts,
        order=lm.order,
        task_name="t",
        num_classes=10,
        seed=1,
        batch_size=16,
    )
    assert _aligned.is_aligned(m.losses) and m.losses[3, 1] == np.inf
    np.testing.assert_array_equal(
        np.delete(m.losses.ravel(), 3 * 2 + 1), np.delete(lm.losses.ravel(), 3 * 2 + 1)
    )
    own = np.ascontiguousarray(lm.losses)
    kept = prequential.LossMatrix(
        losses=own,
        experts=lm.experts,
        order=lm.order,
        task_name="t",
        num_classes=10,
        seed=1,
        batch_size=16,
    )
    assert kept.losses is own


def _at_offset(values: np.ndarray, offset: int) -> np.ndarray:
    """A C-contiguous float32 copy of ``values`` whose data starts ``offset``
    float32 entries after a 64-byte boundary."""
    buf = _aligned.empty((values.size + 16,)).reshape(-1)
    out = buf[offset : offset + values.size].reshape(values.shape)
    out[...] = values
    return out


@pytest.mark.parametrize("n,k", [(5000, 48), (9000, 16), (2000, 64)])
def test_unaligned_numpy_input_is_read_in_place_with_the_same_result(n, k):
    """The default call (fixed share, posterior, N > chunk_rows, CPU) on a NumPy
    array at each of the 16 float32 offsets from a 64-byte boundary: the flat
    view from the first aligned entry shares the input's memory, only the
    first block is copied, and every output equals the one from an aligned
    copy bit for bit (several blocks, a padded last block, one short block;
    NaN entries)."""
    from mdlnb import switching as sw
    from mdlnb.switching import _transport, forward

    rng = np.random.default_rng(n + k)
    values = rng.standard_exponential((n, k), dtype=np.float32)
    values[rng.integers(0, n, 25), rng.integers(0, k, 25)] = np.nan
    want = sw.codelength(_at_offset(values, 0), posterior=True, chunk_rows=1024)
    for offset in range(16):
        L = _at_offset(values, offset)
        view = _transport.flat_view(L)
        if offset == 0:
            assert view is None  # aligned: XLA reads it in place anyway
        else:
            flat, head, off = view
            assert off == 16 - offset
            assert flat.unsafe_buffer_pointer() == L.ctypes.data + 4 * off  # no copy
            assert head.shape == (forward.head_rows(n, k), k)
        got = sw.codelength(L, posterior=True, chunk_rows=1024)
        assert got.total_nats == want.total_nats
        np.testing.assert_array_equal(got.per_step_nats, want.per_step_nats)
        np.testing.assert_array_equal(got.log_posterior, want.log_posterior)


def test_flat_view_only_for_c_contiguous_float32():
    from mdlnb.switching import _transport

    L = _at_offset(np.ones((100, 8), np.float32), 3)
    assert _transport.flat_view(L) is not None
    assert _transport.flat_view(L.astype(np.float64)) is None
    assert _transport.flat_view(np.asfortranarray(L)) is None
    assert _transport.flat_view(L[:, ::2]) is None


def test_unaligned_input_still_names_the_bad_step():
    from mdlnb import switching as sw

    values = np.random.default_rng(3).standard_exponential((3000, 16), dtype=np.float32)
    values[2500] = np.inf
    with pytest.raises(ValueError, match="t=2501"):
        sw.codelength(_at_offset(values, 5), posterior=True, chunk_rows=1024)
    values[2500] = 1.0
    values[4, 3] = -0.5
    with pytest.raises(ValueError, match="negative loss at step t=5"):
        sw.codelength(_at_offset(values, 5), posterior=True, chunk_rows=1024)
