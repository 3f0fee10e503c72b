"""Switching study: closed forms against the forward pass and brute force."""

import dataclasses
import itertools
import math

import numpy as np
import pytest
from scipy import stats
from scipy.special import logsumexp

from mdlnb import switching
from mdlnb.studies import switching_strategies as study


def _losses(n=40, k=3, seed=0):
    rng = np.random.default_rng(seed)
    L = rng.exponential(1.0, size=(n, k)).astype(np.float32)
    L[n // 2 :, 0] += 1.5  # expert 0 good early, bad late: switching matters
    L[: n // 2, 1] += 1.5
    return L


@pytest.mark.parametrize(
    "strategy",
    [
        switching.FixedShare(m=3),
        switching.FixedShare(alpha=0.2),
        switching.BayesianMixture(),
        switching.ElementwiseMixture(),
    ],
)
def test_never_switch_cost_is_the_forward_pass_on_one_path(strategy):
    # Expert 0 has loss 0, the others +inf: the codelength is -log p(ξ_1..t = 0).
    n, k = 12, 4
    L = np.full((n, k), np.inf, np.float32)
    L[:, 0] = 0.0
    want = np.cumsum(switching.codelength(L, strategy, posterior=False).per_step_nats)
    curve = switching.never_switch_curve(strategy, n, k)
    np.testing.assert_allclose(curve, want, rtol=1e-5)
    # its end point is the library's regret bound (mdlnb.switching.never_switch_cost)
    for t in (1, 5, n):
        assert curve[t - 1] == pytest.approx(switching.never_switch_cost(strategy, t, k), rel=1e-9)


def test_never_switch_cost_by_hand():
    # fixed share m = 3, K = 2: α_2 = 1, α_3 = 2/3 → stay 1/2, then 2/3.
    c = switching.never_switch_curve(switching.FixedShare(m=3), 3, 2)
    np.testing.assert_allclose(c, [math.log(2), math.log(4), math.log(4) + math.log(1.5)])
    with pytest.raises(ValueError, match="strategy"):
        switching.never_switch_curve(switching.SwitchDistribution(), 3, 2)


def test_best_sequence_loss_brute_force():
    L = _losses(n=7, k=3, seed=1)
    brute = np.full(4, np.inf)
    for seq in itertools.product(range(3), repeat=7):
        s = sum(a != b for a, b in zip(seq, seq[1:]))
        tot = float(sum(L[t, e] for t, e in enumerate(seq)))
        for j in range(s, 4):
            brute[j] = min(brute[j], tot)
    np.testing.assert_allclose(study.best_sequence_loss(L, 3), brute, rtol=1e-6)


def test_regret_curves_and_bound():
    L = _losses()
    strats = {
        k: v for k, v in study.strategies(m=3).items() if k in (study.BASELINE, "Bayesian mixture")
    }  # one compile each: keep it to two
    df = study.regret_curves(L, strats, points=50)
    assert set(df["strategy"]) == set(strats)
    assert np.all(df.loc[df["strategy"] == study.BASELINE, "regret [nats]"] == 0)
    bm = df[(df["strategy"] == "Bayesian mixture") & (df["n"] == len(L))][
        "codelength [nats]"
    ].item()
    tot = L.sum(axis=0, dtype=np.float64)
    assert bm == pytest.approx(-logsumexp(-tot) + math.log(3), rel=1e-5)
    b = study.bound_curves(L, switching.FixedShare(m=3), points=50)
    assert np.all(b["regret [nats]"] <= b["bound [nats]"] + 1e-4)
    assert b["n"].iloc[-1] == len(L)


def test_sensitivity_alpha_zero_is_bayes():
    L = _losses()
    df = study.sensitivity(L, ms=[1, 3], alphas=[0.0, 0.5])
    bm = switching.codelength(L, switching.BayesianMixture(), posterior=False).total_nats
    got = df.set_index(["rate", "value"])["codelength [nats]"]
    assert got[("constant α", 0.0)] == pytest.approx(bm, rel=1e-6)
    assert got[("m", 1.0)] == pytest.approx(bm, rel=1e-6)  # α_t = 0
    best = L.sum(axis=0, dtype=np.float64).min()
    np.testing.assert_allclose(df["regret to best expert [nats]"], df["codelength [nats]"] - best)


def test_switch_counts_by_hand():
    P = np.array([[0.6, 0.3, 0.1], [0.2, 0.7, 0.1], [0.1, 0.3, 0.6], [0.1, 0.2, 0.7]])
    df = study.switch_counts(P, points=4)
    assert list(df["map switches"]) == [0, 1, 2, 2]
    np.testing.assert_allclose(df["tv"], [0, 0.4, 0.5, 0.1])
    g = study.switch_counts(P, ["a", "b", "b"], points=4)  # b = experts 1 + 2
    assert list(g["map switches"]) == [0, 1, 1, 1]


def _pair(seed, final):
    """A PairResult with hand-made frames: ``final`` = each strategy's regret at n = N = 100."""
    import pandas as pd

    regret = pd.DataFrame(
        [
            {
                "n": n,
                "strategy": s,
                "codelength [nats]": 50.0 + v * n / 100,
                "regret [nats]": v * n / 100,
            }
            for s, v in final.items()
            for n in (1, 100)
        ]
    )
    bound = pd.DataFrame({"n": [1, 100], "regret [nats]": [0.0, 3.0], "bound [nats]": [1.0, 5.0]})
    seq = pd.DataFrame(
        {
            "switches": [0, 1],
            "best sequence [nats]": [48.0, 45.0],
            "regret [nats]": [2.0, 5.0],
            "bound [nats]": [9.0, 9.0],
        }
    )
    return study.PairResult("p", seed, 100, 3, 10, 2.0, regret, None, bound, seq, None)


def test_claims_from_frames():
    good = {
        "fixed share": 0.0,
        "Bayesian mixture": 20.0,
        "elementwise mixture": 30.0,
        "switch distribution": 1.0,
        "run-length": 2.0,
    }
    results = [_pair(0, good), _pair(1, {**good, "switch distribution": -2.0})]
    cl = study.final_codelengths(results)
    assert list(cl["nats per example"]) == pytest.approx(list(cl["codelength [nats]"] / 100))
    b1, b2, c1, c2 = study.claims(results)
    # one task ("p"): no interval over tasks, but the numbers by hand: fixed share 50 nats,
    # mixtures 70 and 80 → ½(20 + 30)/50 = 0.5; switch distribution 1 or 2 away from 20
    assert b1.estimate == pytest.approx(0.5) and b1.n == 1 and b1.direction == "undetermined"
    assert b2.estimate == pytest.approx(1 - (1 / 20 + 2 / 20) / 2)
    assert (c1.kind, c1.direction, c2.direction) == ("check", "passes", "passes")
    assert c1.our_value == "max ratio per run 0.598, 0.598"  # (3 - 0.01) / 5

    # three tasks: a t interval over tasks
    def on(task, seed, final):
        return dataclasses.replace(_pair(seed, final), pair=f"enc/{task}")

    many = [
        on(t, s, {**good, "Bayesian mixture": 20.0 + 5 * i})
        for i, t in enumerate(("a", "b", "c"))
        for s in (0, 1)
    ]
    b1, b2, _, _ = study.claims(many)
    per_task = [(20 + 5 * i + 30) / 2 / 50 for i in range(3)]
    lo, hi = stats.t.interval(0.95, 2, np.mean(per_task), stats.sem(per_task))
    assert (b1.estimate, b1.ci_low, b1.ci_high) == pytest.approx((np.mean(per_task), lo, hi))
    assert (b1.direction, b1.size, b1.n) == ("replicated", "larger", 3)
    bad = [
        on(t, 0, {**good, "Bayesian mixture": -1.0, "elementwise mixture": -2.0})
        for t in ("a", "b", "c")
    ]
    b1, _, _, _ = study.claims(bad)
    assert b1.direction == "reversed"


def _real_pair(seed):
    """A PairResult from run_pair's frames on a hand-made loss matrix (no stage 1)."""
    import pandas as pd

    L = _losses(n=60, seed=seed)
    fs = switching.FixedShare(m=3)
    res = switching.codelength(L, fs, posterior=True)
    best = study.best_sequence_loss(L, 2)
    seq = pd.DataFrame(
        {
            "switches": np.arange(3),
            "best sequence [nats]": best,
            "regret [nats]": res.total_nats - best,
            "bound [nats]": float(study.fixed_share_bound(60, 3, 3)),
        }
    )
    return study.PairResult(
        "pixels/t",
        seed,
        60,
        3,
        4,
        3.0,
        study.regret_curves(L, study.strategies(3), points=20),
        study.sensitivity(L, ms=(2, 3), alphas=(0.1,)),
        study.bound_curves(L, fs, points=20),
        seq,
        study.switch_counts(res.posterior, ["a", "b", "b"], points=20),
    )


def test_result_tables_figures_and_save(tmp_path):
    results = tuple(_real_pair(s) for s in (0, 1, 2))
    config = study.SwitchingConfig(
        pairs=["pixels/t"], seeds=[0, 1, 2], m=3, ms=[2, 3], alphas=[0.1], points=20
    )
    r = study.SwitchingResult(config, results, {"pixels/t": 5})
    t = r.tables()
    assert set(t) == {"codelengths", "final_regret", "sensitivity", "sequence", "frequency"}
    fin = t["final_regret"].set_index("strategy")
    want = [
        float(
            p.regret.query("n == 60").set_index("strategy").loc["Bayesian mixture", "regret [nats]"]
        )
        for p in results
    ]
    assert fin.loc["Bayesian mixture", "mean"] == pytest.approx(np.mean(want))
    assert fin.loc["Bayesian mixture", "std"] == pytest.approx(np.std(want, ddof=1))
    sw = [int(p.switches["map switches"].iloc[-1]) for p in results]
    assert t["frequency"]["mean"].iloc[0] == pytest.approx(np.mean(sw))
    assert "pixels/t: Bayesian mixture" in r.regret_findings()
    assert "≤2-switch sequence" in r.bound_findings()
    assert [c.id for c in r.claims()] == ["b1", "b2", "c1", "c2"]
    paths = r.save(tmp_path)
    names = sorted(p.name for p in paths)
    assert "switching_regret.png" in names and "switching_final_regret.csv" in names
    assert len(names) == 2 * 5 + 3


def test_config_checks_and_matches_the_notebook():
    from mdlnb.tools import runner

    with pytest.raises(ValueError, match="pairs"):
        study.SwitchingConfig(pairs=["digits"])
    with pytest.raises(ValueError, match="seeds"):
        study.SwitchingConfig(seeds=[])
    with pytest.raises(ValueError, match="m"):
        study.SwitchingConfig(m=1)
    defaults = runner.notebook_parameters("switching_strategies")
    config = study.SwitchingConfig()
    for f in config.to_dict():
        want = defaults[f]
        assert getattr(config, f) == (tuple(want) if isinstance(want, list) else want), f
