"""Registry table, scikit-image tasks, user image folders, optional VTAB."""

import sys
from pathlib import Path

import numpy as np
import pytest

from mdlnb import data
from mdlnb.data import fashion_mnist, skimage_tasks

HAVE_FMNIST = (fashion_mnist.ROOT / fashion_mnist.FILES["train"][0]).is_file()
PROCEDURAL = (
    "dsprites_location",
    "dsprites_orientation",
    "dsprites_scale",
    "dsprites_shape",
    "clevr_count",
    "clevr_distance",
    "clevr_closest_colour",
    "clevr_closest_shape",
    "clevr_closest_size",
    "textures",
    "sci_patches",
    "photo_patches",
    "ihc_dab",
    "ihc_hematoxylin",
)


def test_registry_table_matches_every_built_task():
    table = data.info()
    print(
        "\n"
        + table[["name", "group", "n_train", "n_test", "classes", "image_shape"]].to_string(
            index=False
        )
    )
    assert list(table["name"]) == data.names()
    assert set(table["group"]) == {"natural", "specialized", "structured"}
    assert data.names("structured") == [
        "clevr_closest_colour",
        "clevr_closest_shape",
        "clevr_closest_size",
        "clevr_count",
        "clevr_distance",
        "dsprites_location",
        "dsprites_orientation",
        "dsprites_scale",
        "dsprites_shape",
    ]
    for row in table.itertuples():
        if row.name.startswith("fashion_mnist") and not HAVE_FMNIST:
            continue
        tr, te = data.spec(row.name).build(seed=0)
        assert (tr.n, te.n) == (row.n_train, row.n_test), row.name
        for t in (tr, te):
            assert t.x.dtype == np.uint8 and t.x.shape[1:] == row.image_shape, row.name
            assert t.num_classes == row.classes and t.group == row.group, row.name
        assert set(np.unique(tr.y)) == set(range(row.classes)), row.name  # every class present
        if row.name in PROCEDURAL:  # no image in both splits
            seen = set(map(bytes, tr.x.reshape(tr.n, -1)))
            assert not any(bytes(r) in seen for r in te.x.reshape(te.n, -1)), row.name


def test_info_lists_the_new_tasks_with_their_groups():
    table = data.info().set_index("name")
    want = {
        "photo_patches": ("natural", 7),
        "ihc_dab": ("specialized", 2),
        "dsprites_scale": ("structured", 6),
        "dsprites_shape": ("structured", 3),
        "clevr_closest_colour": ("structured", 7),
    }
    for name, (group, classes) in want.items():
        assert (table.loc[name, "group"], table.loc[name, "classes"]) == (group, classes), name
        assert name in data.names(group)
    assert len(table) >= 13 and table["group"].value_counts().min() >= 3
    # seeded, stratified subsamples through load()
    p = data.load("photo_patches", size=70, seed=2)
    assert np.array_equal(np.bincount(p.y), [10] * 7)
    assert np.array_equal(p.x, data.load("photo_patches", size=70, seed=2).x)
    assert not np.array_equal(p.x, data.load("photo_patches", size=70, seed=3).x)
    assert np.array_equal(np.bincount(data.load("ihc_dab", split="test", size=50).y), [25, 25])
    full = data.load("dsprites_shape", seed=1)  # procedural: seed is also the generator seed
    sub = data.load("dsprites_shape", size=300, seed=1)
    assert np.all(np.abs(np.bincount(sub.y) - 300 * np.bincount(full.y) / full.n) < 1)


def test_load_split_all_and_determinism():
    a = data.load("textures", split="all", seed=3)
    tr, te = data.load("textures", seed=3), data.load("textures", split="test", seed=3)
    assert np.array_equal(a.x, np.concatenate([tr.x, te.x]))
    assert a.meta["split"] == "all" and tr.meta["split"] == "train"
    assert not np.array_equal(tr.x, data.load("textures", seed=4).x)
    s = data.load("sci_patches", size=100, seed=1)
    assert s.n == 100 and np.array_equal(np.bincount(s.y), [25, 25, 25, 25])


def _locate(image, patch):
    """All (row, col) where ``patch`` occurs in ``image`` exactly (brute force)."""
    win = np.lib.stride_tricks.sliding_window_view(image, patch.shape[:2], axis=(0, 1))
    first = np.argwhere(
        np.all(win[..., 0, 0] == patch[0, 0], axis=-1)
        if image.ndim == 3
        else win[:, :, 0, 0] == patch[0, 0]
    )
    return [
        tuple(p)
        for p in first
        if np.array_equal(image[p[0] : p[0] + patch.shape[0], p[1] : p[1] + patch.shape[1]], patch)
    ]


