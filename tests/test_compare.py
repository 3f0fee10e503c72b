"""mdlnb.compare: encoders ranked by MDL on one task, paired over data orders.

Real data: scikit-learn's 1,797 digits as raw pixels, PCA-16 and a fixed
16-d Gaussian random projection of the pixels. Stage 1 compiles once per
feature shape (two here, ~6 s each); every run after that is ~0.2 s.
"""

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_digits
from sklearn.decomposition import PCA

from mdlnb import Task, prequential
from mdlnb.api._compare import compare
from mdlnb.board._arguments import resolve_protocol
from mdlnb.tools import cli

N = 1797
SEEDS = (0, 1, 2)


# The 4-expert board at B = 16 and fixed share m = 11 (the setting the README's
# table was measured with).
PROTOCOL = {"board": "small", "batch_size": 16, "m": 11}


@pytest.fixture(scope="module")
def digits():
    x, y = load_digits(return_X_y=True)
    x = x.astype(np.float32)
    feats = {
        "pixels": x,
        "pca16": PCA(16, random_state=0).fit_transform(x).astype(np.float32),
        "randproj16": x @ np.random.default_rng(1).standard_normal((64, 16)).astype(np.float32),
    }
    return feats, y


@pytest.fixture(scope="module")
def result(digits):
    feats, y = digits
    return compare(feats, y, protocol=PROTOCOL, seeds=SEEDS)


def test_table_is_the_numpy_statistics_of_the_runs(result):
    tab = result.table().set_index("encoder")
    w = result.runs.pivot(index="encoder", columns="seed", values="total [nats]")
    best = w.mean(axis=1).idxmin()
    for e in w.index:
        tot = w.loc[e].to_numpy()
        d = tot - w.loc[best].to_numpy()
        assert tab.loc[e, "total [nats]"] == pytest.approx(np.mean(tot))
        assert tab.loc[e, "total std [nats]"] == pytest.approx(np.std(tot, ddof=1))
        assert tab.loc[e, "per example [bits]"] == pytest.approx(np.mean(tot) / np.log(2) / N)
        assert tab.loc[e, "vs best [nats]"] == pytest.approx(np.mean(d))
        assert tab.loc[e, "vs best std [nats]"] == pytest.approx(np.std(d, ddof=1), abs=1e-9)
    assert list(tab["rank"]) == [1, 2, 3]


def test_pixels_beat_pca_beat_random_projection(result):
    tab = result.table()
    assert list(tab["encoder"]) == ["pixels", "pca16", "randproj16"]
    assert result.best == "pixels"
    assert (tab["vs best [nats]"].iloc[1:] > 0).all()


def test_paired_difference_is_less_noisy_than_totals(result):
    tab = result.table().set_index("encoder")
    for e in ("pca16", "randproj16"):
        assert tab.loc[e, "vs best std [nats]"] < tab.loc[e, "total std [nats]"]


def test_every_encoder_sees_the_same_order(result, digits):
    feats, y = digits
    # a run is the plain prequential code of the stream stream_order(seed, N) …
    for s in SEEDS:
        order = prequential.stream_order(s, N)
        lm = prequential.run(
            Task("x", feats["pca16"], y, 10),
            resolve_protocol("small").experts(),
            batch_size=16,
            seed=s,
        )
        assert np.array_equal(lm.order, order)
    # … and identical features give identical codes on every order (diff 0, std 0)
    twin = compare(
        {"a": feats["pca16"], "b": feats["pca16"].copy()}, y, protocol=PROTOCOL, seeds=SEEDS
    )
    tab = twin.table().set_index("encoder")
    assert tab.loc["b", "vs best [nats]"] == 0.0 and tab.loc["b", "vs best std [nats]"] == 0.0
    assert tab.loc["a", "total std [nats]"] > 1.0
    assert tab.loc["a", "total [nats]"] == pytest.approx(
        result.table().set_index("encoder").loc["pca16", "total [nats]"]
    )


