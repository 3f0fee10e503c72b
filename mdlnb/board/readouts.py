"""Readout families as pure ``(init, apply)`` pairs over parameter pytrees.

A readout maps features ``(B, D)`` float32 to class logits ``(B, C)`` — or, on
a regression task (``Task(kind="regression")``, P real targets), to ``2P``
outputs read as a Gaussian predictive density: a mean head and a
heteroscedastic log-variance head per target (the same linear and MLP
families, sized by ``Task.out_dim``; the density, its bound on the
log-variance and its code are :mod:`mdlnb.core._targets`). The
board of the paper (App. A.5.1) is a linear layer and MLPs of 1–7 hidden ReLU
layers. Parameters are a tuple of ``{"w": (d_in, d_out), "b": (d_out,)}``
layers, so readouts of one architecture stack along a leading axis and
``jax.vmap`` over it.

Initialisation (documented, deterministic given the key):

* hidden layers: He/Kaiming truncated normal, variance ``2 / d_in``
  (``jax.nn.initializers.he_normal``, the standard choice for ReLU layers),
  zero biases;
* output layer: zeros, so an untrained readout predicts the uniform
  distribution and codes each label with exactly ``log C`` nats — the
  prequential code starts from the uniform code rather than from a random
  guess that costs more than ``log C``. On a regression task the same zero
  layer predicts N(0, 1) for every standardised target.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol, runtime_checkable

import jax
import jax.numpy as jnp

from mdlnb.core._checks import check_int

Params = tuple[dict[str, Any], ...]

DEFAULT_WIDTH = 256
MAX_HIDDEN_LAYERS = 7


@dataclasses.dataclass(frozen=True)
class Readout:
    """An architecture: ``hidden_layers`` ReLU layers of ``width`` units, then a linear layer.

    Attributes:
      name: ``"linear"``, ``"mlp2"``, or ``"mlp2x512"`` when the width is not 256
        (:func:`from_name` inverts it).
      family: ``"linear"`` or ``"mlp"``.
      hidden_layers: number of hidden ReLU layers (0 for linear).
      width: units per hidden layer (0 for linear).
    """

    name: str
    family: str
    hidden_layers: int
    width: int

    def __post_init__(self) -> None:
        if self.family not in ("linear", "mlp"):
            raise ValueError(f"family: must be 'linear' or 'mlp', got {self.family!r}")
        if self.family == "linear" and (self.hidden_layers, self.width) != (0, 0):
            raise ValueError("hidden_layers: a linear readout has no hidden layers")
        if self.family == "mlp":
            _check_mlp(self.hidden_layers, self.width)
        if self.name != _name(self.family, self.hidden_layers, self.width):
            raise ValueError(
                f"name: expected {_name(self.family, self.hidden_layers, self.width)!r}, "
                f"got {self.name!r}; build readouts with linear() or mlp()"
            )

    def layer_sizes(self, in_dim: int, num_classes: int) -> tuple[tuple[int, int], ...]:
        """``(d_in, d_out)`` of each affine layer, input to output."""
        dims = [int(in_dim), *[self.width] * self.hidden_layers, int(num_classes)]
        return tuple(zip(dims[:-1], dims[1:]))

    def num_params(self, in_dim: int, num_classes: int) -> int:
        """Number of scalar parameters (weights and biases)."""
        return sum(i * o + o for i, o in self.layer_sizes(in_dim, num_classes))

    def flops(self, in_dim: int, num_classes: int) -> int:
        """Multiply-adds ×2 of one forward pass for one example (FLOPs)."""
        return sum(2 * i * o for i, o in self.layer_sizes(in_dim, num_classes))

    def init(self, key: jax.Array, in_dim: int, num_classes: int) -> Params:
        """Fresh parameters for ``(in_dim,) -> (num_classes,)``; see module docstring."""
        if in_dim < 1:
            raise ValueError(f"in_dim: must be >= 1, got {in_dim}")
        if num_classes < 2:
            raise ValueError(f"num_classes: must be >= 2, got {num_classes}")
        sizes = self.layer_sizes(in_dim, num_classes)
        keys = jax.random.split(key, len(sizes))
        he = jax.nn.initializers.variance_scaling(2.0, "fan_in", "truncated_normal")
        layers = []
        for j, ((i, o), k) in enumerate(zip(sizes, keys)):
            last = j == len(sizes) - 1
            w = jnp.zeros((i, o), jnp.float32) if last else he(k, (i, o), jnp.float32)
            layers.append({"w": w, "b": jnp.zeros((o,), jnp.float32)})
        return tuple(layers)

    def apply(self, params: Params, x: jax.Array, *, matmul_dtype: str = "float32") -> jax.Array:
        """Logits ``(B, C)`` for features ``x`` ``(B, D)``; ``matmul_dtype``: see
        :func:`with_matmul_dtype`."""
        mm = _matmul(matmul_dtype)
        h = x
        for layer in params[:-1]:
            h = jax.nn.relu(mm(h, layer["w"]) + layer["b"])
        return mm(h, params[-1]["w"]) + params[-1]["b"]

    def config(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "family": self.family,
            "hidden_layers": self.hidden_layers,
            "width": self.width,
        }


MATMUL_DTYPES = ("float32", "bfloat16")


def _matmul(dtype: str):
    """``x @ w`` with both operands rounded to ``dtype`` and the products summed in
    float32 (``preferred_element_type``); ``"float32"`` is the plain product."""
    if dtype == "float32":
        return jnp.matmul
    low = jnp.dtype(dtype)
    return lambda x, w: jnp.matmul(x.astype(low), w.astype(low), preferred_element_type=jnp.float32)


@dataclasses.dataclass(frozen=True)
class LowPrecision:
    """A :class:`Readout` whose matmuls take ``dtype`` operands with float32
    accumulation (forward and, through autodiff, backward); its parameters,
    gradients and optimiser state stay float32. Same name, config and sizes as
    the readout it wraps: the precision is a protocol choice
    (``Protocol(matmul_dtype=...)``), recorded there, not a different readout."""

    readout: Readout
    dtype: str = "bfloat16"

    @property
    def name(self) -> str:
        return self.readout.name

    def init(self, key: jax.Array, in_dim: int, num_classes: int) -> Params:
        return self.readout.init(key, in_dim, num_classes)

    def apply(self, params: Params, x: jax.Array) -> jax.Array:
        return self.readout.apply(params, x, matmul_dtype=self.dtype)

    def num_params(self, in_dim: int, num_classes: int) -> int:
        return self.readout.num_params(in_dim, num_classes)

    def flops(self, in_dim: int, num_classes: int) -> int:
        return self.readout.flops(in_dim, num_classes)

    def config(self) -> dict[str, Any]:
        return self.readout.config()


def with_matmul_dtype(readout: Any, dtype: str = "float32") -> Any:
    """``readout`` whose matmuls run with ``dtype`` operands and float32 accumulation.

    ``"float32"`` returns ``readout`` unchanged. ``"bfloat16"``: each ``x @ w``
    becomes ``jnp.matmul(x.astype(bf16), w.astype(bf16),
    preferred_element_type=float32)`` — the operands are rounded to bfloat16
    (8 significant bits) on every backend, so the loss matrix differs from
    float32 by that rounding everywhere; the speed-up needs bfloat16 matrix
    units (GPU tensor cores, TPU MXU): on CPU XLA computes it in float32 after
    the conversions (benchmarks/RESULTS.md). ``jax.default_matmul_precision``
    is not used: XLA's CPU backend ignores it, so it would change nothing there.
    Only :class:`Readout` boards support it (ValueError otherwise)."""
    if dtype not in MATMUL_DTYPES:
        raise ValueError(f"matmul_dtype: must be one of {MATMUL_DTYPES}, got {dtype!r}")
    if dtype == "float32":
        return readout
    if isinstance(readout, LowPrecision):
        readout = readout.readout
    if not isinstance(readout, Readout):
        raise ValueError(
            f"matmul_dtype: {dtype!r} is supported for mdlnb.board.readouts.Readout boards "
            f"only, got readout {getattr(readout, 'name', readout)!r}"
        )
    return LowPrecision(readout, dtype)


@runtime_checkable
class ReadoutLike(Protocol):
    """What stage 1 needs of a readout: :class:`Readout` and
    :class:`mdlnb.baselines.finetune.FinetuneReadout` both satisfy it.

    Optional attributes read by :func:`mdlnb.prequential.run`:
    ``standardize_inputs`` (default True: the readout sees standardised
    features when standardisation is on) and ``check_task(task)`` (raise
    ``ValueError`` if the task's inputs do not fit the readout).
    """

    @property
    def name(self) -> str: ...  # a property: frozen dataclasses satisfy it (read-only)

    def init(self, key: jax.Array, in_dim: int, num_classes: int) -> Any: ...

    def apply(self, params: Any, x: jax.Array) -> jax.Array: ...

    def num_params(self, in_dim: int, num_classes: int) -> int: ...

    def flops(self, in_dim: int, num_classes: int) -> int: ...

    def config(self) -> dict[str, Any]: ...


def _check_mlp(hidden_layers: int, width: int) -> tuple[int, int]:
    """``(hidden_layers, width)`` as Python ints, checked."""
    return (
        check_int("hidden_layers", hidden_layers, minimum=1, maximum=MAX_HIDDEN_LAYERS),
        check_int("width", width, minimum=1),
    )


def _name(family: str, hidden_layers: int, width: int) -> str:
    if family == "linear":
        return "linear"
    return f"mlp{hidden_layers}" + ("" if width == DEFAULT_WIDTH else f"x{width}")


def linear() -> Readout:
    """A linear (softmax-regression) readout."""
    return Readout("linear", "linear", 0, 0)


def mlp(hidden_layers: int, width: int = DEFAULT_WIDTH) -> Readout:
    """An MLP readout with ``hidden_layers`` ReLU layers of ``width`` units."""
    hidden_layers, width = _check_mlp(hidden_layers, width)
    return Readout(_name("mlp", hidden_layers, width), "mlp", hidden_layers, width)


def from_config(config: dict[str, Any]) -> Readout:
    """Inverse of :meth:`Readout.config` (linear and MLP readouts only)."""
    if config.get("family") not in ("linear", "mlp"):
        raise ValueError(
            f"config: cannot rebuild a {config.get('family')!r} readout from its "
            "config (it is not a plain linear/MLP readout); pass the experts instead"
        )
    if config.get("family") == "linear":
        return linear()
    return mlp(int(config["hidden_layers"]), int(config["width"]))


def from_name(name: str) -> Readout:
    """The readout called ``name``: inverse of :attr:`Readout.name`.

    Names, one scheme for every preset and study: ``"linear"``; ``"mlp<L>"``
    for L hidden layers of the paper's width 256 (:data:`DEFAULT_WIDTH`);
    ``"mlp<L>x<W>"`` for another width W (e.g. the ``small`` preset's
    ``"mlp1x64"``). ``"mlp<L>x256"`` is accepted too and gives ``mlp<L>``.
    """
    if isinstance(name, str):
        if name == "linear":
            return linear()
        if name.startswith("mlp"):
            layers, sep, width = name[3:].partition("x")
            if layers.isdigit() and (not sep or width.isdigit()):
                return mlp(int(layers), int(width) if sep else DEFAULT_WIDTH)
    raise ValueError(
        f"name: cannot parse readout name {name!r}; use 'linear', 'mlp<L>' "
        "(width 256) or 'mlp<L>x<W>'"
    )


def board(max_hidden_layers: int = MAX_HIDDEN_LAYERS, width: int = DEFAULT_WIDTH) -> list[Readout]:
    """The paper's board: linear plus MLPs of 1..``max_hidden_layers`` hidden layers."""
    return [linear(), *(mlp(h, width) for h in range(1, max_hidden_layers + 1))]