@pytest.mark.parametrize(
    "name, sources, rgb",
    [
        ("textures", skimage_tasks.TEXTURES, False),
        ("sci_patches", skimage_tasks.SCIENTIFIC, True),
        ("photo_patches", skimage_tasks.PHOTOS, True),
    ],
)
def test_patches_come_from_their_class_image_and_split_region(name, sources, rgb):
    classes = list(sources)
    for split in ("train", "test"):
        t = data.load(name, split=split, size=2 * len(classes), seed=5)
        for img, label in zip(t.x, t.y):
            file, scale, box = sources[classes[label]]
            src = skimage_tasks.read_image(file, scale, rgb)
            hits = _locate(src, img)
            assert hits, (name, split, classes[label])
            h, w = src.shape[:2]
            cut = int(round(box[2] * w)) + int(
                round(0.75 * (int(round(box[3] * w)) - int(round(box[2] * w))))
            )
            cols = [c for _, c in hits]
            if split == "train":
                assert any(c + 32 <= cut for c in cols)
            else:
                assert any(c >= cut for c in cols)


def test_photo_patches_read_the_files_shipped_in_the_wheels():
    import skimage
    import skimage.data
    import sklearn
    from sklearn.datasets import load_sample_image

    # every file lies inside an installed package (nothing is fetched)
    roots = [Path(m.__file__).parent for m in (skimage, sklearn)]
    for file, _, _ in skimage_tasks.PHOTOS.values():
        path = skimage_tasks.file_path(file)
        assert path.is_file() and any(r in path.parents for r in roots), file
    # scikit-learn's photographs: the same pixels as its own loader
    for name in ("china.jpg", "flower.jpg"):
        ours = skimage_tasks.read_image(f"sklearn:{name}", 1.0, True)
        assert np.array_equal(ours, load_sample_image(name))
    # scikit-image's: the same pixels as skimage.data's (offline) loader
    assert np.array_equal(
        skimage_tasks.read_image("chelsea.png", 1.0, True), skimage.data.chelsea()
    )
    tr, te = data.load("photo_patches"), data.load("photo_patches", split="test")
    assert (tr.n, te.n) == (3_500, 700) and tr.x.shape[1:] == (32, 32, 3)
    assert np.array_equal(np.bincount(tr.y), [500] * 7) and np.array_equal(
        np.bincount(te.y), [100] * 7
    )
    assert tr.meta["classes"] == tuple(skimage_tasks.PHOTOS)


def _stain_ruifrok(rgb, channel):
    """A stain's optical density by colour deconvolution (Ruifrok & Johnston 2001), in plain
    NumPy: OD = -ln(I / 255) per channel, times the inverse of the row-normalised stain matrix
    (rows hematoxylin, eosin, DAB). skimage's rgb2hed differs by constant factors only, which
    leave percentiles' classes alone."""
    stains = np.array([[0.65, 0.70, 0.29], [0.07, 0.99, 0.11], [0.27, 0.57, 0.78]])
    stains /= np.linalg.norm(stains, axis=1, keepdims=True)
    od = -np.log(np.maximum(rgb.astype(float) / 255, 1e-6))
    return np.maximum(od @ np.linalg.inv(stains), 0)[..., channel]


