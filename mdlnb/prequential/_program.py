"""The compiled chunk program of stage 1: one jitted ``lax.scan`` over a chunk of
batches; each batch is coded by every expert, then trained with replay
(AdamW + EMA, :func:`mdlnb.core._fit.step`), vmapped over each group's experts and
looped over blocks of a group (see :mod:`mdlnb.prequential`)."""

from __future__ import annotations

import dataclasses
import math
from functools import partial

import jax
import jax.numpy as jnp

from mdlnb.board.readouts import ReadoutLike
from mdlnb.core import _fit, _standardize, _targets
from mdlnb.prequential import _calibration
from mdlnb.prequential._stream import replay_positions

_TRACE_COUNT = 0  # incremented each time the chunk program is traced (i.e. compiled)


def trace_count() -> int:
    """How many times the jitted chunk program has been traced in this process."""
    return _TRACE_COUNT


@dataclasses.dataclass(frozen=True)
class _Spec:
    """Static structure of the compiled chunk program (hashable)."""

    readouts: tuple[ReadoutLike, ...]  # one per architecture group
    max_replay: tuple[int, ...]  # per group
    masked: tuple[bool, ...]  # per group: do replay counts differ within the group
    block: tuple[int, ...]  # per group: experts trained together (divides group size)
    standardize: tuple[bool, ...]  # per group: does the readout see standardised features
    calibrate: tuple[bool, ...]  # per group: forward calibration (_calibration)
    num_classes: int
    batch_size: int
    clip: float | None  # the "prefix" clip; None for standardize="none"
    targets: int = 0  # P real targets (regression, Gaussian code); 0: classes


def _expert_update(readout, num_classes, masked, r, x, y, state, hp, replay, loss=None):
    """One AdamW + EMA step of a single expert (:func:`mdlnb.core._fit.step`, vmapped over
    the group); with ``masked``, a no-op for experts past their replay count;
    ``loss``: the regression loss (:func:`mdlnb.core._targets.gaussian_nll`), else
    cross-entropy."""
    new = _fit.step(readout.apply, state, hp, x, y, num_classes, loss=loss)
    if masked:
        take = r < replay
        new = jax.tree_util.tree_map(lambda a, b: jnp.where(take, a, b), new, state)
    return new


def _standardized(spec: _Spec, x, mean, inv_std):
    """The readouts' view of ``x``: prefix z-scores clipped to ``±spec.clip``, or ``x``."""
    if spec.clip is None:  # standardize="none": mean 0, scale 1, nothing clipped
        return x
    return _standardize.apply(x, _standardize.Moments(mean, inv_std), clip=spec.clip)


def _calibrated(ro, xj, xs, b, params, calib):
    """One block's forward-calibrated code (:mod:`mdlnb.prequential._calibration`): the
    log-probabilities under ``softmax(β · logits)``, β fitted to the block's summaries
    ``calib`` (blk, GRID) of the batches before, and the summaries with this batch added."""
    z = jax.vmap(ro.apply, in_axes=(0, None))(params, xj)  # (blk, B, C)
    beta = _calibration.beta(calib, xs["batch"])
    # ≤ 0 in exact arithmetic; XLA may fuse β·z into the max-shift as an FMA, leaving
    # the top class a rounding error (~1e-7) above 0
    logp = jnp.minimum(jax.nn.log_softmax(beta[:, None, None] * z), 0.0)
    rows = xs["batch"] * b + jnp.arange(b) < xs["t_end"]  # not the rows past N
    return logp, _calibration.update(calib, z, xs["y"], rows, xs["batch"])


