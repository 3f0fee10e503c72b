"""Stage 1 with the expert axis sharded over devices and hosts (``jax.sharding``).

Experts are independent in stage 1, so the board is split over a 1-D
:class:`jax.sharding.Mesh` with axis ``"experts"``: every group's stacked
state (params, AdamW state, EMA) and hyperparameters are laid out with
``NamedSharding(mesh, P("experts"))``, the features and the chunk inputs are
replicated, and the chunk program runs under :func:`jax.shard_map`: each
device trains its own experts, with no communication at all. The same
program runs on one device, on all local devices, and on the devices of
several processes started with :func:`jax.distributed.initialize` (then
every process passes the same arguments, and each gets the whole
``LossMatrix``; the losses are gathered with
``multihost_utils.process_allgather``).

Each group is spread evenly: every device gets ``ceil(size / devices)`` of
its experts, rounded up to whole blocks, padded with copies of the group's
first expert whose columns are dropped.

What is guaranteed. A sharded run is deterministic, every process of a
multi-host job gets the same matrix, and its losses agree with a one-device
run's to float round-off at each step (the first differences are 1–2 ulps,
~1e-7 nats); training can amplify such a difference, most at high learning
rates. They are bit-identical on some boards — ``tests/test_sharding.py``'s
(4 CPU devices, 2 processes) — but not on every one: with the default
protocol's board on a 1,500 × 12 Gaussian task, 4 CPU devices gave 14 of
40 columns different from one device (linear experts by ≤ 4e-7 nats, an MLP
at learning rate 3e-2 by up to 21 nats on one example after amplification;
codelength 200.5547 vs 200.5475 nats). Two causes were found (2026-11-25):

* Block width. ``vmap`` over a block of experts with a shared input ``x``
  makes JAX fold the experts into the columns of one matmul,
  ``x @ [W_1 … W_width]``, and XLA:CPU's GEMM tiles those columns by their
  count; a linear readout (width·C columns) rounds differently in a block of
  10 (one device) than of 3 (4 devices). Broadcasting ``x`` to one copy per
  expert (a batched matmul) makes blocks of any width ≥ 2 bit-identical and
  fixed the linear experts, but changes every cached loss matrix (a new
  ``CODE_VERSION``) and did not fix the second cause, so it is not applied.
* Device position. With the block width equal, a 2-layer MLP still rounds
  differently on devices 2 and 3 of 4 (or 3 and 4 of 5) than on devices 0–1
  or on one device — deterministic, independent of threads (also on one
  core, also without Eigen's thread pool), the same expert moving with its
  device; not found.

Earlier, a third cause was fixed: XLA's simplifier turned optax's Adam bias
correction (a division by the per-expert scalar 1 − β^t) into a product with
the reciprocal in the one-device program and kept the division in the
partitioned one; :func:`mdlnb.core._fit.scale_by_adam` writes it as the product.
Slices run one after another (:mod:`mdlnb.prequential._slicing`) are
bit-identical to one pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from mdlnb.prequential import _program

# Imported inside the functions that use them, so that importing this module does not load
# them: jax.experimental.

AXIS = "experts"


def expert_mesh(devices: Sequence | None = None) -> Mesh:
    """A 1-D mesh over ``devices`` (default: every device of every process)."""
    devs = list(jax.devices() if devices is None else devices)
    if not devs:
        raise ValueError("devices: must name at least one device")
    return Mesh(np.array(devs), (AXIS,))


def describe(mesh: Mesh) -> dict:
    """What the run ran on: device count, kind, platform, processes."""
    devs = list(mesh.devices.flat)
    return {
        "count": len(devs),
        "kind": devs[0].device_kind,
        "platform": devs[0].platform,
        "processes": len({d.process_index for d in devs}),
    }


def pad_groups(groups, num_devices: int, block_of) -> list[tuple[Any, list[int]]]:
    """Pad each ``(readout, idx)`` group so every device gets an equal share of whole blocks.

    A device's share is ``ceil(size / devices)`` experts, rounded up to whole
    blocks of ``block_of(readout, share)``. Padding entries are ``-1`` (a copy
    of the group's first expert, whose columns are dropped).
    """
    out = []
    for ro, idx in groups:
        share = -(-len(idx) // num_devices)
        blk = block_of(ro, share)
        share = -(-share // blk) * blk
        out.append((ro, list(idx) + [-1] * (share * num_devices - len(idx))))
    return out


def columns(groups, num_devices: int) -> np.ndarray:
    """Expert index of each column of the sharded chunk output (``-1``: padding).

    The output is device-major: device ``i`` writes its share of every group,
    groups in order, into columns ``[i·K_local, (i + 1)·K_local)``.
    """
    per_dev = []
    for i in range(num_devices):
        cols = []
        for _, idx in groups:
            local = len(idx) // num_devices
            cols += idx[i * local : (i + 1) * local]
        per_dev.append(cols)
    return np.asarray([c for cols in per_dev for c in cols], np.int64)


def _global(mesh: Mesh, spec, value):
    """A global array with ``spec`` from a host value every process holds."""
    value = np.asarray(value)
    sharding = NamedSharding(mesh, spec)
    return jax.make_array_from_callback(value.shape, sharding, lambda index: value[index])


def shard(mesh: Mesh, tree):
    """Split every leaf's leading (expert) axis over the mesh."""
    return jax.tree_util.tree_map(partial(_global, mesh, P(AXIS)), tree)


def replicate(mesh: Mesh, tree):
    """The same value on every device of the mesh."""
    return jax.tree_util.tree_map(partial(_global, mesh, P()), tree)


def to_host(x) -> np.ndarray:
    """A NumPy copy of a (possibly multi-process) global array."""
    if getattr(x, "is_fully_addressable", True):
        return np.asarray(x)
    from jax.experimental import multihost_utils  # noqa: PLC0415

    return np.asarray(multihost_utils.process_allgather(x, tiled=True))


@partial(jax.jit, static_argnums=(0, 1), donate_argnums=2)
def run_chunk(spec, mesh: Mesh, state, hypers, x_all, y_all, seed_key, xs):
    """The chunk program (:func:`mdlnb.prequential._program._run_chunk`, static ``spec``,
    built for one device's share of each group) on every device's experts at once:
    returns the sharded state and the losses (C, B, devices·K_local), device-major."""
    body = partial(_program._run_chunk, spec)
    return jax.shard_map(
        body,
        mesh=mesh,
        in_specs=(P(AXIS), P(AXIS), P(), P(), P(), P()),
        out_specs=(P(AXIS), P(None, None, AXIS)),
        check_vma=False,
    )(state, hypers, x_all, y_all, seed_key, xs)
