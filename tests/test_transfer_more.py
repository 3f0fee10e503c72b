"""SFDA, GBC, PARC, TransRate, NCTI and ETran against the papers' formulas.

Each reference is written out here in plain float64 NumPy/SciPy on a tiny
case, by a different route than the implementation (loops over classes and
pairs, generalized eigenvectors, SciPy's Gaussian densities and Spearman,
determinants of the D × D matrices), or is a closed form. The authors' code
is compared in ``tests/peers/test_peers_more.py``.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.linalg import eigh
from scipy.special import logsumexp
from scipy.stats import multivariate_normal, spearmanr

from mdlnb.baselines import transfer as T

RNG = np.random.default_rng(2027)


def _blobs(n_per, d, c, sep, rng, scale=1.0):
    y = np.repeat(np.arange(c), n_per)
    centres = rng.normal(size=(c, d)) * sep
    return (centres[y] + rng.normal(size=(len(y), d))) * scale, y


# ---------------------------------------------------------------- SFDA


def _sfda_reference(x, y, a=5.0):
    """Paper route: Fisher projection onto all generalised eigenvectors of
    (S_b, S̃_w), Gaussian class posteriors with unit covariance there."""
    classes = np.unique(y)
    n, d = x.shape

    def stage(x, lam=None):
        pri = np.array([np.mean(y == k) for k in classes])
        mu = np.array([x[y == k].mean(0) for k in classes])
        sw = sum(p * np.cov(x[y == k].T, bias=True) for p, k in zip(pri, classes))
        if lam is None:
            lam = max(np.exp(-a * np.max(np.linalg.eigvalsh(sw))), 1e-10)
        sws = (1 - lam) * sw + lam * np.trace(sw) / d * np.eye(d)
        m = x.mean(0)
        sb = sum(p * np.outer(u - m, u - m) for p, u in zip(pri, mu))
        _, u = eigh(sb, sws)  # uᵀ S̃_w u = I
        z, zm = x @ u, mu @ u
        logits = np.array(
            [[-0.5 * np.sum((zi - zk) ** 2) + np.log(p) for zk, p in zip(zm, pri)] for zi in z]
        )
        post = np.exp(logits - logsumexp(logits, axis=1, keepdims=True))
        return post, mu, lam

    post, mu, lam = stage(x)
    soft = np.exp(post) / np.exp(post).sum(1, keepdims=True)
    x2 = x.copy()
    for i in range(n):
        k = y[i]
        q = soft[i, k]
        other = np.mean([mu[j] for j in range(len(classes)) if j != k], axis=0)
        x2[i] = q * x[i] + (1 - q) * other
    post2, _, _ = stage(x2, lam)
    return np.mean([post2[i, y[i]] for i in range(n)]), lam


@pytest.mark.parametrize("n_per,d,scale", [(5, 3, 1.0), (5, 3, 0.15), (3, 12, 0.15)])
def test_sfda_matches_the_fisher_space_reference(n_per, d, scale):
    """(3, 12): N = 9 < D, S_w has rank 6, the shrinkage carries the rest."""
    x, y = _blobs(n_per, d, 3, 1.5, RNG, scale)
    ref, lam = _sfda_reference(x, y)
    res = T.sfda_result(x, y)
    assert res.shrinkage == pytest.approx(lam, rel=1e-12)
    assert res.value == pytest.approx(ref, abs=1e-10)
    assert 0 < res.value < 1


def test_sfda_power_iterations_converge_to_exact():
    x, y = _blobs(8, 4, 3, 1.0, RNG, 0.2)
    exact = T.sfda_result(x, y)
    approx = T.sfda_result(x, y, power_iterations=200)
    assert approx.sigma_max == pytest.approx(exact.sigma_max, rel=1e-10)


# ---------------------------------------------------------------- GBC


def test_gbc_two_classes_closed_form():
    x = np.array([[0.0], [2.0], [5.0], [7.0], [9.0]])
    y = np.array([0, 0, 1, 1, 1])
    m0, v0 = 1.0, 1.0
    m1, v1 = 7.0, 8.0 / 3.0  # population variance of 5, 7, 9
    db = (m0 - m1) ** 2 / (4 * (v0 + v1)) + 0.5 * np.log((v0 + v1) / 2 / np.sqrt(v0 * v1))
    assert T.gbc(x, y) == pytest.approx(-2 * np.exp(-db), rel=1e-13)
    assert T.gbc(x, y, gaussian="spherical") == pytest.approx(-2 * np.exp(-db), rel=1e-13)


@pytest.mark.parametrize("gaussian", ["diagonal", "spherical"])
def test_gbc_matches_multivariate_bhattacharyya(gaussian):
    x, y = _blobs(6, 3, 3, 1.0, RNG)
    stats = []
    for k in range(3):
        xk = x[y == k]
        var = xk.var(0)
        cov = np.diag(var) if gaussian == "diagonal" else var.mean() * np.eye(3)
        stats.append((xk.mean(0), cov))
    total = 0.0
    for (m1, s1), (m2, s2) in itertools.permutations(stats, 2):
        s = (s1 + s2) / 2
        dm = m1 - m2
        db = dm @ np.linalg.solve(s, dm) / 8 + 0.5 * np.log(
            np.linalg.det(s) / np.sqrt(np.linalg.det(s1) * np.linalg.det(s2))
        )
        total += np.exp(-db)
    assert T.gbc(x, y, gaussian=gaussian) == pytest.approx(-total, rel=1e-12)


def test_gbc_reduces_wide_features_with_pca_first():
    x, y = _blobs(8, 6, 3, 1.0, RNG)
    xc = x - x.mean(0)
    _, evecs = np.linalg.eigh(xc.T @ xc)
    scores = xc @ evecs[:, ::-1][:, :3]  # top-3 principal components
    for g in ("spherical", "diagonal"):
        assert T.gbc(x, y, gaussian=g, n_dims=3) == pytest.approx(
            T.gbc(scores, y, gaussian=g, n_dims=None), rel=1e-12
        )
    q, _ = np.linalg.qr(RNG.normal(size=(6, 6)))  # spherical: rotation invariant
    assert T.gbc(x @ q, y, n_dims=None) == pytest.approx(T.gbc(x, y, n_dims=None), rel=1e-12)
    assert T.gbc(x, y, n_dims=6) == T.gbc(x, y, n_dims=None)  # D ≤ n_dims: untouched


def test_gbc_separated_classes_near_zero():
    x, y = _blobs(10, 2, 3, 200.0, RNG)
    assert -1e-12 < T.gbc(x, y) <= 0.0


# ---------------------------------------------------------------- PARC


def test_parc_against_pairwise_spearman():
    x, y = _blobs(4, 5, 3, 1.0, RNG)
    n = len(y)
    z = (x - x.mean(0)) / x.std(0)
    onehot = np.eye(3)[y]
    fa, fb = [], []
    for i, j in itertools.combinations(range(n), 2):
        fa.append(1 - np.corrcoef(z[i], z[j])[0, 1])
        fb.append(0.0 if y[i] == y[j] else 1 - np.corrcoef(onehot[i], onehot[j])[0, 1])
    ref = spearmanr(fa, fb).statistic
    assert T.parc(x, y, n_dims=None) == pytest.approx(ref, abs=1e-12)


def test_parc_pca_then_standardise():
    x, y = _blobs(5, 6, 2, 1.0, RNG)
    xc = x - x.mean(0)
    evals, evecs = np.linalg.eigh(xc.T @ xc)
    w = evecs[:, ::-1][:, :3]  # top-3 principal directions
    w = w * np.sign(w[np.argmax(np.abs(w), axis=0), np.arange(3)])  # sklearn's signs
    p = xc @ w
    assert T.parc(x, y, n_dims=3) == pytest.approx(T.parc(p, y, n_dims=None), abs=1e-12)
    # the signs matter: PARC centres each row over its entries
    assert T.parc(p * [1, -1, 1], y, n_dims=None) != pytest.approx(T.parc(p, y, n_dims=None))


def test_parc_is_one_when_features_are_the_labels():
    y = np.repeat(np.arange(4), 5)
    assert T.parc(np.eye(4)[y] * 3.0 + 1.0, y, n_dims=None) == pytest.approx(1.0, abs=1e-12)


# ---------------------------------------------------------------- TransRate


def test_transrate_one_dimensional_closed_form():
    z = np.array([-3.0, -1.0, 1.0, 3.0, 0.0, 0.0])
    y = np.array([0, 0, 1, 1, 2, 2])
    eps = 0.5
    zc = z - z.mean()
    r = 0.5 * np.log(1 + np.sum(zc**2) / (6 * eps))
    rc = [0.5 * np.log(1 + np.sum(zc[y == k] ** 2) / (2 * eps)) for k in range(3)]
    assert T.transrate(z[:, None], y, eps=eps) == pytest.approx(r - np.mean(rc), rel=1e-13)


@pytest.mark.parametrize("n,d", [(30, 4), (9, 12)])
def test_transrate_against_slogdet(n, d):
    x = RNG.normal(size=(n, d))
    y = np.arange(n) % 3
    z = x - x.mean(0)

    def rate(m):
        return 0.5 * np.linalg.slogdet(np.eye(d) + m.T @ m / (len(m) * 1e-4))[1]

    ref = rate(z) - sum(rate(z[y == k]) for k in range(3)) / 3
    assert T.transrate(x, y) == pytest.approx(ref, rel=1e-11)


# ---------------------------------------------------------------- NCTI


def test_ncti_collapsed_classes_closed_form():
    """Classes collapsed onto far-apart points: p(y|x) is one-hot, so
    S_ncc = 1 and ‖P_c‖_* = √n_c (a rank-one n_c × C matrix of unit rows)."""
    counts = [6, 8, 10]
    y = np.repeat(np.arange(3), counts)
    centres = np.array([[0.0, 0, 0, 0], [40, 0, 0, 0], [0, 40, 0, 0]])
    x = centres[y] + 1e-3 * RNG.normal(size=(len(y), 4))
    r = T.ncti_result(x, y)
    assert r.ncc == pytest.approx(1.0, abs=1e-9)
    assert r.vc == pytest.approx(np.log(sum(np.sqrt(counts))), abs=1e-9)
    assert r.value == pytest.approx(r.seli + r.ncc - r.vc, rel=1e-14)


def test_ncti_parts_match_an_explicit_pipeline():
    from sklearn.decomposition import PCA
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

    x, y = _blobs(12, 5, 3, 0.5, RNG, 0.1)  # small variance: shrinkage > floor
    p = PCA(n_components=5, svd_solver="full").fit(x)
    lam = np.exp(-p.explained_variance_[:32].sum())
    clf = LinearDiscriminantAnalysis(solver="eigen", shrinkage=lam).fit(p.transform(x), y)
    h = clf.transform(p.transform(x))
    post = clf.predict_proba(p.transform(x))
    r = T.ncti_result(x, y)
    assert r.shrinkage == pytest.approx(lam, rel=1e-10)
    assert r.seli == pytest.approx(np.linalg.svd(h - h.mean(0), compute_uv=False).sum(), rel=1e-8)
    assert r.ncc == pytest.approx(np.mean(post[np.arange(len(y)), y]), rel=1e-10)
    vc = np.log(sum(np.linalg.svd(post[y == k], compute_uv=False).sum() for k in range(3)))
    assert r.vc == pytest.approx(vc, rel=1e-10)


def test_ncti_combine_minmax():
    out = T.ncti_combine([1.0, 3.0, 2.0], [0.5, 0.7, 0.9], [2.0, 1.0, 3.0])
    np.testing.assert_allclose(out, [0.0 + 0.0 - 0.5, 1.0 + 0.5 - 0.0, 0.5 + 1.0 - 1.0])


# ---------------------------------------------------------------- ETran


def test_etran_energy_closed_form():
    x = np.repeat(np.arange(400.0)[:, None], 3, axis=1)  # row i: (i, i, i)
    en, m = T.etran_energy(x, fraction=0.005)
    assert m == 2  # ⌊0.005·400⌋
    assert en == pytest.approx(0.5 + np.log(3), rel=1e-14)  # mean of i + log 3 over i = 0, 1
    assert T.etran_energy(x, fraction=1.0)[0] == pytest.approx(199.5 + np.log(3), rel=1e-14)


@pytest.mark.parametrize("covariance,n_per,d", [("lda", 7, 3), ("identity", 7, 3), ("lda", 2, 9)])
def test_etran_classification_against_gaussian_densities(covariance, n_per, d):
    x, y = _blobs(n_per, d, 3, 0.8, RNG, 0.3)
    pri = np.bincount(y) / len(y)
    mu = np.array([x[y == k].mean(0) for k in range(3)])
    if covariance == "identity":
        cov = np.eye(d)
    else:
        sw = sum(p * np.cov(x[y == k].T, bias=True) for k, p in enumerate(pri))
        lam = max(np.exp(-5 * np.linalg.eigvalsh(sw)[-1]), 1e-10)
        cov = (1 - lam) * sw + lam * np.trace(sw) / d * np.eye(d)
    logp = np.stack(
        [multivariate_normal(mu[k], cov).logpdf(x) + np.log(pri[k]) for k in range(3)], axis=1
    )
    post = np.exp(logp - logsumexp(logp, axis=1, keepdims=True))
    ref = np.mean(post[np.arange(len(y)), y])
    assert T.etran_classification(x, y, covariance=covariance)[0] == pytest.approx(ref, abs=1e-12)
    r = T.etran_result(x, y, covariance=covariance, fraction=1.0)
    assert r.value == pytest.approx(r.energy + r.classification, rel=1e-14)


def test_etran_combine_weights():
    out = T.etran_combine([1.0, 2.0, 3.0], [0.9, 0.1, 0.5])
    np.testing.assert_allclose(out, 0.15 * np.array([0, 0.5, 1]) + 0.85 * np.array([1, 0, 0.5]))


# ---------------------------------------------------------------- registry, validation

NEW = ("sfda", "gbc", "parc", "transrate", "ncti", "etran")


def test_registered_higher_is_better_and_in_score_all():
    x, y = _blobs(10, 4, 3, 1.0, RNG)
    out = T.score_all(x, y, metrics=list(NEW))
    for name in NEW:
        assert T.METRICS[name].sign == +1 and T.METRICS[name].needs == ("features",)
        assert out[name] == pytest.approx(getattr(T, name)(x, y), rel=1e-12)


@pytest.mark.parametrize("name", NEW)
@pytest.mark.parametrize(
    "bad,arg",
    [
        ("nan", "features"),
        ("label_range", "labels"),
        ("length", "labels"),
        ("label_neg", "labels"),
    ],
)
def test_bad_input_names_argument(name, bad, arg):
    x, y = _blobs(6, 3, 3, 1.0, np.random.default_rng(0))
    if bad == "nan":
        x[2, 1] = np.nan
    elif bad == "label_range":
        y = y.copy()
        y[0] = 3
    elif bad == "length":
        y = y[:-1]
    else:
        y = y.copy()
        y[0] = -1
    with pytest.raises(ValueError, match=arg):
        getattr(T, name)(x, y, num_classes=3)


@pytest.mark.parametrize(
    "call,arg",
    [
        (lambda x, y: T.gbc(x, y, gaussian="full"), "gaussian"),
        (lambda x, y: T.gbc(x, y, n_dims=0), "n_dims"),
        (lambda x, y: T.parc(x, y, n_dims=0), "n_dims"),
        (lambda x, y: T.transrate(x, y, eps=-1.0), "eps"),
        (lambda x, y: T.etran(x, y, covariance="full"), "covariance"),
        (lambda x, y: T.etran(x, y, fraction=2.0), "fraction"),
        (lambda x, y: T.sfda(x, y, power_iterations=0), "power_iterations"),
        (lambda x, y: T.sfda(x, np.zeros_like(y)), "labels"),
        (lambda x, y: T.ncti_combine([1.0, 2.0], [1.0], [1.0, 2.0]), "ncc"),
    ],
)
def test_bad_knobs_name_argument(call, arg):
    x, y = _blobs(6, 3, 3, 1.0, np.random.default_rng(1))
    with pytest.raises(ValueError, match=arg):
        call(x, y)
