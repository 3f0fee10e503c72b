"""Fine-tuning through stage 1: plumbing against the plain linear readout, a
hand-written replay step, data efficiency of a pretrained encoder vs scratch,
determinism, and vmap-vs-alone equality."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from mdlnb import prequential, switching
from mdlnb.baselines import finetune
from mdlnb.baselines.finetune import FinetuneReadout
from mdlnb.board import readouts
from mdlnb.board.experts import Expert
from mdlnb.core._task import Task
from mdlnb.encoders import archs
from mdlnb.encoders.base import Encoder

B = 32
LRS = (1e-3, 3e-3)


# ----------------------------------------------------------------------------- fixtures


def _digits_task(n=160):
    from sklearn.datasets import load_digits

    d = load_digits()
    x = (d.images[:n] / 16.0).astype(np.float32)[..., None]  # (n, 8, 8, 1) in [0, 1]
    return Task("digits8", x, d.target[:n].astype(np.int64), 10)


def _fixed_linear_encoder(dim=12, seed=0):
    """An encoder with no trainable parameters: a fixed linear map of the pixels."""
    m = np.random.default_rng(seed).standard_normal((64, dim)).astype(np.float32) / 8.0
    return Encoder(
        name="fixed-linear",
        params={},
        apply=lambda p, x: x.reshape(x.shape[0], -1) @ m,
        input_size=(8, 8),
        channels=1,
        feature_dim=dim,
    ), m


@pytest.fixture(scope="module")
def fmnist():
    from mdlnb.data import fashion_mnist

    try:
        return fashion_mnist.build()
    except fashion_mnist.MissingDataError as e:  # pragma: no cover - depends on the machine
        pytest.skip(str(e))


@pytest.fixture(scope="module")
def pretrained(fmnist):
    """A ViT-XS pretrained with labels on 4,000 training images (300 steps)."""
    from mdlnb.encoders import pretrain

    train, _ = fmnist
    return pretrain(
        "supervised",
        "vit",
        "XS",
        train.take(np.arange(4000)),
        300,
        seed=0,
        batch_size=64,
        learning_rate=3e-3,
    )


@pytest.fixture(scope="module")
def stream(fmnist, pretrained):
    """256 held-out (test-split) images coded by fine-tuned and from-scratch experts."""
    _, test = fmnist
    task = test.take(np.arange(256))
    board = finetune.experts(pretrained, task, learning_rate=LRS, replay_streams=3)
    lm, params = prequential.run_with_params(task, board, batch_size=B, seed=0, cache=False)
    return task, board, lm, params


# ----------------------------------------------------------------------------- (1) plumbing


def test_fixed_encoder_reproduces_linear_readout_and_bypasses_standardisation():
    """A fine-tune expert whose encoder is a fixed linear map equals a linear
    readout on the mapped features (unstandardised) — on a board where the
    plain linear readout next to it still gets standardised features."""
    task = _digits_task()
    enc, m = _fixed_linear_encoder()
    ro = FinetuneReadout.for_task(enc, task)
    assert (ro.image_shape, ro.pixel_max) == ((8, 8, 1), 1.0)
    lin = Expert(readouts.linear(), 0.1, replay_streams=4)
    mixed = prequential.run(
        task, [lin, Expert(ro, 0.1, replay_streams=4)], batch_size=B, cache=False, standardize=True
    )
    feats = Task("digits8-feats", task.features @ m, task.y, 10)
    ref = prequential.run(feats, [lin], batch_size=B, cache=False, standardize=False)
    alone = prequential.run(task, [lin], batch_size=B, cache=False, standardize=True)
    np.testing.assert_allclose(mixed.losses[:, 1], ref.losses[:, 0], atol=1e-5, rtol=0)
    np.testing.assert_allclose(mixed.losses[:, 0], alone.losses[:, 0], atol=1e-5, rtol=0)
    assert mixed.losses[:, 1].sum() < task.n * math.log(10) - 5  # it learned something
    assert np.abs(mixed.losses[B:, 0] - mixed.losses[B:, 1]).max() > 0.1  # different inputs


def test_images_match_prepare_images_for_uint8_resize_and_channels(fmnist):
    from mdlnb.encoders.base import prepare_images

    _, test = fmnist
    task = test.take(np.arange(4))
    enc = Encoder("rgb16", {}, lambda p, x: x.mean((1, 2)), (16, 16), 3, 3)
    ro = FinetuneReadout.for_task(enc, task)
    assert (ro.image_shape, ro.pixel_max) == ((28, 28, 1), 255.0)
    want = prepare_images(task.x, (16, 16), 3)
    np.testing.assert_allclose(np.asarray(ro.images(jnp.asarray(task.features))), want, atol=1e-6)


# ----------------------------------------------------------------------------- (2) data efficiency


def test_pretrained_finetuning_codes_held_out_images_shorter_than_scratch(stream):
    task, board, lm, _ = stream
    tot = lm.losses.sum(axis=0, dtype=np.float64)
    ft = {e.learning_rate: t for e, t in zip(board, tot) if not e.readout.from_scratch}
    sc = {e.learning_rate: t for e, t in zip(board, tot) if e.readout.from_scratch}
    assert sorted(ft) == sorted(sc) == sorted(LRS)
    uniform = task.n * math.log(10)
    for lr in LRS:  # at every learning rate, and by a clear margin at the best one
        assert ft[lr] < sc[lr] < uniform
    assert min(ft.values()) < min(sc.values()) - 40.0


# ----------------------------------------------------------------------------- (3) training happens


def test_first_batch_uniform_and_encoder_parameters_change(stream, pretrained):
    task, board, lm, params = stream
    np.testing.assert_array_equal(lm.losses[:B], np.float32(math.log(10)))
    assert lm.losses[:B].sum(axis=0, dtype=np.float64) == pytest.approx(B * math.log(10), abs=1e-4)
    init = jax.tree_util.tree_leaves(pretrained.params)
    for e, p in zip(board, params):
        after = jax.tree_util.tree_leaves(p["params"]["encoder"])
        moved = max(float(np.abs(np.asarray(a) - np.asarray(b)).max()) for a, b in zip(after, init))
        if e.readout.from_scratch:  # a fresh init, not the pretrained weights
            assert moved > 0.05
        else:  # AdamW moves each parameter by up to ~lr per step; 3·8 steps here
            assert 0.1 * e.learning_rate < moved < 30 * e.learning_rate
        assert float(np.abs(np.asarray(p["params"]["head"][0]["w"])).max()) > 0


def _replay_by_hand(ro, init, task, order, lr, steps):
    """Batch 1's losses after ``steps`` hand-written AdamW steps on batch 0:
    training encoder and head, and training the head only (a frozen probe)."""
    x = jnp.asarray(task.features[order])
    y = jnp.asarray(task.y[order])
    key = jax.random.PRNGKey(0)
    opt = optax.adamw(lr, b1=0.9, b2=0.999, eps=1e-8, weight_decay=0.0)

    def loss(p, xb, yb):
        return optax.softmax_cross_entropy_with_integer_labels(ro.apply(p, xb), yb).mean()

    @jax.jit
    def step(params, state, xb, yb, enc_scale):
        g = jax.grad(loss)(params, xb, yb)
        g = {
            "encoder": jax.tree_util.tree_map(lambda a: a * enc_scale, g["encoder"]),
            "head": g["head"],
        }
        upd, state = opt.update(g, state, params)
        return optax.apply_updates(params, upd), state

    out, predict = [], jax.jit(ro.apply)
    for enc_scale in (1.0, 0.0):
        params, state = init, opt.init(init)
        for r in range(steps):
            pos = prequential.replay_positions(key, 0, r, B, B)
            params, state = step(params, state, x[pos], y[pos], jnp.float32(enc_scale))
        logp = jax.nn.log_softmax(predict(params, x[B : 2 * B]))
        out.append(-np.asarray(jnp.take_along_axis(logp, y[B : 2 * B, None], 1)[:, 0]))
    return out


def test_second_batch_matches_hand_written_replay_with_encoder_trained(stream, pretrained):
    task, board, lm, _ = stream
    k = next(
        i for i, e in enumerate(board) if not e.readout.from_scratch and e.learning_rate == 3e-3
    )
    ro, lr = board[k].readout, board[k].learning_rate
    init = ro.init(prequential.expert_key(0, board[k]), 784, 10)
    want, frozen = _replay_by_hand(ro, init, task, lm.order, lr, 3)
    np.testing.assert_allclose(lm.losses[B : 2 * B, k], want, atol=2e-5, rtol=1e-5)
    assert np.abs(lm.losses[B : 2 * B, k] - frozen).max() > 1e-3  # a frozen probe differs


# ----------------------------------------------------------------------------- (4) determinism


def test_deterministic_and_cache_keyed_by_encoder_parameters(stream, pretrained):
    task, board, lm, _ = stream
    again = prequential.run(task, board, batch_size=B, seed=0, cache=True)
    np.testing.assert_array_equal(again.losses, lm.losses)
    loaded = prequential.run(task, board, batch_size=B, seed=0, cache=True)  # from the cache
    np.testing.assert_array_equal(loaded.losses, lm.losses)
    assert loaded.experts == tuple(board) and loaded.meta == again.meta
    # Perturbing one encoder parameter changes the config (hence the cache key)
    # of the fine-tuned experts only.
    leaves, tree = jax.tree_util.tree_flatten(pretrained.params)
    leaves = [np.asarray(leaves[0]) + 1e-3, *leaves[1:]]
    other = Encoder(
        pretrained.name,
        jax.tree_util.tree_unflatten(tree, leaves),
        pretrained.apply,
        pretrained.input_size,
        pretrained.channels,
        pretrained.feature_dim,
        pretrained.meta,
    )
    for e in board:
        e2 = e.replace(
            readout=FinetuneReadout.for_task(other, task, from_scratch=e.readout.from_scratch)
        )
        assert (e2.config() == e.config()) == e.readout.from_scratch


# ----------------------------------------------------------------------------- (5) vmap


def test_vmapped_learning_rates_equal_each_expert_alone(stream):
    task, board, lm, _ = stream
    for k, e in enumerate(board):
        if e.readout.from_scratch:
            continue
        alone = prequential.run(task, [e], batch_size=B, seed=0, cache=False)
        np.testing.assert_allclose(alone.losses[:, 0], lm.losses[:, k], atol=1e-5, rtol=0)


# ----------------------------------------------------------------------------- compare


def test_compare_table_against_closed_form_mixtures(stream, pretrained):
    task, board, lm, _ = stream
    df = finetune.compare(task, pretrained, learning_rate=LRS, replay_streams=3, cache=False)
    assert list(df["method"]) == list(finetune.METHODS)
    np.testing.assert_array_equal(df.attrs["loss_matrices"]["encoder"].losses, lm.losses)
    probe = df.attrs["loss_matrices"]["probe"]
    np.testing.assert_array_equal(probe.order, lm.order)
    cols = {
        "linear probe": probe.losses,
        "fine-tuned": lm.losses[:, [not e.readout.from_scratch for e in board]],
        "from scratch": lm.losses[:, [e.readout.from_scratch for e in board]],
    }
    for _, row in df.iterrows():
        tot = cols[row["method"]].sum(axis=0, dtype=np.float64)
        # Bayesian mixture, uniform prior: -log mean_k exp(-L_k).
        want = -(np.logaddexp.reduce(-tot) - math.log(len(tot)))
        assert row["codelength_nats"] == pytest.approx(want, abs=1e-3)
        assert row["bits_per_example"] == pytest.approx(want / task.n / math.log(2), abs=1e-6)
        assert row["best_expert_nats"] == pytest.approx(tot.min(), abs=1e-3)
    scratch = df.set_index("method").loc["from scratch", "codelength_nats"]
    np.testing.assert_allclose(df["regret_nats"], df["codelength_nats"] - scratch, atol=1e-9)
    assert df.set_index("method").loc["fine-tuned", "regret_nats"] < 0
    res = switching.codelength(cols["fine-tuned"], switching.BayesianMixture(), posterior=False)
    np.testing.assert_allclose(df.attrs["per_step_nats"]["fine-tuned"], res.per_step_nats)


# ----------------------------------------------------------------------------- validation


def test_bad_inputs_raise_value_error_naming_the_argument():
    task = _digits_task(40)
    enc, _ = _fixed_linear_encoder()
    with pytest.raises(ValueError, match="image_shape"):
        FinetuneReadout(enc, (8, 8, 2))
    with pytest.raises(ValueError, match="pixel_max"):
        FinetuneReadout(enc, (8, 8, 1), pixel_max=0.0)
    with pytest.raises(ValueError, match="from_scratch"):
        FinetuneReadout(enc, (8, 8, 1), from_scratch=True)  # no archs architecture
    with pytest.raises(ValueError, match="encoder"):
        FinetuneReadout("vit", (8, 8, 1))
    ro = FinetuneReadout(enc, (8, 8, 1), pixel_max=255.0)
    with pytest.raises(ValueError, match="task"):  # float images but pixel_max 255
        prequential.run(task, [Expert(ro, 1e-3)], cache=False)
    with pytest.raises(ValueError, match="task"):
        prequential.run(task.replace(x=task.x[:, :4]), [Expert(ro, 1e-3)], cache=False)
    with pytest.raises(ValueError, match="in_dim"):
        ro.init(jax.random.PRNGKey(0), 63, 10)
    with pytest.raises(ValueError, match="task"):
        finetune.experts(enc, Task("feats", np.zeros((4, 5), np.float32), np.arange(4) % 2, 2))
    with pytest.raises(ValueError, match="config"):
        readouts.from_config(FinetuneReadout.for_task(enc, task).config())


def test_sizes_and_scratch_init(pretrained, fmnist):
    _, test = fmnist
    ro = FinetuneReadout.for_task(pretrained, test, from_scratch=True)
    cfg = archs.config("vit", "XS")
    assert (
        ro.num_params(784, 10)
        == archs.param_count(archs.init(jax.random.PRNGKey(0), cfg)) + cfg.dim * 10 + 10
    )
    # FLOPs by hand for ViT-XS on one image: patch embedding, one block (qkv,
    # scores, weighted values, out projection, MLP), then the linear head.
    t, d, p = cfg.num_patches, cfg.dim, cfg.patch * cfg.patch
    r = cfg.mlp_ratio
    assert (
        ro.flops(784, 10)
        == 2 * t * (p * d + 3 * d * d + d * d + 2 * r * d * d) + 2 * 2 * t * t * d + 2 * d * 10
    )
    assert ro.max_block is None  # no convolutions: experts are vmapped together
    a = ro.init(jax.random.PRNGKey(1), 784, 10)["encoder"]
    b = ro.init(jax.random.PRNGKey(1), 784, 10)["encoder"]
    c = ro.init(jax.random.PRNGKey(2), 784, 10)["encoder"]
    np.testing.assert_array_equal(a["embed"]["w"], b["embed"]["w"])
    assert not np.allclose(a["embed"]["w"], c["embed"]["w"])
    assert ro.name == "scratch_linear[vit_XS]" and "encoder_fingerprint" not in ro.config()


def test_conv_encoder_flops_by_hand_and_one_expert_per_block_on_cpu():
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((3, 3, 1, 4)).astype(np.float32)
    w2 = rng.standard_normal((3, 3, 4, 6)).astype(np.float32)

    def apply(p, x):  # conv 3x3 (1→4) at 8x8, conv 3x3 stride 2 (4→6) to 4x4, pool, dense 6→5
        h = jax.nn.relu(archs.conv(p["w1"], x))
        h = archs.conv(p["w2"], h, stride=2).mean((1, 2))
        return h @ p["d"]

    params = {"w1": w1, "w2": w2, "d": rng.standard_normal((6, 5)).astype(np.float32)}
    enc = Encoder("conv", params, apply, (8, 8), 1, 5)
    ro = FinetuneReadout(enc, (8, 8, 1), pixel_max=1.0)
    macs = 8 * 8 * 9 * 1 * 4 + 4 * 4 * 9 * 4 * 6 + 6 * 5  # padded taps counted
    assert ro.flops(64, 3) == 2 * macs + 2 * 5 * 3
    assert (
        finetune.matmul_flops(
            jax.make_jaxpr(lambda p, x: apply(p, x))(params, jnp.zeros((2, 8, 8, 1)))
        )
        == 2 * 2 * macs
    )  # scales with the batch
    assert ro.num_params(64, 3) == 9 * 4 + 9 * 24 + 30 + 5 * 3 + 3
    if jax.default_backend() == "cpu":
        assert ro.max_block == 1  # vmapped convolutions are slow on CPU
