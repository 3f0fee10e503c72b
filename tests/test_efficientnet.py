"""EfficientNet-Lite in JAX and the torch-free state_dict reader.

References used here are independent of the code under test: pickles written
by the test itself (fake ``torch`` modules + ``pickle`` + ``zipfile``), a plain
NumPy forward pass on the raw (unfolded) state dict, explicit NumPy
convolutions, ``lax.conv_general_dilated(padding="SAME")``, the EfficientNet
architecture table, and ImageNet class indices of real photos.
"""

from __future__ import annotations

import collections
import dataclasses
import io
import math
import os
import pickle
import struct
import sys
import types
import zipfile

import jax
import numpy as np
import pytest
import skimage.data

from mdlnb import Task
from mdlnb.encoders import base
from mdlnb.encoders import efficientnet as E
from mdlnb.encoders.torch_pickle import load_state_dict

TABBY, TIGER_CAT, PERSIAN, SIAMESE, EGYPTIAN_CAT = 281, 282, 283, 284, 285
ESPRESSO, COFFEE_MUG = 967, 504


# --------------------------------------------------------------------------- torch-format writers


class _FakeStorage:
    """A storage as the test's pickler sees it: raw data + torch type name."""

    def __init__(self, key: str, data: np.ndarray):
        self.key, self.data = key, data


class _FakeTensor:
    def __init__(self, storage: _FakeStorage, offset: int, size: tuple, stride: tuple):
        self.storage, self.offset, self.size, self.stride = storage, offset, size, stride

    def __reduce__(self):
        rebuild = sys.modules["torch._utils"]._rebuild_tensor_v2
        return rebuild, (
            self.storage,
            self.offset,
            self.size,
            self.stride,
            False,
            collections.OrderedDict(),
        )


@pytest.fixture
def fake_torch(monkeypatch):
    """Importable ``torch`` / ``torch._utils`` stand-ins so ``pickle`` writes torch's global names."""
    torch = types.ModuleType("torch")
    utils = types.ModuleType("torch._utils")
    for name in ("FloatStorage", "LongStorage", "DoubleStorage"):
        cls = type(name, (), {"__module__": "torch", "__qualname__": name})
        setattr(torch, name, cls)

    def _rebuild_tensor_v2(*args):  # never called: only its name is pickled
        raise AssertionError

    _rebuild_tensor_v2.__module__ = "torch._utils"
    _rebuild_tensor_v2.__qualname__ = "_rebuild_tensor_v2"
    utils._rebuild_tensor_v2 = _rebuild_tensor_v2
    torch._utils = utils
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "torch._utils", utils)
    return torch


_TORCH_TYPE = {
    np.dtype("float32"): "FloatStorage",
    np.dtype("int64"): "LongStorage",
    np.dtype("float64"): "DoubleStorage",
}


def _pickle_state(obj, torch, protocol=2) -> bytes:
    buf = io.BytesIO()
    p = pickle.Pickler(buf, protocol=protocol)

    def persistent_id(o):
        if isinstance(o, _FakeStorage):
            return ("storage", getattr(torch, _TORCH_TYPE[o.data.dtype]), o.key, "cpu", o.data.size)
        return None

    p.persistent_id = persistent_id
    p.dump(obj)
    return buf.getvalue()


def _write_zip(path, obj, storages, torch, byteorder="little"):
    fmt = "<" if byteorder == "little" else ">"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", _pickle_state(obj, torch))
        z.writestr("archive/byteorder", byteorder)
        for s in storages:
            z.writestr(
                f"archive/data/{s.key}", s.data.astype(s.data.dtype.newbyteorder(fmt)).tobytes()
            )
        z.writestr("archive/version", "3\n")


def _write_legacy(path, obj, storages, torch):
    with open(path, "wb") as f:
        pickle.dump(0x1950A86A20F9469CFC6C, f, protocol=2)
        pickle.dump(1001, f, protocol=2)
        pickle.dump(
            {
                "protocol_version": 1001,
                "little_endian": True,
                "type_sizes": {"short": 2, "int": 4, "long": 4},
            },
            f,
            protocol=2,
        )
        f.write(_pickle_state(obj, torch))
        pickle.dump([s.key for s in storages], f, protocol=2)
        for s in storages:
            f.write(struct.pack("<q", s.data.size))
            f.write(s.data.astype(s.data.dtype.newbyteorder("<")).tobytes())


