"""Loss-data study: the result's tables are the curves module's, on its curves."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mdlnb.baselines import curves
from mdlnb.baselines.curves import LossDataCurve
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
    r = study.LossDataResult(
        config,
        "pool",
        "test",
        {"pixels": 784, "enc": 32},
        {"pixels": 0.0, "enc": 1.0},
        {"pixels": 1.0, "enc": 1.0},
        eps[0],
        eps,
        SIZES,
        (a, b),
        refined,
    )
    want = curves.measure_table([a, b], list(eps), at=SIZES)
    assert r.measures().equals(want)
    assert r.rankings().equals(curves.rankings(want, spread=True))
    final = r.final()
    assert set(final["representation"]) == {"pixels", "enc"} and len(final) == len(
        want[want["n"] == 80]
    )
    t = r.tables()
    assert list(t) == [
        "curves",
        "measures",
        "rankings",
        "winner_changes",
        "final",
        "esc_refined",
        "first_point",
    ]
    assert len(t["curves"]) == len(a.frame()) + len(b.frame())
    assert "tolerances used: [0.7, 1.4]" in r.describe()
    assert r.representations()["dim"].tolist() == [784, 32]
    names = sorted(p.name for p in r.save(tmp_path))
    assert "loss_data_measures.png" in names and "loss_data_esc_refined.csv" in names
    assert len(names) == 2 * 7 + 2


def test_config_checks():
    with pytest.raises(ValueError, match="representations"):
        study.LossDataConfig(representations=[])
    with pytest.raises(ValueError, match="early_stopping"):
        study.LossDataConfig(early_stopping=1.0)


# ---- claims q1–q3 and the first point ------------------------------------------------

GRID = np.array([10, 20, 40, 80, 160])


def _seeds(name, mean, spread, seeds=8, first=None):
    """A curve of ``seeds`` seeds: ``mean`` per size plus seed-wise offsets of ``spread``."""
    off = np.linspace(-spread, spread, seeds)[:, None]
    rows = np.asarray(mean, float)[None, :] + off
    if first is not None:
        rows[:, 0] = first
    return LossDataCurve(
        name, GRID, rows, np.full_like(rows, 0.5), tuple(range(seeds)), num_classes=10
    )


def test_claims_count_a_crossing_on_every_seed():
    quick = _seeds("quick", [1.5, 1.0, 0.9, 0.85, 0.8], 0.01)
    slow = _seeds("slow", [2.2, 1.8, 0.9, 0.5, 0.3], 0.01)
    q1, q2, q3 = study.claims([quick, slow], GRID, [curves.Epsilon(0.6)])
    assert (q1.id, q1.direction, q1.size, q1.estimate) == ("q1", "replicated", "consistent", 1.0)
    assert (q2.id, q2.direction, q2.size) == ("q2", "replicated", "consistent")
    assert "n = 20 and at n = 160" in q2.rule  # MDL: the second size (first is uniform)
    assert q3.kind == "check" and q3.direction == "passes"


def test_claims_reversed_without_a_crossing_and_noise_is_not_a_change():
    good = _seeds("good", [1.5, 1.0, 0.6, 0.4, 0.3], 0.01)
    bad = _seeds("bad", [2.0, 1.6, 1.2, 0.9, 0.8], 0.01)
    q1, q2, _ = study.claims([good, bad], GRID, [0.6])
    assert q1.estimate == 0.0 and q1.direction == "reversed" and q1.size == "smaller"
    assert q2.direction == "reversed"
    # a crossing smaller than the seed spread: no seed counts it
    a = _seeds("a", [1.50, 1.0, 0.8, 0.60, 0.5], 0.3)
    b = _seeds("b", [1.55, 1.0, 0.8, 0.55, 0.5], 0.3)
    q1, _, _ = study.claims([a, b], GRID, [0.6])
    assert q1.estimate == 0.0
    w = study.seed_winners([a, b], "VA", [10, 160])
    assert w["prefers"].str.startswith("tie").all()
    assert "tie (within the seed spread)" in set(w["prefers"])


def test_q3_fails_when_a_curve_leaves_the_tolerance_again():
    # SDL's winner can change only if a curve goes back above ε (the measures assume
    # monotone curves): the check catches it
    up = _seeds("up", [2.0, 0.2, 1.5, 1.5, 1.5], 0.0, seeds=3)
    down = _seeds("down", [2.3, 1.0, 0.3, 0.2, 0.2], 0.0, seeds=3)
    *_, q3 = study.claims([up, down], GRID, [1.0])
    assert q3.direction == "fails" and "SDL" in q3.our_value


def test_claims_reject_bad_input():
    a = _seeds("a", [1.5, 1.0, 0.9, 0.85, 0.8], 0.01)
    with pytest.raises(ValueError, match="curves"):
        study.claims([a], GRID, [0.6])
    with pytest.raises(ValueError, match="sizes"):
        study.claims([a, a], GRID[:2], [0.6])
    with pytest.raises(ValueError, match="seeds"):
        study.claims([a, _seeds("b", [1, 1, 1, 1, 1], 0.0, seeds=3)], GRID, [0.6])


def test_first_point_reads_the_chosen_checkpoints():
    log10 = np.log(10)
    a = _seeds("a", [1.0, 0.9, 0.8, 0.7, 0.6], 0.0, seeds=4)
    a = LossDataCurve(
        "a",
        GRID,
        np.c_[[log10, 5.0, log10, 3.0], a.loss[:, 1:]],
        np.c_[[0.1, 0.45, 0.1, 0.35], a.accuracy[:, 1:]],
        a.seeds,
        num_classes=10,
    )
    b = LossDataCurve(
        "b",
        GRID,
        np.c_[[4.0, 4.0, 4.0, 4.0], a.loss[:, 1:]],
        np.c_[[0.4, 0.4, 0.4, 0.4], a.accuracy[:, 1:]],
        a.seeds,
        num_classes=10,
    )
    config = study.LossDataConfig(representations=["a", "b"], seeds=4, early_stopping=0.1)
    eps = (curves.Epsilon(0.7),)
    r = study.LossDataResult(
        config, "pool", "test", {"a": 1, "b": 1}, {}, {}, eps[0], eps, GRID, (a, b), pd.DataFrame()
    )
    t = r.first_point().set_index("representation")
    assert t.loc["a", "held out"] == 1 and t.loc["a", "trained on"] == 9  # ⌈0.1 · 10⌉ = 1
    assert t.loc["a", "initial chosen"] == 2 and t.loc["b", "initial chosen"] == 0
    assert t.loc["a", "trained loss [nats]"] == pytest.approx(4.0)
    assert t.loc["a", "trained accuracy"] == pytest.approx(0.40)
    assert t.loc["a", "mean loss [nats]"] == pytest.approx((2 * log10 + 8.0) / 4)
    text = r.first_point_findings()
    assert "on 6 of 8 (representation, seed) curves" in text and "above the uniform" in text
    assert "log 10 = 2.30" in text
    assert [row[0] for row in r.setting()][:2] == ["data", "representations"]


def test_first_point_when_every_seed_keeps_the_uniform_code():
    log10 = np.log(np.float32(10))  # float32, as the curves store it
    a = _seeds("a", [1.0, 0.9, 0.8, 0.7, 0.6], 0.0, seeds=2, first=log10)
    config = study.LossDataConfig(representations=["a", "b"], seeds=2, early_stopping=0.1)
    eps = (curves.Epsilon(0.7),)
    r = study.LossDataResult(
        config, "pool", "test", {"a": 1, "b": 1}, {}, {}, eps[0], eps, GRID, (a, a), pd.DataFrame()
    )
    text = r.first_point_findings()
    assert text.startswith("The curves start at 2.30 nats, at the uniform code's log 10")
    assert "on every seed the initial, uniform checkpoint wins" in text
