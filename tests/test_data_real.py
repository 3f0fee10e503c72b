"""Real-data loaders: Fashion-MNIST idx files, scikit-learn digits, splits."""

import gzip
from pathlib import Path

import numpy as np
import pytest

from mdlnb import data
from mdlnb.data import fashion_mnist

HAVE_FMNIST = (fashion_mnist.ROOT / fashion_mnist.FILES["train"][0]).is_file()
needs_fmnist = pytest.mark.skipif(not HAVE_FMNIST, reason="dataset-fashion-mnist not installed")


@needs_fmnist
def test_fashion_mnist_official_sizes_and_balanced_labels():
    tr = data.load("fashion_mnist", split="train")
    te = data.load("fashion_mnist", split="test")
    assert (tr.n, te.n) == (60_000, 10_000)
    assert tr.x.shape[1:] == (28, 28, 1) and tr.x.dtype == np.uint8
    assert np.array_equal(np.bincount(tr.y, minlength=10), np.full(10, 6_000))
    assert np.array_equal(np.bincount(te.y, minlength=10), np.full(10, 1_000))
    assert tr.group == "natural" and tr.num_classes == 10
    # First training label of the published file is 9 (ankle boot); pixels span 0..255.
    assert tr.y[0] == 9 and tr.x.min() == 0 and tr.x.max() == 255


@needs_fmnist
def test_fashion_mnist_stratified_subsample_is_seeded():
    a = data.load("fashion_mnist", split="test", size=500, seed=1)
    b = data.load("fashion_mnist", split="test", size=500, seed=1)
    c = data.load("fashion_mnist", split="test", size=500, seed=2)
    assert np.array_equal(a.x, b.x) and not np.array_equal(a.x, c.x)
    assert np.array_equal(np.bincount(a.y, minlength=10), np.full(10, 50))


def _write_idx(path: Path, magic: int, dims: tuple, payload: bytes, truncate: int = 0) -> None:
    raw = magic.to_bytes(4, "big") + b"".join(d.to_bytes(4, "big") for d in dims) + payload
    blob = gzip.compress(raw)
    path.write_bytes(blob[: len(blob) - truncate] if truncate else blob)


def _fake_root(
    tmp_path: Path,
    n: int = 20,
    img_magic: int = 0x803,
    truncate: int = 0,
    img_payload: bytes | None = None,
) -> Path:
    rng = np.random.default_rng(0)
    for img, lab in fashion_mnist.FILES.values():
        pix = rng.integers(0, 256, size=n * 28 * 28, dtype=np.uint8).tobytes()
        _write_idx(
            tmp_path / img,
            img_magic,
            (n, 28, 28),
            pix if img_payload is None else img_payload,
            truncate,
        )
        _write_idx(tmp_path / lab, 0x801, (n,), (np.arange(n) % 10).astype(np.uint8).tobytes())
    return tmp_path


def test_idx_reader_roundtrip_on_a_written_file(tmp_path):
    root = _fake_root(tmp_path)
    t = data.load("fashion_mnist", root=root, split="all")
    assert t.n == 40 and np.array_equal(t.y[:20], np.arange(20) % 10)
    raw = gzip.decompress((root / fashion_mnist.FILES["train"][0]).read_bytes())
    assert np.array_equal(t.x[:20, :, :, 0].ravel(), np.frombuffer(raw[16:], np.uint8))


def test_idx_reader_rejects_bad_magic(tmp_path):
    root = _fake_root(tmp_path, img_magic=0x801)
    with pytest.raises(ValueError, match="root: .*magic number"):
        data.load("fashion_mnist", root=root)


def test_idx_reader_rejects_truncated_gzip(tmp_path):
    root = _fake_root(tmp_path, truncate=200)
    with pytest.raises(ValueError, match="root: .*not a readable gzip"):
        data.load("fashion_mnist", root=root)


def test_idx_reader_rejects_size_mismatch(tmp_path):
    root = _fake_root(tmp_path, img_payload=b"\0" * (20 * 28 * 28 - 5))
    with pytest.raises(ValueError, match="root: .*header says"):
        data.load("fashion_mnist", root=root)


