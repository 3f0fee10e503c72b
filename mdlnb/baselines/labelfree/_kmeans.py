"""k-means: greedy k-means++ seeding, Lloyd iterations, ``n_init`` restarts,
one compiled JAX program."""

from __future__ import annotations

import dataclasses
import math
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from mdlnb.baselines.labelfree._inputs import _as_key, _default_clusters, _integer, features_matrix
from mdlnb.core._checks import check_positive
from mdlnb.infra import _xla_cache


@dataclasses.dataclass(frozen=True)
class KMeansResult:
    """Hard partition of the rows. ``inertia``: Σ squared distance to centroid."""

    labels: np.ndarray  # (N,) int32 in [0, n_clusters)
    centroids: np.ndarray  # (n_clusters, D) float32
    inertia: float
    n_iter: int


def _sq_dists(z: jax.Array, c: jax.Array) -> jax.Array:
    d2 = jnp.sum(z * z, 1)[:, None] - 2.0 * z @ c.T + jnp.sum(c * c, 1)[None, :]
    return jnp.maximum(d2, 0.0)


def _greedy_kmeanspp(z, key, n_clusters: int, n_trials: int):
    """Greedy k-means++ seeding (Arthur & Vassilvitskii 2007; scikit-learn's
    ``_kmeans_plusplus``): each new centre is the best, by the potential
    Σ_i min_c ‖z_i − c‖², of ``n_trials`` candidates drawn ∝ squared distance."""
    n = z.shape[0]
    k_first, k_rest = jax.random.split(key)
    first = jax.random.randint(k_first, (), 0, n)
    cents = jnp.zeros((n_clusters, z.shape[1]), z.dtype).at[0].set(z[first])
    min_d2 = jnp.sum((z - z[first]) ** 2, axis=1)

    def seed_step(i, carry):
        cents, min_d2 = carry
        pos = min_d2 > 0
        logits = jnp.where(
            jnp.any(pos), jnp.where(pos, jnp.log(jnp.where(pos, min_d2, 1.0)), -jnp.inf), 0.0
        )
        cand = jax.random.categorical(jax.random.fold_in(k_rest, i), logits, shape=(n_trials,))
        d2 = jnp.minimum(min_d2[None, :], _sq_dists(z[cand], z))  # (trials, N)
        best = jnp.argmin(jnp.sum(d2, axis=1))
        return cents.at[i].set(z[cand[best]]), d2[best]

    cents, _ = jax.lax.fori_loop(1, n_clusters, seed_step, (cents, min_d2))
    return cents


def _kmeans_one(z, key, tol, n_clusters: int, max_iter: int, n_trials: int):
    n, _ = z.shape
    cents = _greedy_kmeanspp(z, key, n_clusters, n_trials)

    def assign(cents):
        d2 = _sq_dists(z, cents)
        lab = jnp.argmin(d2, axis=1)
        return lab, jnp.sum(jnp.take_along_axis(d2, lab[:, None], 1))

    def lloyd(state):  # assign, then move each centroid to its cluster mean
        cents, _, inertia, it = state
        lab, new_inertia = assign(cents)
        sums = jax.ops.segment_sum(z, lab, n_clusters)
        cnt = jax.ops.segment_sum(jnp.ones(n, z.dtype), lab, n_clusters)
        cents = jnp.where(cnt[:, None] > 0, sums / jnp.maximum(cnt, 1.0)[:, None], cents)
        return cents, inertia, new_inertia, it + 1

    def not_done(state):  # inertia of successive assignments is non-increasing
        _, prev, cur, it = state
        return (it < max_iter) & ((it < 2) | (prev - cur > tol * prev))

    inf = jnp.asarray(jnp.inf, z.dtype)
    cents, _, _, it = jax.lax.while_loop(not_done, lloyd, (cents, inf, inf, 0))
    lab, inertia = assign(cents)
    return lab, cents, inertia, it


@partial(jax.jit, static_argnames=("n_clusters", "max_iter", "n_init", "n_trials"))
def _kmeans_jit(z, key, tol, *, n_clusters: int, max_iter: int, n_init: int, n_trials: int):
    keys = jax.random.split(key, n_init)
    # lax.map (sequential): a vmapped while_loop runs every restart for the
    # slowest one's iterations and measured 3x slower on CPU.
    lab, cents, inertia, it = jax.lax.map(
        lambda k: _kmeans_one(z, k, tol, n_clusters, max_iter, n_trials), keys
    )
    best = jnp.argmin(inertia)
    return lab[best], cents[best], inertia[best], it[best]


def kmeans(
    z: Any,
    n_clusters: int,
    key: Any,
    *,
    max_iter: int = 100,
    tol: float = 1e-6,
    n_init: int = 10,
    n_trials: int | None = None,
) -> KMeansResult:
    """Euclidean k-means: greedy k-means++ seeding then Lloyd until the inertia
    improves by less than ``tol`` (relative) or ``max_iter`` iterations; the
    best of ``n_init`` independently seeded runs (lowest inertia).

    Greedy seeding draws ``n_trials`` candidates per centre (default
    ``2 + ⌊ln k⌋``, scikit-learn's choice) and keeps the one that lowers the
    potential most. The ``n_init`` runs are one compiled program (``lax.map``).
    With ``n_init = 10`` the inertia on digits and wine is at or below the median
    of scikit-learn's ``KMeans(n_init=1)`` (greedy k-means++, one run) and
    1–4 % below one greedy run of ours; plain k-means++ with one run, the
    previous default, was 0.5–5 % above scikit-learn's.
    ``key`` is a ``jax.random`` key (or an int seed). Empty clusters keep their
    previous centroid.
    """
    _xla_cache.ensure()  # compiled programs are cached on disk
    z = features_matrix(z)
    n_clusters = _default_clusters(len(z), n_clusters)
    max_iter, n_init = _integer(max_iter, "max_iter", 1), _integer(n_init, "n_init", 1)
    cells = n_init * len(z) * max(n_clusters, z.shape[1])  # the vmapped runs' (N, k) distances
    if cells > 2**31:
        raise ValueError(
            f"n_init: {n_init} runs at once need {cells * 4 / 2**30:.0f} GiB of "
            f"distances (N={len(z)}, n_clusters={n_clusters}); use fewer"
        )
    trials = 2 + int(math.log(n_clusters)) if n_trials is None else n_trials
    if isinstance(trials, bool) or int(trials) != trials or trials < 1:
        raise ValueError(f"n_trials: must be an integer >= 1, got {n_trials!r}")
    check_positive(tol, "tol", strict=False)
    lab, cents, inertia, it = _kmeans_jit(
        jnp.asarray(z),
        _as_key(key),
        jnp.float32(tol),
        n_clusters=n_clusters,
        max_iter=int(max_iter),
        n_init=int(n_init),
        n_trials=int(trials),
    )
    return KMeansResult(np.asarray(lab, np.int32), np.asarray(cents), float(inertia), int(it))
