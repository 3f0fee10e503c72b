"""Label-free representation metrics: TwoNN ID, cluster learnability, CLID,
alignment/uniformity, MCR² coding-rate reduction, RankMe.

Every metric takes feature arrays ``z`` of shape (N, D) (rows are examples)
and returns a Python float; the cross-model combinations (:func:`clid`,
:func:`wclid`) take one value per model and return one score per model.
Signs, as the papers use them as predictors of downstream performance
("better" = predicted to perform better):

- ``twonn_id``: intrinsic dimension (no unit); higher = more expressive.
- ``cluster_learnability``: k-NN accuracy on k-means pseudo-labels, in
  [0, 1]; higher = more learnable.
- ``clid``: min–max(CL) + min–max(ID) across models, in [0, 2]; higher.
  ``wclid``: w·[min–max(CL), min–max(ID)], w fitted on in-domain performance.
- ``alignment``: E‖ẑ − ẑ'‖^α over positive pairs; lower. ``uniformity``:
  log E exp(−t‖ẑ1 − ẑ2‖²), nats; lower. CLID's baseline predictor is
  −L_align − L_unif.
- ``coding_rate_reduction``: ΔR = R − R_c, nats; higher (the quantity MCR²
  maximizes; CLID Table 1 finds it *negatively* correlated with accuracy).
- ``rankme``: effective rank (no unit); higher.

Conventions that public implementations disagree on, fixed here:

* **TwoNN** (Facco et al. 2017; CLID Sec. 2.2): μ_i = r_i2 / r_i1 with
  *Euclidean* distances; the slope of a line through the origin fitted to
  ``(log μ_(i), −log(1 − i/N))`` after discarding the largest
  ``discard_fraction`` of μ (the last point has −log 0 = ∞). Exact duplicate
  rows give r1 = 0; ``duplicates="unique"`` (default) keeps one copy of each
  distinct row before the neighbour search (as DADApy's
  ``remove_identical_points``); ``duplicates="drop"`` keeps every row in the
  neighbour search and leaves out of the fit each point whose nearest
  neighbour is at distance 0 — all copies — as scikit-dimension's ``TwoNN``
  does. With ``metric="cosine"`` rows are
  L2-normalized and the *chordal* distance √(2 − 2 cos) is used; CLID's
  footnote distance 2 − 2 cos is its square, and squaring every distance
  squares μ and so halves the estimate.
* **Cluster learnability** (CLID Sec. 2.2, 3.1): k-means (k = round(√N)
  by default) on all N points gives pseudo-labels; a seeded random split
  (``train_fraction``) trains a k-NN (1 neighbour by default) whose accuracy on
  the held-out part is CL. k-means is greedy k-means++ (scikit-learn's
  seeding) with ``n_init = 10`` restarts, keeping the lowest inertia. ``metric="cosine"`` (the paper's choice)
  normalizes rows first; k-means is then Euclidean k-means on the unit
  vectors (centroids are cluster means, not re-projected onto the sphere)
  and 1-NN by Euclidean distance equals 1-NN by cosine similarity.
* **Alignment / uniformity** (Wang & Isola 2020, α = t = 2): inputs are
  L2-normalized here, explicitly; uniformity averages over unordered pairs
  i < j (as ``torch.pdist``), in nats.
* **MCR²** (Yu et al. 2020, Eq. 6): R(Z, ε) = ½ logdet(I + D/(N ε²) ZᵀZ) and
  R_c = Σ_j (N_j / 2N) logdet(I + D/(N_j ε²) Z_jᵀZ_j), natural log (nats).
  The argument here is ``eps_sq`` = ε² (default 0.5): the ``eps`` of the
  reference code (``scalar = p / (m * self.eps)``, class default 0.01) is
  ε², not ε. Rows are L2-normalized first by default (CLID Sec. 3.2).
* **RankMe** (Garrido et al. 2023): p_k = σ_k / Σσ + ε over the singular
  values σ of the *uncentred* Z, RankMe = exp(−Σ p_k log p_k). It is defined
  on σ, not on the eigenvalues σ² of ZᵀZ (which gives a smaller value).
"""

from __future__ import annotations

