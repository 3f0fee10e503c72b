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

from mdlnb.tools import cli


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
    assert (
        cli.main(
            [
                "switch",
                str(path),
                "--strategy",
                "fixed-share",
                "--alpha",
                "1",
                "--posterior",
                str(out_path),
            ]
        )
        == 0
    )
    # α = 1 is the elementwise mixture: total = Σ_t −log mean_k exp(−L)
    assert _nats(capsys.readouterr().out) == pytest.approx(
        -logsumexp(-L, axis=1).sum() + 40 * math.log(3), rel=1e-6
    )
    df = pd.read_csv(out_path) if suffix == ".csv" else pd.read_parquet(out_path)
    assert list(df.columns) == ["t", "expert", "readout", "probability"] and len(df) == 120
    assert set(df.expert.astype(str)) == {"linear", "mlp1", "mlp2"}
    assert df.t.min() == 0 and df.t.max() == 39  # examples seen before the prediction
    assert df.readout.isna().all()  # plain names: readout unknown, left empty
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
    assert (
        cli.main(["switch", str(path), "--key", "other", "--strategy", "fixed-share", "--m", "1"])
        == 0
    )
    # m = 1 never switches: Bayesian mixture
    assert _nats(capsys.readouterr().out) == pytest.approx(
        -logsumexp(-L.sum(0)) + math.log(2), rel=1e-6
    )


