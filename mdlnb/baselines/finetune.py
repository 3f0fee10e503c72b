"""Fine-tuning through the stage-1 machinery: an encoder + head trained online end to end.

Data-efficiency study of the paper (Sec. 4 "Data Efficiency", Fig. 3, App.
A.9 Fig. 10): the prequential codelength of a linear probe on a frozen
pretrained encoder, of the same encoder with a linear head *fine-tuned* end
to end, and of the same architecture *trained from scratch* (random init),
all coded by the same online protocol, so their codelengths (nats) compare
directly and the "regret" of each relative to training from scratch is a
difference of codelengths.

:class:`FinetuneReadout` is a readout (:class:`mdlnb.board.readouts.ReadoutLike`)
whose parameters are ``{"encoder": ..., "head": ...}``: :func:`mdlnb.prequential.run`
trains it exactly like a linear or MLP readout (predict then train, replay
from the prefix, AdamW, EMA for prediction, first batch uniform; ``vmap``
over experts of one architecture, ``lax.scan`` over batches). Its input is
the task's flattened images (``task.features``); ``apply`` reshapes them to
``image_shape``, divides by ``pixel_max`` (255 for uint8 images) into
``[0, 1]``, maps channels and resizes to the encoder's input as
:func:`mdlnb.encoders.prepare_images` does, then runs the encoder and the head.
The readout sets ``standardize_inputs = False``, so the prefix
standardisation of ``prequential.run`` is bypassed for it automatically (the
encoder expects pixels in ``[0, 1]``); other readouts on the board are
unaffected. Its config carries the encoder's :meth:`~mdlnb.encoders.Encoder.fingerprint`,
so the prequential cache key changes when the encoder's parameters do.

Initialisation: the head is :meth:`mdlnb.board.readouts.Readout.init` (zero output
layer, so an untrained expert codes with the uniform distribution); the
encoder starts from ``encoder.params`` (fine-tuning) or, with
``from_scratch=True``, from :func:`mdlnb.encoders.archs.init` of the same
architecture seeded by the expert's key (the comparator; needs an encoder
built by :func:`mdlnb.encoders.pretrain`, whose ``meta`` names
``arch`` and ``size``).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from mdlnb import prequential as _prequential
from mdlnb import switching
from mdlnb.board import readouts as _readouts
from mdlnb.board.experts import Expert, expert_grid
from mdlnb.board.readouts import Readout
from mdlnb.core._checks import check_images
from mdlnb.core._task import Task
from mdlnb.encoders import archs as _archs
from mdlnb.encoders.base import Encoder, adapt_images, features

FAMILY = "finetune"


def _arch_of(encoder: Encoder) -> _archs.ArchConfig | None:
    """The ``ArchConfig`` an encoder from ``pretrain`` was built with, else None."""
    arch, size = encoder.meta.get("arch"), encoder.meta.get("size")
    if arch in _archs.ARCHS and size in _archs.ARCHS[arch]:
        return _archs.config(arch, size)
    return None


@dataclasses.dataclass(frozen=True)
class FinetuneReadout:
    """An encoder plus a head, both trained online on flattened images.

    Attributes:
      encoder: the encoder (its ``apply`` and, unless ``from_scratch``, its params).
      image_shape: ``(H, W, C)`` of the task's images; ``in_dim`` must be ``H·W·C``.
      pixel_max: value of a white pixel in the task (255.0 for uint8, 1.0 for
        float images in [0, 1]); inputs are divided by it.
      head: the readout on the encoder's features (default linear).
      from_scratch: start the encoder from a fresh init of its architecture
        instead of its parameters.
    """

    encoder: Encoder
    image_shape: tuple[int, int, int]
    pixel_max: float = 255.0
    head: Readout = dataclasses.field(default_factory=_readouts.linear)
    from_scratch: bool = False

    standardize_inputs = False  # read by prequential.run: raw pixels, never standardised
    family = FAMILY

    def __post_init__(self) -> None:
        if not isinstance(self.encoder, Encoder):
            raise ValueError(f"encoder: must be an Encoder, got {type(self.encoder).__name__}")
        shape = tuple(int(v) for v in np.ravel(self.image_shape))
        if len(shape) != 3 or min(shape) < 1 or shape[2] not in (1, 3):
            raise ValueError(
                f"image_shape: must be (H, W, C) with C in (1, 3), got {self.image_shape!r}"
            )
        object.__setattr__(self, "image_shape", shape)
        pm = self.pixel_max
        if (
            isinstance(pm, bool)
            or not isinstance(pm, (int, float, np.integer, np.floating))
            or not math.isfinite(float(pm))
            or pm <= 0
        ):
            raise ValueError(f"pixel_max: must be a finite number > 0, got {pm!r}")
        object.__setattr__(self, "pixel_max", float(pm))
        if not isinstance(self.head, Readout):
            raise ValueError(f"head: must be a Readout, got {type(self.head).__name__}")
        if not isinstance(self.from_scratch, bool):
            raise ValueError(f"from_scratch: must be a bool, got {self.from_scratch!r}")
        if self.from_scratch and _arch_of(self.encoder) is None:
            raise ValueError(
                f"from_scratch: encoder {self.encoder.name!r} has no archs "
                "architecture in its meta (arch, size); build it with "
                "mdlnb.encoders.pretrain"
            )

    @classmethod
    def for_task(cls, encoder: Encoder, task: Task, **kwargs: Any) -> FinetuneReadout:
        """The readout for ``task``'s images: ``image_shape`` and ``pixel_max`` from ``task.x``."""
        image_shape, pixel_max = _image_format(task)
        return cls(encoder, image_shape, pixel_max, **kwargs)

    # -- identity ---------------------------------------------------------------
    @functools.cached_property
    def _fingerprint(self) -> str:
        return self.encoder.fingerprint()

    @property
    def name(self) -> str:
        """``ft_<head>[<encoder name>]`` or ``scratch_<head>[<arch>_<size>]``."""
        if self.from_scratch:
            cfg = _arch_of(self.encoder)
            return f"scratch_{self.head.name}[{cfg.kind}_{cfg.size}]"
        return f"ft_{self.head.name}[{self.encoder.name}]"

    def config(self) -> dict[str, Any]:
        """JSON-serialisable description; includes the encoder fingerprint unless from scratch."""
        d = {
            "name": self.name,
            "family": FAMILY,
            "head": self.head.config(),
            "from_scratch": self.from_scratch,
            "image_shape": list(self.image_shape),
            "pixel_max": self.pixel_max,
            "input_size": list(self.encoder.input_size),
            "channels": self.encoder.channels,
            "feature_dim": self.encoder.feature_dim,
        }
        if self.from_scratch:
            d["arch_config"] = dataclasses.asdict(_arch_of(self.encoder))
        else:
            d["encoder"] = self.encoder.name
            d["encoder_fingerprint"] = self._fingerprint
        return d

    # -- sizes ------------------------------------------------------------------
    def _check_dims(self, in_dim: int, num_classes: int) -> None:
        if in_dim != math.prod(self.image_shape):
            raise ValueError(
                f"in_dim: expected H·W·C = {math.prod(self.image_shape)} for images "
                f"{self.image_shape}, got {in_dim}"
            )
        if num_classes < 2:
            raise ValueError(f"num_classes: must be >= 2, got {num_classes}")

    def num_params(self, in_dim: int, num_classes: int) -> int:
        """Scalar parameters of encoder and head."""
        self._check_dims(in_dim, num_classes)
        return _archs.param_count(self.encoder.params) + self.head.num_params(
            self.encoder.feature_dim, num_classes
        )

    def flops(self, in_dim: int, num_classes: int) -> int:
        """FLOPs (2 × multiply-adds, the convention of :meth:`Readout.flops`) of one
        forward pass for one example: every matmul and convolution of the encoder
        (:func:`matmul_flops` of its jaxpr; padded taps counted, elementwise ops
        not), plus the head."""
        self._check_dims(in_dim, num_classes)
        return matmul_flops(self._encoder_jaxpr()) + self.head.flops(
            self.encoder.feature_dim, num_classes
        )

    def _encoder_jaxpr(self):
        """Jaxpr of :meth:`features` on one flattened example (traced, not compiled)."""
        x = jax.ShapeDtypeStruct((1, math.prod(self.image_shape)), jnp.float32)
        return jax.make_jaxpr(self.features)({"encoder": self.encoder.params}, x)

    @functools.cached_property
    def max_block(self) -> int | None:
        """Experts trained side by side in one ``vmap`` (read by ``prequential.run``).

        On CPU, XLA turns a ``vmap`` over per-expert convolution kernels into a
        grouped convolution, which is slower than running the experts one after
        another (``benchmarks/bench_finetune.py``, ResNet-S, K = 2, best of 3 on a
        shared 2-core machine: 1.08–1.12× slower).
        So an encoder with convolutions trains one expert per block on CPU
        (``lax.map`` over experts inside the same compiled program); otherwise
        no cap (None).
        """
        if jax.default_backend() != "cpu":
            return None
        return 1 if _has_primitive(self._encoder_jaxpr().jaxpr, "conv_general_dilated") else None

    # -- the readout protocol -------------------------------------------------------
    def init(self, key: jax.Array, in_dim: int, num_classes: int) -> dict[str, Any]:
        """``{"encoder": params, "head": zero-output head}``; the key seeds the head's
        hidden layers and, from scratch, the encoder."""
        self._check_dims(in_dim, num_classes)
        k_enc, k_head = jax.random.split(key)
        if self.from_scratch:
            enc = _archs.init(k_enc, _arch_of(self.encoder))
        else:
            enc = self.encoder.params
        enc = jax.tree_util.tree_map(lambda a: jnp.asarray(a, jnp.float32), enc)
        head = self.head.init(k_head, self.encoder.feature_dim, num_classes)
        return {"encoder": enc, "head": head}

    def images(self, x: jax.Array) -> jax.Array:
        """Flattened inputs ``(B, H·W·C)`` → the encoder's input ``(B, h, w, c)`` in [0, 1]."""
        b = x.shape[0]
        img = x.reshape(b, *self.image_shape) / jnp.float32(self.pixel_max)
        return adapt_images(img, self.encoder.input_size, self.encoder.channels)

    def features(self, params: dict[str, Any], x: jax.Array) -> jax.Array:
        """Encoder features ``(B, D)`` of flattened inputs under ``params["encoder"]``."""
        return self.encoder.apply(params["encoder"], self.images(x))

    def apply(self, params: dict[str, Any], x: jax.Array) -> jax.Array:
        """Logits ``(B, C)`` of flattened task inputs ``x`` ``(B, H·W·C)``."""
        return self.head.apply(params["head"], self.features(params, x))

    def check_task(self, task: Task) -> None:
        """``ValueError`` unless ``task.x`` is images of ``image_shape`` up to ``pixel_max``."""
        shape, pixel_max = _image_format(task)
        if shape != self.image_shape:
            raise ValueError(
                f"task: images of shape {shape}, but the readout expects "
                f"{self.image_shape}; build it with FinetuneReadout.for_task"
            )
        if pixel_max != self.pixel_max:
            raise ValueError(
                f"task: pixel values up to {pixel_max:g} ({task.x.dtype}), but the "
                f"readout divides by pixel_max={self.pixel_max:g}"
            )