import dataclasses
import math
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from mdlnb import _xla_cache
from mdlnb._checks import (as_array, check_finite, check_labels, check_matrix, check_nonempty,
                           check_positive, check_probability, check_same_length)

__all__ = [
    "KMeansResult", "WClid",
    "features_matrix", "kmeans", "knn_accuracy",
    "twonn_ratios", "twonn_id", "cluster_learnability", "clid", "wclid",
    "alignment", "uniformity",
    "coding_rate", "class_coding_rate", "coding_rate_reduction",
    "singular_values", "rankme",
]

_METRICS = ("euclidean", "cosine")   # "precomputed" too, for TwoNN only
_CHUNK = 1024          # rows per block of a blocked distance computation
_CANDIDATES = 8        # float32 neighbour candidates re-checked in float64


# ----------------------------------------------------------------------------
# input handling


def features_matrix(z: Any, name: str = "z", *, min_rows: int = 1) -> np.ndarray:
    """Validated (N, D) float32 feature matrix; ValueError naming ``name``."""
    a = check_matrix(z, name)
    if a.shape[0] < min_rows:
        raise ValueError(f"{name}: needs at least {min_rows} rows, got {a.shape[0]}")
    return a.astype(np.float32, copy=False)


def _normalize_rows(z: np.ndarray, name: str) -> np.ndarray:
    norms = np.linalg.norm(z.astype(np.float64), axis=1)
    if np.any(norms == 0):
        raise ValueError(f"{name}: row {int(np.argmax(norms == 0))} has zero norm; "
                         "cannot L2-normalize")
    return (z / norms[:, None]).astype(np.float32)


def _check_metric(metric: str) -> str:
    if metric not in _METRICS:
        raise ValueError(f"metric: expected one of {_METRICS}, got {metric!r}")
    return metric


def _as_key(key: Any) -> jax.Array:
    if isinstance(key, (int, np.integer)):
        return jax.random.PRNGKey(int(key))
    try:
        k = jnp.asarray(key)
    except (TypeError, ValueError):
        raise ValueError(f"key: expected a jax PRNG key or an int seed, got {key!r}") from None
    if jnp.issubdtype(k.dtype, jax.dtypes.prng_key) or (k.shape == (2,) and k.dtype == jnp.uint32):
        return k
    raise ValueError(f"key: expected a jax PRNG key or an int seed, got {key!r}")


def _integer(v: Any, name: str, minimum: int) -> int:
    """``v`` as an int >= ``minimum`` (integral floats accepted); ValueError naming ``name``
    for NaN, ±inf, fractions, bools, strings or None."""
    if (isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating))
            or not math.isfinite(v) or int(v) != v or v < minimum):
        raise ValueError(f"{name}: must be an integer >= {minimum}, got {v!r}")
    return int(v)


def _real(v: Any, name: str) -> float:
    """``v`` as a float; ValueError naming ``name`` for strings, None or NaN."""
    if not isinstance(v, (int, float, np.integer, np.floating)) or math.isnan(v):
        raise ValueError(f"{name}: must be a real number, got {v!r}")
    return float(v)


def _default_clusters(n: int, n_clusters: int | None) -> int:
    k = (max(1, int(round(math.sqrt(n)))) if n_clusters is None
         else _integer(n_clusters, "n_clusters", 1))
    if not 1 <= k <= n:
        raise ValueError(f"n_clusters: must lie in [1, N={n}], got {n_clusters}")
    return k


# ----------------------------------------------------------------------------
# k-means (greedy k-means++ seeding, Lloyd iterations, n_init restarts), compiled JAX


@dataclasses.dataclass(frozen=True)
class KMeansResult:
    """Hard partition of the rows. ``inertia``: Σ squared distance to centroid."""

    labels: np.ndarray      # (N,) int32 in [0, n_clusters)
    centroids: np.ndarray   # (n_clusters, D) float32
    inertia: float
    n_iter: int


