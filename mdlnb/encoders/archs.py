"""Small encoder architectures for 28×28 grey images: a ResNet and a ViT.

Both are pure pairs ``init(key, cfg) -> params`` and
``apply(params, images, cfg) -> features``: images are float32
``(B, 28, 28, 1)`` in ``[0, 1]``, features ``(B, D)`` are the pooled
representation (global average pool for the ResNet, mean over tokens after
the final LayerNorm for the ViT). Parameters are plain dicts of arrays, so
the same functions serve pretraining, feature extraction and fine-tuning.
``apply(..., taps=names)`` returns intermediate layers instead
(:func:`layer_names`; :func:`mdlnb.encoders.layers`). The ViT has no CLS
token: its tokens are the patches only.

The ResNet uses GroupNorm (no running statistics, so ``apply`` has no state).
Sizes grow in width and depth: ``XS`` (smoke tests), ``S``, ``M``, ``L``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from mdlnb.encoders.base import check_taps

Params = dict[str, Any]
IMAGE_SIZE = 28


@dataclasses.dataclass(frozen=True)
class ArchConfig:
    """Architecture hyperparameters.

    ResNet: a stride-2 3×3 stem, then ``widths`` channels per stage (stride 2
    between stages; 14, 7, 4 pixels on 28×28 inputs), ``blocks`` residual
    blocks per stage. ViT: ``dim`` token width, ``depth`` blocks,
    ``heads`` attention heads, ``patch`` patch side in pixels, ``mlp_ratio``.
    """

    kind: str
    size: str
    widths: tuple[int, ...] = ()
    blocks: tuple[int, ...] = ()
    dim: int = 0
    depth: int = 0
    heads: int = 0
    patch: int = 4
    mlp_ratio: int = 2

    @property
    def feature_dim(self) -> int:
        return self.widths[-1] if self.kind == "resnet" else self.dim

    @property
    def num_patches(self) -> int:
        return (IMAGE_SIZE // self.patch) ** 2


ARCHS: dict[str, dict[str, ArchConfig]] = {
    "resnet": {
        "XS": ArchConfig("resnet", "XS", widths=(8, 16, 32), blocks=(1, 1, 1)),
        "S": ArchConfig("resnet", "S", widths=(16, 32, 64), blocks=(1, 1, 1)),
        "M": ArchConfig("resnet", "M", widths=(24, 48, 96), blocks=(1, 2, 2)),
        "L": ArchConfig("resnet", "L", widths=(32, 64, 128), blocks=(2, 2, 2)),
    },
    "vit": {
        "XS": ArchConfig("vit", "XS", dim=32, depth=1, heads=2, patch=7),
        "S": ArchConfig("vit", "S", dim=64, depth=2, heads=4, patch=4),
        "M": ArchConfig("vit", "M", dim=96, depth=4, heads=4, patch=4),
        "L": ArchConfig("vit", "L", dim=128, depth=6, heads=4, patch=4),
    },
}


def config(arch: str, size: str) -> ArchConfig:
    """The ``ArchConfig`` for ``arch`` in {"resnet", "vit"} and ``size`` in {XS, S, M, L}."""
    if arch not in ARCHS:
        raise ValueError(f"arch: must be one of {sorted(ARCHS)}, got {arch!r}")
    if size not in ARCHS[arch]:
        raise ValueError(f"size: must be one of {list(ARCHS[arch])}, got {size!r}")
    return ARCHS[arch][size]


def param_count(params: Any) -> int:
    """Number of scalar parameters in a pytree."""
    return int(sum(np.prod(np.shape(v)) for v in jax.tree_util.tree_leaves(params)))


# -- layers -------------------------------------------------------------------


def host_rng(key: jax.Array) -> np.random.Generator:
    """A NumPy generator seeded by the bits of a JAX key.

    Initialization draws on the host: eager ``jax.random`` calls compile one
    program per shape, which costs seconds on a small CPU for no benefit.
    """
    return np.random.default_rng(np.asarray(jax.random.key_data(key)).astype(np.uint64))


def _normal(rng: np.random.Generator, shape: tuple[int, ...], std: float) -> np.ndarray:
    return (rng.standard_normal(shape) * std).astype(np.float32)


def dense_init(rng: np.random.Generator, d_in: int, d_out: int, *, bias: bool = True) -> Params:
    """Linear layer, LeCun-normal weights (variance 1/d_in), zero bias."""
    w = _normal(rng, (d_in, d_out), 1.0 / math.sqrt(d_in))
    return {"w": w, "b": np.zeros((d_out,), np.float32)} if bias else {"w": w}


def dense(p: Params, x: jax.Array) -> jax.Array:
    y = x @ p["w"]
    return y + p["b"] if "b" in p else y


def layer_norm(p: Params, x: jax.Array, eps: float = 1e-6) -> jax.Array:
    mu = x.mean(-1, keepdims=True)
    var = jnp.square(x - mu).mean(-1, keepdims=True)
    return (x - mu) * jax.lax.rsqrt(var + eps) * p["scale"] + p["bias"]


def norm_init(d: int) -> Params:
    return {"scale": np.ones((d,), np.float32), "bias": np.zeros((d,), np.float32)}


def group_norm(p: Params, x: jax.Array, groups: int, eps: float = 1e-5) -> jax.Array:
    """GroupNorm over (H, W, C/groups) of NHWC ``x``."""
    b, h, w, c = x.shape
    g = x.reshape(b, h, w, groups, c // groups)
    mu = g.mean((1, 2, 4), keepdims=True)
    var = jnp.square(g - mu).mean((1, 2, 4), keepdims=True)
    g = (g - mu) * jax.lax.rsqrt(var + eps)
    return g.reshape(b, h, w, c) * p["scale"] + p["bias"]


def conv_init(rng: np.random.Generator, k: int, c_in: int, c_out: int) -> np.ndarray:
    """HWIO kernel, He-normal (variance 2/fan_in)."""
    return _normal(rng, (k, k, c_in, c_out), math.sqrt(2.0 / (k * k * c_in)))


def conv(w: jax.Array, x: jax.Array, stride: int = 1) -> jax.Array:
    return jax.lax.conv_general_dilated(
        x, w, (stride, stride), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
    )


def _groups(c: int) -> int:
    return min(8, c)


# -- ResNet -------------------------------------------------------------------


def _resnet_init(rng: np.random.Generator, cfg: ArchConfig) -> Params:
    params: Params = {
        "stem": {"w": conv_init(rng, 3, 1, cfg.widths[0]), "gn": norm_init(cfg.widths[0])}
    }
    c_in = cfg.widths[0]
    for s, (width, n) in enumerate(zip(cfg.widths, cfg.blocks)):
        for b in range(n):
            blk = {
                "conv1": conv_init(rng, 3, c_in, width),
                "gn1": norm_init(width),
                "conv2": conv_init(rng, 3, width, width),
                "gn2": norm_init(width),
            }
            if c_in != width:
                blk["proj"] = conv_init(rng, 1, c_in, width)
            params[f"stage{s}_block{b}"] = blk
            c_in = width
    return params


def _resnet_apply(
    params: Params, x: jax.Array, cfg: ArchConfig, taps: frozenset[str] | None = None
) -> Any:
    h = conv(params["stem"]["w"], x, stride=2)  # 28 → 14: stages run at 14, 7, 4
    h = jax.nn.relu(group_norm(params["stem"]["gn"], h, _groups(cfg.widths[0])))
    out: dict[str, jax.Array] = {}
    if taps is not None and "stem" in taps:
        out["stem"] = h
    for s, (width, n) in enumerate(zip(cfg.widths, cfg.blocks)):
        if taps is not None and len(out) == len(taps):
            return out  # deeper stages are not needed
        for b in range(n):
            p = params[f"stage{s}_block{b}"]
            stride = 2 if (s > 0 and b == 0) else 1
            g = _groups(width)
            y = jax.nn.relu(group_norm(p["gn1"], conv(p["conv1"], h, stride), g))
            y = group_norm(p["gn2"], conv(p["conv2"], y), g)
            short = (
                conv(p["proj"], h, stride)
                if "proj" in p
                else (h[:, ::stride, ::stride] if stride > 1 else h)
            )
            h = jax.nn.relu(y + short)
        if taps is not None and f"stage{s}" in taps:
            out[f"stage{s}"] = h
    if taps is not None:
        return out
    return h.mean((1, 2))


# -- ViT ----------------------------------------------------------------------


def patchify(images: jax.Array, patch: int) -> jax.Array:
    """``(B, H, W, C)`` → ``(B, (H/p)(W/p), p·p·C)``, patches in row-major order."""
    b, h, w, c = images.shape
    x = images.reshape(b, h // patch, patch, w // patch, patch, c)
    return x.transpose(0, 1, 3, 2, 4, 5).reshape(b, (h // patch) * (w // patch), patch * patch * c)


def block_init(rng: np.random.Generator, dim: int, mlp_ratio: int) -> Params:
    """A pre-LN transformer block."""
    return {
        "ln1": norm_init(dim),
        "qkv": dense_init(rng, dim, 3 * dim),
        "out": dense_init(rng, dim, dim),
        "ln2": norm_init(dim),
        "fc1": dense_init(rng, dim, mlp_ratio * dim),
        "fc2": dense_init(rng, mlp_ratio * dim, dim),
    }


def block_apply(p: Params, x: jax.Array, heads: int) -> jax.Array:
    """``x`` (B, T, dim) → (B, T, dim): multi-head self-attention then MLP, residual."""
    b, t, d = x.shape
    qkv = dense(p["qkv"], layer_norm(p["ln1"], x)).reshape(b, t, 3, heads, d // heads)
    q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
    att = jax.nn.softmax(jnp.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(d // heads), axis=-1)
    x = x + dense(p["out"], jnp.einsum("bhqk,bkhd->bqhd", att, v).reshape(b, t, d))
    return x + dense(p["fc2"], jax.nn.gelu(dense(p["fc1"], layer_norm(p["ln2"], x))))


def _vit_init(rng: np.random.Generator, cfg: ArchConfig) -> Params:
    return {
        "embed": dense_init(rng, cfg.patch * cfg.patch, cfg.dim),
        "pos": _normal(rng, (cfg.num_patches, cfg.dim), 0.02),
        "blocks": [block_init(rng, cfg.dim, cfg.mlp_ratio) for _ in range(cfg.depth)],
        "ln": norm_init(cfg.dim),
    }


def vit_tokens(
    params: Params,
    images: jax.Array,
    cfg: ArchConfig,
    keep: jax.Array | None = None,
    taps: frozenset[str] | None = None,
) -> Any:
    """Token representations ``(B, T, dim)`` after the final LayerNorm.

    ``keep`` (B, T') int indices of the patches to encode (MAE); all if None.
    ``taps``: names from :func:`layer_names` (``"embed"``, ``"block0"`` …);
    then the result is instead ``{name: (B, T, dim)}``, each the tokens after
    that layer with the final LayerNorm applied (as DINO's
    ``get_intermediate_layers``), so ``"block{depth-1}"`` is the default output;
    blocks after the deepest tap are not run.
    """
    x = dense(params["embed"], patchify(_standardize(images), cfg.patch)) + params["pos"]
    if keep is not None:
        x = jnp.take_along_axis(x, keep[..., None], axis=1)
    out: dict[str, jax.Array] = {}
    if taps is not None and "embed" in taps:
        out["embed"] = layer_norm(params["ln"], x)
    for i, p in enumerate(params["blocks"]):
        if taps is not None and len(out) == len(taps):
            return out
        x = block_apply(p, x, cfg.heads)
        if taps is not None and f"block{i}" in taps:
            out[f"block{i}"] = layer_norm(params["ln"], x)
    if taps is not None:
        return out
    return layer_norm(params["ln"], x)


# -- dispatch -----------------------------------------------------------------


def _standardize(images: jax.Array) -> jax.Array:
    return (images - 0.5) * 2.0


def init(key: jax.Array, cfg: ArchConfig) -> Params:
    """Initial encoder parameters for ``cfg`` (float32 NumPy arrays), a
    deterministic function of ``key`` (drawn on the host, see ``host_rng``)."""
    rng = host_rng(key)
    return _resnet_init(rng, cfg) if cfg.kind == "resnet" else _vit_init(rng, cfg)


def layer_names(cfg: ArchConfig) -> tuple[str, ...]:
    """The layers ``apply(..., taps=...)`` can return, input to output.

    ResNet: ``"stem"``, ``"stage0"`` … (the output of each stage's last block).
    ViT: ``"embed"`` (patch embedding + position), ``"block0"`` … ``"block{depth-1}"``.
    The last name's pooled features are :func:`apply`'s default output.
    """
    if cfg.kind == "resnet":
        return ("stem", *(f"stage{s}" for s in range(len(cfg.widths))))
    return ("embed", *(f"block{i}" for i in range(cfg.depth)))


def apply(
    params: Params, images: jax.Array, cfg: ArchConfig, taps: tuple[str, ...] | None = None
) -> Any:
    """Pooled features ``(B, cfg.feature_dim)`` of images float32 ``(B, 28, 28, 1)`` in [0, 1].

    ``taps``: names from :func:`layer_names`; then the result is instead a dict
    of those layers' unpooled outputs (ResNet ``(B, H', W', C)``, ViT
    ``(B, T, dim)``), and layers past the deepest tap are not computed.
    """
    wanted = check_taps(taps, layer_names(cfg))
    if cfg.kind == "resnet":
        return _resnet_apply(params, _standardize(images), cfg, wanted)
    if wanted is not None:
        return vit_tokens(params, images, cfg, taps=wanted)
    return vit_tokens(params, images, cfg).mean(1)