def _subjaxprs(eqn) -> list:
    out = []
    for v in eqn.params.values():
        for item in v if isinstance(v, (list, tuple)) else [v]:
            if hasattr(item, "eqns"):
                out.append(item)
            elif hasattr(item, "jaxpr") and hasattr(item.jaxpr, "eqns"):
                out.append(item.jaxpr)
    return out


def _has_primitive(jaxpr, name: str) -> bool:
    return any(
        e.primitive.name == name or any(_has_primitive(j, name) for j in _subjaxprs(e))
        for e in jaxpr.eqns
    )


def matmul_flops(jaxpr) -> int:
    """2 × multiply-adds of every ``dot_general`` and ``conv_general_dilated`` in a
    (closed) jaxpr, nested jaxprs included (a ``scan``/``while`` body counted once).

    ``dot_general``: 2 · |output| · Π contracting sizes. Convolution: 2 · |output| ·
    (kernel window · input channels / feature groups), padding taps included.
    """
    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
    total = 0
    for e in jaxpr.eqns:
        name = e.primitive.name
        if name == "dot_general":
            (lc, _), _ = e.params["dimension_numbers"]
            lhs = e.invars[0].aval.shape
            total += 2 * math.prod(e.outvars[0].aval.shape) * math.prod(lhs[d] for d in lc)
        elif name == "conv_general_dilated":
            rhs = e.invars[1].aval.shape
            dn = e.params["dimension_numbers"]
            rhs_spec = dn.rhs_spec  # (out feature dim, in feature dim, *spatial dims)
            window = math.prod(rhs[d] for d in rhs_spec[2:]) * rhs[rhs_spec[1]]
            total += 2 * math.prod(e.outvars[0].aval.shape) * window
        for sub in _subjaxprs(e):
            total += matmul_flops(sub)
    return int(total)


