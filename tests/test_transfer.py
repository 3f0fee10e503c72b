"""Transferability metrics against independent references.

References: closed forms (LEEP/NCE/H-score on constructed cases, the
Dirichlet-multinomial evidence), brute-force enumeration of the latent
assignments (PACTran-Dirichlet), Monte-Carlo evidence of the Gamma model,
scipy.optimize on the slogdet evidence (LogME), sklearn LogisticRegression
(LINEAR), finite differences and a numeric minimisation of Eq. 13
(PACTran-Gaussian), sklearn's Ledoit-Wolf, and plain float64 NumPy
re-derivations of the mean-field updates.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import minimize, minimize_scalar
from scipy.special import digamma, gammaln, logsumexp

from mdlnb.baselines import transfer as T

RNG = np.random.default_rng(12345)


def _probs(n, z, y, strength, rng):
    lg = rng.normal(size=(n, z))
    lg[np.arange(n), y % z] += strength
    p = np.exp(lg - lg.max(1, keepdims=True))
    return p / p.sum(1, keepdims=True)


# Shared PACTran inputs (one compiled shape per solver keeps the suite fast).
Y_PT = RNG.integers(0, 3, 40)
M_PT = _probs(40, 6, Y_PT, 2.0, RNG)


# ---------------------------------------------------------------- LEEP / NCE


def test_leep_hand_computed_value():
    theta = np.array([[0.8, 0.2], [0.6, 0.4], [0.3, 0.7], [0.1, 0.9]])
    y = np.array([0, 0, 1, 1])
    # p(y|z): z0 -> (1.4, .4)/1.8, z1 -> (.6, 1.6)/2.2; EEP rows .676768, .575758, .575758, .676768
    expected = (
        np.log(0.8 * 1.4 / 1.8 + 0.2 * 0.6 / 2.2) + np.log(0.6 * 1.4 / 1.8 + 0.4 * 0.6 / 2.2)
    ) / 2
    assert T.leep(theta, y) == pytest.approx(expected, abs=1e-12)
    assert T.leep(theta, y) == pytest.approx(-0.471248, abs=1e-6)


def test_leep_deterministic_map_is_zero_and_uninformative_is_log_inv_c():
    z = RNG.integers(0, 6, 60)
    y = z // 2  # deterministic z -> y
    assert T.leep(np.eye(6)[z], y) == pytest.approx(0.0, abs=1e-12)
    y_bal = np.repeat(np.arange(4), 10)
    assert T.leep(np.full((40, 7), 1 / 7), y_bal) == pytest.approx(np.log(1 / 4), abs=1e-12)


def test_nce_closed_forms():
    z = RNG.integers(0, 5, 50)
    assert T.nce(z, z % 3) == pytest.approx(0.0, abs=1e-12)
    # empirically independent: counts n_yz = 16 p(y) p(z)
    counts = {(0, 0): 1, (0, 1): 3, (1, 0): 1, (1, 1): 3, (2, 0): 2, (2, 1): 6}
    y = np.concatenate([[yy] * k for (yy, _), k in counts.items()])
    zz = np.concatenate([[z_] * k for (_, z_), k in counts.items()])
    h_y = -(2 * 0.25 * np.log(0.25) + 0.5 * np.log(0.5))
    assert T.nce(zz, y) == pytest.approx(-h_y, abs=1e-12)
    # probabilities are reduced by argmax
    assert T.nce(np.eye(2)[zz] * 0.6 + 0.2, y) == pytest.approx(-h_y, abs=1e-12)


def test_nleep_separated_clusters_and_sklearn_pipeline():
    from sklearn.decomposition import PCA
    from sklearn.mixture import GaussianMixture

    y = np.repeat(np.arange(3), 30)
    x = RNG.normal(size=(90, 8)) * 0.1
    x[:, :3] += 5 * np.eye(3)[y]
    assert T.nleep(x, y) == pytest.approx(0.0, abs=1e-6)
    x2 = RNG.normal(size=(90, 8))
    s = PCA(n_components=0.8, svd_solver="full").fit_transform(x2 - x2.mean(0))
    post = GaussianMixture(3, random_state=0).fit(s).predict_proba(s)
    assert T.nleep(x2, y, components="classes") == pytest.approx(T.leep(post, y), abs=1e-12)
    post9 = GaussianMixture(9, random_state=0).fit(s).predict_proba(s)  # max(min(3, 18), 9)
    res = T.nleep_result(x2, y)
    assert (res.n_components, res.rule) == (9, "paper")
    assert res.value == pytest.approx(T.leep(post9, y), abs=1e-12)


@pytest.mark.parametrize(
    "n,c,paper",
    [
        (20, 10, 4),
        (50, 10, 10),
        (100, 10, 10),
        (1797, 10, 179),
        (4, 2, 1),
        (30, 3, 3),
        (300, 3, 30),
    ],
)
def test_nleep_component_rules(n, c, paper):
    """PACTran code: max(min(C, int(0.2 N)), int(0.1 N)); the paper's text: C."""
    assert T.nleep_components("paper", n, c) == paper
    assert T.nleep_components("classes", n, c) == c
    assert T.nleep_components(7, n, c) == 7


