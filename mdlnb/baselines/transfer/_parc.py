"""PARC: Pairwise Annotation Representation Comparison (Bolya et al., NeurIPS 2021).

"Scalable Diverse Model Selection for Accessible Transfer Learning"; code
dbolya/parc (``methods.py``, class ``PARC``, commit ddfca43). A
representational-similarity score between the probe set's features under
the source model and its target labels:

1. reduce the features to ``f = n_dims`` (32 in the paper) dimensions with
   PCA (centred, principal components, not whitened), if ``n_dims`` is not
   None; ``f`` is capped at ``min(N, D)``. PARC depends on the *signs* of the
   components (step 3 centres each row over its f entries, and flipping a
   component moves that mean), which PCA leaves arbitrary: mdlnb fixes them
   as scikit-learn's PCA does (each loading's largest-magnitude entry
   positive), the convention the authors' code inherits;
2. standardise every column (z-score, 1/N; a constant column becomes 0);
3. dissimilarity matrices ``R_F = 1 − corr(f_i, f_j)`` and
   ``R_Y = 1 − corr(onehot(y_i), onehot(y_j))`` (Pearson correlation between
   examples, over the f features and over the C one-hot entries);
4. ``PARC = Spearman(triu(R_F), triu(R_Y))`` over the ``N(N−1)/2`` pairs
   ``i < j`` (average ranks for ties).

Dimensionless in ``[−1, 1]``; higher is better transfer. The authors'
code reports 100 × this value and reduces with scikit-learn's randomized
PCA (``iterated_power=1``, seed 1919), an approximation of the exact PCA
mdlnb takes; with ``n_dims=None`` the two agree exactly. ``C`` is
``num_classes`` (default ``max(labels) + 1``): the one-hot correlation of two
different classes is ``−1/(C − 1)``, so only the partition matters; mdlnb
writes ``R_Y`` exactly (0 within a class, ``C/(C − 1)`` across). The code
computes it with ``np.corrcoef``, whose rounding makes some within-class
entries 2e-16 instead of 0 and so splits what are ties (0.23 points of
100 on 500 digits, 10 classes; exact agreement for 2 classes, where the
rounding does not occur).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.stats import rankdata

from mdlnb.baselines.transfer import _gram
from mdlnb.baselines.transfer import _validate as v


def _standardise(x: np.ndarray) -> np.ndarray:
    xc = x - x.mean(axis=0)
    sd = xc.std(axis=0)
    return xc / np.where(sd > 0, sd, 1.0)


def _row_corr(x: np.ndarray, name: str) -> np.ndarray:
    xc = x - x.mean(axis=1, keepdims=True)
    norm = np.sqrt(np.einsum("ij,ij->i", xc, xc))
    if np.any(norm == 0):
        raise ValueError(
            f"{name}: example {int(np.argmin(norm))} has no variation across "
            "its entries after standardisation; its correlation is undefined"
        )
    xc = xc / norm[:, None]
    return xc @ xc.T


def _pearson(a: np.ndarray, b: np.ndarray) -> float:
    a = a - a.mean()
    b = b - b.mean()
    return float(a @ b / np.sqrt((a @ a) * (b @ b)))


def parc(
    features: Any, labels: Any, *, num_classes: int | None = None, n_dims: int | None = 32
) -> float:
    """PARC (Bolya et al. 2021), Spearman correlation of the feature and label
    dissimilarity matrices, in ``[−1, 1]``, higher is better (module doc).

    ``n_dims``: PCA dimension (paper: 32), None for no reduction.
    """
    x = v.features(features)
    y, c = v.labels(labels, x.shape[0], num_classes)
    n = x.shape[0]
    if n < 3:
        raise ValueError(f"features: PARC needs at least 3 examples, got {n}")
    if c < 2:
        raise ValueError(f"num_classes: PARC needs at least 2 classes, got {c}")
    if n_dims is not None:
        if isinstance(n_dims, bool) or int(n_dims) != n_dims or n_dims < 1:
            raise ValueError(f"n_dims: must be None or a positive int, got {n_dims!r}")
        x = _gram.pca_scores(x, min(int(n_dims), n, x.shape[1]))
    rf = 1.0 - _row_corr(_standardise(x), "features")
    # one-hot rows: corr = 1 within a class, −1/(C − 1) across, written exactly
    # (computed, the within-class zeros come out as 0 or ±2e-16, which splits ties)
    ry = np.where(y[:, None] == y[None, :], 0.0, 1.0 + 1.0 / (c - 1))
    iu = np.triu_indices(n, 1)
    fa, fb = rf[iu], ry[iu]
    if np.ptp(fb) == 0:
        raise ValueError(
            "labels: every pair is in the same class (or every pair in different "
            "classes): the label dissimilarities are constant"
        )
    return _pearson(rankdata(fa), rankdata(fb))
