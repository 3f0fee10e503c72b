"""Self-pretrained encoders: losses vs NumPy, augmentations, masking, determinism,
cache/resume, and a linear-probe sanity check on Fashion-MNIST."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

from mdlnb import Task  # noqa: E402
from mdlnb.encoders import archs, augment, objectives  # noqa: E402

# the module (the package re-exports the function under the same name)
P = importlib.import_module("mdlnb.encoders._pretrain")


def _np_logsumexp(a, axis):
    m = a.max(axis=axis, keepdims=True)
    return (m + np.log(np.exp(a - m).sum(axis=axis, keepdims=True))).squeeze(axis)


# -- losses against plain NumPy ---------------------------------------------------


def test_nt_xent_matches_numpy():
    rng = np.random.default_rng(0)
    z1, z2 = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    tau = 0.3
    z = np.concatenate([z1, z2]).astype(np.float64)
    z /= np.linalg.norm(z, axis=1, keepdims=True)
    n2 = len(z)
    losses = []
    for i in range(n2):
        pos = (i + 5) % n2
        others = [j for j in range(n2) if j != i]
        logits = np.array([z[i] @ z[j] / tau for j in others])
        losses.append(-(z[i] @ z[pos] / tau) + _np_logsumexp(logits, 0))
    want = np.mean(losses)
    got = float(objectives.nt_xent(jnp.asarray(z1, jnp.float32), jnp.asarray(z2, jnp.float32), tau))
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_nt_xent_two_pairs_closed_form():
    # two orthogonal pairs of identical views: each anchor sees its positive at
    # cosine 1 and two negatives at cosine 0 -> log(e^{1/τ} + 2) − 1/τ
    z = jnp.asarray([[1.0, 0.0], [0.0, 1.0]])
    tau = 0.5
    want = np.log(np.exp(1 / tau) + 2) - 1 / tau
    np.testing.assert_allclose(float(objectives.nt_xent(z, z, tau)), want, rtol=1e-6)


def test_byol_loss_matches_numpy_and_stops_target_gradient():
    rng = np.random.default_rng(1)
    p, z = rng.normal(size=(4, 6)), rng.normal(size=(4, 6))
    pn = p / np.linalg.norm(p, axis=1, keepdims=True)
    zn = z / np.linalg.norm(z, axis=1, keepdims=True)
    want = np.mean(np.sum((pn - zn) ** 2, axis=1))
    got = objectives.byol_loss(jnp.asarray(p, jnp.float32), jnp.asarray(z, jnp.float32))
    np.testing.assert_allclose(float(got), want, rtol=1e-5)
    g = jax.grad(lambda t: objectives.byol_loss(jnp.asarray(p, jnp.float32), t))(
        jnp.asarray(z, jnp.float32)
    )
    assert float(jnp.abs(g).max()) == 0.0


def test_dino_loss_and_center_match_numpy():
    rng = np.random.default_rng(2)
    s, t, c = rng.normal(size=(3, 7)), rng.normal(size=(3, 7)), rng.normal(size=7)
    ts, tt = 0.1, 0.04
    q = np.exp((t - c) / tt - _np_logsumexp((t - c) / tt, 1)[:, None])
    logp = s / ts - _np_logsumexp(s / ts, 1)[:, None]
    want = -np.mean(np.sum(q * logp, axis=1))
    got = objectives.dino_loss(*(jnp.asarray(a, jnp.float32) for a in (s, t, c)), ts, tt)
    np.testing.assert_allclose(float(got), want, rtol=1e-4)
    new_c = objectives.update_center(jnp.asarray(c, jnp.float32), jnp.asarray(t, jnp.float32), 0.9)
    np.testing.assert_allclose(np.asarray(new_c), 0.9 * c + 0.1 * t.mean(0), rtol=1e-5, atol=1e-6)


def test_cross_entropy_matches_numpy():
    rng = np.random.default_rng(3)
    logits, y = rng.normal(size=(6, 4)), rng.integers(0, 4, 6)
    want = np.mean(_np_logsumexp(logits, 1) - logits[np.arange(6), y])
    got = objectives.cross_entropy(jnp.asarray(logits, jnp.float32), jnp.asarray(y))
    np.testing.assert_allclose(float(got), want, rtol=1e-5)


@pytest.mark.parametrize("ratio,t", [(0.75, 49), (0.5, 16), (0.3, 10)])
def test_mae_masking_exact_fraction(ratio, t):
    keep, mask = objectives.random_masking(jax.random.PRNGKey(4), 32, t, ratio)
    keep, mask = np.asarray(keep), np.asarray(mask)
    m = int(round(ratio * t))
    assert keep.shape == (32, t - m)
    np.testing.assert_array_equal(mask.sum(1), np.full(32, m))
    for k, row in zip(keep, mask):  # visible = complement of masked, no repeats
        np.testing.assert_array_equal(np.sort(k), np.flatnonzero(row == 0))
    assert len({tuple(k) for k in keep}) > 1  # masks differ across examples


def test_masked_mse_only_counts_masked_patches():
    rng = np.random.default_rng(5)
    pred, target = rng.normal(size=(3, 8, 4)), rng.normal(size=(3, 8, 4))
    _, mask = objectives.random_masking(jax.random.PRNGKey(6), 3, 8, 0.5)
    mask = np.asarray(mask)
    per_patch = ((pred - target) ** 2).mean(-1)
    want = per_patch[mask == 1].mean()
    got = objectives.masked_mse(jnp.asarray(pred), jnp.asarray(target), jnp.asarray(mask))
    np.testing.assert_allclose(float(got), want, rtol=1e-5)
    # changing visible-patch predictions leaves the loss unchanged
    pred2 = np.where(mask[..., None] == 0, pred + 100.0, pred)
    got2 = objectives.masked_mse(jnp.asarray(pred2), jnp.asarray(target), jnp.asarray(mask))
    np.testing.assert_allclose(float(got2), want, rtol=1e-5)


def test_bad_mask_ratio():
    with pytest.raises(ValueError, match="mask_ratio"):
        objectives.random_masking(jax.random.PRNGKey(0), 2, 16, 1.0)


# -- architectures ------------------------------------------------------------------


def test_patchify_matches_numpy():
    x = np.arange(2 * 28 * 28, dtype=np.float32).reshape(2, 28, 28, 1)
    got = np.asarray(archs.patchify(jnp.asarray(x), 7))
    # patch (r, c) of image b is x[b, 7r:7r+7, 7c:7c+7] in row-major order
    for b, r, c in [(0, 0, 0), (1, 2, 3), (0, 3, 1)]:
        np.testing.assert_array_equal(
            got[b, 4 * r + c], x[b, 7 * r : 7 * r + 7, 7 * c : 7 * c + 7].ravel()
        )


def test_group_norm_matches_numpy():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(2, 3, 3, 8)).astype(np.float32)
    p = {"scale": np.linspace(0.5, 2, 8, dtype=np.float32), "bias": np.arange(8, dtype=np.float32)}
    got = np.asarray(archs.group_norm(p, jnp.asarray(x), 4))
    g = x.reshape(2, 3, 3, 4, 2).astype(np.float64)
    g = (g - g.mean((1, 2, 4), keepdims=True)) / np.sqrt(g.var((1, 2, 4), keepdims=True) + 1e-5)
    np.testing.assert_allclose(
        got, g.reshape(x.shape) * p["scale"] + p["bias"], rtol=1e-4, atol=1e-4
    )


def test_sizes_grow_and_configs_validate():
    counts = {
        a: [
            archs.param_count(archs.init(jax.random.PRNGKey(0), archs.config(a, s)))
            for s in ("S", "M", "L")
        ]
        for a in ("resnet", "vit")
    }
    for a, c in counts.items():
        assert c[0] < c[1] < c[2], (a, c)
    with pytest.raises(ValueError, match="arch"):
        archs.config("mlp", "S")
    with pytest.raises(ValueError, match="size"):
        archs.config("vit", "XL")


# -- augmentations --------------------------------------------------------------------

_augment = jax.jit(augment.augment)
_crop = jax.jit(augment.random_resized_crop, static_argnums=(2, 3))
_flip = jax.jit(augment.horizontal_flip, static_argnums=2)
_translate = jax.jit(augment.translate, static_argnums=2)
_jitter = jax.jit(augment.color_jitter, static_argnums=(2, 3, 4))
_noise = jax.jit(augment.gaussian_noise, static_argnums=2)


@pytest.fixture(scope="module")
def images():
    rng = np.random.default_rng(8)
    return jnp.asarray(rng.uniform(size=(6, 28, 28, 1)).astype(np.float32))


def test_augment_shape_range_determinism(images):
    k = jax.random.PRNGKey(9)
    a1, a2 = _augment(k, images), _augment(k, images)
    b = _augment(jax.random.PRNGKey(10), images)
    assert a1.shape == images.shape and a1.dtype == jnp.float32
    assert float(a1.min()) >= 0.0 and float(a1.max()) <= 1.0
    np.testing.assert_array_equal(np.asarray(a1), np.asarray(a2))
    assert not np.allclose(np.asarray(a1), np.asarray(b))
    v1, v2 = jax.jit(augment.two_views)(k, images)
    assert not np.allclose(np.asarray(v1), np.asarray(v2))


def test_full_crop_is_identity_and_flip_matches_numpy(images):
    k = jax.random.PRNGKey(11)
    same = _crop(k, images, (1.0, 1.0), (1.0, 1.0))
    np.testing.assert_allclose(np.asarray(same), np.asarray(images), atol=1e-6)
    flipped = np.asarray(_flip(k, images, 1.0))
    np.testing.assert_array_equal(flipped, np.asarray(images)[:, :, ::-1])
    np.testing.assert_array_equal(np.asarray(_flip(k, images, 0.0)), np.asarray(images))


def test_crop_of_constant_image_is_constant():
    x = jnp.full((4, 28, 28, 1), 0.37)
    out = _crop(jax.random.PRNGKey(12), x, (0.2, 0.5), (0.5, 2.0))
    np.testing.assert_allclose(np.asarray(out), 0.37, atol=1e-6)


def test_translate_matches_shifted_numpy(images):
    out = np.asarray(_translate(jax.random.PRNGKey(13), images, 3))
    x = np.asarray(images)
    for o, img in zip(out, x):  # some integer shift with zero fill reproduces it
        hits = []
        for dy in range(-3, 4):
            for dx in range(-3, 4):
                ref = np.zeros_like(img)
                ys, yd = (
                    (slice(0, 28 - dy), slice(dy, 28))
                    if dy >= 0
                    else (slice(-dy, 28), slice(0, 28 + dy))
                )
                xs, xd = (
                    (slice(0, 28 - dx), slice(dx, 28))
                    if dx >= 0
                    else (slice(-dx, 28), slice(0, 28 + dx))
                )
                ref[yd, xd] = img[ys, xs]
                hits.append(np.array_equal(o, ref))
        assert sum(hits) == 1


def test_color_jitter_and_noise(images):
    k = jax.random.PRNGKey(14)
    out = np.asarray(_jitter(k, images, 0.0, 0.0, 1.0))
    np.testing.assert_allclose(out, np.asarray(images), atol=1e-6)
    noisy = np.asarray(_noise(k, jnp.full((64, 28, 28, 1), 0.5), 0.05))
    assert abs(noisy.std() - 0.05) < 0.002 and abs(noisy.mean() - 0.5) < 0.002


def test_augment_config_validates():
    with pytest.raises(ValueError, match="crop_scale"):
        augment.AugmentConfig(crop_scale=(0.5, 1.5))
    with pytest.raises(ValueError, match="flip_prob"):
        augment.AugmentConfig(flip_prob=2.0)


# -- pretrain(): determinism, cache, resume, validation -----------------------------------


@pytest.fixture(scope="module")
def small_task():
    rng = np.random.default_rng(15)
    y = rng.integers(0, 3, 256)
    x = (rng.uniform(size=(256, 28, 28)) * 80).astype(np.uint8)
    for c in range(3):  # class-dependent bright band
        x[y == c, 9 * c : 9 * c + 9, :] += 150
    return Task("toy_images", x, y, 3)


def _leaves(enc):
    return [np.asarray(v) for v in jax.tree_util.tree_leaves(enc.params)]


def test_determinism_same_seed_bit_identical(small_task):
    kw = dict(batch_size=32, cache=False, chunk_steps=3)
    a = P.pretrain("simclr", "vit", "XS", small_task, 6, 0, **kw)
    b = P.pretrain("simclr", "vit", "XS", small_task, 6, 0, **kw)
    c = P.pretrain("simclr", "vit", "XS", small_task, 6, 1, **kw)
    for u, v in zip(_leaves(a), _leaves(b)):
        np.testing.assert_array_equal(u, v)
    assert any(not np.array_equal(u, v) for u, v in zip(_leaves(a), _leaves(c)))
    x = jnp.asarray(small_task.x[:16, ..., None] / 255.0, jnp.float32)
    fa, fb = np.asarray(a.apply(a.params, x)), np.asarray(b.apply(b.params, x))
    np.testing.assert_array_equal(fa, fb)
    assert fa.shape == (16, a.feature_dim)
    # training moved the parameters away from the shared initialization
    r = P.pretrain("random", "vit", "XS", small_task, 0, 0)
    assert any(not np.array_equal(u, v) for u, v in zip(_leaves(a), _leaves(r)))
    assert a.meta["param_count"] == archs.param_count(r.params) == r.meta["param_count"]


@pytest.mark.parametrize(
    "objective,arch",
    [("byol", "vit"), ("dino", "vit"), ("autoencoder", "vit"), ("supervised", "resnet")],
)
def test_every_objective_trains_finite(objective, arch, small_task):
    e = P.pretrain(
        objective, arch, "XS", small_task, 4, 0, batch_size=16, cache=False, chunk_steps=2
    )
    assert e.meta["unrolled"] is (arch == "resnet")
    assert np.isfinite(e.meta["final_loss"]) and e.meta["steps"] == 4
    assert e.meta["objective"] == objective and e.meta["head_param_count"] > 0


def test_cache_loads_without_training(small_task, tmp_path, monkeypatch):
    monkeypatch.setenv("MDLNB_CACHE", str(tmp_path))
    a = P.pretrain("mae", "vit", "XS", small_task, 4, 0, batch_size=16, chunk_steps=2)
    assert a.meta["loaded_from_cache"] is False
    assert len(list((tmp_path / "encoders").glob("*.npz"))) == 1

    def boom(*args, **kwargs):
        raise AssertionError("trained although cached")

    monkeypatch.setattr(P, "_make_chunk", boom)
    b = P.pretrain("mae", "vit", "XS", small_task, 4, 0, batch_size=16, chunk_steps=2)
    assert b.meta["loaded_from_cache"] is True
    assert b.fingerprint() == a.fingerprint()
    assert b.meta["final_loss"] == a.meta["final_loss"]
    with pytest.raises(AssertionError, match="trained"):  # other hyperparameters: a new key
        P.pretrain(
            "mae", "vit", "XS", small_task, 4, 0, batch_size=16, chunk_steps=2, learning_rate=2e-3
        )


def test_interrupted_run_resumes_to_identical_parameters(small_task, tmp_path, monkeypatch):
    monkeypatch.setenv("MDLNB_CACHE", str(tmp_path))
    kw = dict(batch_size=16, chunk_steps=2)
    ref = P.pretrain("supervised", "vit", "XS", small_task, 6, 3, cache=False, **kw)

    class Stop(Exception):
        pass

    def stop_after_first(done, loss):
        if done == 2:
            raise Stop

    with pytest.raises(Stop):
        P.pretrain(
            "supervised",
            "vit",
            "XS",
            small_task,
            6,
            3,
            progress=stop_after_first,
            checkpoint_seconds=0.0,
            **kw,
        )
    assert len(list((tmp_path / "encoders").glob("*.ckpt.npz"))) == 1
    seen = []
    out = P.pretrain(
        "supervised", "vit", "XS", small_task, 6, 3, progress=lambda d, l: seen.append(d), **kw
    )
    assert seen == [4, 6]  # resumed after the first chunk
    for u, v in zip(_leaves(out), _leaves(ref)):
        np.testing.assert_array_equal(u, v)
    assert not list((tmp_path / "encoders").glob("*.ckpt.npz"))


def test_bad_arguments(small_task):
    with pytest.raises(ValueError, match="objective"):
        P.pretrain("jigsaw", "vit", "XS", small_task, 2, 0)
    with pytest.raises(ValueError, match="arch"):
        P.pretrain("mae", "resnet", "XS", small_task, 2, 0)
    with pytest.raises(ValueError, match="steps"):
        P.pretrain("simclr", "vit", "XS", small_task, 0, 0)
    with pytest.raises(ValueError, match="batch_size"):
        P.pretrain("simclr", "vit", "XS", small_task, 2, 0, batch_size=10_000)
    with pytest.raises(ValueError, match="data"):
        P.pretrain("simclr", "vit", "XS", small_task.replace(x=small_task.features), 2, 0)
    with pytest.raises(ValueError, match="temperature"):
        P.Hyper(temperature=0.0)


# -- sanity: pretrained features beat the random initialization ----------------------------


def test_supervised_and_simclr_beat_random_init_in_linear_probe(tmp_path, monkeypatch):
    """ViT-XS, 200 steps of batch 128 on 10k Fashion-MNIST training images;
    logistic regression on standardized features, 2,000 test images to fit and
    2,000 others to score. Measured: random 0.603, supervised 0.733, SimCLR
    0.708; asserted margin: +0.05 over random (the binomial
    standard error of a 2,000-image accuracy is about 0.01)."""
    from sklearn.linear_model import LogisticRegression

    import mdlnb.data
    from mdlnb.encoders import features

    monkeypatch.setenv("MDLNB_CACHE", str(tmp_path))
    try:
        train = mdlnb.data.load("fashion_mnist", split="train").subsample(10_000, seed=0)
        test = mdlnb.data.load("fashion_mnist", split="test").subsample(4_000, seed=0)
    except (ValueError, FileNotFoundError, OSError) as e:  # dataset package missing
        pytest.skip(f"Fashion-MNIST unavailable: {e}")
    kw = dict(batch_size=128, learning_rate=3e-3, cache=False, chunk_steps=200)

    def probe(objective):
        enc = P.pretrain(objective, "vit", "XS", train, 200, 0, **kw)
        f = features(enc, test, cache=False).x
        mu, sd = f[:2000].mean(0), f[:2000].std(0) + 1e-6
        f = (f - mu) / sd
        clf = LogisticRegression(max_iter=2000).fit(f[:2000], test.y[:2000])
        return clf.score(f[2000:], test.y[2000:])

    acc = {o: probe(o) for o in ("random", "supervised", "simclr")}
    assert acc["supervised"] > acc["random"] + 0.05, acc
    assert acc["simclr"] > acc["random"] + 0.05, acc