def _example_state():
    rng = np.random.default_rng(0)
    big = _FakeStorage("0", rng.standard_normal(40).astype(np.float32))
    other = _FakeStorage("1", rng.standard_normal(6).astype(np.float64))
    count = _FakeStorage("2", np.array([7], np.int64))
    state = collections.OrderedDict(
        [
            (
                "conv.weight",
                _FakeTensor(big, 0, (2, 3, 2, 2), (12, 4, 2, 1)),
            ),  # contiguous, 24 elements
            ("fc.weight_t", _FakeTensor(big, 24, (4, 3), (1, 4))),  # transposed view, offset 24
            ("fc.bias", _FakeTensor(big, 36, (4,), (1,))),  # shares the storage
            ("bn.running_var", _FakeTensor(other, 0, (2, 3), (3, 1))),
            ("bn.num_batches_tracked", _FakeTensor(count, 0, (), ())),
        ]
    )
    b = big.data
    expected = {
        "conv.weight": b[:24].reshape(2, 3, 2, 2),
        "fc.weight_t": b[24:36].reshape(3, 4).T,
        "fc.bias": b[36:40],
        "bn.running_var": other.data.reshape(2, 3),
        "bn.num_batches_tracked": np.array(7, np.int64),
    }
    return state, [big, other, count], expected


@pytest.mark.parametrize("fmt", ["zip", "zip-big-endian", "legacy"])
def test_load_state_dict_reads_hand_built_torch_files(tmp_path, fake_torch, fmt):
    state, storages, expected = _example_state()
    path = tmp_path / "model.pth"
    if fmt == "legacy":
        _write_legacy(path, state, storages, fake_torch)
    else:
        _write_zip(
            path, state, storages, fake_torch, "big" if fmt.endswith("big-endian") else "little"
        )
    got = load_state_dict(path)
    assert list(got) == list(expected)
    for k, v in expected.items():
        assert got[k].dtype == v.dtype and got[k].dtype.isnative, k
        np.testing.assert_array_equal(got[k], v, err_msg=k)


class _Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


@pytest.mark.parametrize("fmt", ["zip", "legacy"])
def test_load_state_dict_refuses_arbitrary_globals(tmp_path, fake_torch, fmt):
    marker = tmp_path / "pwned"
    state = collections.OrderedDict([("w", _Evil(marker))])
    path = tmp_path / "evil.pth"
    (_write_zip if fmt == "zip" else _write_legacy)(path, state, [], fake_torch)
    with pytest.raises(
        ValueError, match=r"path: refusing to unpickle global (posix|os|nt)\.system"
    ):
        load_state_dict(path)
    assert not marker.exists()


def test_load_state_dict_refuses_eval_and_out_of_bounds_views(tmp_path, fake_torch):
    path = tmp_path / "eval.pth"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", pickle.dumps(_EvalReduce(), protocol=2))
    with pytest.raises(
        ValueError, match=r"refusing to unpickle global (builtins|__builtin__)\.eval"
    ):
        load_state_dict(path)

    s = _FakeStorage("0", np.zeros(6, np.float32))
    state = {"w": _FakeTensor(s, 2, (2, 3), (3, 1))}  # needs elements 2..7 of 6
    path = tmp_path / "oob.pth"
    _write_zip(path, state, [s], fake_torch)
    with pytest.raises(ValueError, match="reads past its storage"):
        load_state_dict(path)


class _EvalReduce:
    def __reduce__(self):
        return eval, ("1+1",)


def test_load_state_dict_rejects_missing_and_truncated_files(tmp_path, fake_torch):
    with pytest.raises(ValueError, match="path: no such file"):
        load_state_dict(tmp_path / "nope.pth")
    state, storages, _ = _example_state()
    path = tmp_path / "model.pth"
    _write_legacy(path, state, storages, fake_torch)
    data = path.read_bytes()
    path.write_bytes(data[:-20])
    with pytest.raises(ValueError, match="path:"):
        load_state_dict(path)
    path.write_bytes(b"not a torch file at all")
    with pytest.raises(ValueError, match="path:"):
        load_state_dict(path)


# --------------------------------------------------------------------------- layers


def _numpy_same_depthwise(x, w, stride):
    """Explicit TF-SAME depthwise conv: out[o] = sum_i x[o*s - pad_before + i] * w[i]."""
    b, h, wd, c = x.shape
    k = w.shape[0]
    out_h, out_w = math.ceil(h / stride), math.ceil(wd / stride)
    pad_h = max((out_h - 1) * stride + k - h, 0) // 2
    pad_w = max((out_w - 1) * stride + k - wd, 0) // 2
    out = np.zeros((b, out_h, out_w, c), np.float64)
    for oy in range(out_h):
        for ox in range(out_w):
            for i in range(k):
                for j in range(k):
                    yy, xx = oy * stride - pad_h + i, ox * stride - pad_w + j
                    if 0 <= yy < h and 0 <= xx < wd:
                        out[:, oy, ox, :] += x[:, yy, xx, :] * w[i, j, :]
    return out