@pytest.mark.parametrize("name, channel", [("ihc_dab", 2), ("ihc_hematoxylin", 0)])
def test_ihc_labels_follow_the_stain_density_of_the_patch_centre(name, channel):
    from scipy import ndimage

    slide = skimage_tasks.read_image("ihc.png", 1.0, True)
    dab = _stain_ruifrok(slide, channel)
    # centre 16×16 of the 32×32 crop at (top, left) = 16-wide mean filter at (top + 16, left + 16)
    stat = ndimage.uniform_filter(dab, 16)[16 : slide.shape[0] - 15, 16 : slide.shape[1] - 15]
    lo, hi = np.percentile(stat, [40, 60])
    cut = int(round(0.75 * slide.shape[1]))
    for split in ("train", "test"):
        t = data.load(name, split=split)
        assert t.n == (2_000 if split == "train" else 400) and t.group == "specialized"
        assert np.array_equal(np.bincount(t.y), [t.n // 2] * 2)
        assert len(set(map(bytes, t.x.reshape(t.n, -1)))) == t.n  # no repeated patch
        for img, label in zip(t.x[:12], t.y[:12]):
            (r, c), *_ = _locate(slide, img)
            assert (c + 32 <= cut) if split == "train" else (c >= cut)
            assert (stat[r, c] < lo) if label == 0 else (stat[r, c] > hi), (split, r, c, label)
    a, b = data.load(name, seed=3), data.load(name, seed=3)
    assert np.array_equal(a.x, b.x) and not np.array_equal(a.x, data.load(name, seed=4).x)
    with pytest.raises(ValueError, match="n_test"):
        data.load(name, n_test=100_000)
    with pytest.raises(ValueError, match="patch"):
        data.load(name, patch=200)


def test_the_two_ihc_tasks_ask_different_questions_of_one_slide():
    dab, hem = data.load("ihc_dab"), data.load("ihc_hematoxylin")
    assert hem.meta["classes"] == ("low hematoxylin", "high hematoxylin")
    assert dab.meta["files"] == hem.meta["files"] == ["ihc.png"]
    assert not np.array_equal(dab.x, hem.x)


@pytest.mark.skipif(not HAVE_FMNIST, reason="dataset-fashion-mnist not installed")
def test_fashion_mnist_category_labels_each_image_by_its_garment_category():
    from mdlnb.data import fashion_mnist as fm

    kind = {
        "T-shirt/top": "top",
        "Pullover": "top",
        "Coat": "top",
        "Shirt": "top",
        "Trouser": "one-piece or bottom",
        "Dress": "one-piece or bottom",
        "Sandal": "footwear",
        "Sneaker": "footwear",
        "Ankle boot": "footwear",
        "Bag": "bag",
    }
    for split in ("train", "test"):
        fine, coarse = (
            data.load("fashion_mnist", split=split),
            data.load("fashion_mnist_category", split=split),
        )
        assert np.array_equal(fine.x, coarse.x) and coarse.num_classes == 4
        want = [coarse.meta["classes"].index(kind[fm.CLASSES[c]]) for c in fine.y[:2000]]
        assert np.array_equal(coarse.y[:2000], want)
        assert np.allclose(np.bincount(coarse.y) / coarse.n, [0.4, 0.2, 0.3, 0.1])
    assert data.spec("fashion_mnist_category").source == data.spec("fashion_mnist").source


def test_lfw_faces_split_and_pixels():
    import skimage.data

    ref = skimage.data.lfw_subset()
    a = data.load("lfw_faces", split="all")
    assert a.n == 200 and np.bincount(a.y).tolist() == [100, 100]
    keyed = sorted((int(y), x.tobytes()) for x, y in zip(a.x[..., 0], a.y))
    want = sorted(
        (int(i >= 100), np.rint(r * 255).astype(np.uint8).tobytes()) for i, r in enumerate(ref)
    )
    assert keyed == want
    assert (data.load("lfw_faces").n, data.load("lfw_faces", split="test").n) == (160, 40)


def _png(path, arr):
    from skimage import io

    path.parent.mkdir(parents=True, exist_ok=True)
    io.imsave(path, arr, check_contrast=False)


def test_from_image_folder_reads_classes_in_sorted_order(tmp_path):
    rng = np.random.default_rng(0)
    cats = rng.integers(0, 256, (3, 8, 8), dtype=np.uint8)
    dogs = rng.integers(0, 256, (2, 8, 8), dtype=np.uint8)
    for i, im in enumerate(cats):
        _png(tmp_path / "cat" / f"{i}.png", im)
    for i, im in enumerate(dogs):
        _png(tmp_path / "dog" / f"{i}.png", im)
    (tmp_path / "dog" / "notes.txt").write_text("ignored")
    t = data.from_image_folder(tmp_path, size=(8, 8))
    assert t.num_classes == 2 and t.meta["classes"] == ("cat", "dog")
    assert t.y.tolist() == [0, 0, 0, 1, 1] and t.x.shape == (5, 8, 8, 1)
    assert np.array_equal(t.x[:3, ..., 0], cats) and np.array_equal(t.x[3:, ..., 0], dogs)
    # a colour image turns the task to RGB (grey ones repeated); resizing a flat image keeps it flat
    _png(tmp_path / "dog" / "9.png", np.full((16, 12, 3), [10, 200, 30], np.uint8))
    t = data.from_image_folder(tmp_path, size=(8, 8))
    assert t.x.shape == (6, 8, 8, 3)
    assert np.array_equal(t.x[0, ..., 1], cats[0]) and np.all(t.x[5] == [10, 200, 30])


def test_from_image_folder_errors(tmp_path):
    with pytest.raises(ValueError, match="path: .*not a folder"):
        data.from_image_folder(tmp_path / "missing")
    with pytest.raises(ValueError, match="path: .*one subfolder per class"):
        data.from_image_folder(tmp_path)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _png(tmp_path / "a" / "0.png", np.zeros((4, 4), np.uint8))
    with pytest.raises(ValueError, match="path: class folder .*b.* has no images"):
        data.from_image_folder(tmp_path)
    (tmp_path / "b" / "broken.png").write_bytes(b"\x89PNG not really")
    with pytest.raises(ValueError, match="path: cannot read image .*broken.png"):
        data.from_image_folder(tmp_path)
    with pytest.raises(ValueError, match="size"):
        data.from_image_folder(tmp_path, size=(0, 4))


def test_vtab_fails_cleanly_without_tensorflow_datasets(monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorflow_datasets", None)  # import raises ImportError
    with pytest.raises(ImportError, match=r"tensorflow-datasets.*pip install mdlnb\[full\]"):
        data.vtab("dsprites_location")
    with pytest.raises(ValueError, match="name: unknown VTAB task"):
        data.vtab("imagenet")


def test_vtab_lists_the_papers_19_tasks_in_three_groups():
    from mdlnb.data._vtab import TASKS

    groups = [g for g, *_ in TASKS.values()]
    assert len(TASKS) == 19  # paper Table 3
    assert (groups.count("natural"), groups.count("specialized"), groups.count("structured")) == (
        7,
        4,
        8,
    )


@pytest.mark.parametrize("seed", [float("nan"), float("inf"), 1.5, "a", -1, 2**32, True, None])
def test_load_rejects_a_bad_seed_by_name(seed):
    with pytest.raises(ValueError, match="seed"):
        data.load("digits", seed=seed)
