"""Intermediate layers of an encoder, each as an :class:`Encoder` of its own.

"Which layer of my encoder should I probe?" — before or after the last
stage, the head, the final norm? :func:`layers` turns one encoder into one
:class:`Encoder` per layer, named ``"<encoder>/<layer>"``, whose ``apply``
returns that layer's pooled features, so that ::

    mdlnb.compare(mdlnb.encoders.layers(enc, which=["stage4", "stage6", "head"]), task)

ranks the layers by codelength over paired data orders like any encoders.

The layers come from the architectures' own forward functions called with
``taps`` (:func:`mdlnb.encoders.efficientnet.forward`,
:func:`mdlnb.encoders.archs.apply`), which return the named intermediate
feature maps and stop after the deepest one; nothing is re-implemented here.

Layers, input to output (:func:`layer_names`):

* EfficientNet-Lite: ``stem``, ``stage0`` … ``stage6`` (the output of each
  MBConv stage, i.e. of its last block; widths 16, 24, 40, 80, 112, 192, 320
  for Lite0), ``head`` (1x1 conv, 1280 channels — the default features);
* ResNet (:mod:`mdlnb.encoders.archs`): ``stem``, ``stage0`` … (the last is the
  default features);
* ViT: ``embed`` (patch embedding + positions), ``block0`` … ``block{depth-1}``,
  each with the final LayerNorm applied (DINO's ``get_intermediate_layers``
  convention), so the last block is the default features. These ViTs have **no
  CLS token** (they pool over patch tokens), so ``pooling="cls"`` is refused.

Pooling: ``"mean"`` (global average over positions / tokens — what the
encoders' own features use), or ``"max"``. ``concat_last=k`` adds one more
encoder, ``"<encoder>/last{k}"``, whose features are the concatenation of the
pooled features of the last ``k`` layers (DINO's linear evaluation
concatenates the last 4 blocks of a ViT-S).

With ``pooling="mean"`` the last layer's features equal the encoder's own
``apply`` output bit for bit (the same operations).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from mdlnb.core._checks import check_int
from mdlnb.encoders import archs, efficientnet
from mdlnb.encoders.base import Encoder

POOLINGS = ("mean", "max", "cls")

TapFn = Callable[..., dict]


@dataclasses.dataclass(frozen=True)
class _Tapped:
    """How to run an encoder's own forward pass with taps."""

    names: tuple[str, ...]
    run: TapFn  # run(params, images, taps) -> {name: unpooled map}
    has_cls: bool = False


def _efficientnet_run(specs, params, images, taps, **kw):
    return efficientnet.forward(specs, params, images, taps=taps, **kw)


def _archs_run(cfg, params, images, taps):
    return archs.apply(params, images, cfg, taps=taps)


def _tapped(encoder: Encoder) -> _Tapped:
    if not isinstance(encoder, Encoder):
        raise ValueError(
            f"encoder: expected an mdlnb.encoders.Encoder, got {type(encoder).__name__}"
        )
    fn = encoder.apply
    if isinstance(fn, functools.partial) and fn.func is efficientnet.forward and len(fn.args) == 1:
        specs = fn.args[0]
        return _Tapped(
            efficientnet.layer_names(specs),
            functools.partial(_efficientnet_run, specs, **dict(fn.keywords)),
        )
    if isinstance(fn, functools.partial) and fn.func is archs.apply and "cfg" in fn.keywords:
        cfg = fn.keywords["cfg"]
        return _Tapped(archs.layer_names(cfg), functools.partial(_archs_run, cfg))
    raise ValueError(
        f"encoder: {encoder.name} does not expose intermediate layers; supported: "
        "EfficientNet-Lite (mdlnb.encoders.efficientnet_lite) and the ResNet/ViT of "
        "mdlnb.encoders.archs (pretrain, pretrained artifacts)"
    )


def layer_names(encoder: Encoder) -> list[str]:
    """The layers of ``encoder`` that :func:`layers` offers, input to output."""
    return list(_tapped(encoder).names)


def _pool(x: Any, pooling: str) -> Any:
    """(B, H, W, C) → mean/max over (H, W); (B, T, D) → over T."""
    axes = (1, 2) if x.ndim == 4 else (1,)
    return x.mean(axes) if pooling == "mean" else x.max(axes)