def test_preferred_readout_is_the_posterior_argmax(result):
    for e in result.encoders:
        mass = pd.DataFrame([result.readout_mass[(e, s)] for s in SEEDS]).mean()
        assert result.preferred_readout(e) == mass.idxmax()
        assert sum(result.readout_mass[(e, 0)].values()) == pytest.approx(1.0, abs=1e-5)


def test_figure(result):
    fig = result.plot()
    assert len(fig.axes) == 2
    assert {t.get_text() for t in fig.axes[0].get_xticklabels()} == set(result.encoders)


def test_bad_input(digits):
    feats, y = digits
    with pytest.raises(ValueError, match="encoders: 'short' has 1796 examples"):
        compare({"pixels": feats["pixels"], "short": feats["pca16"][:-1]}, y, protocol="small")
    with pytest.raises(ValueError, match="seeds"):
        compare(feats, y, protocol="small", seeds=(0, 1))
    with pytest.raises(ValueError, match="encoders"):
        compare({"pixels": feats["pixels"]}, y)
    with pytest.raises(ValueError, match="protocol"):
        compare(feats, y, protocol="huge")
    with pytest.raises(ValueError, match="encoders: 'nan'"):
        compare({"pixels": feats["pixels"], "nan": np.full_like(feats["pca16"], np.nan)}, y)


def test_protocol_presets():
    import mdlnb

    p = resolve_protocol("paper-vtab")
    assert (len(p.experts()), p.batch_size, p.strategy.m, p.standardize) == (4608, 32, 11.0, "none")
    p = resolve_protocol("paper-imagenet")
    assert (len(p.experts()), p.batch_size, p.strategy.m) == (384, 512, 2.0)
    p = resolve_protocol({"board": "small", "batch_size": 8, "m": 2, "standardize": "none"})
    assert (len(p.experts()), p.batch_size, p.strategy.m, p.standardize) == (4, 8, 2.0, "none")
    p = resolve_protocol({"experts": "small", "m": 11})
    assert (len(p.experts()), p.strategy.m, p.standardize) == (4, 11.0, "prefix")
    proto = mdlnb.protocol("small", batch_size=4)
    assert resolve_protocol(proto) is proto
    assert resolve_protocol(None) == mdlnb.protocol("default")
    with pytest.raises(ValueError, match="protocol: standardize"):
        resolve_protocol({"standardize": "sometimes"})
    with pytest.raises(ValueError, match="protocol"):
        resolve_protocol({"board": "huge"})
    with pytest.raises(ValueError, match="protocol: unknown fields"):
        resolve_protocol({"boards": "small"})


def test_cli_round_trip(result, digits, tmp_path, capsys):
    feats, y = digits
    paths = []
    for name, x in feats.items():
        paths.append(tmp_path / f"{name}.npz")
        np.savez(paths[-1], x=x)
    np.save(tmp_path / "y.npy", y)
    out = tmp_path / "table.csv"
    rc = cli.main(
        [
            "compare",
            *map(str, paths),
            "--labels",
            str(tmp_path / "y.npy"),
            "--protocol",
            "small",
            "--batch-size",
            "16",
            "--m",
            "11",
            "--quiet",
            "--table",
            str(out),
            "--figure",
            str(tmp_path / "fig.png"),
        ]
    )
    assert rc == 0 and (tmp_path / "fig.png").stat().st_size > 0
    got = pd.read_csv(out).set_index("encoder")
    want = result.table().set_index("encoder")
    for col in ("total [nats]", "vs best std [nats]", "rank"):
        np.testing.assert_allclose(got[col].to_numpy(), want[col].to_numpy(), rtol=1e-6)
    assert "pixels" in capsys.readouterr().out
    # labels of a different length: exit status 2 and a message naming the argument
    np.save(tmp_path / "y_short.npy", y[:-1])
    rc = cli.main(
        [
            "compare",
            *map(str, paths),
            "--labels",
            str(tmp_path / "y_short.npy"),
            "--protocol",
            "small",
            "--quiet",
        ]
    )
    assert rc == 2
    err = capsys.readouterr().err
    assert err.startswith("mdlnb compare: error: features: ") and "but 1796 labels" in err


