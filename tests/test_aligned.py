"""64-byte-aligned loss matrices (mdlnb/_aligned.py): stage 1 and LossMatrix.load
produce them, and XLA's CPU client then reads them without a copy; the .npz
reader returns what numpy.load returns for every kind of array."""

import io
import zipfile

import jax
import numpy as np
import pytest

from mdlnb import _aligned, prequential, readouts
from mdlnb._io import atomic_savez, read_npz
from mdlnb.experts import expert_grid
from mdlnb.switching.batch import _to_device


@pytest.mark.parametrize("shape", [(1,), (3, 5), (1000, 7), 0, (0, 4)])
def test_empty_is_aligned_float32(shape):
    for _ in range(5):
        a = _aligned.empty(shape)
        assert a.dtype == np.float32 and a.flags.c_contiguous and a.flags.writeable
        assert _aligned.is_aligned(a) and (a.size == 0 or a.ctypes.data % _aligned.ALIGN == 0)
        assert a.shape == ((shape,) if np.isscalar(shape) else shape)


def test_read_npz_matches_numpy_load(tmp_path):
    rng = np.random.default_rng(0)
    arrays = {"f32": rng.standard_normal((37, 5)).astype(np.float32),
              "f32_fortran": np.asfortranarray(rng.standard_normal((4, 6)).astype(np.float32)),
              "f32_big_endian": rng.standard_normal(9).astype(">f4"),
              "f64": rng.standard_normal((3, 3)), "i64": np.arange(7), "scalar": np.float32(2.5),
              "text": np.array('{"a": 1}'), "empty": np.zeros((0, 3), np.float32)}
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
    m = prequential.LossMatrix(losses=L, experts=lm.experts, order=lm.order, task_name="t",
                               num_classes=10, seed=1, batch_size=16)
    assert _aligned.is_aligned(m.losses) and m.losses[3, 1] == np.inf
    np.testing.assert_array_equal(np.delete(m.losses.ravel(), 3 * 2 + 1),
                                  np.delete(lm.losses.ravel(), 3 * 2 + 1))
    own = np.ascontiguousarray(lm.losses)
    kept = prequential.LossMatrix(losses=own, experts=lm.experts, order=lm.order, task_name="t",
                                  num_classes=10, seed=1, batch_size=16)
    assert kept.losses is own
