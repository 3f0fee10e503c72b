"""Degenerate features in the transferability study (EfficientNet-Lite at 32 px has
all-zero feature rows): a metric that refuses them is NaN for that checkpoint, every
other metric keeps the value the library gives on its own."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mdlnb.baselines import labelfree, transfer
from mdlnb.studies.transferability._config import TransferabilityConfig
from mdlnb.studies.transferability._scores import (
    _across_encoders,
    combined_terms,
    label_free_scores,
)
from mdlnb.studies.transferability._unit import _registry_scores

Y = np.repeat(np.arange(2), 10)
METRICS = ["sfda", "logme", "hscore"]


def test_a_refusing_metric_is_nan_and_the_others_keep_their_values():
    zero = np.zeros((20, 8), np.float32)
    with pytest.raises(ValueError, match="within-class covariance is zero"):
        transfer.score_all(zero, Y, None, num_classes=2, metrics=["sfda"], seed=0)
    got = _registry_scores(zero, Y, None, 2, METRICS, 0, TransferabilityConfig())
    assert np.isnan(got["sfda"])
    for m in ("logme", "hscore"):
        alone = transfer.score_all(zero, Y, None, num_classes=2, metrics=[m], seed=0)[m]
        assert got[m] == alone
    assert got["hscore"] == 0.0  # no feature varies: nothing is explained


def test_healthy_features_take_the_one_call_path():
    g = np.random.default_rng(0).normal(size=(20, 8)).astype(np.float32)
    got = _registry_scores(g, Y, None, 2, METRICS, 0, TransferabilityConfig())
    assert got == transfer.score_all(g, Y, None, num_classes=2, metrics=METRICS, seed=0)
    assert np.isfinite(list(got.values())).all()


def test_label_free_scores_on_zero_rows():
    g = np.random.default_rng(1).normal(size=(20, 8)).astype(np.float32)
    h = g.copy()
    h[:3] = 0.0
    with pytest.raises(ValueError, match="zero norm"):
        labelfree.cluster_learnability(h, 0)
    bad, good = label_free_scores(h), label_free_scores(g)
    assert np.isnan(bad["cl"]) and np.isfinite(good["cl"])
    assert bad["twonn_id"] == labelfree.twonn_id(h)  # 18 distinct rows: TwoNN is defined
    assert np.isnan(label_free_scores(np.zeros((20, 8)) + (np.arange(20) % 2)[:, None])["twonn_id"])
    with pytest.raises(ValueError, match="all-zero"):
        labelfree.rankme(np.zeros((20, 8)))
    assert np.isnan(list(label_free_scores(np.zeros((20, 8))).values())).all()
    assert bad["rankme"] == labelfree.rankme(h)


def test_clid_is_combined_over_the_checkpoints_where_both_terms_are_finite():
    cl = [0.2, np.nan, 0.6, 0.4]
    tid = [5.0, 6.0, 7.0, 9.0]
    rows = [
        dict(zoo="z", encoder=f"e{i}", task="t", ratio=2, n=20, repeat=0, metric=m, value=v)
        for i in range(4)
        for m, v in (("cl", cl[i]), ("twonn_id", tid[i]))
    ]
    out = _across_encoders(pd.DataFrame(rows), {"clid": (("cl", "twonn_id"), labelfree.clid)})
    got = out.set_index("encoder")["value"]
    want = labelfree.clid(np.array([0.2, 0.6, 0.4]), np.array([5.0, 7.0, 9.0]))
    assert np.isnan(got["e1"])
    np.testing.assert_array_equal(got[["e0", "e2", "e3"]].to_numpy(), want)


def test_combined_terms_are_nan_where_the_metric_refuses_and_exact_elsewhere():
    zero = np.zeros((20, 8), np.float32)
    with pytest.raises(ValueError, match="every feature is constant"):
        transfer.ncti_result(zero, Y, num_classes=2)
    got = combined_terms(zero, Y, 2, ["ncti"])
    assert set(got) == {"ncti_seli", "ncti_ncc", "ncti_vc"} and np.isnan(list(got.values())).all()
    g = np.random.default_rng(2).normal(size=(20, 8)).astype(np.float32)
    got = combined_terms(g, Y, 2, ["ncti", "etran"])
    r, e = transfer.ncti_result(g, Y, num_classes=2), transfer.etran_result(g, Y, num_classes=2)
    assert got == dict(
        ncti_seli=r.seli,
        ncti_ncc=r.ncc,
        ncti_vc=r.vc,
        etran_energy=e.energy,
        etran_cls=e.classification,
    )


def test_clid_table_1_rows_of_a_predictor_with_no_finite_value_are_nan():
    from mdlnb.studies.transferability._tables import clid_table_1

    src = pd.DataFrame(
        [
            dict(encoder=f"e{i}", metric=m, value=v, source_accuracy=a)
            for i, a in enumerate([0.5, 0.6, 0.8])
            for m, v in (("cl", np.nan), ("rankme", [3.0, 4.0, 9.0][i]))
        ]
    )
    t = clid_table_1(src).set_index("predictor")
    assert (
        t.loc["cl", "checkpoints"] == 0 and np.isnan(t.loc["cl", ["pearson", "kendall tau"]]).all()
    )
    assert t.loc["rankme", "kendall tau"] == 1.0
    assert t.loc["rankme", "pearson"] == pytest.approx(
        np.corrcoef([3, 4, 9], [0.5, 0.6, 0.8])[0, 1]
    )


def test_tau_bars_of_an_empty_summary_is_a_figure_that_says_so():
    import matplotlib

    matplotlib.use("Agg")
    from mdlnb.studies.transferability._figures import tau_bars

    fig = tau_bars(pd.DataFrame(columns=["zoo", "metric"]), title="t")
    assert "no zoo has enough checkpoints" in fig.axes[0].texts[0].get_text()