def test_keyword_protocol_fields_like_evaluate(result, digits):
    """compare takes experts/strategy/m/batch_size by keyword, in evaluate's order; the
    same protocol given as fields gives the same numbers (stage 1 cached)."""
    feats, y = digits
    same = compare(feats, y, experts="small", m=11, batch_size=16, seeds=SEEDS)
    pd.testing.assert_frame_equal(same.table(), result.table())
    assert same.protocol.strategy == result.protocol.strategy
    bayes = compare(feats, y, experts="small", strategy="bayes", batch_size=16, seeds=SEEDS)
    lm = prequential.run(
        Task("labels:pca16", feats["pca16"], y, 10), protocol="small", batch_size=16, seed=1
    )
    totals = lm.losses.astype(np.float64).sum(axis=0)
    lse = -np.log(np.mean(np.exp(-(totals - totals.min())))) + totals.min()
    got = bayes.runs.set_index(["encoder", "seed"]).loc[("pca16", 1), "total [nats]"]
    assert got == pytest.approx(lse, rel=1e-6)  # the Bayes mixture's closed form
    for (e, s), ps in result.per_step_nats.items():
        assert ps.sum() == pytest.approx(
            result.runs.set_index(["encoder", "seed"]).loc[(e, s), "total [nats]"], rel=1e-9
        )


def test_signature_errors_name_the_accepted_forms(digits):
    feats, y = digits
    with pytest.raises(TypeError, match="experts="):
        compare(feats, "small")
    with pytest.raises(TypeError, match="y: missing"):
        compare(feats)
    # keyword-only past the labels: the package's error naming the forms, not Python's
    with pytest.raises(
        TypeError,
        match=r"compare: got 3 positional arguments.*'small'.*"
        r"experts=.*Accepted: compare\(\{name: features",
    ):
        compare(feats, y, "small")
    with pytest.raises(TypeError, match="compare: got 4 positional"):
        compare(feats, y, None, (0, 1, 2))
    with pytest.raises(ValueError, match="one-hot"):
        compare(feats, np.eye(10)[y])


def test_features_of_more_than_two_dims_are_flattened_with_a_warning():
    from mdlnb.api._compare_inputs import features_of

    x = np.arange(5 * 2 * 3, dtype=np.float32).reshape(5, 2, 3)
    with pytest.warns(
        UserWarning,
        match=r"'img': features of shape \(5, 2, 3\) are flattened "
        r"to \(5, 6\)",
    ):
        got = features_of("img", x, None, np.zeros(5, np.int32))
    np.testing.assert_array_equal(got, x.reshape(5, 6))


# ----------------------------------------------------------------------------- issue 25:
# what a user needs to trust the ranking


def test_reports_are_kept_and_best_expert_is_the_min_column_total(result):
    assert set(result.reports) == {(e, s) for e in result.encoders for s in SEEDS}
    tab = result.table().set_index("encoder")
    for e in result.encoders:
        per_order = []
        for s in SEEDS:
            rep = result.reports[(e, s)]
            assert rep.total_nats == result.per_step_nats[
                (e, s)
            ].sum() or rep.total_nats == pytest.approx(
                result.per_step_nats[(e, s)].sum(), rel=1e-12
            )
            per_order.append(rep.losses.losses.astype(np.float64).sum(axis=0).min())
        assert tab.loc[e, "best expert [nats]"] == pytest.approx(np.mean(per_order), rel=1e-9)
        assert tab.loc[e, "best expert std [nats]"] == pytest.approx(
            np.std(per_order, ddof=1), rel=1e-6
        )


def test_last_sign_change_on_hand_made_curves():
    from mdlnb.api._comparison import last_sign_change

    assert last_sign_change(np.array([1.0, -1.0, -2.0, 0.0, 3.0])) == 5
    assert last_sign_change(np.array([-1.0, 2.0, 3.0])) == 2
    assert last_sign_change(np.array([0.0, 0.0, 1.0, 0.0, 2.0])) is None  # zeros are no sign
    assert last_sign_change(np.array([1.0, 1.0])) is None
    assert last_sign_change(np.zeros(4)) is None


