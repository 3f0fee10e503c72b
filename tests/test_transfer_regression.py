"""LogME's regression mode (You et al. 2021) against brute force, and as an independent
ranking check of MDL on a real regression task (issue 28): diabetes raw features vs
their top-2 principal components vs noise."""

import warnings

import numpy as np
import pytest
from scipy import stats

import mdlnb
from mdlnb import data
from mdlnb.baselines import transfer
from mdlnb.core._standardize import zscore


def _evidence_brute(f, y, alpha, beta):
    """log N(y; 0, FFᵀ/α + I/β): the marginal likelihood of Bayesian linear regression."""
    n = len(y)
    return stats.multivariate_normal(np.zeros(n), f @ f.T / alpha + np.eye(n) / beta).logpdf(y)


def test_logme_regression_is_the_maximised_evidence_per_column():
    rng = np.random.default_rng(0)
    f = rng.normal(size=(80, 5))
    y = np.c_[f @ rng.normal(size=5) + 0.3 * rng.normal(size=80), rng.normal(size=80) * 4]
    res = transfer.logme_regression_result(f, y)
    assert res.converged and res.evidence.shape == (2,)
    for p in range(2):
        a, b = res.alpha[p], res.beta[p]
        ev = _evidence_brute(f, y[:, p], a, b)
        assert res.evidence[p] == pytest.approx(ev, rel=1e-9)
        for da, db in ((1.3, 1), (1 / 1.3, 1), (1, 1.3), (1, 1 / 1.3)):  # a maximum
            assert _evidence_brute(f, y[:, p], a * da, b * db) < ev
    assert res.value == pytest.approx(res.evidence.mean() / 80)
    # one column at a time: the same numbers; (N,) targets are one column
    assert transfer.logme_regression(f, y[:, 0]) == pytest.approx(res.evidence[0] / 80)


def test_logme_regression_of_one_hot_columns_is_logme():
    """Classification LogME is the regression evidence of the one-hot columns."""
    rng = np.random.default_rng(1)
    f = rng.normal(size=(60, 4))
    y = rng.integers(0, 3, 60)
    assert transfer.logme_regression(f, np.eye(3)[y]) == pytest.approx(
        transfer.logme(f, y), rel=1e-12
    )


@pytest.mark.parametrize(
    "bad, arg", [(np.r_[np.nan, np.zeros(79)], "targets"), (np.zeros(7), "features and targets")]
)
def test_logme_regression_rejects_bad_targets(bad, arg):
    with pytest.raises(ValueError, match=f"^{arg}"):
        transfer.logme_regression(np.ones((80, 2)), bad)


def test_mdl_and_logme_rank_diabetes_representations_alike():
    """Three representations of diabetes: the 10 standardised features, their top-2
    principal components, 10 noise features. MDL (switching density code, mean of 3
    orders, lower is better) and LogME regression (targets centred, higher is better)
    must order them the same way: raw < PCA-2 < noise in codelength."""
    task = data.load("diabetes", split="all")
    x = zscore(task.x.astype(np.float64)).astype(np.float64)
    vt = np.linalg.svd(x, full_matrices=False)[2]
    reps = {"raw": x, "pca2": x @ vt[:2].T, "noise": np.random.default_rng(0).normal(size=x.shape)}
    logme = {k: transfer.logme_regression(f, task.y - task.y.mean()) for k, f in reps.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cmp = mdlnb.compare(
            {k: f.astype(np.float32) for k, f in reps.items()},
            task,
            experts="small",
            progress=False,
            cache=False,
        )
    tab = cmp.table().set_index("encoder")
    mdl = tab["total [nats]"].to_dict()
    print({k: round(v / task.n, 4) for k, v in mdl.items()}, logme)
    by_mdl = sorted(reps, key=lambda k: mdl[k])
    by_logme = sorted(reps, key=lambda k: -logme[k])
    assert by_mdl == by_logme == ["raw", "pca2", "noise"]