@pytest.mark.parametrize("size", [7, 8])
@pytest.mark.parametrize("kernel,stride", [(3, 1), (3, 2), (5, 1), (5, 2)])
def test_depthwise_slices_match_grouped_conv_and_numpy(size, kernel, stride):
    rng = np.random.default_rng(size * 10 + kernel + stride)
    x = rng.standard_normal((2, size, size + 1, 5)).astype(np.float32)
    w = rng.standard_normal((kernel, kernel, 5)).astype(np.float32)
    slices = np.asarray(jax.jit(E.depthwise_conv_slices, static_argnums=2)(x, w, stride))
    grouped = np.asarray(jax.jit(E.depthwise_conv_grouped, static_argnums=2)(x, w, stride))
    xla_same = np.asarray(
        jax.jit(
            lambda x, w: jax.lax.conv_general_dilated(
                x,
                w[:, :, None, :],
                (stride, stride),
                "SAME",
                dimension_numbers=("NHWC", "HWIO", "NHWC"),
                feature_group_count=5,
            )
        )(x, w)
    )
    ref = _numpy_same_depthwise(x.astype(np.float64), w.astype(np.float64), stride)
    assert slices.shape == ref.shape
    np.testing.assert_allclose(slices, grouped, atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(slices, xla_same, atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(slices, ref, atol=1e-5, rtol=1e-5)


def test_same_padding_follows_tf_rule():
    # (size, kernel, stride) -> (before, after): TF puts the odd pixel after.
    cases = {
        (224, 3, 2): (0, 1),
        (225, 3, 2): (1, 1),
        (7, 3, 2): (1, 1),
        (8, 3, 2): (0, 1),
        (8, 5, 2): (1, 2),
        (7, 5, 2): (2, 2),
        (9, 5, 1): (2, 2),
        (1, 5, 2): (2, 2),
        (2, 1, 2): (0, 0),
    }
    assert {c: E.same_padding(*c) for c in cases} == cases


# --------------------------------------------------------------------------- architecture and weights


def _reference_trainable_params(width, depth):
    """Trainable scalars of EfficientNet-Lite from the B0 table (conv weights, BN γ/β, fc)."""

    def rf(c):
        c *= width
        n = max(8, int(c + 4) // 8 * 8)
        return n + 8 if n < 0.9 * c else n

    table = [
        (1, 3, 1, 16),
        (2, 3, 6, 24),
        (2, 5, 6, 40),
        (3, 3, 6, 80),
        (3, 5, 6, 112),
        (4, 5, 6, 192),
        (1, 3, 6, 320),
    ]
    total = 3 * 3 * 3 * 32 + 2 * 32
    cin = 32
    for i, (reps, k, e, cout) in enumerate(table):
        cout = rf(cout)
        reps = reps if i in (0, 6) else math.ceil(depth * reps)
        for _ in range(reps):
            hid = cin * e
            if e != 1:
                total += cin * hid + 2 * hid
            total += k * k * hid + 2 * hid + hid * cout + 2 * cout
            cin = cout
    return total + cin * 1280 + 2 * 1280 + 1280 * 1000 + 1000


@pytest.mark.parametrize("variant,width,depth", [(0, 1.0, 1.0), (1, 1.0, 1.1), (2, 1.1, 1.2)])
def test_bundled_weights_match_architecture_table(variant, width, depth):
    sd = load_state_dict(E.default_weights_path(variant))
    trainable = sum(v.size for k, v in sd.items() if "running_" not in k and "num_batches" not in k)
    assert trainable == _reference_trainable_params(width, depth)
    enc = E.efficientnet_lite(variant, resolution=32)
    assert enc.meta["num_params"] == trainable
    if variant == 0:
        # Published (TF efficientnet/lite README): 4.7M; 296 tensors, 4.69M with BN statistics.
        assert round(trainable / 1e6, 1) == 4.7 and trainable == 4_652_008
        assert len(sd) == 296
        assert sum(v.size for k, v in sd.items() if "num_batches" not in k) == 4_694_024


def _numpy_window_depthwise(x, w, stride):
    """TF-SAME depthwise conv via ``sliding_window_view`` + einsum (vectorised reference)."""
    k = w.shape[0]
    pads = []
    for n in x.shape[1:3]:
        total = max((math.ceil(n / stride) - 1) * stride + k - n, 0)
        pads.append((total // 2, total - total // 2))
    xp = np.pad(x, ((0, 0), *pads, (0, 0)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(1, 2))[:, ::stride, ::stride]
    return np.einsum("bhwcij,ijc->bhwc", win, w)


def _numpy_forward(sd, images, pooled=None):
    """Plain NumPy EfficientNet-Lite0 on the raw torch state dict (BN applied, not folded).

    ``pooled``: a dict that receives the global-average-pooled output of the stem
    (``"stem"``) and of every block (its index ``n``)."""

    def bn(x, name):
        g, b, m, v = (
            sd[f"{name}.{s}"].astype(np.float64)
            for s in ("weight", "bias", "running_mean", "running_var")
        )
        return (x - m) / np.sqrt(v + 1e-3) * g + b

    relu6 = lambda x: np.clip(x, 0, 6)
    pw = lambda x, name: x @ sd[name][:, :, 0, 0].astype(np.float64).T

    x = (images.astype(np.float64) * 255 - 127) / 128
    w = sd["_conv_stem.weight"].astype(np.float64)  # (O, I, 3, 3)
    b, h, wd, _ = x.shape
    oh, ow = math.ceil(h / 2), math.ceil(wd / 2)
    ph, pw_ = max((oh - 1) * 2 + 3 - h, 0) // 2, max((ow - 1) * 2 + 3 - wd, 0) // 2
    xp = np.zeros((b, h + 4, wd + 4, 3))
    xp[:, ph : ph + h, pw_ : pw_ + wd] = x
    stem = np.zeros((b, oh, ow, 32))
    for i in range(3):
        for j in range(3):
            stem += xp[:, i : i + 2 * oh : 2, j : j + 2 * ow : 2] @ w[:, :, i, j].T
    x = relu6(bn(stem, "_bn0"))
    if pooled is not None:
        pooled["stem"] = x.mean(axis=(1, 2))
    strides = {1: 2, 3: 2, 5: 2, 11: 2}  # first block of each stride-2 stage in lite0
    for n in range(16):
        p = f"_blocks.{n}."
        inp = x
        if p + "_expand_conv.weight" in sd:
            x = relu6(bn(pw(x, p + "_expand_conv.weight"), p + "_bn0"))
        dw = sd[p + "_depthwise_conv.weight"][:, 0].astype(np.float64).transpose(1, 2, 0)
        x = relu6(bn(_numpy_window_depthwise(x, dw, strides.get(n, 1)), p + "_bn1"))
        x = bn(pw(x, p + "_project_conv.weight"), p + "_bn2")
        if x.shape == inp.shape:
            x = x + inp
        if pooled is not None:
            pooled[n] = x.mean(axis=(1, 2))
    x = relu6(bn(pw(x, "_conv_head.weight"), "_bn1"))
    feats = x.mean(axis=(1, 2))
    return feats, feats @ sd["_fc.weight"].astype(np.float64).T + sd["_fc.bias"]


def test_jax_forward_matches_numpy_reference_on_raw_state_dict():
    sd = load_state_dict(E.default_weights_path(0))
    enc = E.efficientnet_lite(0, resolution=40)
    x = np.random.default_rng(0).uniform(size=(2, 40, 40, 3)).astype(np.float32)
    ref_feats, ref_logits = _numpy_forward(sd, x)
    feats = np.asarray(jax.jit(enc.apply)(enc.params, x))
    np.testing.assert_allclose(feats, ref_feats, rtol=1e-4, atol=1e-4)
    logits = E.efficientnet_lite_logits(enc, x)
    np.testing.assert_allclose(logits, ref_logits, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(
        np.asarray(E.classify(feats, enc.params)), logits, rtol=1e-5, atol=1e-4
    )


def test_stage_taps_match_numpy_reference_on_raw_state_dict():
    """Intermediate layers (mdlnb.encoders.layers): each stage's pooled output is the
    reference's pooled output of the stage's last block (Lite0 stages end after
    blocks 0, 2, 4, 7, 10, 14, 15 of the architecture table)."""
    from mdlnb.encoders import layers

    sd = load_state_dict(E.default_weights_path(0))
    enc = E.efficientnet_lite(0, resolution=40)
    x = np.random.default_rng(0).uniform(size=(2, 40, 40, 3)).astype(np.float32)
    ref = {}
    ref_feats, _ = _numpy_forward(sd, x, pooled=ref)
    last_block = {
        "stem": "stem",
        "stage0": 0,
        "stage1": 2,
        "stage2": 4,
        "stage3": 7,
        "stage4": 10,
        "stage5": 14,
        "stage6": 15,
    }
    assert E.stage_of_blocks(E.block_specs(0)) == (0, 1, 1, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5, 5, 5, 6)
    encs = layers(enc)
    assert list(encs) == [f"{enc.name}/{n}" for n in (*last_block, "head")]
    for name, block in last_block.items():
        got = np.asarray(jax.jit(encs[f"{enc.name}/{name}"].apply)(enc.params, x))
        assert got.shape == ref[block].shape == (2, encs[f"{enc.name}/{name}"].feature_dim)
        np.testing.assert_allclose(got, ref[block], rtol=1e-4, atol=1e-4, err_msg=name)
    head = np.asarray(jax.jit(encs[f"{enc.name}/head"].apply)(enc.params, x))
    np.testing.assert_allclose(head, ref_feats, rtol=1e-4, atol=1e-4)


# --------------------------------------------------------------------------- real photos


def _center_square(img):
    h, w = img.shape[:2]
    s = min(h, w)
    return img[(h - s) // 2 : (h - s) // 2 + s, (w - s) // 2 : (w - s) // 2 + s]


@pytest.mark.parametrize(
    "variant", [0, pytest.param(1, marks=pytest.mark.slow), pytest.param(2, marks=pytest.mark.slow)]
)
def test_photos_get_their_imagenet_class(variant):
    enc = E.efficientnet_lite(variant)
    size = enc.input_size + (3,)
    photos = np.stack(
        [
            np.asarray(
                jax.image.resize(_center_square(p) / 255.0, size, "bilinear", antialias=True)
            )
            for p in (skimage.data.chelsea(), skimage.data.coffee())
        ]
    ).astype(np.float32)
    logits = E.efficientnet_lite_logits(enc, photos)
    top1 = logits.argmax(axis=1)
    assert top1[0] in (TABBY, TIGER_CAT, PERSIAN, SIAMESE, EGYPTIAN_CAT)
    assert top1[1] == ESPRESSO
    # Top-5 of the cat photo is all cats except at most one other class.
    top5 = np.argsort(-logits[0])[:5]
    assert len(set(top5) & {TABBY, TIGER_CAT, PERSIAN, SIAMESE, EGYPTIAN_CAT}) >= 3


# --------------------------------------------------------------------------- Encoder contract


def test_features_are_deterministic_and_cached(monkeypatch, tmp_path):
    monkeypatch.setenv("MDLNB_CACHE", str(tmp_path))
    rng = np.random.default_rng(1)
    task = Task("grey", rng.integers(0, 256, size=(5, 28, 28), dtype=np.uint8), np.arange(5) % 2, 2)
    enc = E.efficientnet_lite(0, resolution=64)
    assert enc.input_size == (64, 64) and enc.feature_dim == 1280 and enc.channels == 3
    first = base.features(enc, task, batch_size=4)
    assert first.x.shape == (5, 1280) and first.x.dtype == np.float32
    assert np.all(first.x >= 0) and np.all(first.x <= 6)  # mean of ReLU6 activations
    assert len(list(tmp_path.rglob("*.npz"))) == 1

    direct = np.asarray(jax.jit(enc.apply)(enc.params, base.prepare_images(task.x, (64, 64), 3)))
    np.testing.assert_allclose(first.x, direct, rtol=1e-5, atol=1e-5)
    again = np.asarray(jax.jit(enc.apply)(enc.params, base.prepare_images(task.x, (64, 64), 3)))
    np.testing.assert_array_equal(direct, again)

    def boom(params, images):
        raise AssertionError("cache miss: apply was called")

    cached = base.features(dataclasses.replace(enc, apply=boom), task, batch_size=4)
    np.testing.assert_array_equal(cached.x, first.x)
    assert cached.meta["encoder"] == enc.name


def test_bad_arguments_name_themselves(tmp_path):
    with pytest.raises(ValueError, match="variant"):
        E.efficientnet_lite(7)
    with pytest.raises(ValueError, match="variant"):
        E.efficientnet_lite(3)  # no bundled weights
    with pytest.raises(ValueError, match="resolution"):
        E.efficientnet_lite(0, resolution=0)
    with pytest.raises(ValueError, match="depthwise"):
        E.efficientnet_lite(0, depthwise="fft")
    with pytest.raises(ValueError, match="weights_path"):
        E.efficientnet_lite(0, weights_path=tmp_path / "missing.pth")
    with pytest.raises(ValueError, match="weights_path"):  # lite1 file is not a lite0
        E.efficientnet_lite(0, weights_path=E.default_weights_path(1))
