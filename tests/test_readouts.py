"""Readouts: forward pass against NumPy, initialisation statistics, stacking under vmap."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mdlnb.board import readouts


def _numpy_apply(params, x):
    h = np.asarray(x, np.float64)
    for layer in params[:-1]:
        h = np.maximum(h @ np.asarray(layer["w"], np.float64) + np.asarray(layer["b"]), 0.0)
    return h @ np.asarray(params[-1]["w"], np.float64) + np.asarray(params[-1]["b"])


def _random_params(ro, key, d, c):
    """Init, then replace every leaf with noise so the zero output layer does not hide bugs."""
    p = ro.init(key, d, c)
    leaves, tree = jax.tree_util.tree_flatten(p)
    ks = jax.random.split(jax.random.fold_in(key, 1), len(leaves))
    return jax.tree_util.tree_unflatten(
        tree, [jax.random.normal(k, l.shape) * 0.5 for k, l in zip(ks, leaves)]
    )


@pytest.mark.parametrize("ro", [readouts.linear(), readouts.mlp(1), readouts.mlp(3, 16)])
def test_apply_matches_numpy(ro):
    key = jax.random.PRNGKey(0)
    p = _random_params(ro, key, 7, 5)
    x = np.random.default_rng(0).normal(size=(11, 7)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(ro.apply(p, x)), _numpy_apply(p, x), rtol=1e-5, atol=1e-5)


def test_names_and_layer_sizes():
    assert readouts.linear().name == "linear"
    assert readouts.mlp(2).name == "mlp2"
    assert readouts.mlp(2, 512).name == "mlp2x512"
    assert readouts.mlp(3, 8).layer_sizes(5, 4) == ((5, 8), (8, 8), (8, 8), (8, 4))
    # 64*256+256 + 256*256+256 + 256*10+10
    assert readouts.mlp(2).num_params(64, 10) == 16640 + 65792 + 2570
    assert readouts.linear().flops(64, 10) == 2 * 640
    assert [r.name for r in readouts.board(3)] == ["linear", "mlp1", "mlp2", "mlp3"]
    assert readouts.from_config(readouts.mlp(4, 32).config()) == readouts.mlp(4, 32)


def test_init_is_uniform_predictor_with_he_hidden_layers():
    ro = readouts.mlp(2, 512)
    p = ro.init(jax.random.PRNGKey(3), 400, 7)
    # Output layer zero: exactly the uniform distribution, log C nats per label.
    x = np.random.default_rng(1).normal(size=(4, 400)).astype(np.float32)
    lp = jax.nn.log_softmax(ro.apply(p, x))
    np.testing.assert_allclose(np.asarray(lp), -np.log(7.0), rtol=1e-6)
    # He init: weight variance 2/fan_in (truncated normal rescaled to that variance).
    for layer, fan_in in zip(p[:-1], (400, 512)):
        w = np.asarray(layer["w"])
        assert abs(w.var() / (2.0 / fan_in) - 1) < 0.03
        assert np.abs(w).max() <= 2 * np.sqrt(2.0 / fan_in) / 0.8796 + 1e-6  # truncated at 2σ
        assert np.all(np.asarray(layer["b"]) == 0)


def test_stacked_params_vmap_equals_loop():
    ro = readouts.mlp(2, 16)
    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    stacked = jax.vmap(lambda k: _random_params(ro, k, 6, 4))(keys)
    assert stacked[0]["w"].shape == (3, 6, 16)
    x = jnp.asarray(np.random.default_rng(2).normal(size=(5, 6)), jnp.float32)
    batched = jax.vmap(ro.apply, in_axes=(0, None))(stacked, x)
    for i, k in enumerate(keys):
        np.testing.assert_allclose(
            np.asarray(batched[i]),
            _numpy_apply(_random_params(ro, k, 6, 4), x),
            rtol=1e-5,
            atol=1e-5,
        )


def test_distinct_keys_distinct_params():
    ro = readouts.mlp(1, 8)
    a, b = ro.init(jax.random.PRNGKey(0), 3, 2), ro.init(jax.random.PRNGKey(1), 3, 2)
    assert not np.allclose(a[0]["w"], b[0]["w"])
    np.testing.assert_array_equal(a[0]["w"], ro.init(jax.random.PRNGKey(0), 3, 2)[0]["w"])


@pytest.mark.parametrize(
    "call, arg",
    [
        (lambda: readouts.mlp(0), "hidden_layers"),
        (lambda: readouts.mlp(8), "hidden_layers"),
        (lambda: readouts.mlp(2, 0), "width"),
        (lambda: readouts.Readout("mlp3", "mlp", 2, 256), "name"),
        (lambda: readouts.Readout("conv", "conv", 0, 0), "family"),
        (lambda: readouts.linear().init(jax.random.PRNGKey(0), 0, 3), "in_dim"),
        (lambda: readouts.linear().init(jax.random.PRNGKey(0), 3, 1), "num_classes"),
    ],
)
def test_bad_input(call, arg):
    with pytest.raises(ValueError, match=arg):
        call()


def test_from_name_accepts_every_name_the_library_produces():
    from mdlnb.board.experts import PRESETS, preset

    names = {e.readout.name for p in PRESETS for e in preset(p)}
    assert {"linear", "mlp1", "mlp7", "mlp1x64"} <= names
    for name in names:
        assert readouts.from_name(name).name == name
    assert readouts.from_name("mlp2x256") == readouts.mlp(2)  # the width spelled out
    assert readouts.from_name("mlp3x512").width == 512
    for bad in ("mlp", "mlpx3", "conv2", "mlp2x", 3):
        with pytest.raises(ValueError, match="name"):
            readouts.from_name(bad)
    from mdlnb.studies.transferability import readout_from_name

    assert readout_from_name("mlp1") == readouts.mlp(1)
