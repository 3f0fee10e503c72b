"""``benchmarks/gpu_check``'s packing of Fashion-MNIST for the device machine: what it
unpacks is what the loader reads, the training split cut to its first images."""

from __future__ import annotations

import gzip

import numpy as np

from benchmarks import gpu_check
from mdlnb.data import fashion_mnist


def _write_idx(path, array: np.ndarray) -> None:
    magic = (0x800 + array.ndim).to_bytes(4, "big")
    dims = b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    with gzip.open(path, "wb") as f:
        f.write(magic + dims + array.astype(np.uint8).tobytes())


def test_pack_then_unpack_gives_the_loader_the_first_training_images(tmp_path):
    rng = np.random.default_rng(0)
    src, packed, out = tmp_path / "src", tmp_path / "packed", tmp_path / "out"
    src.mkdir()
    x_train = rng.integers(0, 256, (7, 28, 28), dtype=np.uint8)
    y_train = rng.integers(0, 10, 7, dtype=np.uint8)
    x_test = rng.integers(0, 256, (4, 28, 28), dtype=np.uint8)
    y_test = rng.integers(0, 10, 4, dtype=np.uint8)
    for name, a in zip(gpu_check.FILES, (x_train, y_train, x_test, y_test)):
        _write_idx(src / f"{name}.gz", a)
    gpu_check.pack(str(packed), str(src), cut=5)
    assert sorted(p.name for p in packed.iterdir()) == sorted(f"{n}.xz" for n in gpu_check.FILES)
    gpu_check.unpack(str(packed), str(out))
    train, test = fashion_mnist.build(root=out)
    np.testing.assert_array_equal(train.x[..., 0], x_train[:5])
    np.testing.assert_array_equal(train.y, y_train[:5])
    np.testing.assert_array_equal(test.x[..., 0], x_test)
    np.testing.assert_array_equal(test.y, y_test)
