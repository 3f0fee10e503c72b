"""Reproducibility you can check: same-machine reruns write bit-identical paper files,
and committed paper/ numbers that moved are reported (mdlnb.research._paperdiff)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mdlnb.research import _paperdiff

ROOT = Path(__file__).resolve().parent.parent

# A tiny but complete study: one zoo of three untrained ResNets (τ ranks the checkpoints of
# one architecture; against the probe, since 4 fine-tuning steps leave all three at 0.1),
# one real task,
# fine-tuning and probe ground truth, registry and label-free metrics, the MDL code, τ,
# tables and figures.
_STUDY = """
import sys
from mdlnb.studies import transferability as tr
cfg = tr.TransferabilityConfig(
    encoders=("random:resnet_XS", "random:resnet_XS:0:1", "random:resnet_XS:0:2"), tasks=("digits",),
    train_size=80, val_size=30, test_size=40, ratios=(2,), repeats=2, min_n=20,
    metrics=("hscore", "logme", "linear_valid"), grid_metrics=False, label_free=True, mdl=True,
    ft_learning_rates=(1e-3,), ft_steps=4, ft_batch_size=16, source_size=64, resamples=100,
    pretrain_size=64, pretrain_batch_size=32, truth="probe")
tr.run(cfg, progress=False).save(sys.argv[1], prefix="tiny")
"""


def test_two_processes_write_byte_identical_paper_files(tmp_path):
    """Each process has its own empty cache, so everything is recomputed from scratch."""
    procs = []
    for i in (1, 2):
        env = {
            **os.environ,
            "MDLNB_CACHE": str(tmp_path / f"cache{i}"),
            "MPLBACKEND": "Agg",
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        }
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", _STUDY, str(tmp_path / f"out{i}")],
                env=env,
                cwd=tmp_path,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
    one = {p.name: p.read_bytes() for p in sorted((tmp_path / "out1").iterdir())}
    two = {p.name: p.read_bytes() for p in sorted((tmp_path / "out2").iterdir())}
    assert {"tiny_kendall.csv", "tiny_kendall.png", "tiny_scores.csv"} <= set(one)
    assert len(pd.read_csv(tmp_path / "out1" / "tiny_kendall.csv")) > 0  # τ was computed
    assert sorted(one) == sorted(two)
    assert [n for n in one if one[n] != two[n]] == []
    scores = pd.read_csv(tmp_path / "out1" / "tiny_scores.csv")
    assert set(scores["metric"]) >= {"hscore", "logme", "linear_valid", "mdl", "cl", "clid"}
    assert np.isfinite(scores["value"]).all()


# ----------------------------------------------------------------------------- paper diff


def test_compare_tables_reports_only_cells_beyond_tolerance():
    old = pd.DataFrame(
        {"metric": ["mdl", "clid", "leep"], "N/K=2": [0.801, 0.255, 0.5], "encoders": [6, 6, 3]}
    )
    new = pd.DataFrame(
        {
            "metric": ["clid", "mdl", "leep"],
            "N/K=2": [0.112, 0.801 * (1 + 5e-4), np.nan],
            "encoders": [6, 6, 3],
        }
    )
    d = _paperdiff.compare_tables(new, old).set_index("row")
    assert sorted(d.index) == ["clid", "leep"]  # mdl moved 0.05 %, under rtol = 0.1 %
    assert d.loc["clid", "old"] == 0.255 and d.loc["clid", "new"] == 0.112
    assert d.loc["clid", "change"] == pytest.approx(-0.143)
    assert np.isnan(d.loc["leep", "new"])
    assert _paperdiff.compare_tables(new, old, rtol=1e-5).shape[0] == 3
    assert _paperdiff.compare_tables(old, old).empty
    with pytest.raises(ValueError, match="rtol"):
        _paperdiff.compare_tables(new, old, rtol=-1)


def test_paper_diff_against_a_git_commit(tmp_path):
    def git(*args):
        subprocess.run(
            ["git", *args],
            cwd=tmp_path,
            check=True,
            capture_output=True,
            env={
                **os.environ,
                "GIT_AUTHOR_NAME": "t",
                "GIT_AUTHOR_EMAIL": "t@t",
                "GIT_COMMITTER_NAME": "t",
                "GIT_COMMITTER_EMAIL": "t@t",
            },
        )

    paper = tmp_path / "paper"
    paper.mkdir()
    git("init", "-q")
    (paper / "a.csv").write_text("task,acc\ndigits,0.8767\ntextures,0.9833\n")
    (paper / "b.csv").write_text("x,y\n1,2\n")
    git("add", ".")
    git("commit", "-q", "-m", "paper")
    (paper / "a.csv").write_text("task,acc\ndigits,0.8767\ntextures,0.97\n")
    (paper / "new.csv").write_text("x\n1\n")  # not committed: skipped
    diff = _paperdiff.paper_diff(paper, rev="HEAD")
    assert diff[["file", "row", "column"]].values.tolist() == [["a.csv", "textures", "acc"]]
    assert diff["old"].item() == 0.9833 and diff["new"].item() == 0.97
    text = _paperdiff.report(diff)
    assert "a.csv: 1 cell(s) moved" in text and "0.9833 -> 0.97" in text
    (paper / "a.csv").write_text("task,acc\ndigits,0.8767\ntextures,0.9833\n")
    assert "no committed number moved" in _paperdiff.report(_paperdiff.paper_diff(paper))
    outside = tmp_path.parent / f"{tmp_path.name}-nogit"
    outside.mkdir()
    (outside / "a.csv").write_text("x\n1\n")
    assert "no table compared" in _paperdiff.report(_paperdiff.paper_diff(outside))


def test_makefile_reproduce_ends_with_the_paper_diff():
    make = (ROOT / "Makefile").read_text()
    recipe = make.split("\nreproduce:", 1)[1].split("\n\n", 1)[0]
    assert "--compare-to-git HEAD" in recipe


def test_moves_within_the_runs_own_spread_are_told_apart():
    # a mean of 4 runs with sd 2 beside it: a rerun may move it by 2·2·√(2/4) = 2.83
    old = pd.DataFrame(
        {"task": ["a", "b"], "mean": [10.0, 10.0], "std": [2.0, 2.0], "count": [4, 4]}
    )
    new = old.assign(mean=[12.5, 13.0])
    d = _paperdiff.compare_tables(new, old).set_index("row")
    assert d.loc["a", "tolerance"] == pytest.approx(2 * 2 * np.sqrt(2 / 4))
    assert not d.loc["a", "beyond spread"] and d.loc["b", "beyond spread"]
    # one row per seed: the sd over the seeds of the same keys, 2·√2·sd for one run
    runs = pd.DataFrame({"rep": ["x"] * 3, "seed": [0, 1, 2], "loss": [1.0, 2.0, 3.0]})
    moved = runs.assign(loss=[1.0, 2.0, 3.0 + 2.5])
    d = _paperdiff.compare_tables(moved, runs)
    assert d["tolerance"].item() == pytest.approx(2 * np.sqrt(2) * 1.0)
    assert bool(d["beyond spread"].item()) is False
    # no spread in the table: deterministic, beyond it as soon as it moved
    plain = pd.DataFrame({"task": ["a"], "acc": [0.5]})
    d = _paperdiff.compare_tables(plain.assign(acc=[0.51]), plain)
    assert np.isnan(d["tolerance"].item()) and bool(d["beyond spread"].item())
    # a displayed number ("shown") moves with its value and is no row key
    shown = pd.DataFrame({"m": ["SDL"], "shown": ["≥ 12"], "value": [12.0]})
    d = _paperdiff.compare_tables(shown.assign(shown=["≥ 13"], value=[13.0]), shown)
    assert d[["row", "column"]].values.tolist() == [["SDL", "value"]]


def test_verdict_changes_against_a_git_commit(tmp_path):
    def git(*args):
        subprocess.run(
            ["git", *args],
            cwd=tmp_path,
            check=True,
            capture_output=True,
            env={
                **os.environ,
                "GIT_AUTHOR_NAME": "t",
                "GIT_AUTHOR_EMAIL": "t@t",
                "GIT_COMMITTER_NAME": "t",
                "GIT_COMMITTER_EMAIL": "t@t",
            },
        )

    claims_dir = tmp_path / "paper" / "claims"
    claims_dir.mkdir(parents=True)
    git("init", "-q")
    (claims_dir / "nb.csv").write_text(
        "id,direction,size\na1,replicated,smaller\na2,undetermined,consistent\n"
    )
    git("add", ".")
    git("commit", "-q", "-m", "claims")
    assert _paperdiff.verdict_changes(tmp_path / "paper").empty
    (claims_dir / "nb.csv").write_text(
        "id,direction,size\na1,replicated,consistent\na3,reversed,smaller\n"
    )
    v = _paperdiff.verdict_changes(tmp_path / "paper")
    assert v[["id", "old", "new"]].values.tolist() == [
        ["a1", "replicated, smaller", "replicated, consistent"],
        ["a2", "undetermined, consistent", "absent"],
        ["a3", "absent", "reversed, smaller"],
    ]
    text = _paperdiff.report(_paperdiff.paper_diff(tmp_path / "paper"), verdicts=v)
    assert "claims' verdicts: 3 changed" in text and "a1 (nb.csv)" in text
