"""Spectral view of a centred feature matrix through its smaller Gram matrix.

For ``F`` (N, D) the non-zero eigenvalues of ``FᵀF`` and ``FFᵀ`` coincide; we
eigendecompose whichever is smaller (cost ``O(N·min(N,D)² + min(N,D)³)``), so
wide few-shot features (N ≪ D) cost ``O(N²D)`` rather than ``O(D³)``.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from threadpoolctl import threadpool_limits


@dataclasses.dataclass(frozen=True)
class Spectrum:
    """Eigenvalues of ``FᵀF`` and the coordinates ``Vᵀ Fᵀ a`` of vectors.

    Attributes:
      evals: (r,) eigenvalues of ``FᵀF`` (= squared singular values of ``F``),
        descending, ``r = min(N, D)``, clipped at 0.
      left: (N, r) left singular vectors ``U`` when ``N <= D``, else None.
      right: (D, r) right singular vectors ``V`` when ``N > D``, else None.
      dim: D, the feature dimension (number of eigenvalues of ``FᵀF``).
    """

    evals: np.ndarray
    left: np.ndarray | None
    right: np.ndarray | None
    dim: int

    def coords(self, f: np.ndarray, a: np.ndarray) -> np.ndarray:
        """``Vᵀ Fᵀ a`` for ``a`` (N, k) → (r, k), i.e. ``S Uᵀ a``."""
        if self.left is not None:
            return np.sqrt(self.evals)[:, None] * (self.left.T @ a)
        return self.right.T @ (f.T @ a)

    def left_coords(self, f: np.ndarray, a: np.ndarray) -> np.ndarray:
        """``Uᵀ a`` for ``a`` (N, k) → (r, k); zero rows where the singular value is 0."""
        if self.left is not None:
            return self.left.T @ a
        s = np.sqrt(self.evals)
        inv = np.divide(1.0, s, out=np.zeros_like(s), where=s > 0)
        return inv[:, None] * (self.right.T @ (f.T @ a))


def spectrum(f: np.ndarray) -> Spectrum:
    """Eigendecomposition of the smaller Gram matrix of ``f`` (float64).

    BLAS/LAPACK run single-threaded here: on a contended 2-core machine a
    threaded ``eigh`` of a 1280² matrix measured 10× slower (10.6 s vs 1.0 s).
    """
    n, d = f.shape
    with threadpool_limits(limits=1, user_api="blas"):
        if n <= d:
            e, u = np.linalg.eigh(f @ f.T)
            e, u = np.clip(e[::-1], 0.0, None), u[:, ::-1]
            return Spectrum(e, u, None, d)
        e, vv = np.linalg.eigh(f.T @ f)
    return Spectrum(np.clip(e[::-1], 0.0, None), None, vv[:, ::-1], d)


def pca_scores(x: np.ndarray, k: int) -> np.ndarray:
    """The first ``k`` principal-component scores ``U_k S_k`` (N, k) of the
    centred ``x``: exact thin SVD, float64, one BLAS thread.

    Signs follow scikit-learn's ``PCA`` (≥ 1.5, ``svd_flip`` with
    ``u_based_decision=False``): each loading vector's entry of largest
    magnitude is positive. Most uses are sign-blind; PARC is not (its row
    centring sees the sign of every component)."""
    xc = x - x.mean(axis=0)
    with threadpool_limits(limits=1, user_api="blas"):
        u, s, vt = np.linalg.svd(xc, full_matrices=False)
    signs = np.sign(vt[np.arange(len(vt)), np.argmax(np.abs(vt), axis=1)])
    signs[signs == 0] = 1.0
    return u[:, :k] * (s[:k] * signs[:k])
