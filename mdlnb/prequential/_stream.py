"""Stage 1's randomness, all from the seed: the stream order, each expert's
initialisation key and the replay positions (see :mod:`mdlnb.prequential`)."""

from __future__ import annotations

import zlib

import jax
import numpy as np

from mdlnb.board.experts import Expert


def stream_order(seed: int, n: int) -> np.ndarray:
    """The seeded example order: ``permutation(fold_in(PRNGKey(seed), 0), n)``."""
    return np.asarray(
        jax.random.permutation(jax.random.fold_in(jax.random.PRNGKey(seed), 0), n), np.int64
    )


def init_salt(expert: Expert) -> int:
    """``crc32`` of the expert's name without ``-cal``: calibration changes the coding
    only, so an expert and its calibrated twin start from the same parameters and
    train identically (uncalibrated experts: ``crc32(name)``, as before)."""
    name = expert.replace(calibrate=False).name if expert.calibrate else expert.name
    return zlib.crc32(name.encode())


def expert_key(seed: int, expert: Expert) -> jax.Array:
    """Initialisation key of ``expert``: depends on its name (less ``-cal``,
    :func:`init_salt`), not its board position."""
    salt = np.uint32(init_salt(expert))
    return jax.random.fold_in(jax.random.fold_in(jax.random.PRNGKey(seed), 1), salt)


def replay_positions(seed_key: jax.Array, batch_index, step, t_end, batch_size: int) -> jax.Array:
    """Stream positions of replay step ``step`` after batch ``batch_index``: uniform on ``[0, t_end)``.

    ``seed_key`` is ``PRNGKey(seed)``.
    """
    k = jax.random.fold_in(jax.random.fold_in(jax.random.fold_in(seed_key, 2), batch_index), step)
    return jax.random.randint(k, (batch_size,), 0, t_end)