def _sq_dists(z: jax.Array, c: jax.Array) -> jax.Array:
    d2 = (jnp.sum(z * z, 1)[:, None] - 2.0 * z @ c.T + jnp.sum(c * c, 1)[None, :])
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
        logits = jnp.where(jnp.any(pos), jnp.where(pos, jnp.log(jnp.where(pos, min_d2, 1.0)),
                                                   -jnp.inf), 0.0)
        cand = jax.random.categorical(jax.random.fold_in(k_rest, i), logits, shape=(n_trials,))
        d2 = jnp.minimum(min_d2[None, :], _sq_dists(z[cand], z))        # (trials, N)
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
        lambda k: _kmeans_one(z, k, tol, n_clusters, max_iter, n_trials), keys)
    best = jnp.argmin(inertia)
    return lab[best], cents[best], inertia[best], it[best]


def kmeans(z: Any, n_clusters: int, key: Any, *, max_iter: int = 100,
           tol: float = 1e-6, n_init: int = 10, n_trials: int | None = None) -> KMeansResult:
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
    cells = n_init * len(z) * max(n_clusters, z.shape[1])   # the vmapped runs' (N, k) distances
    if cells > 2**31:
        raise ValueError(f"n_init: {n_init} runs at once need {cells * 4 / 2**30:.0f} GiB of "
                         f"distances (N={len(z)}, n_clusters={n_clusters}); use fewer")
    trials = 2 + int(math.log(n_clusters)) if n_trials is None else n_trials
    if isinstance(trials, bool) or int(trials) != trials or trials < 1:
        raise ValueError(f"n_trials: must be an integer >= 1, got {n_trials!r}")
    check_positive(tol, "tol", strict=False)
    lab, cents, inertia, it = _kmeans_jit(jnp.asarray(z), _as_key(key), jnp.float32(tol),
                                          n_clusters=n_clusters, max_iter=int(max_iter),
                                          n_init=int(n_init), n_trials=int(trials))
    return KMeansResult(np.asarray(lab, np.int32), np.asarray(cents), float(inertia), int(it))


# ----------------------------------------------------------------------------
# nearest neighbours (blocked float32 matmul, float64 re-check)


def _nearest(query: np.ndarray, ref: np.ndarray, m: int, *, exclude_self: bool):
    """Indices (Q, m) and float64 Euclidean distances of the m nearest rows of
    ``ref`` for each row of ``query``, sorted ascending.

    Candidates come from blocked float32 ‖a‖² + ‖b‖² − 2a·b; the distances of
    ``m + _CANDIDATES`` candidates are recomputed from the coordinate
    differences (float32 subtraction, exact for close coordinates by Sterbenz's
    lemma and otherwise within 2⁻²⁴ relative; squares summed in float64), so
    cancellation in the expansion cannot reorder close neighbours.
    """
    shift = ref.astype(np.float64).mean(axis=0)   # translation invariance: smaller norms
    q32 = (query - shift).astype(np.float32)
    r32 = (ref - shift).astype(np.float32)
    rn = np.einsum("ij,ij->i", r32, r32)
    n_ref = len(ref)
    c = min(n_ref - (1 if exclude_self else 0), m + _CANDIDATES)
    idx_out = np.empty((len(query), m), np.int64)
    dist_out = np.empty((len(query), m), np.float64)
    for a in range(0, len(query), _CHUNK):
        b = min(a + _CHUNK, len(query))
        d2 = rn[None, :] - 2.0 * (q32[a:b] @ r32.T)
        if exclude_self:
            d2[np.arange(b - a), np.arange(a, b)] = np.inf
        cand = np.argpartition(d2, c - 1, axis=1)[:, :c]
        diff = (query[a:b, None, :] - ref[cand]).astype(np.float64)
        exact = np.sqrt(np.einsum("ijk,ijk->ij", diff, diff))
        order = np.argsort(exact, axis=1, kind="stable")[:, :m]
        idx_out[a:b] = np.take_along_axis(cand, order, 1)
        dist_out[a:b] = np.take_along_axis(exact, order, 1)
    return idx_out, dist_out