# ---------------------------------------------------------------- H-score


def _hscore_direct(f, y):
    fc = f - f.mean(0)
    g = np.stack([fc[y == k].mean(0) for k in np.unique(y)])[np.searchsorted(np.unique(y), y)]
    return np.trace(
        np.linalg.pinv(fc.T @ fc / len(f), rcond=1e-10, hermitian=True) @ (g.T @ g / len(f))
    )


def test_hscore_fixed_values():
    # D = 1: between/total variance = 1 / 1.25
    assert T.hscore(np.array([[0.0], [1.0], [2.0], [3.0]]), [0, 0, 1, 1]) == pytest.approx(
        0.8, abs=1e-12
    )
    # features determined by the label: H = min(D, C - 1)
    y = np.repeat(np.arange(3), 5)
    mu = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 3.0]])
    assert T.hscore(mu[y], y) == pytest.approx(2.0, abs=1e-9)
    # general case, N > D, N < D, duplicate columns, against the matrix formula
    for n, d in [(80, 6), (15, 40)]:
        f = RNG.normal(size=(n, d))
        f[:, 1] = f[:, 0]
        y = RNG.integers(0, 4, n)
        f[:, 2] += y
        assert T.hscore(f, y) == pytest.approx(_hscore_direct(f, y), rel=1e-8)


def _hscore_exact_solve(f, y):
    """tr(S⁻¹ B) by a float64 linear solve of the full-rank 1/N covariance (no cut-off)."""
    fc = f - f.mean(0)
    g = np.stack([fc[y == k].mean(0) for k in np.unique(y)])[np.searchsorted(np.unique(y), y)]
    return np.trace(np.linalg.solve(fc.T @ fc / len(f), g.T @ g / len(f)))


def test_hscore_scale_free_on_breast_cancer():
    """Regression (issue 10): raw breast-cancer features have a covariance of
    condition number ~6e11; an eigenvalue cut-off at 1e-10·λ_max dropped three
    genuine directions (0.76590). H is invariant to invertible linear maps."""
    from sklearn.datasets import load_breast_cancer

    x, y = load_breast_cancer(return_X_y=True)
    exact = _hscore_exact_solve(x, y)
    assert exact == pytest.approx(0.774324652637, abs=1e-9)
    assert T.hscore(x, y) == pytest.approx(exact, rel=1e-9)
    assert T.regularized_hscore(x, y, shrinkage=0.0) == pytest.approx(exact, rel=1e-9)
    rng = np.random.default_rng(0)
    for lo, hi in [(-6, 6), (-6, -6), (6, 6)]:
        scale = 10.0 ** rng.uniform(lo, hi, x.shape[1])
        assert T.hscore(x * scale, y) == pytest.approx(exact, rel=1e-9)
    z = (x - x.mean(0)) / x.std(0)
    a = rng.normal(size=(30, 30))  # a generic invertible map
    assert T.hscore(z @ a + 5.0, y) == pytest.approx(exact, rel=1e-8)


def test_hscore_rank_deficient_keeps_only_numerical_duplicates():
    """Columns that are exact combinations of others add nothing, whatever their scale."""
    from sklearn.datasets import load_wine

    x, y = load_wine(return_X_y=True)
    exact = _hscore_exact_solve(x, y)
    dup = np.hstack([x, 1e5 * x[:, :3] - 2e-4 * x[:, 3:6]])
    assert T.hscore(dup, y) == pytest.approx(exact, rel=1e-9)