def _group_code(spec: _Spec, j: int, ro, g, xj, xs):
    """``(losses, calib)`` of group j on this batch: the (k, B) code lengths of its
    experts' EMA parameters (before training on it) and its new calibration
    summaries (None where it is not calibrated).

    Evaluated block by block, as trained: one vmap over the whole group rounds
    differently with the group's size (XLA:CPU partitions a batched matmul by its
    batch), so a slice holding 2 of a group's 4 blocks gave other losses in the last
    bit than one pass."""
    b, blk = spec.batch_size, spec.block[j]
    k = jax.tree_util.tree_leaves(g.ema_params)[0].shape[0]
    split = lambda a: a.reshape((k // blk, blk) + a.shape[1:])  # noqa: E731
    per = jax.tree_util.tree_map(split, g.ema_params)
    if spec.targets:  # regression: Gaussian density of the prefix-standardised target
        z = (xs["y"] - xs["ymean_prev"]) * xs["yinv_prev"]
        nll = jax.lax.map(
            lambda p: jax.vmap(lambda q: _targets.gaussian_nll(ro.apply(q, xj), z))(p), per
        )
        # calibration is for classification only (refused earlier)
        return nll.reshape((k,) + nll.shape[2:]), None
    calib = None
    if spec.calibrate[j]:
        logp, calib = jax.lax.map(lambda a: _calibrated(ro, xj, xs, b, *a), (per, split(g.calib)))
        calib = calib.reshape(g.calib.shape)
    else:
        logp = jax.lax.map(
            lambda p: jax.nn.log_softmax(jax.vmap(ro.apply, in_axes=(0, None))(p, xj)), per
        )
    logp = logp.reshape((k,) + logp.shape[2:])
    return -jnp.take_along_axis(logp, xs["y"][None, :, None], axis=2)[..., 0], calib


def _batch_losses(spec: _Spec, groups, xs):
    """``(losses, calibs)``: the (B, K) next-step losses of every expert on this
    batch (the first batch's set to the uniform code, or to 0 for regression,
    whose first code the host sets) and each group's new calibration summaries."""
    xn = _standardized(spec, xs["x"], xs["mean_prev"], xs["inv_std_prev"])
    coded, calibs = [], []
    for j, (ro, g) in enumerate(zip(spec.readouts, groups)):
        xj = xn if spec.standardize[j] else xs["x"]
        code, calib = _group_code(spec, j, ro, g, xj, xs)
        coded.append(code)
        calibs.append(calib)
    losses = jnp.concatenate(coded, axis=0).T  # (B, K)
    if spec.targets:
        # the density of the raw target: p(y) = p(z) · Π_p s_p (s = 1/σ of the prefix);
        # the first batch's code is set on the host (_targets.first_batch_nats)
        losses = losses - jnp.sum(jnp.log(xs["yinv_prev"]))
        losses = jnp.where(xs["batch"] == 0, jnp.float32(0.0), losses)
    else:
        losses = jnp.where(xs["batch"] == 0, jnp.float32(math.log(spec.num_classes)), losses)
    return losses, calibs


def _replay_step(spec: _Spec, j: int, ro, x_all, y_all, seed_key, xs, r, g, h):
    """Replay step r of one block g of group j (hyperparameters h): a batch drawn
    from the prefix (:func:`replay_positions`), standardised as the readouts see
    it, and one :func:`_expert_update` of every expert of the block."""
    c = spec.num_classes
    pos = replay_positions(seed_key, xs["batch"], r, xs["t_end"], spec.batch_size)
    x = (
        _standardized(spec, x_all[pos], xs["mean"], xs["inv_std"])
        if spec.standardize[j]
        else x_all[pos]
    )
    y = y_all[pos]
    if spec.targets:  # the replay targets, standardised like the features
        y = (y - xs["ymean"]) * xs["yinv"]
        upd = partial(_expert_update, ro, c, spec.masked[j], r, x, y, loss=_targets.gaussian_nll)
    else:
        upd = partial(_expert_update, ro, c, spec.masked[j], r, x, y)
    return jax.vmap(upd)(g, *h)


def _train_group(spec: _Spec, j: int, ro, g, hyper, x_all, y_all, seed_key, xs):
    """Group j after training on this batch: ``spec.max_replay[j]`` replay steps
    (none on a padding batch), block by block.

    Blocks of experts run all their replay steps back to back, so a block's
    parameters and optimiser state stay in cache. Each block is sliced out of the
    group's state and written back in place (dynamic_update_slice in a loop): no
    second copy of the group's state is ever live (a lax.map over blocks stacked a
    new one)."""
    blk = spec.block[j]
    step = partial(_replay_step, spec, j, ro, x_all, y_all, seed_key, xs)

    def one_block(i, g):
        take = lambda a: jax.lax.dynamic_slice_in_dim(a, i * blk, blk)  # noqa: E731
        gb, h = jax.tree_util.tree_map(take, g), jax.tree_util.tree_map(take, hyper)
        steps = jnp.where(xs["valid"], spec.max_replay[j], 0)  # no replay on a padding batch
        gb = jax.lax.fori_loop(0, steps, lambda r, gb: step(r, gb, h), gb)
        put = lambda a, u: jax.lax.dynamic_update_slice_in_dim(a, u, i * blk, 0)  # noqa: E731
        return jax.tree_util.tree_map(put, g, gb)

    n_blocks = jax.tree_util.tree_leaves(g)[0].shape[0] // blk
    return jax.lax.fori_loop(0, n_blocks, one_block, g)


def _batch_step(spec: _Spec, hypers, x_all, y_all, seed_key, groups, xs):
    """One batch of the chunk's scan: every expert codes it (:func:`_batch_losses`),
    then trains on it with replay (:func:`_train_group`). Returns the groups'
    new states and the (B, K) losses."""
    losses, calibs = _batch_losses(spec, groups, xs)
    # the calibration summaries ride along; training sees the plain state
    plain = tuple(g._replace(calib=None) for g in groups)
    trained = tuple(
        _train_group(spec, j, ro, g, hypers[j], x_all, y_all, seed_key, xs)
        for j, (ro, g) in enumerate(zip(spec.readouts, plain))
    )
    return tuple(g._replace(calib=cal) for g, cal in zip(trained, calibs)), losses


# donate_argnums=1: the experts' state is updated in place (its input buffers are reused).
@partial(jax.jit, static_argnums=0, donate_argnums=1)
def _run_chunk(spec: _Spec, groups, hypers, x_all, y_all, seed_key, xs):
    global _TRACE_COUNT
    _TRACE_COUNT += 1
    body = partial(_batch_step, spec, hypers, x_all, y_all, seed_key)
    return jax.lax.scan(body, groups, xs)


#: the chunk inputs every stream of a stacked call shares (streams of one bucket have
#: the same N, so the same batch indices, prefix ends and padding batches)
SHARED_INPUTS = ("batch", "t_end", "valid")


# donate_argnums=1: the streams' stacked state is updated in place.
@partial(jax.jit, static_argnums=0, donate_argnums=1)
def _run_stacked(spec: _Spec, groups, hypers, x_all, y_all, seed_keys, shared, per):
    """:func:`_run_chunk` of W streams at once, the stream axis stacked in front of the
    expert axis (``vmap`` over streams): ``groups``, ``x_all``, ``y_all``,
    ``seed_keys`` and the per-stream chunk inputs ``per`` carry a leading axis of
    W; the board's ``hypers`` and the ``shared`` inputs (:data:`SHARED_INPUTS`)
    do not, so every loop's trip count stays one scalar. Returns the new states
    and the losses (W, chunk, B, K). Each stream's arithmetic is its solo
    program's with a wider batch of matmuls, which XLA may round otherwise
    (:mod:`mdlnb.prequential._streams`, "Exactness")."""
    global _TRACE_COUNT
    _TRACE_COUNT += 1

    def one(g, xa, ya, key, p):
        body = partial(_batch_step, spec, hypers, xa, ya, key)
        return jax.lax.scan(body, g, {**shared, **p})

    return jax.vmap(one)(groups, x_all, y_all, seed_keys, per)


def _run_groups(spec: _Spec, groups, hypers, x_all, y_all, seed_key, xs):
    """:func:`_run_chunk` one group at a time: each group's program is compiled (and
    cached) on its own, so compacting one group of a pruned board
    (:mod:`mdlnb.prequential._prune`) recompiles that group only. Same outputs."""
    states, outs = [], []
    for j in range(len(spec.readouts)):
        one = dataclasses.replace(
            spec,
            **{
                f: (getattr(spec, f)[j],)
                for f in (  # type: ignore[arg-type]
                    "readouts",
                    "max_replay",
                    "masked",
                    "block",
                    "standardize",
                    "calibrate",
                )
            },
        )
        g, out = _run_chunk(one, (groups[j],), (hypers[j],), x_all, y_all, seed_key, xs)
        states.append(g[0])
        outs.append(out)
    return tuple(states), jnp.concatenate(outs, axis=2)