def knn_accuracy(train: Any, train_labels: Any, test: Any, test_labels: Any, *,
                 n_neighbors: int = 1) -> float:
    """Accuracy in [0, 1] of a Euclidean k-NN classifier (majority vote; ties go
    to the smallest label) trained on ``(train, train_labels)``."""
    train = features_matrix(train, "train")
    test = features_matrix(test, "test")
    if train.shape[1] != test.shape[1]:
        raise ValueError(f"test: has {test.shape[1]} features, train has {train.shape[1]}")
    ytr = check_labels(train_labels, None, "train_labels")
    yte = check_labels(test_labels, None, "test_labels")
    check_same_length(train, ytr, "train", "train_labels")
    check_same_length(test, yte, "test", "test_labels")
    k = _integer(n_neighbors, "n_neighbors", 1)
    if not 1 <= k <= len(train):
        raise ValueError(f"n_neighbors: must lie in [1, {len(train)}], got {n_neighbors}")
    idx, _ = _nearest(test, train, k, exclude_self=False)
    votes = ytr[idx]                                       # (Q, k)
    n_cls = int(max(ytr.max(), yte.max())) + 1
    counts = np.zeros((len(test), n_cls), np.int64)
    np.add.at(counts, (np.repeat(np.arange(len(test)), k), votes.ravel()), 1)
    return float(np.mean(np.argmax(counts, axis=1) == yte))


# ----------------------------------------------------------------------------
# TwoNN intrinsic dimension


_DUPLICATES = ("unique", "drop")


def _precomputed_two_nearest(dist: Any, duplicates: str) -> np.ndarray:
    d = as_array(dist, "z", ndim=2, dtype=np.float64)
    if d.shape[0] != d.shape[1]:
        raise ValueError(f"z: metric='precomputed' needs a square distance matrix, "
                         f"got shape {d.shape}")
    check_finite(d, "z")
    if np.any(d < 0) or not np.allclose(d, d.T):
        raise ValueError("z: distances must be non-negative and symmetric")
    if duplicates == "unique":
        dup = np.triu(d == 0, k=1).any(axis=0)      # j repeats an earlier point
        d = d[~dup][:, ~dup]
    if len(d) < 3:
        raise ValueError(f"z: needs at least 3 distinct points, got {len(d)}")
    d = d.copy()
    np.fill_diagonal(d, np.inf)
    return np.sort(np.partition(d, 1, axis=1)[:, :2], axis=1)


def _ratios(r: np.ndarray) -> np.ndarray:
    """Sorted μ = r2/r1 over the points with r1 > 0 (all of them after ``unique``)."""
    r = r[r[:, 0] > 0]
    if len(r) < 3:
        raise ValueError(f"z: needs at least 3 points with a non-zero nearest-neighbour "
                         f"distance, got {len(r)}")
    return np.sort(r[:, 1] / r[:, 0])


def twonn_ratios(z: Any, *, metric: str = "euclidean", duplicates: str = "unique") -> np.ndarray:
    """μ_i = r_i2 / r_i1 ≥ 1, sorted ascending. Exact (float64) distances; see
    the module docstring for ``metric`` and ``duplicates`` (``"unique"``: one
    copy of each distinct row; ``"drop"``: all rows are neighbours, rows with
    r1 = 0 are left out, as scikit-dimension). ``metric="precomputed"``: ``z``
    is an (N, N) distance matrix (e.g. geodesic distances on a manifold)."""
    if duplicates not in _DUPLICATES:
        raise ValueError(f"duplicates: expected one of {_DUPLICATES}, got {duplicates!r}")
    if metric == "precomputed":
        return _ratios(_precomputed_two_nearest(z, duplicates))
    z = features_matrix(z, min_rows=3)
    if _check_metric(metric) == "cosine":
        z = _normalize_rows(z, "z")
    if duplicates == "unique":
        z = np.unique(z + np.float32(0.0), axis=0)    # + 0.0 maps −0.0 to 0.0 first
    if len(z) < 3:
        raise ValueError(f"z: needs at least 3 distinct rows, got {len(z)}")
    _, d = _nearest(z, z, 2, exclude_self=True)
    return _ratios(d)