def test_hscore_independent_features_near_zero():
    f = RNG.normal(size=(4000, 5))
    y = RNG.integers(0, 3, 4000)
    assert 0.0 <= T.hscore(f, y) < 0.012  # E[H] ≈ D (C-1) / N = 0.0025


def test_regularized_hscore_against_sklearn_ledoit_wolf():
    from sklearn.covariance import ledoit_wolf, ledoit_wolf_shrinkage

    for n, d in [(60, 8), (12, 30)]:
        f = RNG.normal(size=(n, d)) * np.linspace(0.5, 3, d)
        y = RNG.integers(0, 3, n)
        f[:, 0] += 2 * y
        assert T.ledoit_wolf_shrinkage(f) == pytest.approx(ledoit_wolf_shrinkage(f), rel=1e-10)
        cov, a = ledoit_wolf(f)
        fc = f - f.mean(0)
        g = np.stack([fc[y == k].mean(0) for k in range(3)])[y]
        expected = (1 - a) * np.trace(np.linalg.solve(cov, g.T @ g / n))
        assert T.regularized_hscore(f, y) == pytest.approx(expected, rel=1e-8)
        if n > d:
            assert T.regularized_hscore(f, y, shrinkage=0.0) == pytest.approx(
                T.hscore(f, y), rel=1e-9
            )


# ---------------------------------------------------------------- LogME


def _logme_reference(f, y):
    """Max over (α, β) of log N(y; 0, I/β + FFᵀ/α) by scipy, via slogdet of the N×N covariance."""
    from threadpoolctl import threadpool_limits  # scipy's L-BFGS-B crawls on a contended BLAS pool

    n = len(f)
    k_mat = f @ f.T
    out = []
    for k in np.unique(y):
        t = (y == k).astype(float)

        def neg(p, t=t):
            cov = np.eye(n) * np.exp(-p[1]) + k_mat * np.exp(-p[0])
            _, ld = np.linalg.slogdet(cov)
            return 0.5 * (n * np.log(2 * np.pi) + ld + t @ np.linalg.solve(cov, t)) / n

        with threadpool_limits(limits=1, user_api="blas"):
            best = min(
                (
                    minimize(neg, x0, method="L-BFGS-B", bounds=[(-15, 30), (-15, 40)])
                    for x0 in ([0.0, 0.0], [5.0, 2.0])
                ),
                key=lambda r: r.fun,
            )
            polished = minimize(
                neg,
                best.x,
                method="Nelder-Mead",
                options=dict(xatol=1e-7, fatol=1e-12, maxiter=300),
            )
        out.append(-min(best.fun, polished.fun))
    return float(np.mean(out))


@pytest.mark.parametrize(
    "n,d,dup", [(60, 10, False), (30, 80, False), (50, 12, True), (100, 2048, False)]
)
def test_logme_matches_slogdet_evidence_maximisation(n, d, dup):
    rng = np.random.default_rng(n + d)
    f = rng.normal(size=(n, d))
    y = rng.integers(0, 3, n)
    f[:, 0] += 1.5 * y
    if dup:
        f[:, 5:10] = f[:, :5]  # rank-deficient
    res = T.logme_result(f, y)
    assert res.converged
    ref = _logme_reference(f, y)
    assert res.value == pytest.approx(ref, abs=2e-6)
    # the spectral evidence equals the slogdet evidence at the returned (α, β)
    for k in range(3):
        t = (y == k).astype(float)
        cov = np.eye(n) / res.beta[k] + f @ f.T / res.alpha[k]
        ld = np.linalg.slogdet(cov)[1]
        direct = -0.5 * (n * np.log(2 * np.pi) + ld + t @ np.linalg.solve(cov, t))
        assert res.evidence[k] == pytest.approx(direct, rel=1e-7, abs=1e-6)


