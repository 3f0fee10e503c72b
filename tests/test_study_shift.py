"""Shift study: the shifted splits against their definition and the library's reshuffle,
the stream order against stage 1's, the tables and claims against SciPy on frames of
known values, the paper's effects against its printed cells, and one small real run."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from mdlnb import data
from mdlnb.studies import shift as study
from mdlnb.studies.shift import _paper as P
from mdlnb.studies.shift import _tables as T

ENCODERS = ("random:vit_S:trained", "supervised:vit_S:trained")


# ---- the splits and the streams ------------------------------------------------------


def test_shifted_split_halves_and_mixing():
    rng = np.random.default_rng(0)
    v = rng.normal(size=40)
    a, b = study.shifted_split(v, 20, 1.0, seed=3)
    assert len(a) == len(b) == 20 and not set(a) & set(b) and set(a) | set(b) == set(range(40))
    assert v[a].max() < v[b].min()  # σ = 1: the two halves
    assert np.all(np.diff(a) > 0) and np.all(np.diff(b) > 0)
    low = set(np.argsort(v)[:20])
    a, b = study.shifted_split(v, 20, 0.75, seed=3)
    assert len(set(a) & low) == 15 and len(set(b) & low) == 5
    a2, _ = study.shifted_split(v, 20, 0.75, seed=3)
    assert np.array_equal(a, a2)  # same seed, same split
    a, b = study.shifted_split(v, 20, 0.5, seed=3)
    assert len(set(a) & low) == len(set(b) & low) == 10  # no shift


def test_shifted_split_rejects_bad_input():
    with pytest.raises(ValueError, match="shift"):
        study.shifted_split(np.arange(10.0), 5, 0.4, seed=0)
    with pytest.raises(ValueError, match="values"):
        study.shifted_split(np.arange(9.0), 5, 1.0, seed=0)
    with pytest.raises(ValueError, match="n"):
        study.shifted_split(np.arange(0.0), 0, 1.0, seed=0)


def test_reshuffle_is_the_librarys_on_real_images():
    pool = data.load("dsprites_shape", split="train", seed=5, n_train=80, n_test=1)
    a, b = study.shifted_split(study.nuisance(pool, "scale"), 40, 1.0, seed=1)
    want, _ = data.reshuffle(pool.take(a), pool.take(b), seed=7)
    idx = study.reshuffled_indices(a, b, 7)
    assert np.array_equal(pool.x[idx], want.x) and np.array_equal(pool.y[idx], want.y)
    s = study.streams(a, b, 7)
    assert list(s) == list(study.STREAMS)
    assert np.array_equal(s["original"], a) and np.array_equal(s["swapped"], b)
    assert np.array_equal(s["reshuffled"], idx)
    ordered = s["train then test"]
    assert sorted(ordered) == sorted(idx)
    k = int(np.isin(idx, a).sum())
    assert 0 < k < 40 and np.isin(ordered[:k], a).all() and not np.isin(ordered[k:], a).any()
    # each half keeps the reshuffled order
    assert np.array_equal(ordered[:k], idx[np.isin(idx, a)])


def test_in_stream_order_is_the_coded_order():
    from mdlnb.prequential import stream_order

    t = data.load("digits", split="train", size=50, seed=0)
    out = study.in_stream_order(t, 4)
    coded = stream_order(4, out.n)
    assert np.array_equal(out.x[coded], t.x) and np.array_equal(out.y[coded], t.y)


def test_nuisance_factors():
    pool = data.load("clevr_count", split="train", seed=2, n_train=60, n_test=1)
    f = pool.meta["factors"]
    z = study.nuisance(pool, "z")
    np.testing.assert_array_equal(z, np.nanmin(f["z"], axis=1))  # the nearest depth
    colour = study.nuisance(pool, "colour")
    near = np.nanargmin(f["z"], axis=1)
    np.testing.assert_array_equal(colour, f["colour"][np.arange(60), near])
    np.testing.assert_array_equal(study.nuisance(pool, "count"), f["count"])
    with pytest.raises(ValueError, match="factor"):
        study.nuisance(pool, "nope")
    with pytest.raises(ValueError, match="factors"):
        study.nuisance(data.load("digits", size=20), "scale")


def test_data_seeds_are_distinct_and_stable():
    seeds = {
        study.data_seed(t, s) for t in ("dsprites_shape", "dsprites_location") for s in range(5)
    }
    assert len(seeds) == 10 and study.data_seed("dsprites_shape", 1) == study.data_seed(
        "dsprites_shape", 1
    )


def test_config_checks_and_the_notebook_defaults():
    from mdlnb.tools import runner

    for bad, match in (
        ({"tasks": ["dsprites_shape"]}, "tasks"),
        ({"tasks": ["nope:scale"]}, "tasks"),
        ({"encoders": ENCODERS[:1]}, "encoders"),
        ({"shift": 0.3}, "shift"),
        ({"shift": True}, "shift"),
        ({"size": 5}, "size"),
        ({"seeds": []}, "seeds"),
    ):
        with pytest.raises(ValueError, match=match):
            study.ShiftConfig(**bad)
    params = runner.notebook_parameters("shift")
    assert study.ShiftConfig.from_parameters(params) == study.ShiftConfig()


# ---- the paper's numbers -------------------------------------------------------------


def test_paper_effects_from_its_cells():
    cells = P.table()
    assert len(cells) == 24
    # Table 11 − Table 10 summed by hand per task (PCam, DMLab, Kitti, sNORB-Az)
    by_task = {
        "PatchCamelyon": -0.12,
        "DMLab": -0.49,
        "KittiDistance": -0.08,
        "SmallNORBAzimuth": 0.03,
    }
    got = cells.groupby("task")["original - reshuffled"].sum()
    for task, want in by_task.items():
        assert got[task] == pytest.approx(want, abs=1e-9)
    assert P.difference() == pytest.approx(sum(by_task.values()) / 24, abs=1e-12)
    assert P.tau() == 1.0
    # a permuted column changes the order: the rank statistic is not constant
    assert (
        stats.kendalltau(P.average_ranks(P.RESHUFFLED), P.average_ranks(P.ORIGINAL[::-1])).statistic
        < 1
    )


# ---- tables and claims on frames of known values -------------------------------------


def _runs(
    delta,
    ordered_delta=0.0,
    *,
    encoders=("e1", "e2", "e3", "e4"),
    units=6,
    noise=0.002,
    reverse=False,
    seed=0,
):
    """A runs frame: encoder i codes at 1 + 0.1 i nats/example on the reshuffled split;
    the original halves at + ``delta`` (reversed order of encoders if ``reverse``)."""
    rng = np.random.default_rng(seed)
    rows = []
    for u in range(units):
        task, s = f"task{u % 2}", u // 2
        for i, e in enumerate(encoders):
            base = 1.0 + 0.1 * i
            orig = (1.0 + 0.1 * (len(encoders) - 1 - i)) if reverse else base
            vals = {
                "reshuffled": base + rng.normal(0, noise),
                "original": orig + delta + rng.normal(0, noise),
                "swapped": orig + delta + rng.normal(0, noise),
                "train then test": base + ordered_delta + rng.normal(0, noise),
            }
            for stream, v in vals.items():
                rows.append(
                    {
                        "task": task,
                        "factor": "f",
                        "seed": s,
                        "encoder": e,
                        "stream": stream,
                        "n": 100,
                        "num_classes": 4,
                        "from train split": 100 if stream == "original" else 0,
                        "codelength [nats]": 100 * v,
                        "per example [nats]": v,
                    }
                )
    return pd.DataFrame(rows, columns=study.RUN_COLUMNS)


def test_tables_against_numpy_and_scipy():
    runs = _runs(-0.03, 0.02)
    d = T.differences(runs)
    assert set(d["version"]) == set(T.VERSIONS)
    wide = runs.pivot_table(
        index=["task", "seed", "encoder"], columns="stream", values="per example [nats]"
    )
    both = (wide["original"] + wide["swapped"]) / 2 - wide["reshuffled"]
    got = d[d["version"] == "original (both splits)"].set_index(["task", "seed", "encoder"])
    np.testing.assert_allclose(got.loc[both.index, "minus reshuffled [nats]"], both, rtol=1e-12)
    u = T.units(runs)
    u = u[u["version"] == "original (both splits)"].set_index(["task", "seed"])
    per_unit = both.groupby(level=["task", "seed"]).mean()
    np.testing.assert_allclose(u.loc[per_unit.index, "minus reshuffled [nats]"], per_unit)
    s = T.summary(runs, resamples=200).set_index("version")
    x = per_unit.to_numpy()
    lo, hi = stats.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=stats.sem(x))
    assert s.loc["original (both splits)", "ci low"] == pytest.approx(lo)
    assert s.loc["original (both splits)", "ci high"] == pytest.approx(hi)
    assert s.loc["train then test", "minus reshuffled [nats]"] == pytest.approx(0.02, abs=2e-3)
    assert s.loc["original (both splits)", "cells beyond 0.01"] == 1.0
    assert s.loc["original (both splits)", "tau"] == 1.0
    r = T.ranks(runs)
    np.testing.assert_allclose(r["reshuffled rank"], [1, 2, 3, 4])


def test_rank_tau_by_hand():
    same = [(np.array([1.0, 2, 3]), np.array([1.1, 2.2, 3.3]))] * 2
    assert T.rank_tau(same) == 1.0
    rev = [(np.array([1.0, 2, 3]), np.array([3.0, 2, 1]))] * 2
    assert T.rank_tau(rev) == -1.0
    # average ranks [1.5, 1.5, 3] vs [1, 2, 3]: τ-b with one tie, by SciPy
    mixed = [
        (np.array([1.0, 2, 3]), np.array([1.0, 2, 3])),
        (np.array([2.0, 1, 3]), np.array([1.0, 2, 3])),
    ]
    want = stats.kendalltau([1.5, 1.5, 3], [1, 2, 3]).statistic
    assert T.rank_tau(mixed) == pytest.approx(want)


def test_claims_replicate_and_fail_both_ways():
    r1, r2 = study.claims(_runs(P.difference()), resamples=300)
    assert (r1.id, r1.direction, r1.size) == ("r1", "replicated", "consistent")
    assert (r2.id, r2.direction, r2.size) == ("r2", "replicated", "consistent")
    assert r1.paper_effect == pytest.approx(P.difference()) and r2.paper_effect == 1.0
    r1, r2 = study.claims(_runs(0.05, reverse=True), resamples=300)
    assert r1.direction == "reversed" and r2.direction == "reversed" and r2.size == "smaller"
    r1, _ = study.claims(_runs(-0.005), resamples=300)
    assert r1.direction == "replicated" and r1.size == "smaller"
    r1, _ = study.claims(_runs(0.0, noise=0.05), resamples=300)
    assert r1.direction == "undetermined"


# ---- one small real run --------------------------------------------------------------


def test_a_small_run_end_to_end(tmp_path):
    config = study.ShiftConfig(
        tasks=["dsprites_shape:scale"],
        encoders=ENCODERS,
        size=48,
        seeds=[0, 1],
        protocol="small",
        points=6,
        resamples=100,
    )
    r = study.run(config, progress=False)
    runs = r.runs
    assert len(runs) == 2 * 2 * 4 and list(runs.columns) == study.RUN_COLUMNS
    np.testing.assert_allclose(runs["per example [nats]"], runs["codelength [nats]"] / 48)
    # a switching code of readouts that start at the uniform code: at most log C per
    # example plus its prior's regret (small board, N = 48: below 0.5 nats per example)
    assert (runs["per example [nats]"] <= math.log(3) + 0.5).all()
    by = runs.set_index("stream")["from train split"]
    assert (by.loc["original"] == 48).all() and (by.loc["swapped"] == 0).all()
    assert (
        runs.loc[runs["stream"] == "reshuffled", "from train split"].to_numpy()
        == runs.loc[runs["stream"] == "train then test", "from train split"].to_numpy()
    ).all()
    # the last cumulative point is the total
    last = r.curves[r.curves["n"] == 48].set_index(["seed", "encoder", "stream"])
    tot = runs.set_index(["seed", "encoder", "stream"])["codelength [nats]"]
    np.testing.assert_allclose(last.loc[tot.index, "cumulative [nats]"], tot, rtol=1e-9)
    again = study.run(config, progress=False)
    assert again.cached_units == 4 and again.runs.equals(runs)
    assert [c.id for c in r.claims()] == ["r1", "r2"]
    assert [row[0] for row in r.setting()] == ["shifted tasks", "encoders", "readouts", "versions"]
    names = sorted(p.name for p in r.save(tmp_path))
    assert "shift_effects.png" in names and "shift_summary.csv" in names
    assert len(names) == 2 * 8 + 3
