"""Offline supervised training of one readout: the shared kernel of
``blockwise`` (train to convergence on a prefix) and ``probes`` (a vmapped
hyperparameter grid).

Everything here is a pure function of arrays and is meant to be called inside
``jit``/``vmap``/``lax.scan``. Hyperparameters are arrays, not Python floats,
so one compilation serves a whole grid: AdamW comes from
``optax.inject_hyperparams(optax.adamw)``, whose state carries learning rate,
b1 and weight decay; the EMA (Polyak) step size η and label smoothing travel in
:class:`Hyper`. The EMA follows the paper's convention: after each update
``ema ← (1 − η)·ema + η·params`` starting from the initial parameters, and
predictions use ``ema`` (η = 1 means no averaging).

Losses are natural-log cross-entropies (nats).
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import optax


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


def hyper(learning_rate: float, b1: float = 0.9, weight_decay: float = 0.0, ema: float = 1.0,
          label_smoothing: float = 0.0) -> Hyper:
    """A :class:`Hyper` of float32 arrays (stack several with ``stack_hypers``)."""
    f = lambda v: jnp.asarray(v, jnp.float32)
    return Hyper(f(learning_rate), f(b1), f(weight_decay), f(ema), f(label_smoothing))


def hyper_of(expert: Any) -> Hyper:
    """The :class:`Hyper` of an ``mdlnb.experts.Expert``."""
    return hyper(expert.learning_rate, expert.b1, expert.weight_decay, expert.ema,
                 expert.label_smoothing)


def stack_hypers(hs: list[Hyper]) -> Hyper:
    return Hyper(*(jnp.stack(v) for v in zip(*hs)))


def _adamw(h: Hyper) -> optax.GradientTransformation:
    return optax.inject_hyperparams(optax.adamw)(
        learning_rate=h.learning_rate, b1=h.b1, weight_decay=h.weight_decay)


def init_state(init: Callable, key: jax.Array, in_dim: int, num_classes: int, h: Hyper) -> State:
    """Fresh parameters from ``init(key, in_dim, num_classes)``, AdamW state, EMA copy."""
    params = init(key, in_dim, num_classes)
    return State(params, _adamw(h).init(params), params)


def example_losses(logits: jax.Array, y: jax.Array) -> jax.Array:
    """Per-example log-loss −log softmax(logits)[y], in nats."""
    return -jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1)[:, 0]


def _train_loss(apply: Callable, params: Any, x: jax.Array, y: jax.Array, w: jax.Array,
                smoothing: jax.Array, num_classes: int) -> jax.Array:
    logits = apply(params, x)
    target = optax.smooth_labels(jax.nn.one_hot(y, num_classes), smoothing)
    ce = optax.softmax_cross_entropy(logits, target)
    return jnp.sum(w * ce) / jnp.maximum(jnp.sum(w), 1.0)


def step(apply: Callable, state: State, h: Hyper, x: jax.Array, y: jax.Array, w: jax.Array,
         num_classes: int) -> State:
    """One AdamW update on the ``w``-weighted mean cross-entropy, then the EMA update."""
    grads = jax.grad(_train_loss, argnums=1)(apply, state.params, x, y, w, h.label_smoothing,
                                             num_classes)
    # The update reads learning rate / b1 / weight decay from the injected state.
    updates, opt_state = _adamw(h).update(grads, state.opt_state, state.params)
    params = optax.apply_updates(state.params, updates)
    ema = optax.incremental_update(params, state.ema_params, h.ema)
    return State(params, opt_state, ema)


def masked_standardize(x: jax.Array, mask: jax.Array) -> jax.Array:
    """Standardize columns of ``x`` with the mean/std of the rows where ``mask`` is set.

    A column that is constant on those rows is only centred (divided by 1)."""
    w = mask.astype(x.dtype)[:, None]
    n = jnp.maximum(jnp.sum(w), 1.0)
    mu = jnp.sum(w * x, axis=0) / n
    var = jnp.sum(w * (x - mu) ** 2, axis=0) / n
    std = jnp.sqrt(var)
    return (x - mu) / jnp.where(std > 1e-6, std, 1.0)