def test_logme_of_all_zero_features_is_the_no_feature_evidence():
    """F = 0: the evidence does not depend on α, and at β = N/‖y‖² it is
    N/2 log β − β/2 ‖y‖² − N/2 log 2π (closed form; it was NaN from α = 0/0)."""
    for n, d in [(2, 1), (5, 3), (3, 8), (40, 40)]:
        y = np.arange(n) % 2
        res = T.logme_result(np.zeros((n, d)), y)
        yy = np.bincount(y, minlength=2).astype(float)
        beta = n / yy
        ref = 0.5 * n * np.log(beta) - 0.5 * beta * yy - 0.5 * n * np.log(2 * np.pi)
        assert res.converged
        np.testing.assert_allclose(res.evidence, ref, rtol=1e-12)
        np.testing.assert_allclose(res.beta, beta, rtol=1e-12)


def test_logme_limits_orthogonal_and_exactly_fit_classes():
    """F = [0, 1]ᵀ, y = [0, 1]: class 0's column is orthogonal to F, so the
    evidence (direct slogdet form) rises towards the no-feature closed form as
    α → ∞ and never exceeds it; class 1's column is F itself with rank 1 < N,
    so the evidence grows without bound as β → ∞ (+inf)."""
    f = np.array([[0.0], [1.0]])
    res = T.logme_result(f, [0, 1])
    n = 2

    def direct(alpha, beta, t):
        cov = f @ f.T / alpha + np.eye(n) / beta
        return -0.5 * (
            n * np.log(2 * np.pi) + np.linalg.slogdet(cov)[1] + t @ np.linalg.solve(cov, t)
        )

    t0, t1 = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    closed = 0.5 * n * (np.log(2.0) - 1.0 - np.log(2 * np.pi))
    assert res.evidence[0] == pytest.approx(closed, rel=1e-12)
    grid = [direct(a, b, t0) for a in (1e-2, 1.0, 1e2, 1e6) for b in (0.5, 1.0, 2.0, 4.0)]
    assert max(grid) <= closed + 1e-12
    assert direct(1e9, 2.0, t0) == pytest.approx(closed, abs=1e-8)
    assert res.evidence[1] == np.inf and res.value == np.inf
    assert direct(1.0, 1e6, t1) > direct(1.0, 1e3, t1) > 0


def test_logme_leaves_out_classes_without_an_example():
    """A class with no example has unbounded evidence (β → ∞ fits its zero
    column); it is NaN in ``evidence`` and not in the mean. The value equals
    LogME on the relabelled task without that class (it used to add
    N/2 log 1e300 from the β cap: 286.6 nats per example on the first case)."""
    rng = np.random.default_rng(7)
    for f, y, c in [
        (np.ones((3, 1)), np.array([1, 1, 1]), None),
        (rng.normal(size=(30, 4)), rng.integers(0, 3, 30) * 2, 6),
        (np.zeros((1, 1)), np.array([1]), None),
    ]:
        res = T.logme_result(f, y, num_classes=c)
        seen = np.unique(y)
        ref = T.logme_result(f, np.searchsorted(seen, y))
        assert np.all(np.isnan(np.delete(res.evidence, seen)))
        np.testing.assert_allclose(res.evidence[seen], ref.evidence, rtol=1e-12)
        assert res.value == pytest.approx(ref.value, rel=1e-12)


@pytest.mark.parametrize("n,d", [(5, 3), (50, 20), (12, 40)])
def test_logme_is_invariant_to_the_scale_of_the_features(n, d):
    """F → cF leaves LogME unchanged (α absorbs c²). From the fixed α starts
    alone, c = 1e-8 stopped after two iterations on a flat stretch
    (−1.0622 instead of −1.0374 on the 5×3 case)."""
    rng = np.random.default_rng(n * d)
    f = rng.normal(size=(n, d))
    y = np.arange(n) % 3
    base = T.logme(f, y)
    for c in (1e-12, 1e-8, 1e-4, 1e4, 1e8):
        assert T.logme(c * f, y) == pytest.approx(base, rel=1e-9), c


def test_logme_float32_equals_float64():
    f = RNG.normal(size=(40, 7))
    y = RNG.integers(0, 2, 40)
    assert T.logme(f.astype(np.float32), y) == pytest.approx(
        T.logme(f.astype(np.float32).astype(np.float64), y), abs=1e-12
    )