def _last_change_by_hand(d):
    """A plain loop: the n after which the sign of d (ignoring zeros) last flipped."""
    last, prev = None, 0.0
    for t, v in enumerate(d, start=1):
        if v != 0.0:
            if prev != 0.0 and np.sign(v) != np.sign(prev):
                last = t
            prev = v
    return last


def test_sign_change_column_from_the_per_step_arrays(result):
    """One quantity per column group: each order's own last sign change, its mean and sd
    over the orders that change, their count; 'never' exactly when none changes."""
    tab = result.table().set_index("encoder")
    sc = result.sign_changes().set_index("encoder")
    best = result.best
    assert np.isnan(tab.loc[best, "last sign change [n]"])
    for e in result.encoders:
        if e == best:
            continue
        cum = [
            np.cumsum(result.per_step_nats[(e, s)] - result.per_step_nats[(best, s)]) for s in SEEDS
        ]
        want = _last_change_by_hand(np.mean(cum, axis=0))
        got = sc.loc[e, "mean curve's last sign change [n]"]
        assert (np.isnan(got) and want is None) or got == want
        own = [n for n in map(_last_change_by_hand, cum) if n is not None]
        assert tab.loc[e, "orders with a sign change"] == len(own)
        mean = tab.loc[e, "last sign change [n]"]
        assert (np.isnan(mean) and not own) or mean == pytest.approx(np.mean(own))
        sd = tab.loc[e, "last sign change std [n]"]
        assert (np.isnan(sd) and len(own) < 2) or sd == pytest.approx(np.std(own, ddof=1))
    shown = result.display_table().set_index("encoder")["vs best changes sign"]
    assert shown[best] == "—"
    for e in result.encoders:
        if e != best:
            n = tab.loc[e, "last sign change [n]"]
            k = tab.loc[e, "orders with a sign change"]
            assert shown[e] == "never" if k == 0 else shown[e].startswith(f"n ≈ {n:,.0f}")
            assert k == 0 or shown[e].endswith(f"({k}/{len(SEEDS)} orders)")


def test_readout_column_is_readout_preference_over_the_kept_reports(result):
    import mdlnb

    tab = result.table().set_index("encoder")
    assert "preferred readout" not in tab.columns  # no whole-run argmax in the table
    for e in result.encoders:
        pref = mdlnb.readout_preference([result.reports[(e, s)] for s in SEEDS])
        assert pref.table.equals(result.readout_preference(e).table)
        settled = pref.settled
        text = tab.loc[e, "readout by data size"]
        if settled is None:
            assert text.startswith("no agreement (")
        else:
            assert text == f"{settled[1]} from n ≈ {settled[0]:,}"
    printed = str(result)
    for col in (
        "best single expert [nats]",
        "vs best changes sign",
        "readout by data size",
        "vs best [nats] (paired)",
        "linear or deeper",
    ):
        assert col in printed


def test_readout_text_says_no_agreement_when_orders_disagree(result, monkeypatch):
    from mdlnb.api import preference

    real = preference.readout_preference

    def unsettled(reports, **kw):
        p = real(reports, **kw)
        t = p.table.copy()
        t["stable"] = False
        return preference.ReadoutPreference(t, (), p.orders, p.task, p.n)

    monkeypatch.setattr(preference, "readout_preference", unsettled)
    text = result.readout_text("pca16")
    own = [str(real(result.reports[("pca16", s)]).table["readout"].iloc[-1]) for s in SEEDS]
    assert text.startswith("no agreement (" + ", ".join(own) + " at n ≥ ")


@pytest.fixture(scope="module")
def close(digits):
    """Two equally informative encoders on 300 digits: the pixels, and the pixels with their
    columns permuted (only the readouts' initialisations see a difference)."""
    feats, y = digits
    x = feats["pixels"][:300]
    return {"pixels": x, "permuted": x[:, np.random.default_rng(3).permutation(64)]}, y[:300]