def twonn_id(z: Any, *, discard_fraction: float = 0.1, metric: str = "euclidean",
             estimator: str = "fit", duplicates: str = "unique") -> float:
    """TwoNN intrinsic dimension (Facco et al. 2017; CLID Sec. 2.2). Higher =
    more expressive.

    ``estimator="fit"``: slope of the least-squares line through the origin of
    ``-log(1 - i/N)`` on ``log μ_(i)`` over the smallest ``1 - discard_fraction``
    of the N ratios (Facco's default discards 10%). ``estimator="mle"``: the
    Pareto maximum-likelihood form (N − 1) / Σ log μ_i over all ratios
    (``discard_fraction`` unused). Returns ``inf`` when every μ equals 1.
    ``duplicates``: see :func:`twonn_ratios` (scikit-dimension: ``"drop"``).
    """
    check_probability(_real(discard_fraction, "discard_fraction"), "discard_fraction")
    if discard_fraction >= 1.0:
        raise ValueError(f"discard_fraction: must be < 1, got {discard_fraction}")
    if estimator not in ("fit", "mle"):
        raise ValueError(f"estimator: expected 'fit' or 'mle', got {estimator!r}")
    mu = twonn_ratios(z, metric=metric, duplicates=duplicates)
    n = len(mu)
    x = np.log(mu)
    if estimator == "mle":
        s = x.sum()
        return float((n - 1) / s) if s > 0 else math.inf
    keep = min(n - 1, int(math.floor((1.0 - discard_fraction) * n)))
    if keep < 1:
        raise ValueError(f"discard_fraction: {discard_fraction} leaves no points of {n}")
    i = np.arange(1, keep + 1)
    y = -np.log1p(-i / n)
    sxx = np.dot(x[:keep], x[:keep])
    return float(np.dot(x[:keep], y) / sxx) if sxx > 0 else math.inf


# ----------------------------------------------------------------------------
# cluster learnability and CLID


def cluster_learnability(z: Any, key: Any, *, n_clusters: int | None = None,
                         n_neighbors: int = 1, metric: str = "cosine",
                         train_fraction: float = 0.5, max_iter: int = 100,
                         n_init: int = 10) -> float:
    """Cluster learnability CL in [0, 1] (CLID Eq. 2). Higher = more learnable.

    k-means with ``n_clusters`` (default round(√N)) on all rows gives
    pseudo-labels; a random split (``train_fraction`` of the rows train a
    ``n_neighbors``-NN classifier) and CL is its accuracy on the other rows.
    ``key`` (jax key or int) seeds both k-means (:func:`kmeans`, best of
    ``n_init`` greedy k-means++ runs) and the split.
    """
    z = features_matrix(z, min_rows=2)
    if _check_metric(metric) == "cosine":
        z = _normalize_rows(z, "z")
    check_probability(_real(train_fraction, "train_fraction"), "train_fraction")
    n = len(z)
    n_train = int(math.floor(train_fraction * n))
    if not 1 <= n_train < n:
        raise ValueError(f"train_fraction: {train_fraction} leaves an empty train or test "
                         f"part of N={n}")
    k_km, k_split = jax.random.split(_as_key(key))
    labels = kmeans(z, _default_clusters(n, n_clusters), k_km, max_iter=max_iter,
                    n_init=n_init).labels
    perm = np.asarray(jax.random.permutation(k_split, n))
    tr, te = perm[:n_train], perm[n_train:]
    return knn_accuracy(z[tr], labels[tr], z[te], labels[te], n_neighbors=n_neighbors)


def _minmax(v: Any, name: str) -> np.ndarray:
    a = check_finite(check_nonempty(as_array(v, name, ndim=1, dtype=np.float64), name), name)
    span = a.max() - a.min()
    return (a - a.min()) / span if span > 0 else np.zeros_like(a)


def clid(cl: Any, intrinsic_dim: Any) -> np.ndarray:
    """CLID score per model (CLID Sec. 2.2): min–max(CL) + min–max(ID), each
    rescaled to [0, 1] across the models given. Higher = predicted better;
    in [0, 2]. A component constant across models contributes 0."""
    a, b = _minmax(cl, "cl"), _minmax(intrinsic_dim, "intrinsic_dim")
    check_same_length(a, b, "cl", "intrinsic_dim")
    return a + b


@dataclasses.dataclass(frozen=True)
class WClid:
    """W-CLID: ``scores = weights @ [minmax(CL), minmax(ID)]`` per model."""

    scores: np.ndarray
    weights: np.ndarray      # (2,): weight on CL, weight on ID
    intercept: float