# ---------------------------------------------------------------- PACTran Dirichlet / Gamma


def _log_c(a):
    return gammaln(a.sum(0)) - gammaln(a).sum(0)


def _dirichlet_reference(m, y, c, iters):
    n = len(y)
    a = np.bincount(y, minlength=c) / n
    oh = np.eye(c)[y]
    log_m = np.log(m)
    lq = log_m - logsumexp(log_m, 1, keepdims=True)
    for _ in range(iters):
        post = a[:, None] + oh.T @ np.exp(lq)
        e = digamma(post) - digamma(post.sum(0))
        lq = log_m + e[y]
        lq -= logsumexp(lq, 1, keepdims=True)
    q = np.exp(lq)
    post = a[:, None] + oh.T @ q
    return (
        np.sum(_log_c(post)) - m.shape[1] * _log_c(a[:, None])[0] + np.sum(q * (lq - log_m))
    ) / n


def _gamma_reference(m, y, c, iters):
    n = len(y)
    a = np.bincount(y, minlength=c) / n
    oh = np.eye(c)[y]
    log_m = np.log(m)
    lq = log_m - logsumexp(log_m, 1, keepdims=True)
    for _ in range(iters):
        lq = log_m + digamma(a[:, None] + oh.T @ np.exp(lq))[y]
        lq -= logsumexp(lq, 1, keepdims=True)
    q = np.exp(lq)
    post = a[:, None] + oh.T @ q
    return (
        np.sum(gammaln(a)[:, None] - gammaln(post))
        + np.sum(np.log(m @ post.sum(0)))
        + np.sum(q * (lq - log_m))
    ) / n


def test_pactran_dirichlet_monotone_and_matches_float64_reference():
    res = T.pactran_dirichlet_result(M_PT, Y_PT)
    assert res.converged and res.iterations > 10
    assert np.all(np.diff(res.history) <= 2e-6)  # coordinate ascent: never increases
    assert res.value == pytest.approx(_dirichlet_reference(M_PT, Y_PT, 3, 500), abs=2e-5)


def test_pactran_dirichlet_exact_for_one_hot_sources():
    z = np.repeat(np.arange(6), 7)[:40]
    m = np.eye(6)[z]
    a = np.bincount(Y_PT, minlength=3) / 40
    counts = np.zeros((3, 6))
    np.add.at(counts, (Y_PT, z), 1)
    neg_log_z = (
        np.sum(_log_c(a[:, None] + counts) - _log_c(a[:, None])) / 40
    )  # Dirichlet-multinomial
    assert T.pactran_dirichlet(m, Y_PT) == pytest.approx(neg_log_z, abs=2e-5)


def test_pactran_dirichlet_upper_bounds_brute_force_evidence():
    y = np.array([0, 1, 1, 0, 1, 0])
    m = _probs(6, 2, y, 1.0, np.random.default_rng(3))
    a = np.bincount(y, minlength=2) / 6
    terms = []
    for zs in itertools.product(range(2), repeat=6):
        counts = np.zeros((2, 2))
        np.add.at(counts, (y, np.array(zs)), 1)
        terms.append(
            np.sum(np.log(m[np.arange(6), zs]))
            + np.sum(_log_c(a[:, None] + counts) - _log_c(a[:, None])) * -1
        )
    neg_log_z = -logsumexp(terms) / 6
    value = T.pactran_dirichlet(m, y)
    assert neg_log_z - 1e-6 <= value <= neg_log_z + 0.1  # a valid, not loose, bound


def test_pactran_gamma_matches_float64_reference_and_scale_invariance():
    res = T.pactran_gamma_result(M_PT, Y_PT)
    assert res.converged
    assert res.value == pytest.approx(_gamma_reference(M_PT, Y_PT, 3, 500), abs=2e-5)
    assert res.history[-1] < res.history[0]
    # Eq. 11 is invariant to rescaling each row of M (M need not be normalised)
    scale = np.exp(RNG.normal(size=(40, 1)) * 3)
    assert T.pactran_gamma(M_PT * scale, Y_PT) == pytest.approx(res.value, abs=2e-5)


def _digits_16_way_source():
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    z = (x - x.mean(0)) / (x.std(0) + 1e-9)
    w = np.random.default_rng(0).normal(size=(64, 16)) / 8  # a fixed 16-way source head
    return T.source_probs_from_head(z, w), y


