"""mdlnb.studies.beyond: its tables against direct library calls and a NumPy/SciPy
re-derivation (the regression code of one cell = mdlnb.evaluate's per order, LogME =
logme_regression on z-scored features, the calibration difference and its t-interval)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import mdlnb
from mdlnb.studies import beyond

CONFIG = beyond.BeyondConfig(
    image_size=80,
    resolution=32,
    layer="stage2",
    calibration_size=100,
    calibration_protocol="small",
    points=20,
)


@pytest.fixture(scope="module")
def result():
    return beyond.run(CONFIG)


def test_config_validation():
    with pytest.raises(ValueError, match="seeds"):
        beyond.BeyondConfig(seeds=[0, 1])
    with pytest.raises(ValueError, match="pool"):
        beyond.BeyondConfig(pool=0)
    with pytest.raises(ValueError, match="image_size"):
        beyond.BeyondConfig(image_size=1)
    assert beyond.Config is beyond.BeyondConfig


def test_pooled_pixels_is_a_block_mean():
    img = np.arange(2 * 4 * 4, dtype=np.uint8).reshape(2, 4, 4, 1)
    got = beyond.pooled_pixels(img, 2)
    want = (
        np.array(
            [
                [
                    img[0, :2, :2].mean(),
                    img[0, :2, 2:].mean(),
                    img[0, 2:, :2].mean(),
                    img[0, 2:, 2:].mean(),
                ]
            ]
        )
        / 255.0
    )
    np.testing.assert_allclose(got[:1], want, rtol=1e-6)
    with pytest.raises(ValueError, match="pool"):
        beyond.pooled_pixels(img, 3)


def test_regression_cell_equals_evaluate(result):
    reps = beyond.regression_representations(CONFIG)
    task, feats = reps["diabetes"]
    tab = result.regression().set_index(["task", "representation"])
    # a Task of the same targets (a regression task: the evaluate(task) form)
    t = task.replace(x=feats["pca2"])
    direct = [
        mdlnb.evaluate(t, protocol=CONFIG.regression_protocol, seed=s, progress=False).total_nats
        for s in CONFIG.seeds
    ]
    np.testing.assert_allclose(
        tab.loc[("diabetes", "pca2"), "total [nats]"], np.mean(direct), rtol=1e-6
    )
    np.testing.assert_allclose(
        tab.loc[("diabetes", "pca2"), "total std [nats]"], np.std(direct, ddof=1), rtol=1e-4
    )
    np.testing.assert_allclose(
        tab.loc[("diabetes", "pca2"), "per example [density nats]"],
        np.mean(direct) / task.n,
        rtol=1e-6,
    )
    # LogME: z-scored features, centred targets
    x = feats["pca2"].astype(np.float64)
    x = (x - x.mean(0)) / x.std(0)
    want = mdlnb.baselines.transfer.logme_regression(x, task.y - task.y.mean())
    np.testing.assert_allclose(
        tab.loc[("diabetes", "pca2"), "LogME [nats/example]"], want, rtol=1e-9
    )
    # ranks: 1..K within a task, LogME rank by descending evidence
    for _, g in result.regression().groupby("task"):
        assert sorted(g["rank"]) == list(range(1, len(g) + 1))
        assert list(g.sort_values("LogME rank")["LogME [nats/example]"]) == sorted(
            g["LogME [nats/example]"], reverse=True
        )


def test_along_n_ends_at_the_table(result):
    cur = result.along_n()
    tab = result.regression()
    for _, r in tab.iterrows():
        last = cur[
            (cur["task"] == r["task"])
            & (cur["representation"] == r["representation"])
            & (cur["n"] == r["n"])
        ]
        np.testing.assert_allclose(last["mean"].item(), r["per example [density nats]"], rtol=1e-6)


def test_calibration_interval_rederived(result):
    runs, tab = result.calibration_runs, result.calibration().set_index("representation")
    assert len(runs) == 2 * len(CONFIG.seeds)
    for rep, g in runs.groupby("representation"):
        d = (g["on [nats]"] - g["off [nats]"]).to_numpy()
        half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / math.sqrt(len(d))
        np.testing.assert_allclose(tab.loc[rep, "on - off [nats]"], d.mean(), rtol=1e-12)
        np.testing.assert_allclose(tab.loc[rep, "on - off 95% half-width [nats]"], half, rtol=1e-12)
        lo, hi = stats.t.interval(0.95, len(d) - 1, loc=d.mean(), scale=stats.sem(d))
        want = "shorter" if hi < 0 else "longer" if lo > 0 else "no separation"
        assert tab.loc[rep, "switching code"] == want
        np.testing.assert_allclose(
            tab.loc[rep, "on - off [bits/example]"],
            d.mean() / math.log(2) / g["n"].iloc[0],
            rtol=1e-12,
        )
    # one order's numbers from direct evaluate calls
    task = beyond.calibration_tasks(CONFIG)["pixels"]
    row = runs[(runs["representation"] == "pixels") & (runs["seed"] == CONFIG.seeds[0])].iloc[0]
    for cal, col in ((False, "off [nats]"), (True, "on [nats]")):
        r = mdlnb.evaluate(
            task,
            protocol=mdlnb.protocol("small", calibrate=cal),
            seed=CONFIG.seeds[0],
            progress=False,
        )
        np.testing.assert_allclose(row[col], r.total_nats, rtol=1e-9)


def test_findings_and_save(result, tmp_path):
    text = result.findings()
    assert "diabetes" in text and "Calibration" in text
    paths = result.save(tmp_path)
    names = {p.name for p in paths}
    assert {
        "beyond_regression.csv",
        "beyond_calibration.csv",
        "beyond_regression_codelengths.png",
        "beyond_calibration.png",
    } <= names