def wclid(cl: Any, intrinsic_dim: Any, performance: Any, *,
          fit_intercept: bool = True) -> WClid:
    """W-CLID (CLID Sec. 2.2): w ∈ R² by least squares of the in-domain
    ``performance`` on the min–max normalized [CL, ID]. The intercept (fitted
    by default, 0 otherwise) is reported but left out of ``scores``; it does
    not change the ranking. Higher = predicted better when w is fitted to a
    higher-is-better performance."""
    a, b = _minmax(cl, "cl"), _minmax(intrinsic_dim, "intrinsic_dim")
    p = check_finite(as_array(performance, "performance", ndim=1, dtype=np.float64),
                     "performance")
    check_same_length(a, b, "cl", "intrinsic_dim")
    check_same_length(a, p, "cl", "performance")
    cols = [a, b] + ([np.ones_like(a)] if fit_intercept else [])
    if len(a) < len(cols):
        raise ValueError(f"performance: need at least {len(cols)} models to fit, got {len(a)}")
    coef, *_ = np.linalg.lstsq(np.stack(cols, 1), p, rcond=None)
    w = coef[:2]
    return WClid(scores=np.stack([a, b], 1) @ w, weights=w,
                 intercept=float(coef[2]) if fit_intercept else 0.0)


# ----------------------------------------------------------------------------
# alignment and uniformity (Wang & Isola 2020)


def alignment(z1: Any, z2: Any, *, alpha: float = 2.0) -> float:
    """L_align = mean_i ‖ẑ1_i − ẑ2_i‖₂^α over positive pairs (row i of ``z1``
    and of ``z2`` are two views of one input); ẑ = z/‖z‖. In [0, 2^α]; lower =
    better aligned."""
    a = features_matrix(z1, "z1")
    b = features_matrix(z2, "z2")
    if a.shape != b.shape:
        raise ValueError(f"z2: shape {b.shape} differs from z1 shape {a.shape}")
    check_positive(_real(alpha, "alpha"), "alpha")
    a = _normalize_rows(a, "z1").astype(np.float64)
    b = _normalize_rows(b, "z2").astype(np.float64)
    with np.errstate(over="ignore"):
        value = float(np.mean(np.linalg.norm(a - b, axis=1) ** alpha))
    if not math.isfinite(value):
        raise ValueError(f"alpha: {alpha} overflows float64 (L_align lies in [0, 2^alpha])")
    return value


def uniformity(z: Any, *, t: float = 2.0) -> float:
    """L_unif = log mean_{i<j} exp(−t ‖ẑ_i − ẑ_j‖²) in nats, ẑ = z/‖z‖. In
    [−4t, 0]; lower = more uniform on the sphere. Blocked over the upper
    triangle (N²D/2 multiply-adds), no N×N matrix held; log-sum-exp per row,
    rows combined in float64."""
    z = _normalize_rows(features_matrix(z, min_rows=2), "z")
    check_positive(_real(t, "t"), "t")
    n = len(z)
    row_lse = np.full(n, -np.inf)
    for a in range(0, n - 1, _CHUNK):
        b = min(a + _CHUNK, n)
        v = -t * np.maximum(2.0 - 2.0 * (z[a:b] @ z[a:].T), 0.0)   # −t‖ẑi − ẑj‖², j ≥ a
        v[np.tril_indices(b - a, 0, v.shape[1])] = -np.inf           # keep j > i only
        m = v.max(axis=1)
        ok = np.isfinite(m)
        s = np.exp(v[ok] - m[ok, None]).sum(axis=1, dtype=np.float64)
        row_lse[a:b][ok] = m[ok] + np.log(s)
    top = row_lse.max()
    return float(top + np.log(np.exp(row_lse - top).sum()) - np.log(n * (n - 1.0) / 2.0))


# ----------------------------------------------------------------------------
# MCR² coding rates (Yu et al. 2020)


def _logdet_i_plus(zj: np.ndarray, scale: float) -> float:
    """logdet(I_D + scale ZᵀZ) via the smaller Gram (Sylvester), float64."""
    g = zj.T @ zj if zj.shape[0] >= zj.shape[1] else zj @ zj.T
    g = np.eye(len(g)) + scale * g
    return float(np.linalg.slogdet(g)[1])   # g is SPD, the sign is +1