def _image_format(task: Task) -> tuple[tuple[int, int, int], float]:
    """``((H, W, C), pixel_max)`` of a task of images; ``ValueError`` otherwise."""
    if not isinstance(task, Task):
        raise ValueError(f"task: must be an mdlnb.Task, got {type(task).__name__}")
    x, white = check_images(task.x, "task")
    return tuple(int(v) for v in x.shape[1:]), white


# ----------------------------------------------------------------------------- boards


def experts(
    encoder: Encoder,
    task: Task,
    *,
    learning_rate: Sequence[float] | float = (1e-4, 1e-3),
    weight_decay: Sequence[float] | float = (0.0,),
    ema: Sequence[float] | float = (1.0,),
    b1: Sequence[float] | float = (0.9,),
    replay_streams: Sequence[int] | int = (3,),
    head: Readout | None = None,
    finetune: bool = True,
    scratch: bool = True,
) -> list[Expert]:
    """Fine-tuned and from-scratch experts for ``task``'s images, crossed with the hyperparameters.

    Order: the fine-tuned experts (grid order of :func:`mdlnb.expert_grid`),
    then the from-scratch ones. ``head`` defaults to a linear readout.
    """
    head = _readouts.linear() if head is None else head
    ros = [
        FinetuneReadout.for_task(encoder, task, head=head, from_scratch=s)
        for s, wanted in ((False, finetune), (True, scratch))
        if wanted
    ]
    if not ros:
        raise ValueError("finetune: at least one of finetune and scratch must be True")
    return expert_grid(
        ros,
        learning_rate=learning_rate,
        b1=b1,
        weight_decay=weight_decay,
        ema=ema,
        replay_streams=replay_streams,
    )


