"""Loss-data study: the result's tables are the curves module's, on its curves."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mdlnb import curves
from mdlnb.curves import LossDataCurve
from mdlnb.studies import loss_data as study

SIZES = np.array([10, 20, 40, 80])


def _curve(name, rows):
    rows = np.asarray(rows, float)
    return LossDataCurve(name, SIZES, rows, np.full_like(rows, 0.5), (0, 1), num_classes=10)


def test_result_tables_and_files(tmp_path):
    a = _curve("pixels", [[2.0, 1.5, 1.0, 0.6], [2.1, 1.4, 1.1, 0.5]])
    b = _curve("enc", [[1.6, 1.4, 1.2, 1.1], [1.7, 1.3, 1.2, 1.1]])
    eps = (curves.Epsilon(0.7, "x"), curves.Epsilon(1.4, "2 x"))
    config = study.LossDataConfig(representations=["pixels", "enc"], seeds=2, eps_scales=[1, 2])
    refined = pd.DataFrame([{"representation": "pixels", "eps": 1.4}])
    r = study.LossDataResult(config, "pool", "test", {"pixels": 784, "enc": 32},
                             {"pixels": 0.0, "enc": 1.0}, {"pixels": 1.0, "enc": 1.0},
                             eps[0], eps, SIZES, (a, b), refined)
    want = curves.measure_table([a, b], list(eps), at=SIZES)
    assert r.measures().equals(want)
    assert r.rankings().equals(curves.rankings(want, spread=True))
    final = r.final()
    assert set(final["representation"]) == {"pixels", "enc"} and len(final) == len(
        want[want["n"] == 80])
    t = r.tables()
    assert list(t) == ["curves", "measures", "rankings", "winner_changes", "final", "esc_refined"]
    assert len(t["curves"]) == len(a.frame()) + len(b.frame())
    assert "tolerances used: [0.7, 1.4]" in r.describe()
    assert r.representations()["dim"].tolist() == [784, 32]
    names = sorted(p.name for p in r.save(tmp_path))
    assert "loss_data_measures.png" in names and "loss_data_esc_refined.csv" in names
    assert len(names) == 2 * 6 + 2


def test_config_checks():
    with pytest.raises(ValueError, match="representations"):
        study.LossDataConfig(representations=[])
    with pytest.raises(ValueError, match="early_stopping"):
        study.LossDataConfig(early_stopping=1.0)
