"""The board's layout for the chunk program: experts grouped by (architecture,
replay count), cut into blocks of a fixed width, and each group's initial state
and stacked hyperparameters (see :mod:`mdlnb.prequential`)."""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from mdlnb.board.experts import Expert
from mdlnb.board.readouts import LowPrecision, Readout, ReadoutLike, with_matmul_dtype
from mdlnb.core import _fit
from mdlnb.prequential import _calibration, _sharding
from mdlnb.prequential._program import _Spec
from mdlnb.prequential._stream import init_salt

#: budget for the training state of one block of experts per two CPU cores (see
#: :func:`block_bytes`): 32 MB, measured on 2 cores (benchmarks/RESULTS.md): on the
#: encoder grid's ``deep`` board 8 MB left 1-2 MLP-4 experts per block (one expert's
#: small matmuls per update) and the grid 1.3x slower; on the long stream's mlp2x256
#: board 4-19 experts per block run alike
BLOCK_BYTES = 32 * 2**20
#: the same budget on an accelerator (GPU, TPU), where no cache is kept warm and each
#: block's replay steps are kernel launches in series: 1 GiB (an H200 ran the long
#: stream 2.3x faster with one block of 64 than with 4 of at most 19)
ACCELERATOR_BLOCK_BYTES = 2**30
#: feature dimensions up to this are padded to it (:func:`padded_dim`)
MIN_DIM_BUCKET = 16