METHODS = ("linear probe", "fine-tuned", "from scratch")


def compare(
    task: Task,
    encoder: Encoder,
    *,
    learning_rate: Sequence[float] | float = (1e-4, 1e-3),
    probe_learning_rate: Sequence[float] | float = (1e-3, 3e-3),
    weight_decay: Sequence[float] | float = (0.0,),
    ema: Sequence[float] | float = (1.0,),
    replay_streams: int = 3,
    batch_size: int = 32,
    seed: int = 0,
    cache: bool = True,
    strategy: Any = None,
):
    """Codelengths of a frozen linear probe, a fine-tuned encoder and the same
    architecture trained from scratch on one stream of ``task`` (paper Fig. 3).

    The probe is a linear readout on the encoder's frozen features
    (:func:`mdlnb.encoders.features`, standardised online); the other two are
    :func:`experts`. All three see the same example order (same ``seed``) and
    batch size. Within each method the hyperparameter grid is combined by
    ``strategy`` (default :class:`mdlnb.switching.BayesianMixture`, a proper
    code, no hindsight); the best single expert is reported alongside.

    Returns a DataFrame, one row per method in :data:`METHODS`, with columns
    ``method``, ``codelength_nats``, ``bits_per_example``, ``regret_nats``
    (codelength minus the from-scratch codelength: negative = more
    data-efficient than training from scratch), ``best_expert``,
    ``best_expert_nats``, ``num_experts``, ``n``. ``df.attrs["per_step_nats"]``
    holds each method's per-example mixture loss (N,) in stream order, for
    regret-vs-data-size curves, and ``df.attrs["loss_matrices"]`` the two
    :class:`mdlnb.prequential.LossMatrix` objects (``"probe"``, ``"encoder"``).
    """
    strategy = switching.BayesianMixture() if strategy is None else strategy
    board = experts(
        encoder,
        task,
        learning_rate=learning_rate,
        weight_decay=weight_decay,
        ema=ema,
        replay_streams=replay_streams,
    )
    probe_board = expert_grid(
        _readouts.linear(),
        learning_rate=probe_learning_rate,
        weight_decay=weight_decay,
        ema=ema,
        replay_streams=replay_streams,
    )
    run = functools.partial(_prequential.run, batch_size=batch_size, seed=seed, cache=cache)
    lm_probe = run(features(encoder, task, cache=cache), probe_board)
    lm_enc = run(task, board)
    cols = {
        "linear probe": (lm_probe, list(range(lm_probe.k))),
        "fine-tuned": (lm_enc, [k for k, e in enumerate(board) if not e.readout.from_scratch]),
        "from scratch": (lm_enc, [k for k, e in enumerate(board) if e.readout.from_scratch]),
    }
    rows, per_step = [], {}
    for method in METHODS:
        lm, idx = cols[method]
        sub = lm.losses[:, idx]
        res = switching.codelength(sub, strategy, posterior=False)
        per_step[method] = np.asarray(res.per_step_nats, np.float64)
        tot = sub.sum(axis=0, dtype=np.float64)
        rows.append(
            {
                "method": method,
                "codelength_nats": float(res.total_nats),
                "bits_per_example": float(res.total_nats) / lm.n / math.log(2),
                "best_expert": lm.names[idx[int(np.argmin(tot))]],
                "best_expert_nats": float(tot.min()),
                "num_experts": len(idx),
                "n": lm.n,
            }
        )
    df = pd.DataFrame(rows)
    df.insert(
        3,
        "regret_nats",
        df["codelength_nats"]
        - float(df.loc[df["method"] == "from scratch", "codelength_nats"].iloc[0]),
    )
    df.attrs["per_step_nats"] = per_step
    df.attrs["loss_matrices"] = {"probe": lm_probe, "encoder": lm_enc}
    df.attrs["strategy"] = type(strategy).__name__
    return df