def test_pactran_runs_to_the_float64_fixed_point_on_digits():
    """Regression (issue 10): float32 iterates reported convergence after 61
    (Dirichlet) / 39 (Gamma) iterations when the float32 change hit 0, 1.2e-3 and
    2.2e-4 relative above the fixed point. Reference: 600 plain float64 NumPy
    mean-field iterations (the bound no longer changes in float64 after ~450)."""
    m, y = _digits_16_way_source()
    for result, ref in (
        (T.pactran_dirichlet_result, _dirichlet_reference),
        (T.pactran_gamma_result, _gamma_reference),
    ):
        res = result(m, y)
        assert res.converged and res.delta <= res.tol == 1e-12
        assert res.iterations > 200 and len(res.history) == res.iterations + 1
        assert res.value == pytest.approx(ref(m, y, 10, 600), rel=1e-10)


def test_pactran_gamma_dirichlet_relation_eq11():
    """Normalised independent Gamma(a_y, 1) weights are Dir(a): with one-hot M the
    Gamma model (Eq. 11) has the Dirichlet model's exact evidence, which PT-Gamma
    upper-bounds and PT-Dirichlet attains."""
    rng = np.random.default_rng(7)
    y = np.array([0, 1, 1, 0, 0, 1, 1, 1])
    z = np.array([0, 0, 1, 1, 0, 1, 1, 0])
    a = np.bincount(y, minlength=2) / 8
    counts = np.zeros((2, 2))
    np.add.at(counts, (y, z), 1)
    neg_log_z = np.sum(_log_c(a[:, None] + counts) - _log_c(a[:, None])) / 8
    v = rng.gamma(a[None, :, None], 1.0, size=(400_000, 2, 2))  # (S, y, z)
    lik = np.sum(np.log(v[:, y, z] / v[:, :, z].sum(1)), axis=1)
    mc = -logsumexp(lik - np.log(len(v))) / 8
    assert mc == pytest.approx(neg_log_z, abs=0.02)
    m = np.eye(2)[z]
    assert T.pactran_dirichlet(m, y) == pytest.approx(neg_log_z, abs=2e-5)
    assert T.pactran_gamma(m, y) >= neg_log_z - 1e-5


# ---------------------------------------------------------------- PACTran-Gaussian and LINEAR


def _sklearn_objective(x, y, beta):
    from sklearn.linear_model import LogisticRegression

    n = len(x)
    xd = np.hstack([x, np.ones((n, 1))])
    lr = LogisticRegression(C=beta / n, fit_intercept=False, tol=1e-12, max_iter=20000).fit(xd, y)
    w = lr.coef_.T
    if w.shape[1] == 1:  # binary: sklearn's single column
        w = np.hstack([-w / 2, w / 2])
    lp = xd @ w - logsumexp(xd @ w, 1, keepdims=True)
    return -np.mean(lp[np.arange(n), y]) + np.sum(w * w) / (2 * beta), w


@pytest.mark.parametrize(
    "n,d,case", [(80, 6, "plain"), (20, 50, "wide"), (40, 8, "dup"), (30, 5, "single")]
)
def test_linear_matches_sklearn(n, d, case):
    rng = np.random.default_rng(n * d)
    y = rng.integers(0, 3, n)
    if case == "single":
        y[y == 2] = 1
        y[0] = 2  # a class with one example
    x = rng.normal(size=(n, d))
    x[:, 0] += y
    if case == "dup":
        x[:, 4:8] = x[:, :4]
    for bf in (0.1, 1.0, 10.0):
        ref, _ = _sklearn_objective(x, y, bf * n)
        assert T.linear(x, y, beta_factor=bf) == pytest.approx(ref, rel=1e-6)


