"""``mdlnb switch``: printed codelength, posterior files, errors."""

from __future__ import annotations

import math
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scipy.special import logsumexp

from mdlnb import cli


@pytest.fixture
def npz(tmp_path):
    L = np.random.default_rng(0).exponential(1.0, size=(40, 3))
    path = tmp_path / "losses.npz"
    np.savez(path, losses=L, names=np.array(["linear", "mlp1", "mlp2"]))
    return path, L


def _nats(out: str) -> float:
    return float(re.search(r"codelength\s+([0-9.]+) nats", out).group(1))


def test_switch_bayes_prints_closed_form(npz, capsys):
    path, L = npz
    assert cli.main(["switch", str(path), "--strategy", "bayes"]) == 0
    out = capsys.readouterr().out
    want = -logsumexp(-L.sum(0)) + math.log(3)
    assert _nats(out) == pytest.approx(want, rel=1e-6)
    bits = float(re.search(r"= ([0-9.]+) bits", out).group(1))
    assert bits == pytest.approx(want / math.log(2), rel=1e-6)
    per = float(re.search(r"per example\s+([0-9.]+) nats", out).group(1))
    assert per == pytest.approx(want / 40, rel=1e-5)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_switch_writes_tidy_posterior(npz, tmp_path, capsys, suffix):
    path, L = npz
    out_path = tmp_path / f"post{suffix}"
    assert cli.main(["switch", str(path), "--strategy", "fixed-share", "--alpha", "1",
                     "--posterior", str(out_path)]) == 0
    # α = 1 is the elementwise mixture: total = Σ_t −log mean_k exp(−L)
    assert _nats(capsys.readouterr().out) == pytest.approx(
        -logsumexp(-L, axis=1).sum() + 40 * math.log(3), rel=1e-6)
    df = pd.read_csv(out_path) if suffix == ".csv" else pd.read_parquet(out_path)
    assert list(df.columns) == ["t", "expert", "readout", "probability"] and len(df) == 120
    assert set(df.expert.astype(str)) == {"linear", "mlp1", "mlp2"}
    assert df.t.min() == 0 and df.t.max() == 39     # examples seen before the prediction
    assert df.readout.isna().all()                  # plain names: readout unknown, left empty
    np.testing.assert_allclose(df.probability, 1 / 3, rtol=1e-5)


def test_switch_prints_the_strategy_short(npz, capsys):
    assert cli.main(["switch", str(npz[0]), "--strategy", "fixed-share", "--m", "2"]) == 0
    assert re.search(r"strategy\s+FixedShare\(m=2\)\n", capsys.readouterr().out)


