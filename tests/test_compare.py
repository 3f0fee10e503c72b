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

from mdlnb import Task, cli, prequential
from mdlnb._compare import compare, resolve_protocol

N = 1797
SEEDS = (0, 1, 2)


# The 4-expert board at B = 16 and fixed share m = 11 (the setting the README's
# table was measured with).
PROTOCOL = {"board": "small", "batch_size": 16, "m": 11}


@pytest.fixture(scope="module")
def digits():
    x, y = load_digits(return_X_y=True)
    x = x.astype(np.float32)
    feats = {"pixels": x,
             "pca16": PCA(16, random_state=0).fit_transform(x).astype(np.float32),
             "randproj16": x @ np.random.default_rng(1).standard_normal((64, 16)).astype(np.float32)}
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
        lm = prequential.run(Task("x", feats["pca16"], y, 10),
                             resolve_protocol("small").experts(), batch_size=16, seed=s)
        assert np.array_equal(lm.order, order)
    # … and identical features give identical codes on every order (diff 0, std 0)
    twin = compare({"a": feats["pca16"], "b": feats["pca16"].copy()}, y, protocol=PROTOCOL,
                   seeds=SEEDS)
    tab = twin.table().set_index("encoder")
    assert tab.loc["b", "vs best [nats]"] == 0.0 and tab.loc["b", "vs best std [nats]"] == 0.0
    assert tab.loc["a", "total std [nats]"] > 1.0
    assert tab.loc["a", "total [nats]"] == pytest.approx(
        result.table().set_index("encoder").loc["pca16", "total [nats]"])


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
    rc = cli.main(["compare", *map(str, paths), "--labels", str(tmp_path / "y.npy"),
                   "--protocol", "small", "--batch-size", "16", "--m", "11", "--quiet",
                   "--table", str(out),
                   "--figure", str(tmp_path / "fig.png")])
    assert rc == 0 and (tmp_path / "fig.png").stat().st_size > 0
    got = pd.read_csv(out).set_index("encoder")
    want = result.table().set_index("encoder")
    for col in ("total [nats]", "vs best std [nats]", "rank"):
        np.testing.assert_allclose(got[col].to_numpy(), want[col].to_numpy(), rtol=1e-6)
    assert "pixels" in capsys.readouterr().out
    # labels of a different length: exit status 2 and a message naming the argument
    np.save(tmp_path / "y_short.npy", y[:-1])
    rc = cli.main(["compare", *map(str, paths), "--labels", str(tmp_path / "y_short.npy"),
                   "--protocol", "small", "--quiet"])
    assert rc == 2
    assert "encoders" in capsys.readouterr().err


def test_keyword_protocol_fields_like_evaluate(result, digits):
    """compare takes experts/strategy/m/batch_size by keyword, in evaluate's order; the
    same protocol given as fields gives the same numbers (stage 1 cached)."""
    feats, y = digits
    same = compare(feats, y, experts="small", m=11, batch_size=16, seeds=SEEDS)
    pd.testing.assert_frame_equal(same.table(), result.table())
    assert same.protocol.strategy == result.protocol.strategy
    bayes = compare(feats, y, experts="small", strategy="bayes", batch_size=16, seeds=SEEDS)
    lm = prequential.run(Task("labels:pca16", feats["pca16"], y, 10), protocol="small",
                         batch_size=16, seed=1)
    totals = lm.losses.astype(np.float64).sum(axis=0)
    lse = -np.log(np.mean(np.exp(-(totals - totals.min())))) + totals.min()
    got = bayes.runs.set_index(["encoder", "seed"]).loc[("pca16", 1), "total [nats]"]
    assert got == pytest.approx(lse, rel=1e-6)      # the Bayes mixture's closed form
    for (e, s), ps in result.per_step_nats.items():
        assert ps.sum() == pytest.approx(
            result.runs.set_index(["encoder", "seed"]).loc[(e, s), "total [nats]"], rel=1e-9)


def test_signature_errors_name_the_accepted_forms(digits):
    feats, y = digits
    with pytest.raises(TypeError, match="experts="):
        compare(feats, "small")
    with pytest.raises(TypeError, match="y: missing"):
        compare(feats)
    with pytest.raises(TypeError):
        compare(feats, y, "small")                     # keyword-only past the labels
    with pytest.raises(ValueError, match="one-hot"):
        compare(feats, np.eye(10)[y])


def test_features_of_more_than_two_dims_are_flattened_with_a_warning():
    from mdlnb._compare import _features_of

    x = np.arange(5 * 2 * 3, dtype=np.float32).reshape(5, 2, 3)
    with pytest.warns(UserWarning, match=r"'img': features of shape \(5, 2, 3\) are flattened "
                                         r"to \(5, 6\)"):
        got = _features_of("img", x, None, np.zeros(5, np.int32))
    np.testing.assert_array_equal(got, x.reshape(5, 6))
