"""Nearest neighbours (blocked float32 matmul, float64 re-check) and k-NN accuracy."""

from __future__ import annotations

from typing import Any

import numpy as np

from mdlnb.baselines.labelfree._inputs import _CANDIDATES, _CHUNK, _integer, features_matrix
from mdlnb.core._checks import check_labels, check_same_length


def _nearest(query: np.ndarray, ref: np.ndarray, m: int, *, exclude_self: bool):
    """Indices (Q, m) and float64 Euclidean distances of the m nearest rows of
    ``ref`` for each row of ``query``, sorted ascending.

    Candidates come from blocked float32 ‖a‖² + ‖b‖² − 2a·b; the distances of
    ``m + _CANDIDATES`` candidates are recomputed from the coordinate
    differences (float32 subtraction, exact for close coordinates by Sterbenz's
    lemma and otherwise within 2⁻²⁴ relative; squares summed in float64), so
    cancellation in the expansion cannot reorder close neighbours.
    """
    shift = ref.astype(np.float64).mean(axis=0)  # translation invariance: smaller norms
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


def knn_accuracy(
    train: Any, train_labels: Any, test: Any, test_labels: Any, *, n_neighbors: int = 1
) -> float:
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
    votes = ytr[idx]  # (Q, k)
    n_cls = int(max(ytr.max(), yte.max())) + 1
    counts = np.zeros((len(test), n_cls), np.int64)
    np.add.at(counts, (np.repeat(np.arange(len(test)), k), votes.ravel()), 1)
    return float(np.mean(np.argmax(counts, axis=1) == yte))