def test_close_call_is_said_and_check_standardize_reruns_the_top_two(close):
    feats, y = close
    with pytest.warns(UserWarning):
        cmp = compare(feats, y, protocol=PROTOCOL, seeds=SEEDS)
    tab = cmp.table()
    gap, sd = tab["vs best [nats]"].iloc[1], tab["vs best std [nats]"].iloc[1]
    assert gap <= 2 * sd, "the fixture is meant to be a close call"
    assert cmp.close_call == (tab["encoder"].iloc[0], tab["encoder"].iloc[1], gap, sd)
    assert "close call" in str(cmp) and "check_standardize()" in str(cmp)
    with pytest.warns(UserWarning):
        chk = cmp.check_standardize(progress=False)
    assert chk.standardize == ("prefix", "none") and chk.encoders == tuple(tab["encoder"][:2])
    with pytest.warns(UserWarning):
        direct = compare(feats, y, protocol={**PROTOCOL, "standardize": "none"}, seeds=SEEDS)
    pd.testing.assert_frame_equal(chk.rerun.runs, direct.runs)
    assert chk.held == (direct.best == chk.encoders[0])
    assert ("held" if chk.held else "flipped") in str(chk)


def test_no_close_call_when_the_gap_is_large(result):
    assert result.close_call is None and "close call" not in str(result)


def test_warnings_are_issued_once_with_their_runs(close):
    import warnings as _w

    feats, y = close
    with _w.catch_warnings(record=True) as got:
        _w.simplefilter("always")
        cmp = compare(feats, y, protocol=PROTOCOL, seeds=SEEDS)
    texts = [str(w.message) for w in got if str(w.message).startswith("compare: ")]
    assert texts and len(texts) == len(set(texts)) == len(cmp.warnings)
    per_run = {w for rep in cmp.reports.values() for w in rep.warnings}
    assert {t.split(" [")[0] for t in cmp.warnings} == per_run  # none lost, none twice
    # the 'small' board's two learning rates: the edge sentence says what it (does not) mean
    assert all("only two values of learning_rate" in t and "'small'" in t for t in cmp.warnings)
    assert all(f"warning: {t}" in str(cmp) for t in cmp.warnings)


def test_batch_mode_prints_one_line_per_run(close, monkeypatch, capsys):
    feats, y = close
    monkeypatch.setenv("MDLNB_PROGRESS", "0")
    compare(feats, y, protocol=PROTOCOL, seeds=SEEDS)
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("compare: ")]
    assert len(lines) == len(feats) * len(SEEDS)
    assert lines[0].startswith("compare: pixels, order 0 (1/6): ") and "nats" in lines[0]
    assert "elapsed, about" in lines[0] and lines[-1].endswith("about 0 s left")
    compare(feats, y, protocol=PROTOCOL, seeds=SEEDS, progress=False)
    assert "compare: " not in capsys.readouterr().out


def test_the_same_features_under_two_names_are_one_cache_entry(tmp_path, monkeypatch, close):
    from mdlnb.prequential import _program

    monkeypatch.setenv("MDLNB_CACHE", str(tmp_path))
    feats, y = close
    first = prequential.run(
        Task("one name", feats["pixels"], y, 10), protocol="small", batch_size=16, seed=0
    )
    calls = []
    real = _program._run_chunk
    monkeypatch.setattr(_program, "_run_chunk", lambda *a, **k: calls.append(1) or real(*a, **k))
    second = prequential.run(
        Task("another name", feats["pixels"].copy(), y, 10), protocol="small", batch_size=16, seed=0
    )
    assert calls == []  # a cache hit: no stage-1 compute
    np.testing.assert_array_equal(second.losses, first.losses)
    assert second.task_name == "another name" and second.meta["computed_as"] == "one name"
    assert len(list((tmp_path / "losses").glob("*.npz"))) == 1
    # compare: two names for one array, and a rerun under new names, compute nothing again
    with pytest.warns(UserWarning):
        a = compare(
            {"x": feats["pixels"], "y": feats["permuted"]}, y, protocol=PROTOCOL, seeds=SEEDS
        )
    n_calls = len(calls)
    with pytest.warns(UserWarning):
        b = compare(
            {"renamed": feats["pixels"], "also": feats["permuted"]},
            y,
            protocol=PROTOCOL,
            seeds=SEEDS,
        )
    assert len(calls) == n_calls
    np.testing.assert_array_equal(a.totals(), b.totals())


