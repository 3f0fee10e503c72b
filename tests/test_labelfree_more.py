"""α-ReQ and LiDAR against independent re-derivations.

α-ReQ: features built with an exactly known power-law covariance spectrum
(α recovered to rounding), and a weighted fit checked against
``numpy.polyfit``. LiDAR: views with a known surrogate-class structure
(closed-form effective rank) and SciPy's generalised symmetric eigensolver
on covariances accumulated by loops. The reptrix comparison is in
``tests/peers/test_peers_more.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import eigh

from mdlnb.baselines import labelfree as lf

RNG = np.random.default_rng(27)


def _power_law_features(n, d, alpha, rng, scale=3.0):
    """Centred N×D features whose 1/N covariance has eigenvalues scale·i^(−α)."""
    g = rng.normal(size=(n, d))
    q, _ = np.linalg.qr(g - g.mean(0))  # orthonormal columns ⟂ 1
    v, _ = np.linalg.qr(rng.normal(size=(d, d)))
    lam = scale * np.arange(1, d + 1, dtype=float) ** (-alpha)
    return q * np.sqrt(n * lam) @ v.T + 5.0  # a constant offset: centring removes it


@pytest.mark.parametrize("alpha", [0.5, 1.0, 2.3])
@pytest.mark.parametrize("weighted", [True, False])
def test_alpha_recovered_from_an_exact_power_law(alpha, weighted):
    z = _power_law_features(400, 120, alpha, RNG)
    res = lf.alpha_req_result(z, weighted=weighted)
    assert res.alpha == pytest.approx(alpha, abs=1e-9)
    assert res.intercept == pytest.approx(np.log(3.0), abs=1e-8)
    assert res.r2 == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_array_equal(res.ranks, np.arange(11, 101))


def test_alpha_fit_range_is_clipped_to_the_nonzero_spectrum():
    z = _power_law_features(60, 40, 1.3, RNG)  # 40 eigenvalues
    res = lf.alpha_req_result(z, fit_range=(2, 500))
    assert res.ranks[0] == 2 and res.ranks[-1] == 40
    assert res.alpha == pytest.approx(1.3, abs=1e-9)


def test_alpha_weighted_fit_matches_polyfit():
    z = RNG.normal(size=(300, 50)) * np.linspace(3, 0.1, 50)
    evals = np.sort(np.linalg.eigvalsh(np.cov(z.T, bias=True)))[::-1]
    ranks = np.arange(5, 41)
    # polyfit minimises Σ (w_i r_i)², so w = √(1/i) gives the 1/i-weighted fit
    slope, _ = np.polyfit(np.log(ranks), np.log(evals[ranks - 1]), 1, w=np.sqrt(1.0 / ranks))
    assert lf.alpha_req(z, fit_range=(5, 40)) == pytest.approx(-slope, rel=1e-10)
    slope_u, _ = np.polyfit(np.log(ranks), np.log(evals[ranks - 1]), 1)
    assert lf.alpha_req(z, fit_range=(5, 40), weighted=False) == pytest.approx(-slope_u, rel=1e-10)


def test_covariance_spectrum_matches_numpy():
    z = RNG.normal(size=(30, 8))
    np.testing.assert_allclose(
        lf.covariance_spectrum(z),
        np.sort(np.linalg.eigvalsh(np.cov(z.T, bias=True)))[::-1],
        rtol=1e-12,
        atol=1e-14,
    )


# ---------------------------------------------------------------- LiDAR


def _structured_views(r, d, a, s):
    """2r samples with means ±a·e_k (k < r) and q = 2d views μ_x ± s·e_j:
    Σ_b = 2a²/(n−1) on r axes, Σ_w = 2s²/(q−1)·I (before δ)."""
    means = np.concatenate([a * np.eye(d)[:r], -a * np.eye(d)[:r]])
    dev = np.concatenate([s * np.eye(d), -s * np.eye(d)])
    return means[:, None, :] + dev[None, :, :]


@pytest.mark.parametrize("r,d", [(1, 4), (3, 6), (5, 5)])
def test_lidar_closed_form_on_known_class_structure(r, d):
    views = _structured_views(r, d, a=2.0, s=0.7)
    n, q = 2 * r, 2 * d
    delta, eps = 1e-4, 1e-7
    lam = 2 * 2.0**2 / (n - 1) / (2 * 0.7**2 / (q - 1) + delta)
    m = lf.lidar_matrix(views, delta=delta)
    np.testing.assert_allclose(
        np.sort(np.linalg.eigvalsh(m))[::-1], [lam] * r + [0.0] * (d - r), atol=1e-10 * lam
    )
    p = np.array([1 / r + eps] * r + [eps] * (d - r))
    closed = np.exp(-np.sum(p * np.log(p)))
    assert lf.lidar(views, delta=delta, eps=eps) == pytest.approx(closed, rel=1e-10)
    assert lf.lidar(views) == pytest.approx(r, rel=1e-4)


def test_lidar_matches_generalised_eigenvalues_from_loops():
    n, q, d = 12, 5, 4
    views = RNG.normal(size=(n, q, d)) + RNG.normal(size=(n, 1, d)) * 2.0
    mu_x = [views[x].mean(0) for x in range(n)]
    mu = np.mean(mu_x, axis=0)
    sb = sum(np.outer(m - mu, m - mu) for m in mu_x) / (n - 1)
    sw = sum(
        np.outer(views[x, i] - mu_x[x], views[x, i] - mu_x[x]) for x in range(n) for i in range(q)
    ) / (n * (q - 1)) + 1e-4 * np.eye(d)
    lam = np.clip(eigh(sb, sw, eigvals_only=True), 0, None)
    p = lam / lam.sum() + 1e-7
    assert lf.lidar(views) == pytest.approx(np.exp(-np.sum(p * np.log(p))), rel=1e-10)


def test_lidar_is_invariant_to_an_invertible_linear_map_up_to_delta():
    views = RNG.normal(size=(20, 4, 5)) + 3 * RNG.normal(size=(20, 1, 5))
    a = RNG.normal(size=(5, 5))
    assert lf.lidar(views @ a, delta=1e-12) == pytest.approx(lf.lidar(views, delta=1e-12), rel=1e-6)


@pytest.mark.parametrize(
    "call,arg",
    [
        (lambda: lf.lidar(np.ones((4, 3))), "views"),
        (lambda: lf.lidar(np.full((3, 2, 2), np.nan)), "views"),
        (lambda: lf.lidar(np.ones((3, 1, 2))), "views"),
        (lambda: lf.lidar(np.ones((1, 3, 2))), "views"),
        (lambda: lf.lidar(RNG.normal(size=(3, 2, 2)), delta=-1.0), "delta"),
        (lambda: lf.lidar(RNG.normal(size=(3, 2, 2)), eps=float("nan")), "eps"),
        (lambda: lf.alpha_req(np.array([[np.nan, 1.0], [0.0, 1.0]])), "z"),
        (lambda: lf.alpha_req(RNG.normal(size=(20, 3)), fit_range=(0, 3)), "fit_range"),
        (lambda: lf.alpha_req(RNG.normal(size=(20, 3)), fit_range=(3, 3)), "fit_range"),
        (lambda: lf.alpha_req(RNG.normal(size=(20, 3)), fit_range=(3, 40)), "fit_range"),
        (lambda: lf.alpha_req(RNG.normal(size=(20, 3)), fit_range=5), "fit_range"),
    ],
)
def test_bad_input_names_argument(call, arg):
    with pytest.raises(ValueError, match=arg):
        call()


def test_package_shape_like_transfer():
    """mdlnb.baselines.labelfree is a package of private ``_x.py`` modules; every name
    in ``__all__`` exists and none is a submodule."""
    import importlib
    import pkgutil

    import mdlnb.baselines.labelfree as pkg

    subs = {m.name for m in pkgutil.iter_modules(pkg.__path__)}
    assert subs and all(name.startswith("_") for name in subs), subs
    for name in pkg.__all__:
        assert not hasattr(getattr(pkg, name), "__path__")
    for name in subs:
        importlib.import_module(f"mdlnb.baselines.labelfree.{name}")
