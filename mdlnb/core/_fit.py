"""Offline supervised training of one readout: the shared kernel of
``blockwise`` (train to convergence on a prefix) and ``probes`` (a vmapped
hyperparameter grid).

Everything here is a pure function of arrays and is meant to be called inside
``jit``/``vmap``/``lax.scan``. Hyperparameters are arrays, not Python floats,
so one compilation serves a whole grid: :func:`optimizer` builds AdamW from
the (traced) :class:`Hyper` at every step, and the EMA (Polyak) step size η and
label smoothing travel in it too. :func:`step` is the package's one AdamW +
EMA step: stage 1 vmaps it over a board of experts as well. The EMA follows the paper's convention: after each update
``ema ← (1 − η)·ema + η·params`` starting from the initial parameters, and
predictions use ``ema`` (η = 1 means no averaging).

Losses are natural-log cross-entropies (nats).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from mdlnb.core import _standardize


class Hyper(NamedTuple):
    """Per-model training hyperparameters (float32 scalars, or arrays under vmap)."""

    learning_rate: Any
    b1: Any
    weight_decay: Any
    ema: Any
    label_smoothing: Any


class State(NamedTuple):
    params: Any
    opt_state: Any
    ema_params: Any
    #: stage 1's forward-calibration summary of a calibrated expert
    #: (:mod:`mdlnb.prequential._calibration`); ``None`` (no leaves) otherwise
    calib: Any = None


def hyper(
    learning_rate: float,
    b1: float = 0.9,
    weight_decay: float = 0.0,
    ema: float = 1.0,
    label_smoothing: float = 0.0,
) -> Hyper:
    """A :class:`Hyper` of float32 arrays (stack several with ``stack_hypers``)."""
    f = lambda v: jnp.asarray(v, jnp.float32)
    return Hyper(f(learning_rate), f(b1), f(weight_decay), f(ema), f(label_smoothing))


def hyper_of(expert: Any) -> Hyper:
    """The :class:`Hyper` of an ``mdlnb.board.experts.Expert``."""
    return hyper(
        expert.learning_rate, expert.b1, expert.weight_decay, expert.ema, expert.label_smoothing
    )


def stack_hypers(hs: list[Hyper]) -> Hyper:
    return Hyper(*(jnp.stack(v) for v in zip(*hs)))


def scale_by_adam(b1, b2: float, eps: float) -> optax.GradientTransformation:
    """:func:`optax.scale_by_adam` (no ε inside the root, no Nesterov) with the
    bias corrections written as products, m̂ = m · (1 − β1^t)⁻¹ and
    v̂ = v · (1 − β2^t)⁻¹, instead of optax's divisions m / (1 − β1^t).

    Same state (:class:`optax.ScaleByAdamState`) and the same numbers to one
    rounding. Why: XLA's simplifier rewrote the division by the per-expert
    scalar 1 − β^t into a product with its reciprocal in a one-device program
    but kept it in a program partitioned over devices, so a board sharded over
    devices differed from one device in the last bit (2.4e-7 nats; see
    benchmarks/RESULTS.md). Written as a product, both compile alike and
    sharded runs are bit-identical on the board of ``tests/test_sharding.py`` (not on
    every board: :mod:`mdlnb.prequential._sharding`, "What is guaranteed").
    """
    base = optax.scale_by_adam(b1=b1, b2=b2, eps=eps)

    def update_fn(updates, state, params=None):
        del params
        mu = optax.tree.update_moment(updates, state.mu, b1, 1)
        nu = optax.tree.update_moment_per_elem_norm(updates, state.nu, b2, 2)
        count = optax.safe_increment(state.count)
        c1, c2 = 1.0 / (1.0 - b1**count), 1.0 / (1.0 - b2**count)
        out = jax.tree.map(
            lambda m, v: (m * c1.astype(m.dtype)) / (jnp.sqrt(v * c2.astype(v.dtype)) + eps), mu, nu
        )
        return out, optax.ScaleByAdamState(count=count, mu=mu, nu=nu)

    return optax.GradientTransformation(base.init, update_fn)


def optimizer(h: Hyper) -> optax.GradientTransformation:
    """AdamW with ``h``'s learning rate, β1 and decoupled weight decay; β2 = 0.999,
    ε = 1e-8: :func:`optax.adamw`'s chain with :func:`scale_by_adam` above.
    Built from (possibly traced) arrays at every step, so one compilation serves
    a vmapped grid; its state does not depend on ``h``."""
    return optax.chain(
        scale_by_adam(h.b1, 0.999, 1e-8),
        optax.add_decayed_weights(h.weight_decay),
        optax.scale_by_learning_rate(h.learning_rate),
    )


def state_of(params: Any) -> State:
    """Fresh training state for ``params``: AdamW moments at zero, EMA = params."""
    return State(params, optimizer(hyper(1e-3)).init(params), params)


def init_state(
    init: Callable, key: jax.Array, in_dim: int, num_classes: int, h: Hyper | None = None
) -> State:
    """Fresh parameters from ``init(key, in_dim, num_classes)``, AdamW state, EMA copy
    (``h`` is accepted for symmetry; the state layout does not depend on it)."""
    return state_of(init(key, in_dim, num_classes))


def example_losses(logits: jax.Array, y: jax.Array) -> jax.Array:
    """Per-example log-loss −log softmax(logits)[y], in nats."""
    return -jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1)[:, 0]


def train_loss(
    apply: Callable,
    params: Any,
    x: jax.Array,
    y: jax.Array,
    smoothing: jax.Array,
    num_classes: int,
    weights: jax.Array | None = None,
    loss: Callable | None = None,
) -> jax.Array:
    """Mean (``weights``: weighted mean) cross-entropy against label-smoothed targets, nats;
    or, with ``loss``, the mean of ``loss(outputs, y)`` (per-example nats, e.g. the
    Gaussian density code of :func:`mdlnb.core._targets.gaussian_nll`; no smoothing)."""
    logits = apply(params, x)
    if loss is not None:
        per = loss(logits, y)
        if weights is None:
            return per.mean()
        return jnp.sum(weights * per) / jnp.maximum(jnp.sum(weights), 1.0)
    target = optax.smooth_labels(jax.nn.one_hot(y, num_classes), smoothing)
    ce = optax.softmax_cross_entropy(logits, target)
    if weights is None:
        return ce.mean()
    return jnp.sum(weights * ce) / jnp.maximum(jnp.sum(weights), 1.0)


def step(
    apply: Callable,
    state: State,
    h: Hyper,
    x: jax.Array,
    y: jax.Array,
    num_classes: int,
    weights: jax.Array | None = None,
    loss: Callable | None = None,
) -> State:
    """One AdamW update on the (weighted) mean cross-entropy, then the EMA update
    ``ema ← (1 − η)·ema + η·params`` (η = ``h.ema``).

    The one training step of the package: stage 1 (:mod:`mdlnb.prequential`)
    vmaps it over a board of experts, block-wise MDL and the probes over
    hyperparameter grids. ``loss``: see :func:`train_loss` (regression targets)."""
    grads = jax.grad(train_loss, argnums=1)(
        apply, state.params, x, y, h.label_smoothing, num_classes, weights, loss
    )
    updates, opt_state = optimizer(h).update(grads, state.opt_state, state.params)
    params = optax.apply_updates(state.params, updates)
    ema = optax.incremental_update(params, state.ema_params, h.ema)
    return State(params, opt_state, ema)


def masked_standardize(x: jax.Array, mask: jax.Array, *, clip: float | None = None) -> jax.Array:
    """Standardize columns of ``x`` with the statistics of the rows where ``mask`` is set
    (:mod:`mdlnb.core._standardize`: a column constant on those rows is only centred)."""
    return _standardize.apply(x, _standardize.fit(x, mask), clip=clip)