def test_linear_valid_against_manual_two_fold():
    from sklearn.linear_model import LogisticRegression

    n = 60
    y = RNG.integers(0, 3, n)
    x = RNG.normal(size=(n, 5))
    x[:, 0] += y
    fa, fb = T.two_folds(y, seed=4)
    assert len(np.intersect1d(fa, fb)) == 0 and abs(len(fa) - len(fb)) <= 1
    expected = {}
    for bf in (0.1, 1.0, 10.0):
        tot = 0.0
        for tr, va in ((fa, fb), (fb, fa)):
            xd = np.hstack([x, np.ones((n, 1))])
            lr = LogisticRegression(C=bf, fit_intercept=False, tol=1e-12, max_iter=20000)
            lr.fit(xd[tr], y[tr])
            lp = np.log(lr.predict_proba(xd[va]))
            tot -= np.sum(lp[np.arange(len(va)), y[va]])
        expected[bf] = tot / n
    got = T.linear_valid_losses(x, y, seed=4)
    for bf in expected:
        assert got[bf] == pytest.approx(expected[bf], rel=1e-5)
    assert T.linear_valid(x, y, seed=4) == pytest.approx(min(expected.values()), rel=1e-5)


def test_pactran_gaussian_against_numeric_hessian_and_eq13():
    rng = np.random.default_rng(11)
    n, d, c = 30, 3, 3
    y = rng.integers(0, c, n)
    x = rng.normal(size=(n, d))
    x[:, 0] += y
    beta, s0 = 10.0 * n, 100.0 / d
    res = T.pactran_gaussian_result(x, y)
    ref_rer, w = _sklearn_objective(x, y, beta)
    assert res.rer == pytest.approx(ref_rer, rel=1e-6)
    xd = np.hstack([x, np.ones((n, 1))])

    def loss(flat):
        g = xd @ flat.reshape(d + 1, c)
        return -np.mean((g - logsumexp(g, 1, keepdims=True))[np.arange(n), y])

    flat, h, tr = w.ravel(), 1e-4, 0.0
    for i in range(flat.size):  # central second differences
        e = np.zeros_like(flat)
        e[i] = h
        tr += (loss(flat + e) - 2 * loss(flat) + loss(flat - e)) / h**2
    assert res.hessian_trace == pytest.approx(tr, rel=1e-4)
    assert res.num_params == c * (d + 1)

    # Eq. 13 at θ*, minimised over σ_q² numerically: RER + FR with the ½
    p, lam = res.num_params, beta / s0

    def eq13(log_sq):
        sq = np.exp(log_sq)
        return (
            loss(flat)
            + sq / 2 * tr
            + p / (2 * lam) * (np.log(s0 / sq) - 1 + sq / s0 + np.sum(flat**2) / (p * s0))
        )

    best = minimize_scalar(
        eq13, bounds=(-30, np.log(s0)), method="bounded", options=dict(xatol=1e-12)
    )
    assert res.value == pytest.approx(best.fun, rel=1e-6)
    grid = T.pactran_gaussian_grid(x, y)
    assert len(grid) == 12 and grid[(10.0, 100.0)] == pytest.approx(res.value, rel=1e-6)


def test_select_by_kendall_picks_agreeing_key():
    ref = {"a": 0.1, "b": 0.5, "c": 0.9, "d": 0.3}
    scores = {k: {"good": v * 2 + 1, "bad": -v} for k, v in ref.items()}
    assert T.select_by_kendall(scores, ref) == "good"


# ---------------------------------------------------------------- registry, score_all, validation


def test_score_all_and_registry_signs():
    y = np.repeat(np.arange(3), 8)
    x = RNG.normal(size=(24, 5)).astype(np.float32)
    x[:, :3] += 3 * np.eye(3)[y]
    sp = T.source_probs_from_logits(np.eye(3)[y] * 4 + RNG.normal(size=(24, 3)))
    out = T.score_all(x, y, sp, metrics=["leep", "nce", "hscore", "logme", "linear"])
    assert out["hscore"] == pytest.approx(T.hscore(x, y))
    assert out["leep"] == pytest.approx(T.leep(sp, y))
    assert set(T.score_all(x, y, metrics=None)) == {
        k for k, m in T.METRICS.items() if "source_probs" not in m.needs
    }
    assert T.METRICS["leep"].sign == 1 and T.METRICS["pactran_gaussian"].sign == -1
    assert T.oriented("linear", 0.3) == -0.3
    assert np.allclose(
        T.source_probs_from_head(x, np.eye(5)[:, :3], np.zeros(3)),
        T.source_probs_from_logits(x[:, :3]),
    )