@pytest.mark.parametrize(
    "argv, match",
    [
        (["--key", "nope"], "key: 'nope' not in"),
        (["--m", "0.5"], "m: must be"),
        (["--alpha", "2"], "alpha: must lie"),
        (["--strategy", "bayes", "--m", "2"], "option(s) --m do not apply to 'bayes'"),
        (["--posterior", "out.txt"], "posterior: expected a .csv or .parquet"),
    ],
)
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
    proc = subprocess.run(
        [sys.executable, "-m", "mdlnb.tools.cli", "switch", str(path), "--strategy", "elementwise"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert _nats(proc.stdout) == pytest.approx(
        -logsumexp(-L, axis=1).sum() + 40 * math.log(3), rel=1e-6
    )


def test_switch_run_length_options(npz, capsys):
    path, _ = npz
    assert (
        cli.main(
            ["switch", str(path), "--strategy", "run-length", "--max-run", "1", "--phases", "1"]
        )
        == 0
    )
    rl = _nats(capsys.readouterr().out)
    assert cli.main(["switch", str(path), "--strategy", "fixed-share", "--alpha", "0.5"]) == 0
    assert rl == pytest.approx(_nats(capsys.readouterr().out), rel=1e-6)  # constant hazard 1/2


# --------------------------------------------------------------------------- evaluate
#
# Real data throughout: the first 300 scikit-learn digits (PCA-16 features; pixels pooled to
# 4×4) and scikit-learn's 442 diabetes patients (10 features, disease progression 25…346),
# written in every format the command line reads.

FORMATS = (".npy", ".npz", ".parquet", ".csv")


@pytest.fixture(scope="module")
def digits():
    from sklearn.datasets import load_digits
    from sklearn.decomposition import PCA

    x, y = load_digits(return_X_y=True)
    x, y = x[:300].astype(np.float32), y[:300]
    pca = PCA(16, random_state=0).fit_transform(x).astype(np.float32)
    pooled = x.reshape(-1, 4, 2, 4, 2).mean(axis=(2, 4)).reshape(-1, 16)
    return pca, pooled, y


@pytest.fixture(scope="module")
def diabetes():
    from sklearn.datasets import load_diabetes

    x, y = load_diabetes(return_X_y=True)
    return x.astype(np.float32), y.astype(np.float64)


def write(path, x=None, y=None):
    """Write features ``x`` and/or labels ``y`` in the format of ``path``'s suffix (a .npy
    holds one of them; a table names its columns x0 … and y)."""
    path = __import__("pathlib").Path(path)
    if path.suffix == ".npy":
        np.save(path, x if x is not None else y)
    elif path.suffix == ".npz":
        np.savez(path, **{k: v for k, v in (("x", x), ("y", y)) if v is not None})
    else:
        cols = {} if x is None else {f"x{i}": x[:, i] for i in range(x.shape[1])}
        df = pd.DataFrame({**cols, **({} if y is None else {"y": y})})
        df.to_csv(path, index=False) if path.suffix == ".csv" else df.to_parquet(path)
    return path


@pytest.mark.parametrize("suffix", FORMATS)
def test_every_format_reads_the_same_features_and_labels(digits, tmp_path, suffix):
    from mdlnb.core._userfiles import read_features, read_labels

    pca, _, y = digits
    got = read_features(write(tmp_path / f"f{suffix}", pca, None if suffix == ".npy" else y))
    assert got.x.dtype == np.float32
    np.testing.assert_array_equal(got.x, pca)  # float32 round-trips through text too
    if suffix != ".npy":
        np.testing.assert_array_equal(got.y, y)
    np.testing.assert_array_equal(read_labels(write(tmp_path / f"y{suffix}", y=y)), y)


def test_headerless_csv_and_one_column_label_files(digits, tmp_path):
    from mdlnb.core._userfiles import read_features, read_labels

    pca, _, y = digits
    np.savetxt(tmp_path / "f.csv", pca, delimiter=",", fmt="%.9g")  # no header row
    np.savetxt(tmp_path / "y.csv", y, fmt="%d")
    np.testing.assert_array_equal(read_features(tmp_path / "f.csv").x, pca)
    np.testing.assert_array_equal(read_labels(tmp_path / "y.csv"), y)
    np.savez(tmp_path / "only.npz", labels=y)  # one array: no key
    np.testing.assert_array_equal(read_labels(tmp_path / "only.npz"), y)


def _bad_files(tmp, x, y):
    (tmp / "notes.txt").write_text("1,2,3\n")
    (tmp / "broken.npz").write_bytes(b"PK\x03\x04 not really a zip")
    good = tmp / "good.npz"
    np.savez(good, x=x, y=y)
    (tmp / "cut.npz").write_bytes(good.read_bytes()[:200])
    pd.DataFrame({"a": ["one"] * len(y), "y": y}).to_csv(tmp / "text.csv", index=False)
    np.save(tmp / "objects.npy", np.array([{"a": 1}] * 3, dtype=object), allow_pickle=True)
    (tmp / "empty.csv").write_text("")
    (tmp / "bad.parquet").write_bytes(b"PAR1 nope")
    np.save(tmp / "short.npy", y[:-1])
    np.save(tmp / "x.npy", x)


@pytest.mark.parametrize(
    "argv, match",
    [
        (["evaluate", "missing.npz"], "features: no such file"),
        (["evaluate", "notes.txt"], "features: 'notes.txt' is not a .npy, .npz, .parquet or .csv"),
        (["evaluate", "broken.npz"], "features: 'broken.npz' is not a readable .npz file"),
        (["evaluate", "cut.npz"], "features: 'cut.npz' is not a readable .npz file"),
        (["evaluate", "text.csv"], "features: column(s) ['a'] of 'text.csv' are not numbers"),
        (["evaluate", "objects.npy"], "features: 'objects.npy' is not a readable .npy file"),
        (["evaluate", "empty.csv"], "features: 'empty.csv' is not a readable .csv file"),
        (["evaluate", "bad.parquet"], "features: 'bad.parquet' is not a readable .parquet file"),
        (["evaluate", "x.npy"], "labels: 'x.npy' holds no labels 'y'; pass --labels FILE"),
        (["evaluate", "x.npy", "--labels", "short.npy"], "labels: 299 labels for 300 examples"),
        (["evaluate", "x.npy", "--labels", "notes.txt"], "labels: 'notes.txt' is not a .npy"),
        (["evaluate", "good.npz", "--x-key", "feats"], "features: no array 'feats' in 'good.npz'"),
        (
            ["compare", "x.npy", "good.npz", "--labels", "short.npy"],
            "features: {'x': 300, 'good': 300} examples, but 299 labels",
        ),
        (["compare", "x.npy", "x.npy"], "names: need 2 distinct names"),
        (
            ["compare", "x.npy", "objects.npy", "--labels", "short.npy"],
            "features: 'objects.npy' is not a readable .npy file",
        ),
        (["evaluate", "good.npz", "--table", "t.csv"], None),  # an argparse error (exit 2)
    ],
)
def test_unreadable_inputs_are_one_line_errors(digits, tmp_path, monkeypatch, capsys, argv, match):
    pca, _, y = digits
    _bad_files(tmp_path, pca, y)
    monkeypatch.chdir(tmp_path)
    if match is None:
        with pytest.raises(SystemExit) as e:
            cli.main(argv)
        assert e.value.code == 2
        return
    assert cli.main([*argv, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"mdlnb {argv[0]}: error: ") and match in err, err
    assert "Traceback" not in err and err.count("\n") == 1


def test_unwritable_output_is_an_error_not_a_traceback(digits, tmp_path, capsys):
    pca, _, y = digits
    path = write(tmp_path / "f.npz", pca, y)
    code = cli.main(
        [
            "evaluate",
            str(path),
            "--protocol",
            "small",
            "--quiet",
            "--posterior",
            str(path / "post.csv"),
        ]
    )  # under a file: fails at once
    err = capsys.readouterr().err
    assert code == 2 and "posterior: cannot write" in err and "not a writable folder" in err
    code = cli.main(
        ["compare", str(path), str(path), "--names", "a", "b", "--figure", str(path / "fig.png")]
    )
    assert code == 2 and "figure: cannot write" in capsys.readouterr().err


def _nats_of(text: str) -> float:
    return float(re.search(r"switching code : ([0-9,.]+) nats", text).group(1).replace(",", ""))


def test_evaluate_matches_the_library_and_writes_the_posterior(digits, tmp_path, capsys):
    import mdlnb

    pca, _, y = digits
    path = write(tmp_path / "feats.npz", pca, y)
    out = tmp_path / "post.csv"
    assert (
        cli.main(["evaluate", str(path), "--protocol", "small", "--quiet", "--posterior", str(out)])
        == 0
    )
    text = capsys.readouterr().out
    rep = mdlnb.evaluate(pca, y, protocol="small", progress=False)
    assert _nats_of(text) == pytest.approx(rep.total_nats, abs=0.05)
    assert rep.total_nats < 0.7 * len(y) * math.log(10)  # real features compress the labels
    assert "task 'feats'" in text  # named after the file
    post = pd.read_csv(out)
    np.testing.assert_allclose(post.groupby("t")["probability"].sum(), 1.0, atol=1e-6)


def test_switch_and_evaluate_write_one_posterior_format(digits, tmp_path, capsys):
    """The same loss matrix through `mdlnb evaluate --posterior` and, saved, through
    `mdlnb switch --posterior` gives the same table: columns, t origin, expert and
    readout names, probabilities."""
    import mdlnb

    pca, _, y = digits
    path = write(tmp_path / "feats.npz", pca, y)
    a, b, lm_path = tmp_path / "a.csv", tmp_path / "b.csv", tmp_path / "lm.npz"
    assert (
        cli.main(["evaluate", str(path), "--experts", "small", "--quiet", "--posterior", str(a)])
        == 0
    )
    rep = mdlnb.evaluate(mdlnb.Task.from_npz(path), experts="small", progress=False)
    rep.losses.save(lm_path)
    assert (
        cli.main(
            ["switch", str(lm_path), "--strategy", "fixed-share", "--m", "2", "--posterior", str(b)]
        )
        == 0
    )
    capsys.readouterr()
    da, db = pd.read_csv(a), pd.read_csv(b)
    assert list(da.columns) == list(db.columns) == ["t", "expert", "readout", "probability"]
    pd.testing.assert_frame_equal(da.drop(columns="probability"), db.drop(columns="probability"))
    np.testing.assert_allclose(da.probability, db.probability, atol=1e-6)
    assert set(da.readout) == {"linear", "mlp1x64"} and da.t.min() == 0 and da.t.max() == len(y) - 1
    # t = 0 is the prior: uniform over the K = 4 experts
    np.testing.assert_allclose(da[da.t == 0].probability, 0.25, rtol=1e-6)


@pytest.mark.parametrize("suffix", FORMATS)
def test_compare_reads_every_format_with_separate_labels(digits, tmp_path, capsys, suffix):
    """`mdlnb compare a b --labels y` (the trial's `.npy` command crashed) gives the
    library's numbers from every format."""
    import mdlnb

    pca, pooled, y = digits
    files = [
        str(write(tmp_path / f"{n}{suffix}", x)) for n, x in (("pca", pca), ("pooled", pooled))
    ]
    table = tmp_path / "t.csv"
    assert (
        cli.main(
            [
                "compare",
                *files,
                "--labels",
                str(write(tmp_path / f"y{suffix}", y=y)),
                "--protocol",
                "small",
                "--quiet",
                "--table",
                str(table),
            ]
        )
        == 0
    )
    out = capsys.readouterr()
    assert "task 'y', N=300, C=10" in out.out
    lib = mdlnb.compare({"pca": pca, "pooled": pooled}, y, protocol="small", progress=False)
    got = pd.read_csv(table).set_index("encoder")["total [nats]"]
    want = lib.table().set_index("encoder")["total [nats]"]
    np.testing.assert_allclose(got[want.index], want, rtol=1e-6)


def test_a_warning_is_printed_once_under_the_table(digits, tmp_path, capfd):
    """The small board's two-value learning-rate grid warns: one line under the table,
    not a second time as a Python warning on stderr."""
    pca, pooled, y = digits
    files = [str(write(tmp_path / f"{n}.npz", x, y)) for n, x in (("pca", pca), ("pooled", pooled))]
    assert cli.main(["compare", *files, "--protocol", "small", "--quiet"]) == 0
    out, err = capfd.readouterr()
    lines = [ln.strip() for ln in out.splitlines() if ln.strip().startswith("warning:")]
    assert lines and len(set(lines)) == len(lines)
    assert "only two values of learning_rate" in lines[0]
    assert "warning" not in err


def test_regression_from_the_command_line(diabetes, tmp_path, capsys):
    """--kind regression codes real targets with Gaussian readouts, the library's numbers;
    without it, non-integer targets are refused and integer-valued ones warned about, each
    message naming --kind regression."""
    import mdlnb

    x, y = diabetes
    noise = np.random.default_rng(0).normal(size=x.shape).astype(np.float32)
    fx, fn = write(tmp_path / "feats.npy", x), write(tmp_path / "noise.npy", noise)
    fy = write(tmp_path / "progression.csv", y=y)
    assert (
        cli.main(
            [
                "evaluate",
                str(fx),
                "--labels",
                str(fy),
                "--kind",
                "regression",
                "--protocol",
                "small",
                "--quiet",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    rep = mdlnb.evaluate(
        mdlnb.Task.from_arrays(x, y, kind="regression", name="feats"),
        protocol="small",
        progress=False,
    )
    assert "regression, density codelengths" in text
    assert _nats_of(text) == pytest.approx(rep.total_nats, abs=0.05)
    assert (
        cli.main(
            [
                "compare",
                str(fx),
                str(fn),
                "--labels",
                str(fy),
                "--kind",
                "regression",
                "--protocol",
                "small",
                "--quiet",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    head = text.splitlines()[0]
    assert "regression (density codelengths: see the units line below)" in head
    assert head.count("density codelength") == 1 and "units: density codelength" in text
    assert re.search(r"\| feats \|.*\| 1 \|", text)  # the features beat the noise
    # the same targets without --kind: refused (non-integer), or warned (integer-valued)
    write(tmp_path / "half.npy", y=y + 0.5)
    assert cli.main(["evaluate", str(fx), "--labels", str(tmp_path / "half.npy"), "--quiet"]) == 2
    assert "--kind regression" in capsys.readouterr().err
    assert (
        cli.main(["evaluate", str(fx), "--labels", str(fy), "--protocol", "small", "--quiet"]) == 0
    )
    err = capsys.readouterr().err  # one line, the command's, no source path
    assert re.fullmatch(
        r"mdlnb evaluate: warning: y: C = max\(y\) \+ 1 = 347 classes.*"
        r"continuous quantity.*On the command line: --kind regression\.\n",
        err,
    )


def test_regression_kind_recorded_in_an_npz_needs_no_flag(diabetes, tmp_path, capsys):
    import mdlnb

    x, y = diabetes
    path = mdlnb.Task.from_arrays(x, y, kind="regression", name="d").to_npz(tmp_path / "d.npz")
    assert cli.main(["evaluate", str(path), "--protocol", "small", "--quiet"]) == 0
    assert "regression, density codelengths" in capsys.readouterr().out


def test_every_option_of_evaluate_and_compare_is_reachable_or_said_python_only(capsys):
    """Each keyword argument of mdlnb.evaluate and mdlnb.compare, and each field of a
    Protocol, is a flag of the command — or named in --help's Python-only paragraph."""
    import dataclasses
    import inspect

    import mdlnb

    flag_of = {
        "progress": "--quiet",
        "cache": "--no-cache",
        "seeds": "--seeds",
        "board": "--experts",
        "name": "--name",
    }
    for cmd, fn in (("evaluate", mdlnb.evaluate), ("compare", mdlnb.compare)):
        with pytest.raises(SystemExit):
            cli.main([cmd, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        python_only = text[text.index("Python only") :]
        options = [
            p
            for p in inspect.signature(fn).parameters.values()
            if p.kind is inspect.Parameter.KEYWORD_ONLY
        ]
        fields = [f.name for f in dataclasses.fields(mdlnb.Protocol) if f.name != "name"]
        for opt in [o.name for o in options] + fields:
            if cmd == "compare" and opt == "seed":
                continue  # one order per --seeds value
            flag = flag_of.get(opt, "--" + opt.replace("_", "-"))
            assert f" {flag} " in text or opt in python_only, (cmd, opt)
        assert "clip" in python_only and "prune" in python_only and "Expert objects" in python_only


def test_strategy_and_protocol_flags_reach_the_library(digits, tmp_path, capsys):
    import mdlnb
    from mdlnb import switching

    pca, _, y = digits
    path = write(tmp_path / "f.npz", pca, y)
    assert (
        cli.main(
            [
                "evaluate",
                str(path),
                "--protocol",
                "small",
                "--quiet",
                "--strategy",
                "run-length",
                "--max-run",
                "3",
                "--phases",
                "1",
            ]
        )
        == 0
    )
    rep = mdlnb.evaluate(
        pca, y, protocol="small", progress=False, strategy=switching.RunLength(max_run=3, phases=1)
    )
    assert _nats_of(capsys.readouterr().out) == pytest.approx(rep.total_nats, abs=0.05)
    post = tmp_path / "p.csv"
    assert (
        cli.main(
            [
                "evaluate",
                str(path),
                "--protocol",
                "small",
                "--quiet",
                "--calibrate",
                "--posterior",
                str(post),
            ]
        )
        == 0
    )
    assert pd.read_csv(post)["expert"].str.endswith("-cal").all()
    assert cli.main(["evaluate", str(path), "--strategy", "bayes", "--m", "2", "--quiet"]) == 2
    assert "--m do not apply to 'bayes'" in capsys.readouterr().err


# ------------------------------------------------------- README and docs/ command lines


def _readme_mdlnb_lines() -> list[list[str]]:
    import shlex

    from tests.test_readme import all_bash_commands

    return [
        shlex.split(c)[1:]
        for c in all_bash_commands()
        if c.startswith(".venv/bin/mdlnb ") and not c.startswith(".venv/bin/mdlnb cache")
    ]


@pytest.mark.slow  # the README's `--protocol default` compare: the 40-expert board, once
def test_every_readme_command_line_runs_on_every_format(digits, tmp_path, monkeypatch, capsys):
    """Each `mdlnb evaluate|compare|switch` line of README.md and docs/, with its data files
    written in each format in turn (the losses of `switch` stay an .npz: a LossMatrix
    file; a .npy holds no labels, so `evaluate` gets `--labels` there), runs and prints
    the same numbers in every format (stage 1 is computed for the first format and read
    from the cache for the others: the same float32 features)."""
    pca, pooled, y = digits
    x = {
        "features": pca,
        "a": pca,
        "b": pooled,
        "c": pca[:, ::-1].copy(),
        "pixels": pooled,
        "pca16": pca,
        "randproj16": pca @ np.random.default_rng(0).normal(size=(16, 16)),
    }
    rng = np.random.default_rng(1)
    np.savez(tmp_path / "losses.npz", losses=rng.uniform(0.1, 3.0, size=(300, 4)))
    monkeypatch.chdir(tmp_path)
    lines = _readme_mdlnb_lines()
    assert {a[0] for a in lines} == {"evaluate", "switch", "compare"}
    for argv in lines:
        printed = {}
        for suffix in FORMATS:
            args = []
            for a in argv:
                stem, dot, ext = a.rpartition(".")
                if argv[0] != "switch" and stem in x and ext in ("npz", "npy"):
                    a = str(
                        write(
                            tmp_path / f"{stem}{suffix}",
                            x[stem].astype(np.float32),
                            y if stem == "features" else None,
                        )
                    )
                elif a == "y.npy":
                    a = str(write(tmp_path / f"y{suffix}", y=y))
                args.append(a)
            if suffix == ".npy" and argv[0] == "evaluate":  # a .npy holds x only
                args += ["--labels", str(write(tmp_path / "y.npy", y=y))]
            assert cli.main(args if argv[0] == "switch" else [*args, "--quiet"]) == 0, args
            out = capsys.readouterr().out
            assert "nats" in out, args
            printed[suffix] = re.sub(r"\S+\.(npz|npy|csv|parquet|png)\b", "FILE", out)
        assert len(set(printed.values())) == 1, (argv, printed)