def test_idx_reader_rejects_non_gzip(tmp_path):
    root = _fake_root(tmp_path)
    (root / fashion_mnist.FILES["train"][1]).write_bytes(b"not gzip at all")
    with pytest.raises(ValueError, match="root: .*gzip"):
        data.load("fashion_mnist", root=root)


def test_missing_directory_says_how_to_install(tmp_path):
    with pytest.raises(
        FileNotFoundError, match="apt-get install dataset-fashion-mnist.*make setup"
    ):
        data.load("fashion_mnist", root=tmp_path / "nowhere")
    with pytest.raises(ValueError, match="root: missing file"):
        data.load("fashion_mnist", root=tmp_path)  # exists but empty


def test_digits_sizes_pixels_and_fixed_split():
    from sklearn.datasets import load_digits

    ref = load_digits()
    all_ = data.load("digits", split="all")
    tr, te = data.load("digits"), data.load("digits", split="test")
    assert all_.n == 1_797 and (tr.n, te.n) == (1_438, 359)
    assert all_.x.shape[1:] == (8, 8, 1) and all_.x.dtype == np.uint8 and all_.x.max() == 255
    # The union of both splits is exactly scikit-learn's set, pixel for pixel (0..16 → 0..255).
    key = lambda x, y: sorted(
        zip(
            y.tolist(),
            (x.reshape(len(y), -1).astype(float) * 16 / 255).round().astype(int).tolist(),
        )
    )
    assert key(all_.x, all_.y) == sorted(zip(ref.target.tolist(), ref.data.astype(int).tolist()))
    # The split does not depend on the load seed (only subsampling does).
    assert np.array_equal(data.load("digits", seed=5).x, tr.x)
    # Stratified: each class's test share within one example of 20 %.
    counts = np.bincount(ref.target)
    assert np.all(np.abs(np.bincount(te.y, minlength=10) - 0.2 * counts) <= 1)


def test_load_rejects_bad_arguments():
    with pytest.raises(ValueError, match="name: unknown task"):
        data.load("cifar10")
    with pytest.raises(ValueError, match="split:"):
        data.load("digits", split="validation")
    with pytest.raises(ValueError, match="size:"):
        data.load("digits", size=5000)
    with pytest.raises(ValueError, match="options: .*'colour'"):
        data.load("digits", colour=True)


def test_stratified_indices_keeps_proportions_by_largest_remainder():
    y = np.array([0] * 50 + [1] * 30 + [2] * 20)
    idx = data.stratified_indices(y, 9, seed=0)
    # quotas 4.5, 2.7, 1.8 → floors 4, 2, 1, remainders .5 .7 .8 → classes 2 and 1 get the extra two
    assert np.array_equal(np.bincount(y[idx]), [4, 3, 2])
    assert len(np.unique(idx)) == 9 and np.all(np.diff(idx) > 0)


def test_reshuffle_preserves_the_multiset_and_sizes():
    tr, te = data.load("digits"), data.load("digits", split="test")
    a, b = data.reshuffle(tr, te, seed=0)
    assert (a.n, b.n) == (tr.n, te.n)
    rows = lambda *ts: sorted(map(bytes, np.concatenate([t.x.reshape(t.n, -1) for t in ts])))
    assert rows(a, b) == rows(tr, te)
    labels = lambda *ts: np.bincount(np.concatenate([t.y for t in ts]))
    assert np.array_equal(labels(a, b), labels(tr, te))
    a2, _ = data.reshuffle(tr, te, seed=0)
    a3, _ = data.reshuffle(tr, te, seed=1)
    assert np.array_equal(a.x, a2.x) and not np.array_equal(a.x, a3.x)
    # The new test split mixes examples from both old splits.
    old_test = set(map(bytes, te.x.reshape(te.n, -1)))
    from_old_test = sum(bytes(r) in old_test for r in b.x.reshape(b.n, -1))
    assert 0 < from_old_test < b.n


def test_reshuffle_rejects_mismatched_tasks():
    digits = data.load("digits")
    faces = data.load("lfw_faces")
    with pytest.raises(ValueError, match="task_test: num_classes"):
        data.reshuffle(digits, faces)
    with pytest.raises(ValueError, match="task_test: input shape"):
        data.reshuffle(digits, data.load("textures", size=10).replace(num_classes=10))
