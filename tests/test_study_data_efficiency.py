"""Data-efficiency study: crossings, regret frames and claims against hand computations."""

import math

import numpy as np
import pytest

from mdlnb.studies import data_efficiency as de


def test_zero_crossing_by_hand():
    assert de.zero_crossing([0, 0, -1, -2, 1, 3]) == 5  # n = 5 onwards positive
    assert math.isnan(de.zero_crossing([0, 0, -1, -2, -3]))  # never changes sign
    assert math.isnan(de.zero_crossing([0, 1, 2]))
    assert de.zero_crossing([1, -1, 1, -1, -2]) == 4
    assert math.isnan(de.zero_crossing([1, -1, 0]))  # ends at zero: no sign
    with pytest.raises(ValueError, match="cumulative"):
        de.zero_crossing([])


def _steps(n=100, seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(1, n + 1)
    scratch = 2.0 / np.sqrt(t) + 0.05 * rng.random(n)  # learns slowly, ends best
    return {
        "linear probe": np.full(n, 0.5) + 0.01 * rng.random(n),  # good early, flat
        "deep MLP": 0.3 + 1.0 / t,
        "fine-tuned": 1.5 / np.sqrt(t),
        de.SCRATCH: scratch,
    }


def test_regret_frames_against_numpy():
    p = _steps()
    curves, summary = de.regret_frames(p, task="t", domain="out-of-domain", seed=3, points=20)
    lin = curves[curves["method"] == "linear probe"]
    want = np.cumsum(p["linear probe"] - p[de.SCRATCH])
    np.testing.assert_allclose(lin["regret [nats]"], want[lin["n"].to_numpy() - 1], rtol=1e-12)
    row = summary.set_index("method").loc["linear probe"]
    assert row["regret [nats]"] == pytest.approx(want[-1])
    assert row["nats per example"] == pytest.approx(p["linear probe"].sum() / 100)
    first = np.flatnonzero(np.sign(want) != np.sign(want[-1]))[-1] + 2
    assert row["crossing n"] == first
    assert summary.set_index("method").loc[de.SCRATCH, "regret [nats]"] == 0
    assert de.regret_at(p, "fine-tuned", 10) == pytest.approx(
        np.sum(p["fine-tuned"][:10] - p[de.SCRATCH][:10])
    )


def test_claims_decided_from_the_curves():
    runs = [("t", "out-of-domain", s, _steps(seed=s)) for s in range(3)]
    e1, e2, e3 = de.claims(runs, early=5)
    # e1 by hand: per run, the mean of the probe's and the MLP's relative advantage at n = 5
    adv = [
        np.mean(
            [
                (p[de.SCRATCH][:5].sum() - p[m][:5].sum()) / p[de.SCRATCH][:5].sum()
                for m in ("linear probe", "deep MLP")
            ]
        )
        for *_, p in runs
    ]
    assert e1.estimate == pytest.approx(np.mean(adv)) and e1.n == 1  # one task: no interval
    assert e1.direction == "undetermined" and "1 tasks: no interval" in e1.our_value
    # e2: from scratch (2/√t) overtakes the flat probe (0.5); the crossing by hand
    lead = [
        (
            np.cumsum(p["linear probe"])
            - np.minimum(np.cumsum(p[de.SCRATCH]), np.cumsum(p["fine-tuned"]))
        )
        for *_, p in runs
    ]
    assert e2.estimate == pytest.approx(np.mean([d[-1] / 100 for d in lead]))
    assert (e2.direction, e2.n, e2.unit) == ("replicated", 3, "orders")
    first = [np.flatnonzero(d <= 0)[-1] + 2 for d in lead]
    assert e2.our_value.startswith(f"crossing at n = {', '.join(str(f) for f in first)} in 3/3")
    # scratch better from the start: the frozen readouts are behind early, reversed
    flat = [
        (t, "out-of-domain", s, {**_steps(seed=s), de.SCRATCH: np.full(100, 0.1)})
        for s in range(3)
        for t in ("a", "b", "c")
    ]
    e1, e2, e3 = de.claims(flat, early=5)
    assert e1.direction == "reversed" and e1.n == 3
    assert e2.direction == "replicated" and e2.our_value.startswith("crossing at n = ")
    # the probe never overtaken: "no crossing up to N" is the result
    never = [
        (
            "t",
            "out-of-domain",
            s,
            {**_steps(seed=s), de.SCRATCH: np.full(100, 3.0), "fine-tuned": np.full(100, 3.0)},
        )
        for s in range(3)
    ]
    e2 = de.claims(never, early=5)[1]
    assert e2.direction == "reversed"
    assert e2.our_value.startswith("no crossing up to N = 100 in any of 3 orders")


def test_result_tables_findings_and_save(tmp_path):
    config = de.DataEfficiencyConfig(seeds=[0, 1], early=5, points=20)
    domains = {"a": "in-domain", "b": "out-of-domain"}
    runs = tuple(
        (enc, name, domain, s, _steps(seed=s + 10 * i + 100 * j))
        for j, enc in enumerate(("enc1", "enc2"))
        for i, (name, domain) in enumerate(domains.items())
        for s in (0, 1)
    )
    r = de.DataEfficiencyResult(
        config,
        {"enc1": 8, "enc2": 8},
        domains,
        {"a": "task a", "b": "task b"},
        {"a": 10, "b": 4},
        runs,
    )
    t = r.tables()
    reg = t["regret"].set_index(["encoder", "domain", "method"])
    want = [
        np.sum(p["deep MLP"] - p[de.SCRATCH])
        for e, _, d, _, p in runs
        if d == "in-domain" and e == "enc2"
    ]
    assert reg.loc[("enc2", "in-domain", "deep MLP"), "mean"] == pytest.approx(np.mean(want))
    assert len(t["codelengths"]) == 8 * len(de.METHODS)
    assert "enc1, a (in-domain), deep MLP: regret at N" in r.findings()
    assert [c.id for c in r.claims()] == ["e1", "e2", "e3"]
    assert r.claims()[0].n == 2  # tasks as units
    assert dict((a, t) for a, _, t in r.setting())["orders"] == "2 per (encoder, task)"
    names = sorted(p.name for p in r.save(tmp_path))
    assert names == [
        "data_efficiency_codelengths.csv",
        "data_efficiency_codelengths.md",
        "data_efficiency_regret.csv",
        "data_efficiency_regret.md",
        "data_efficiency_regret.png",
    ]


def test_config_checks_and_matches_the_notebook():
    from mdlnb.tools import runner

    with pytest.raises(ValueError, match="task_size"):
        de.DataEfficiencyConfig(task_size=1)
    with pytest.raises(ValueError, match="mlp_layers"):
        de.DataEfficiencyConfig(mlp_layers=[])
    defaults = runner.notebook_parameters("data_efficiency")
    config = de.DataEfficiencyConfig()
    for f in config.to_dict():
        want = defaults[f]
        assert getattr(config, f) == (tuple(want) if isinstance(want, list) else want), f


def test_e3_fine_tuning_overtakes_the_frozen_readouts_in_domain():
    # fine-tuning 1.5/√t against the probe's flat 0.5 and the MLP's 0.3 + 1/t: by hand
    runs = [("t", "in-domain", s, _steps(seed=s)) for s in range(3)]
    e3 = de.claims(runs, early=5)[2]
    lead = [
        np.minimum(np.cumsum(p["linear probe"]), np.cumsum(p["deep MLP"]))
        - np.cumsum(p["fine-tuned"])
        for *_, p in runs
    ]
    assert e3.estimate == pytest.approx(np.mean([d[-1] / 100 for d in lead]))
    assert e3.unit == "orders" and e3.n == 3
    crossed = [d[-1] > 0 for d in lead]
    assert e3.our_value.startswith("crossing at n" if any(crossed) else "no crossing up to N")
