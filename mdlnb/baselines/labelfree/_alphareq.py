"""α-ReQ (Agrawal et al. 2022): power-law decay of the covariance spectrum."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from mdlnb.baselines.labelfree._inputs import _integer
from mdlnb.core._checks import check_matrix


def covariance_spectrum(z: Any) -> np.ndarray:
    """Eigenvalues (descending, float64, clipped at 0) of the 1/N covariance of
    the centred N×D matrix, from its smaller Gram matrix; min(N, D) of them.
    Float64 throughout (float32 input is widened, not rounded through float32)."""
    z = check_matrix(z, "z").astype(np.float64)
    z = z - z.mean(axis=0)
    g = z.T @ z if z.shape[0] >= z.shape[1] else z @ z.T
    return np.clip(np.linalg.eigvalsh(g)[::-1], 0.0, None) / z.shape[0]


@dataclasses.dataclass(frozen=True)
class AlphaReQ:
    """The power-law fit ``log λ_i ≈ b − α log i``.

    Attributes:
      alpha: decay coefficient α; intercept: b (log of the covariance units).
      ranks: (m,) the 1-based ranks i that were fitted.
      r2: weighted coefficient of determination of the fit on those ranks.
    """

    alpha: float
    intercept: float
    ranks: np.ndarray
    r2: float


def alpha_req_result(
    z: Any, *, fit_range: tuple[int, int] = (11, 100), weighted: bool = True
) -> AlphaReQ:
    """α-ReQ with its fit; see :func:`alpha_req`."""
    if not isinstance(fit_range, (tuple, list)) or len(fit_range) != 2:
        raise ValueError(f"fit_range: expected (first, last) 1-based ranks, got {fit_range!r}")
    lo = _integer(fit_range[0], "fit_range", 1)
    hi = _integer(fit_range[1], "fit_range", lo + 1)
    lam = covariance_spectrum(z)
    pos = (
        np.flatnonzero(lam > lam[0] * max(len(lam), 1) * np.finfo(np.float64).eps)
        if lam[0] > 0
        else np.zeros(0, int)
    )
    last = min(hi, int(pos[-1]) + 1 if pos.size else 0)
    if last - lo + 1 < 2:
        raise ValueError(
            f"fit_range: ranks {lo}..{hi} hold fewer than 2 non-zero eigenvalues "
            f"(there are {pos.size})"
        )
    ranks = np.arange(lo, last + 1)
    y = np.log(lam[ranks - 1])
    x = np.log(ranks.astype(np.float64))
    w = 1.0 / ranks if weighted else np.ones(len(ranks))
    xm, ym = np.sum(w * x) / w.sum(), np.sum(w * y) / w.sum()
    slope = np.sum(w * (x - xm) * (y - ym)) / np.sum(w * (x - xm) ** 2)
    b = ym - slope * xm
    ss_res = np.sum(w * (y - b - slope * x) ** 2)
    ss_tot = np.sum(w * (y - ym) ** 2)
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else 1.0
    return AlphaReQ(float(-slope), float(b), ranks, float(r2))


def alpha_req(z: Any, *, fit_range: tuple[int, int] = (11, 100), weighted: bool = True) -> float:
    """α-ReQ (Agrawal et al. 2022): the power-law decay coefficient α of the
    covariance eigenspectrum, ``λ_i ∝ i^{−α}``, fitted on log–log axes.

    ``λ_i`` (:func:`covariance_spectrum`) are the eigenvalues of the 1/N
    covariance of the centred ``z``; ``log λ_i = b − α log i`` is fitted by
    least squares over the 1-based ranks ``fit_range = (first, last)``
    (inclusive; default 11…100 as the authors' library reptrix, which skips
    the leading eigenvalues to fit the tail), clipped to the non-zero
    eigenvalues, with weights ``1/i`` (``weighted=False``: ordinary least
    squares). No unit; the covariance's scale only moves ``b``. Neither
    direction is better: the paper relates α ≈ 1 to the best linear probes.
    """
    return alpha_req_result(z, fit_range=fit_range, weighted=weighted).alpha
