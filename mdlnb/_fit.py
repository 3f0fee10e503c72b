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

from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import optax

from mdlnb import _standardize


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


def optimizer(h: Hyper) -> optax.GradientTransformation:
    """AdamW with ``h``'s learning rate, β1 and decoupled weight decay; β2 = 0.999,
    ε = 1e-8. Built from (possibly traced) arrays at every step, so one
    compilation serves a vmapped grid; its state does not depend on ``h``."""
    return optax.adamw(learning_rate=h.learning_rate, b1=h.b1, b2=0.999, eps=1e-8,
                       weight_decay=h.weight_decay)


def state_of(params: Any) -> State:
    """Fresh training state for ``params``: AdamW moments at zero, EMA = params."""
    return State(params, optax.adamw(1e-3).init(params), params)


def init_state(init: Callable, key: jax.Array, in_dim: int, num_classes: int,
               h: Hyper | None = None) -> State:
    """Fresh parameters from ``init(key, in_dim, num_classes)``, AdamW state, EMA copy
    (``h`` is accepted for symmetry; the state layout does not depend on it)."""
    return state_of(init(key, in_dim, num_classes))


def example_losses(logits: jax.Array, y: jax.Array) -> jax.Array:
    """Per-example log-loss −log softmax(logits)[y], in nats."""
    return -jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1)[:, 0]


def train_loss(apply: Callable, params: Any, x: jax.Array, y: jax.Array, smoothing: jax.Array,
               num_classes: int, weights: jax.Array | None = None) -> jax.Array:
    """Mean (``weights``: weighted mean) cross-entropy against label-smoothed targets, nats."""
    logits = apply(params, x)
    target = optax.smooth_labels(jax.nn.one_hot(y, num_classes), smoothing)
    ce = optax.softmax_cross_entropy(logits, target)
    if weights is None:
        return ce.mean()
    return jnp.sum(weights * ce) / jnp.maximum(jnp.sum(weights), 1.0)


def step(apply: Callable, state: State, h: Hyper, x: jax.Array, y: jax.Array,
         num_classes: int, weights: jax.Array | None = None) -> State:
    """One AdamW update on the (weighted) mean cross-entropy, then the EMA update
    ``ema ← (1 − η)·ema + η·params`` (η = ``h.ema``).

    The one training step of the package: stage 1 (:mod:`mdlnb.prequential`)
    vmaps it over a board of experts, block-wise MDL and the probes over
    hyperparameter grids."""
    grads = jax.grad(train_loss, argnums=1)(apply, state.params, x, y, h.label_smoothing,
                                            num_classes, weights)
    updates, opt_state = optimizer(h).update(grads, state.opt_state, state.params)
    params = optax.apply_updates(state.params, updates)
    ema = optax.incremental_update(params, state.ema_params, h.ema)
    return State(params, opt_state, ema)


def masked_standardize(x: jax.Array, mask: jax.Array, *, clip: float | None = None) -> jax.Array:
    """Standardize columns of ``x`` with the statistics of the rows where ``mask`` is set
    (:mod:`mdlnb._standardize`: a column constant on those rows is only centred)."""
    return _standardize.apply(x, _standardize.fit(x, mask), clip=clip)