def _mcr_inputs(z: Any, eps_sq: float, normalize: bool) -> np.ndarray:
    z = features_matrix(z)
    check_positive(_real(eps_sq, "eps_sq"), "eps_sq")
    return (_normalize_rows(z, "z") if normalize else z).astype(np.float64)


def _rate(z: np.ndarray, eps_sq: float) -> float:
    n, d = z.shape
    return 0.5 * _logdet_i_plus(z, d / (n * eps_sq))


def _class_rate(z: np.ndarray, y: np.ndarray, eps_sq: float) -> float:
    n, d = z.shape
    order = np.argsort(y, kind="stable")
    ys, zs = y[order], z[order]
    starts = np.flatnonzero(np.r_[True, ys[1:] != ys[:-1]])
    ends = np.r_[starts[1:], n]
    return float(sum((e - s) / (2.0 * n) * _logdet_i_plus(zs[s:e], d / ((e - s) * eps_sq))
                     for s, e in zip(starts, ends)))


def coding_rate(z: Any, *, eps_sq: float = 0.5, normalize: bool = True) -> float:
    """R(Z, ε) = ½ logdet(I + D/(N ε²) ZᵀZ), nats (Yu et al. 2020, with
    rows as samples). ``eps_sq`` is ε²; rows are L2-normalized if
    ``normalize``."""
    return _rate(_mcr_inputs(z, eps_sq, normalize), eps_sq)


def class_coding_rate(z: Any, labels: Any, *, eps_sq: float = 0.5,
                      normalize: bool = True) -> float:
    """R_c(Z, ε | Π) = Σ_j (N_j / 2N) logdet(I + D/(N_j ε²) Z_jᵀZ_j), nats,
    for the hard partition ``labels`` (Yu et al. 2020)."""
    z = _mcr_inputs(z, eps_sq, normalize)
    y = check_labels(labels, None, "labels")
    check_same_length(z, y, "z", "labels")
    return _class_rate(z, y, eps_sq)


def coding_rate_reduction(z: Any, labels: Any = None, *, key: Any = None,
                          n_clusters: int | None = None, eps_sq: float = 0.5,
                          normalize: bool = True) -> float:
    """ΔR = R(Z, ε) − R_c(Z, ε | Π) in nats, ≥ 0 (Yu et al. 2020, Eq. 6).
    Higher = more diverse yet compressible per part.

    Π is ``labels`` if given, else a k-means partition (CLID Sec. 3.2) with
    ``n_clusters`` (default round(√N)) seeded by ``key`` (required then),
    computed on the (normalized if ``normalize``) rows.
    """
    zf = _mcr_inputs(z, eps_sq, normalize)
    if labels is None:
        if key is None:
            raise ValueError("key: required to seed k-means when labels is None")
        y = kmeans(zf.astype(np.float32), _default_clusters(len(zf), n_clusters), key).labels
    else:
        y = check_labels(labels, None, "labels")
        check_same_length(zf, y, "z", "labels")
    return _rate(zf, eps_sq) - _class_rate(zf, y, eps_sq)


# ----------------------------------------------------------------------------
# RankMe (Garrido et al. 2023)


def singular_values(z: Any) -> np.ndarray:
    """Singular values of the (uncentred) N×D matrix, descending, float64,
    from the eigenvalues of the smaller float64 Gram matrix."""
    z = features_matrix(z).astype(np.float64)
    g = z.T @ z if z.shape[0] >= z.shape[1] else z @ z.T
    ev = np.linalg.eigvalsh(g)[::-1]
    return np.sqrt(np.clip(ev, 0.0, None))


def rankme(z: Any, *, eps: float = 1e-7) -> float:
    """RankMe = exp(−Σ_k p_k log p_k), p_k = σ_k / Σ_j σ_j + ε, over the
    min(N, D) singular values σ of Z (no centring). In [1, min(N, D)] up to
    O(ε) terms; higher = higher effective rank."""
    check_positive(_real(eps, "eps"), "eps", strict=False)
    s = singular_values(z)
    total = s.sum()
    if total == 0:
        raise ValueError("z: all-zero matrix has no effective rank")
    p = s / total + eps
    return float(np.exp(-np.sum(p * np.log(p))))