def test_posterior_format_is_documented_in_help(capsys):
    for cmd in ("switch", "evaluate"):
        with pytest.raises(SystemExit):
            cli.main([cmd, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        assert "t = examples seen before the prediction (0 … N−1" in text
        assert "readout = the expert's readout name" in text


def test_switch_key_and_m(tmp_path, capsys):
    L = np.random.default_rng(1).exponential(1.0, size=(25, 2))
    path = tmp_path / "x.npz"
    np.savez(path, other=L)
    assert cli.main(["switch", str(path), "--key", "other", "--strategy", "fixed-share", "--m", "1"]) == 0
    # m = 1 never switches: Bayesian mixture
    assert _nats(capsys.readouterr().out) == pytest.approx(-logsumexp(-L.sum(0)) + math.log(2), rel=1e-6)


@pytest.mark.parametrize("argv, match", [
    (["--key", "nope"], "key: 'nope' not in"),
    (["--m", "0.5"], "m: must be"),
    (["--alpha", "2"], "alpha: must lie"),
    (["--strategy", "bayes", "--m", "2"], "option(s) --m do not apply to 'bayes'"),
    (["--posterior", "out.txt"], "posterior: expected a .csv or .parquet"),
])
def test_switch_errors(npz, capsys, argv, match):
    path, _ = npz
    assert cli.main(["switch", str(path), *argv]) == 2
    assert match in capsys.readouterr().err


def test_switch_bad_file_and_bad_losses(tmp_path, capsys):
    assert cli.main(["switch", str(tmp_path / "missing.npz")]) == 2
    assert "losses: cannot read" in capsys.readouterr().err
    path = tmp_path / "neg.npz"
    np.savez(path, losses=-np.ones((3, 2)))
    assert cli.main(["switch", str(path)]) == 2
    assert "losses: negative loss at step t=1" in capsys.readouterr().err


def test_unknown_strategy_is_an_argparse_error(npz):
    with pytest.raises(SystemExit) as e:
        cli.main(["switch", str(npz[0]), "--strategy", "teleport"])
    assert e.value.code == 2


def test_switch_subprocess(npz):
    path, L = npz
    proc = subprocess.run([sys.executable, "-m", "mdlnb.cli", "switch", str(path), "--strategy", "elementwise"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert _nats(proc.stdout) == pytest.approx(-logsumexp(-L, axis=1).sum() + 40 * math.log(3), rel=1e-6)


def test_switch_run_length_options(npz, capsys):
    path, _ = npz
    assert cli.main(["switch", str(path), "--strategy", "run-length", "--max-run", "1", "--phases", "1"]) == 0
    rl = _nats(capsys.readouterr().out)
    assert cli.main(["switch", str(path), "--strategy", "fixed-share", "--alpha", "0.5"]) == 0
    assert rl == pytest.approx(_nats(capsys.readouterr().out), rel=1e-6)  # constant hazard 1/2


# --------------------------------------------------------------------------- evaluate


@pytest.fixture
def features_npz(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(160, 4)).astype(np.float32)
    y = (x[:, 0] + 0.1 * x[:, 1] > 0).astype(np.int64)
    path = tmp_path / "feats.npz"
    np.savez(path, x=x, y=y)
    return path, x, y


def test_evaluate_matches_the_library_and_writes_the_posterior(features_npz, tmp_path, capsys):
    import mdlnb
    from mdlnb.experts import preset

    path, x, y = features_npz
    out = tmp_path / "post.csv"
    assert cli.main(["evaluate", str(path), "--experts", "small", "--quiet",
                     "--posterior", str(out)]) == 0
    text = capsys.readouterr().out
    rep = mdlnb.evaluate((x, y), experts=preset("small"), progress=False)
    assert f"{rep.total_nats:.1f} nats" in text
    assert rep.total_nats < 0.8 * len(y) * math.log(2)   # a learnable task compresses
    post = pd.read_csv(out)
    sums = post.groupby("t")["probability"].sum().to_numpy()
    np.testing.assert_allclose(sums, 1.0, atol=1e-6)


def test_switch_and_evaluate_write_one_posterior_format(features_npz, tmp_path, capsys):
    """The same loss matrix through `mdlnb evaluate --posterior` and, saved, through
    `mdlnb switch --posterior` gives the same table: columns, t origin, expert and
    readout names, probabilities."""
    import mdlnb
    from mdlnb.experts import preset

    path, x, y = features_npz
    a, b, lm_path = tmp_path / "a.csv", tmp_path / "b.csv", tmp_path / "lm.npz"
    assert cli.main(["evaluate", str(path), "--experts", "small", "--quiet",
                     "--posterior", str(a)]) == 0
    rep = mdlnb.evaluate(mdlnb.Task.from_npz(path), experts=preset("small"), progress=False)
    rep.losses.save(lm_path)
    assert cli.main(["switch", str(lm_path), "--strategy", "fixed-share", "--m", "2",
                     "--posterior", str(b)]) == 0
    capsys.readouterr()
    da, db = pd.read_csv(a), pd.read_csv(b)
    assert list(da.columns) == list(db.columns) == ["t", "expert", "readout", "probability"]
    pd.testing.assert_frame_equal(da.drop(columns="probability"), db.drop(columns="probability"))
    np.testing.assert_allclose(da.probability, db.probability, atol=1e-6)
    assert set(da.readout) == {"linear", "mlp1x64"} and da.t.min() == 0 and da.t.max() == len(y) - 1
    # t = 0 is the prior: uniform over the K = 4 experts
    np.testing.assert_allclose(da[da.t == 0].probability, 0.25, rtol=1e-6)


def test_evaluate_parquet_and_other_strategy(features_npz, tmp_path, capsys):
    _, x, y = features_npz
    path = tmp_path / "feats.parquet"
    pd.DataFrame({"x": list(x), "y": y}).to_parquet(path)
    assert cli.main(["evaluate", str(path), "--experts", "small", "--quiet",
                     "--strategy", "bayes"]) == 0
    assert "BayesianMixture()" in capsys.readouterr().out


def test_evaluate_errors_name_the_argument(tmp_path, capsys):
    assert cli.main(["evaluate", str(tmp_path / "missing.npz")]) == 2
    assert "path: no such file" in capsys.readouterr().err
    bad = tmp_path / "bad.npz"
    np.savez(bad, x=np.zeros((4, 2)), y=np.array([0, 1, 2, -1]))
    assert cli.main(["evaluate", str(bad), "--quiet"]) == 2
    assert "y: labels must be >= 0" in capsys.readouterr().err
