"""Regression tasks of the registry: diabetes (scikit-learn, offline) and the dSprites
x / y / orientation regression variants, checked against the classification tasks'
own binning of the same factors."""

import numpy as np
import pytest

from mdlnb import data
from mdlnb.data import dsprites


def test_regression_tasks_are_listed_apart():
    reg = data.names(kind="regression")
    assert reg == ["dsprites_orientation_reg", "dsprites_x_reg", "dsprites_y_reg", "diabetes"]
    assert not set(reg) & set(data.names())  # the default listing is unchanged
    assert set(data.names(kind=None)) == set(reg) | set(data.names())
    table = data.info(kind="regression").set_index("name")
    assert (table["kind"] == "regression").all() and table.loc["diabetes", "n_train"] == 354
    with pytest.raises(ValueError, match="^kind"):
        data.names(kind="ordinal")


def test_diabetes_is_sklearns():
    from sklearn.datasets import load_diabetes

    ref = load_diabetes(scaled=False)
    tr, te = data.load("diabetes"), data.load("diabetes", split="test")
    assert (tr.n, te.n) == (354, 88) and tr.kind == "regression" and tr.x.shape[1:] == (10,)
    both = data.load("diabetes", split="all")
    order = np.lexsort(both.x.T)
    ref_order = np.lexsort(ref.data.T)
    np.testing.assert_allclose(both.x[order], ref.data[ref_order], rtol=1e-6)
    np.testing.assert_array_equal(both.y[order], ref.target[ref_order])
    sub = data.load("diabetes", size=100, seed=3)
    assert sub.n == 100 and np.isin(sub.y, tr.y).all()


@pytest.mark.parametrize("name", ["dsprites_x_reg", "dsprites_y_reg", "dsprites_orientation_reg"])
def test_dsprites_regression_targets_match_the_factors(name):
    kw = dict(n_train=300, n_test=100)
    reg_tr, reg_te = data.spec(name).build(seed=0, **kw)
    loc_tr, _ = dsprites.build_location(seed=0, **kw)
    ori_tr, _ = dsprites.build_orientation(seed=0, **kw)
    assert reg_tr.kind == "regression" and reg_te.n == 100
    np.testing.assert_array_equal(reg_tr.x, loc_tr.x)  # the same images
    if name == "dsprites_x_reg":  # binned like the classification task, the same labels
        np.testing.assert_array_equal(dsprites.location_bin(reg_tr.y, 64, 16), loc_tr.y)
    elif name == "dsprites_y_reg":
        m = dsprites.margin(64)
        assert reg_tr.y.min() >= m and reg_tr.y.max() <= 63 - m
        assert np.corrcoef(reg_tr.y, reg_tr.meta["factors"]["y"])[0, 1] == pytest.approx(1)
    else:  # (cos, sin) of the angle: the fraction of the period
        frac = np.mod(np.arctan2(reg_tr.y[:, 1], reg_tr.y[:, 0]) / (2 * np.pi), 1.0)
        bins = np.minimum((frac * 16 + 1e-9).astype(int), 15)
        assert np.mean(bins == ori_tr.y) > 0.99
        np.testing.assert_allclose(np.hypot(*reg_tr.y.T), 1.0)