def test_cli_check_standardize(close, tmp_path, capsys):
    feats, y = close
    paths = []
    for name, x in feats.items():
        paths.append(tmp_path / f"{name}.npz")
        np.savez(paths[-1], x=x, y=y)
    rc = cli.main(
        [
            "compare",
            *map(str, paths),
            "--protocol",
            "small",
            "--batch-size",
            "16",
            "--m",
            "11",
            "--quiet",
            "--check-standardize",
        ]
    )
    out, err = capsys.readouterr()
    assert rc == 0 and "close call" in out
    assert "warning: best expert" in out and "warning" not in err  # under the table, once
    assert "standardize='none':" in out and ("order held" in out or "order flipped" in out)


def test_a_warning_issued_by_each_run_reaches_the_user_once(close, monkeypatch):
    """Warnings a run issues itself (a DivergenceWarning) are collected like the reports'
    sentences: once, with their category and the runs they came from."""
    import warnings as _w

    from mdlnb.api.evaluation import Report
    from mdlnb.switching.divergence import DivergenceWarning

    feats, y = close
    real = Report.from_losses.__func__

    def noisy(cls, *a, **k):
        _w.warn("expert lr-huge diverged at t = 40", DivergenceWarning, stacklevel=2)
        return real(cls, *a, **k)

    monkeypatch.setattr(Report, "from_losses", classmethod(noisy))
    with _w.catch_warnings(record=True) as got:
        _w.simplefilter("always")
        cmp = compare(feats, y, protocol=PROTOCOL, seeds=SEEDS)
    div = [str(w.message) for w in got if issubclass(w.category, DivergenceWarning)]
    assert div == [
        "compare: expert lr-huge diverged at t = 40 [pixels (all orders); permuted (all orders)]"
    ]
    assert any(t.startswith("expert lr-huge diverged") for t in cmp.warnings)


# ----------------------------------------------------------------------------- N ≤ B


def test_a_stream_of_one_batch_compiles_no_stage_1_program(monkeypatch):
    """N ≤ B: every example is in the first batch, coded uniformly. ``prequential.run``
    short-circuits for every caller (compare, evaluate, the studies), so the stage-1
    program is never traced or compiled, and the code is N·log C."""
    import math
    import warnings

    import mdlnb
    from mdlnb.prequential import _run as stage1

    def no_stage_1(*a, **kw):
        raise AssertionError("the stage-1 program ran for a stream of one batch")

    monkeypatch.setattr(stage1, "run_pass", no_stage_1)
    monkeypatch.setattr(stage1._slicing, "run_sliced", no_stage_1)
    rng = np.random.default_rng(5)
    n, c = 20, 5
    y = rng.integers(0, c, n)
    feats = {"a": rng.normal(size=(n, 3)), "b": rng.normal(size=(n, 11))}
    before = prequential.trace_count()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cmp = compare(feats, y, num_classes=c, protocol="default", seeds=(0, 1, 2), cache=True)
        rep = mdlnb.evaluate(feats["b"], y, num_classes=c, batch_size=n)  # N = B
    assert prequential.trace_count() == before  # nothing traced, nothing compiled
    assert any("no readout trained" in str(w.message) for w in caught)
    said = [w for w in caught if str(w.message).startswith("compare: no readout trained")]
    assert said and all(w.filename == __file__ for w in said)  # pointing at the caller's line
    log_c = np.float32(math.log(c))
    for r in [*cmp.reports.values(), rep]:
        assert not r.trained
        assert r.losses.meta["untrained"] and np.all(r.losses.losses == log_c)  # bit for bit
        assert r.total_nats == pytest.approx(n * math.log(c), rel=1e-7)
    tab = cmp.table().set_index("encoder")
    np.testing.assert_allclose(tab["total [nats]"], n * math.log(c), rtol=1e-7)
    # the same orders as a trained run of that N would use (paired across encoders)
    np.testing.assert_array_equal(
        cmp.reports[("a", 1)].losses.order, prequential.stream_order(1, n)
    )