@pytest.mark.parametrize(
    "call,arg",
    [
        (lambda: T.hscore(np.array([[np.nan, 1.0], [0.0, 1.0]]), [0, 1]), "features"),
        (lambda: T.logme(np.ones((3, 2)), [0, 1]), "labels"),
        (lambda: T.linear(np.ones((3, 2)), [0, 1, 3], num_classes=3), "labels"),
        (lambda: T.hscore(np.ones((3, 2)), [0, -1, 1]), "labels"),
        (lambda: T.logme(np.zeros((0, 4)), []), "features"),
        (lambda: T.leep(np.full((2, 2), 0.7), [0, 1]), "source_probs"),
        (lambda: T.leep(np.array([[1.5, -0.5], [0.5, 0.5]]), [0, 1]), "source_probs"),
        (lambda: T.nce(np.array([0, 1]), [0, 1, 1]), "labels"),
        (lambda: T.nleep(np.ones((4, 2)), [0, 1, 0, 1], variance=1.5), "variance"),
        (lambda: T.nleep(np.ones((4, 2)), [0, 1, 0, 1], components="many"), "components"),
        (lambda: T.score_all(np.ones((4, 2)), [0, 1, 0, 1], nleep_components=0), "components"),
        (lambda: T.pactran_gaussian(np.ones((4, 2)), [0, 1, 0, 1], beta_factor=-1), "beta_factor"),
        (lambda: T.score_all(np.ones((4, 2)), [0, 1, 0, 1], metrics=["nope"]), "metrics"),
        (lambda: T.score_all(np.ones((4, 2)), [0, 1, 0, 1], metrics=["leep"]), "source_probs"),
    ],
)
def test_bad_input_names_argument(call, arg):
    with pytest.raises(ValueError, match=arg):
        call()


@pytest.mark.parametrize("case", ["logme_interpolating.npz", "logme_interpolating_2.npz"])
def test_logme_converges_when_few_wide_features_interpolate_a_class(case):
    """Regression: 20 EfficientNet-Lite features (D = 1280), 2 per class. Some
    classes are fit exactly (evidence maximal as β → ∞); computing N − γ as a
    difference cancelled, and β² overflowed, sending the evidence to NaN.
    Reference: the evidence maximised directly over (log α, log β) from the
    N×N marginal covariance."""
    from scipy.optimize import minimize

    data = np.load(Path(__file__).parent / "data" / case)
    f, y = data["f"], data["y"]
    res = T.logme_result(f, y, num_classes=10)
    assert res.converged and np.all(np.isfinite(res.evidence))
    g = f.astype(np.float64) @ f.T.astype(np.float64)
    n = len(y)

    def neg_evidence(p, yk):
        a, b = np.exp(np.clip(p, -50, 50))
        cov = g / a + np.eye(n) / b
        _, logdet = np.linalg.slogdet(cov)
        return 0.5 * (logdet + yk @ np.linalg.solve(cov, yk) + n * np.log(2 * np.pi))

    for k in range(10):
        yk = (y == k).astype(np.float64)
        best = min(
            (
                minimize(
                    neg_evidence,
                    [la, lb],
                    args=(yk,),
                    method="Nelder-Mead",
                    options=dict(maxiter=4000, xatol=1e-10, fatol=1e-12),
                )
                for la in (-5, 0, 5)
                for lb in (0, 5, 10, 15)
            ),
            key=lambda o: o.fun,
        )
        np.testing.assert_allclose(res.evidence[k], -best.fun, rtol=1e-6, atol=1e-6)


def test_no_exported_name_hides_a_submodule():
    """Every public attribute of mdlnb.baselines.transfer is what it says: no function
    shadows a module of the same name (modules are private ``_x.py``)."""
    import importlib
    import pkgutil

    import mdlnb.baselines.transfer as pkg

    subs = {m.name for m in pkgutil.iter_modules(pkg.__path__)}
    assert all(name.startswith("_") for name in subs), subs
    for name in pkg.__all__:
        assert not hasattr(getattr(pkg, name), "__path__")
    for name in subs:
        mod = importlib.import_module(f"mdlnb.baselines.transfer.{name}")
        assert getattr(pkg, name, mod) is mod