def _pooled_apply(
    run: TapFn, names: tuple[str, ...], pooling: str, params: Any, images: Any
) -> Any:
    maps = run(params, images, names)
    parts = [_pool(maps[n], pooling) for n in names]
    return parts[0] if len(parts) == 1 else jnp.concatenate(parts, axis=-1)


def _resolve_which(which: Any, names: tuple[str, ...], encoder: Encoder) -> list[str]:
    if which is None:
        return list(names)
    items: Iterable[Any] = [which] if isinstance(which, (str, int)) else which
    out = []
    for w in items:
        if isinstance(w, bool) or not isinstance(w, (str, int)):
            raise ValueError(
                f"which: layers are names or indices, got {w!r}; "
                f"available layers of {encoder.name}: {list(names)}"
            )
        if isinstance(w, int):
            if not -len(names) <= w < len(names):
                raise ValueError(
                    f"which: index {w} out of range; available layers of "
                    f"{encoder.name}: {list(names)}"
                )
            w = names[w]
        if w not in names:
            raise ValueError(
                f"which: unknown layer {w!r}; available layers of {encoder.name}: {list(names)}"
            )
        if w in out:
            raise ValueError(f"which: layer {w!r} given twice")
        out.append(w)
    if not out:
        raise ValueError(
            f"which: no layers given; available layers of {encoder.name}: {list(names)}"
        )
    return out


def layers(
    encoder: Encoder,
    which: Sequence[str | int] | str | int | None = None,
    *,
    pooling: str = "mean",
    concat_last: int | None = None,
) -> dict[str, Encoder]:
    """One :class:`Encoder` per layer of ``encoder``: ``{"<encoder>/<layer>": Encoder}``.

    Args:
      encoder: an EfficientNet-Lite or an :mod:`~mdlnb.encoders.archs` ResNet/ViT encoder.
      which: layer names (or indices, negative from the end) from
        :func:`layer_names`, in the order wanted; ``None``: every layer.
      pooling: ``"mean"`` (global average, as the encoders' own features) or
        ``"max"``; ``"cls"`` only for a ViT with a CLS token (none here). A
        pooling other than mean is part of the name: ``"<encoder>/<layer>[max]"``.
      concat_last: ``k`` ≥ 2 adds ``"<encoder>/last{k}"``: the pooled features
        of the last ``k`` layers, concatenated (input to output).

    Each returned encoder shares ``encoder``'s parameters, input size and
    channels; its ``apply`` runs the forward pass up to its layer only; its
    ``meta`` adds ``layer``, ``pooling`` and ``source_encoder``. The features of
    the last layer with mean pooling are exactly ``encoder.apply``'s.
    """
    tapped = _tapped(encoder)
    names = tapped.names
    if pooling not in POOLINGS:
        raise ValueError(f"pooling: must be one of {list(POOLINGS)}, got {pooling!r}")
    if pooling == "cls" and not tapped.has_cls:
        raise ValueError(
            f"pooling: {encoder.name} has no CLS token (its ViT pools patch tokens; "
            "a CNN has none); use 'mean' or 'max'"
        )
    chosen = _resolve_which(which, names, encoder)
    groups = [(n, (n,)) for n in chosen]
    if concat_last is not None:
        concat_last = check_int(
            "concat_last",
            concat_last,
            minimum=2,
            maximum=len(names),
            what=f"an integer in [2, {len(names)}] (the layers of {encoder.name}: {list(names)})",
        )
        groups.append((f"last{concat_last}", names[-concat_last:]))
    suffix = "" if pooling == "mean" else f"[{pooling}]"
    probe = jax.ShapeDtypeStruct((1, *encoder.input_size, encoder.channels), "float32")
    out: dict[str, Encoder] = {}
    for label, parts in groups:
        apply = functools.partial(_pooled_apply, tapped.run, parts, pooling)
        dim = int(jax.eval_shape(apply, encoder.params, probe).shape[-1])
        name = f"{encoder.name}/{label}{suffix}"
        out[name] = Encoder(
            name=name,
            params=encoder.params,
            apply=apply,
            input_size=encoder.input_size,
            channels=encoder.channels,
            feature_dim=dim,
            meta={
                **encoder.meta,
                "layer": label,
                "layers": list(parts),
                "pooling": pooling,
                "source_encoder": encoder.name,
            },
        )
    return out