def padded_dim(d: int) -> int:
    """The feature-dimension bucket of ``d``: 16 up to 16, then a multiple of
    ``max(16, 2^(bitlength(d − 1) − 4))``, i.e. multiples of 16 up to 256 and
    eight steps per octave above (…, 256, 288, 320, …, 512, 576, …, 768, …, 1024,
    1152, …, 2048): at most 15 zero features, or < 12.5 % more, so a
    readout's first layer costs at most that much more, and the dimensions
    encoders give (64, 128, 384, 512, 768, 1024, 1280, 2048) are buckets
    themselves."""
    d = int(d)
    if d <= MIN_DIM_BUCKET:
        return MIN_DIM_BUCKET
    step = max(MIN_DIM_BUCKET, 1 << ((d - 1).bit_length() - 4))
    return -(-d // step) * step


def pads_features(readout: ReadoutLike) -> bool:
    """Whether zero features appended to the input change nothing for ``readout``:
    an :class:`~mdlnb.board.readouts.Readout` (linear or MLP, in any matmul dtype), whose
    first layer's extra rows start at zero, get zero gradients and stay zero."""
    ro = readout.readout if isinstance(readout, LowPrecision) else readout
    return isinstance(ro, Readout)


def board_dim(experts: Sequence[Expert], d: int) -> int:
    """The feature dimension stage 1 compiles for: :func:`padded_dim` when every
    readout of the board :func:`pads_features`, else ``d``."""
    return padded_dim(d) if all(pads_features(e.readout) for e in experts) else int(d)


def pad_first_layer(params, dp: int):
    """A :class:`~mdlnb.board.readouts.Readout`'s (possibly stacked) parameters with the
    first layer's weight ``w`` (…, d, o) padded with zero rows to (…, dp, o)."""
    first = dict(params[0])
    w = first["w"]
    if w.shape[-2] == dp:
        return params
    first["w"] = jnp.pad(w, [(0, 0)] * (w.ndim - 2) + [(0, dp - w.shape[-2]), (0, 0)])
    return (first, *params[1:])


def unpad_first_layer(params, d: int):
    """:func:`pad_first_layer` undone: the first ``d`` rows of the first layer's ``w``."""
    first = dict(params[0])
    first["w"] = first["w"][..., :d, :]
    return (first, *params[1:])


def _group(
    experts: Sequence[Expert], d: int, c: int, budget: int | None = None
) -> list[tuple[ReadoutLike, list[int]]]:
    """Experts grouped by (architecture, replay count, calibration), each group then cut into
    whole blocks of :func:`_block_fit` experts plus a remainder group.

    One vmapped group per (architecture, replay count): no expert waits through
    masked replay steps of a longer-replay neighbour (the ``vtab`` grid, replay
    3–100, would run 400 steps where 143 are real). A block's members and
    width then depend only on its own group, so a board split into slices of
    whole blocks (:mod:`mdlnb.prequential._memory`) gives bit-identical losses (XLA's CPU
    matmuls round differently at different block widths, so an expert trained
    alone may differ from the same expert in a block in the last bit).
    """
    groups: dict[tuple[ReadoutLike, int, bool], list[int]] = {}
    for i, e in enumerate(experts):
        groups.setdefault((e.readout, e.replay_streams, e.calibrate), []).append(i)
    out = []
    for (ro, _, _), idx in groups.items():
        fit = _block_fit(ro.num_params(d, c), getattr(ro, "max_block", None), budget)
        full = len(idx) // fit * fit
        out += [(ro, part) for part in (idx[:full], idx[full:]) if part]
    return out


def block_bytes(platform: str | None = None, cores: int | None = None) -> int:
    """The training-state budget of one block of experts on this machine, in bytes.

    On CPU, ``BLOCK_BYTES`` per two cores the process may run on (its affinity
    mask, which XLA's thread pool follows): a block's batched matmuls are split
    by their expert axis over the cores, and 4 blocks of at most 19 experts left
    16 cores idle for half the long stream (49-52 % of its matmul limit, 68-81 % with
    one block of 64; benchmarks/RESULTS.md). On an accelerator,
    ``ACCELERATOR_BLOCK_BYTES``. ``platform`` defaults to JAX's default backend.

    Block widths round differently (XLA's CPU matmuls), so the losses of a board
    whose blocks this changes differ in the last float bit between machines; the
    cache key names the widths when they are not the 2-core ones
    (:func:`layout_key`)."""
    platform = jax.default_backend() if platform is None else platform
    if platform != "cpu":
        return ACCELERATOR_BLOCK_BYTES
    if cores is None:
        cores = (
            len(os.sched_getaffinity(0))
            if hasattr(os, "sched_getaffinity")
            else (os.cpu_count() or 1)
        )
    return BLOCK_BYTES * max(1, int(cores) // 2)


def _block_fit(num_params: int, cap: int | None = None, budget: int | None = None) -> int:
    """Experts per block: as many as keep their training state (params, Adam μ/ν,
    EMA, grads: 5 × 4 bytes per parameter) within ``budget`` (default
    :func:`block_bytes`), at most ``cap`` (a readout's ``max_block``, if it has
    one); at least 1."""
    budget = block_bytes() if budget is None else budget
    fit = max(1, budget // (20 * num_params))
    return max(1, min(fit, int(cap))) if cap is not None else fit


def _blocked(experts: Sequence[Expert], d: int, c: int, budget: int | None = None):
    """Each group of :func:`_group` with its block width: ``[(readout, indices, width)]``."""
    return [
        (
            ro,
            idx,
            _block_size(len(idx), ro.num_params(d, c), getattr(ro, "max_block", None), budget),
        )
        for ro, idx in _group(experts, d, c, budget)
    ]


def _widths(experts: Sequence[Expert], d: int, c: int, budget: int | None = None):
    """Each group's ``[size, block width]`` under ``budget`` (:func:`_blocked`)."""
    return [[len(idx), w] for _, idx, w in _blocked(experts, d, c, budget)]


def layout_key(experts: Sequence[Expert], d: int, c: int) -> dict:
    """What the cache key must add for this machine's block widths: ``{}`` when the
    board is laid out as on 2 CPU cores (``BLOCK_BYTES``), so the key is the same
    on every machine that lays it out alike; else ``{"blocks": [[group size,
    block width], ...]}``."""
    here = _widths(experts, d, c)
    return {} if here == _widths(experts, d, c, BLOCK_BYTES) else {"blocks": here}


def _block_size(
    group_size: int, num_params: int, cap: int | None = None, budget: int | None = None
) -> int:
    """Block width of a group made by :func:`_group` (it divides the group size)."""
    return min(group_size, _block_fit(num_params, cap, budget))


def _members_spec(groups, experts, ndev, d, c, b, clip, matmul_dtype="float32"):
    """Each group's experts (padding -1 → a copy of its first) and the static :class:`_Spec`
    (readouts wrapped by :func:`~mdlnb.board.readouts.with_matmul_dtype`)."""
    members = [[experts[i if i >= 0 else idx[0]] for i in idx] for _, idx in groups]
    spec = _Spec(
        readouts=tuple(with_matmul_dtype(ro, matmul_dtype) for ro, _ in groups),
        max_replay=tuple(max(e.replay_streams for e in m) for m in members),
        masked=tuple(len({e.replay_streams for e in m}) > 1 for m in members),
        block=tuple(
            _block_size(len(m) // ndev, ro.num_params(d, c), getattr(ro, "max_block", None))
            for (ro, _), m in zip(groups, members)
        ),
        standardize=tuple(bool(getattr(ro, "standardize_inputs", True)) for ro, _ in groups),
        calibrate=tuple(m[0].calibrate for m in members),
        num_classes=c,
        batch_size=b,
        clip=clip,
    )
    return members, spec


def _init_group(
    readout: ReadoutLike,
    members: Sequence[Expert],
    seed: int,
    d: int,
    c: int,
    dp: int | None = None,
):
    """A group's stacked initial state: parameters drawn for ``d`` features, then (``dp``
    given and larger) the first layer padded with zero rows for ``dp`` features
    (:func:`pad_first_layer`): the same draws whatever the bucket."""
    state = _init_params(readout, members, seed, d, c, dp)
    if members[0].calibrate:  # a group's experts share the flag (_group)
        state = state._replace(calib=_calibration.init(len(members)))
    return state


def _init_params(readout, members, seed, d, c, dp):
    """:func:`_init_group` without the calibration summaries."""
    keys = expert_keys(seed, members)
    if isinstance(readout, Readout):  # one compiled program (not dozens of eager ops)
        return _init_program(readout, d, c, d if dp is None else dp)(keys)
    # another readout's init may draw on the host: one call per expert, then stack
    inits = [readout.init(k, d, c) for k in keys]
    params = jax.tree_util.tree_map(lambda *a: jnp.stack([jnp.asarray(v) for v in a]), *inits)
    if dp is not None and dp != d:
        if not pads_features(readout):
            raise ValueError(
                f"readout {getattr(readout, 'name', readout)!r}: its inputs cannot "
                "be padded with zero features"
            )
        params = pad_first_layer(params, dp)
    # ema is a copy, not the same buffers: the state is donated to the chunk program
    state = jax.vmap(_fit.state_of)(params)  # the state layout does not depend on hyperparameters
    return state._replace(ema_params=jax.tree_util.tree_map(jnp.copy, params))


@functools.lru_cache(maxsize=64)
def _init_program(readout: Readout, d: int, c: int, dp: int):
    """``keys (K, 2) -> the group's initial state``: ``vmap(readout.init)``, the first
    layer padded to ``dp`` features, the AdamW state and the EMA copy, under one
    ``jit``. Run eagerly it was ~50 small programs per group, each traced, looked
    up in the compilation cache and loaded in a new process (3.6 s of a 10 s
    cached start on the default board); the state is the same bits. The EMA
    parameters are a second output of the same values: XLA gives every output of
    a program its own buffer, so donating the state stays possible."""

    def build(keys):
        params = jax.vmap(lambda k: readout.init(k, d, c))(keys)
        params = pad_first_layer(params, dp)
        return jax.vmap(_fit.state_of)(params)._replace(ema_params=params)

    return jax.jit(build)


@functools.cache
def _keys_program():
    return jax.jit(
        jax.vmap(
            lambda seed_key, salt: jax.random.fold_in(jax.random.fold_in(seed_key, 1), salt),
            in_axes=(None, 0),
        )
    )


def expert_keys(seed: int, members: Sequence[Expert]) -> jax.Array:
    """``stack([mdlnb.prequential.expert_key(seed, e) for e in members])``, in one
    compiled call (the same bits)."""
    salts = np.asarray([init_salt(e) for e in members], np.uint32)
    return _keys_program()(jax.random.PRNGKey(seed), salts)


def _hypers(members: Sequence[Expert]) -> tuple[_fit.Hyper, jax.Array]:
    """Stacked :class:`mdlnb.core._fit.Hyper` of a group and its replay counts."""
    h = _fit.stack_hypers([_fit.hyper_of(e) for e in members])
    return h, jnp.asarray([e.replay_streams for e in members], jnp.int32)


def _state_shapes(groups, members, seed: int, d: int, c: int, dp: int | None = None):
    """The initial state's ``ShapeDtypeStruct`` tree, traced, not built (a resumed
    run reads its state from the checkpoint: on the ``vtab`` board building it
    first took 10 GB and tens of seconds). A readout whose ``init`` runs on the
    host cannot be traced: its group is built and measured."""
    shapes = []
    for (ro, _), m in zip(groups, members):
        try:
            shapes.append(jax.eval_shape(lambda ro=ro, m=m: _init_group(ro, m, seed, d, c, dp)))
        except TypeError:  # a tracer reached NumPy (jax.errors.*ConversionError)
            shapes.append(
                jax.tree_util.tree_map(
                    lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype),
                    _init_group(ro, m, seed, d, c, dp),
                )
            )
    return tuple(shapes)


def _layout(
    experts, ndev, d, c, b, seed, clip, matmul_dtype, *, build: bool = True, dp: int | None = None
):
    """The board laid out for the chunk program on ``ndev`` devices: ``(groups, spec,
    column, state, hypers)``. Groups come from :func:`_group`, padded on several
    devices to whole blocks per device (:func:`mdlnb.prequential._sharding.pad_groups`);
    ``column[j]`` is the expert of output column ``j`` (-1: padding; device-major when
    sharded); each group's initial state (``build=False``: its shapes only,
    :func:`_state_shapes`) and stacked hyperparameters. ``dp``: the feature dimension
    the program is compiled for (:func:`board_dim`; default ``d``); block widths
    depend on ``d`` only, so padding changes no loss."""
    groups = _group(experts, d, c)
    if ndev > 1:
        groups = _sharding.pad_groups(
            groups,
            ndev,
            lambda ro, size: _block_size(size, ro.num_params(d, c), getattr(ro, "max_block", None)),
        )
    members, spec = _members_spec(groups, experts, ndev, d, c, b, clip, matmul_dtype)
    column = _sharding.columns(groups, ndev)
    state = (
        tuple(_init_group(ro, m, seed, d, c, dp) for (ro, _), m in zip(groups, members))
        if build
        else _state_shapes(groups, members, seed, d, c, dp)
    )
    hypers = tuple(_hypers(m) for m in members)
    return groups, spec, column, state, hypers
