"""Sweeps (mdlnb.tools.runner._sweep): every combination checked before any run, one executed
notebook per combination, resumable, and one tidy table of what the runs saved — end to end
on the smoke profile of the quickstart notebook."""

from __future__ import annotations

import csv
import math

import nbformat
import pandas as pd
import pytest

from mdlnb.tools import runner
from mdlnb.tools.runner import _notebooks, _sweep


def test_parse_sweep_reads_each_value_as_yaml():
    grid = _sweep.parse_sweep(
        [
            "seed=0,1,2",
            "rate=1e-3, 0.5",
            "name=a,b",
            "overrides.tasks=[digits],[digits, lfw_faces]",
            "size=null,300",
        ]
    )
    assert grid == {
        "seed": [0, 1, 2],
        "rate": [0.001, 0.5],
        "name": ["a", "b"],
        "overrides.tasks": [["digits"], ["digits", "lfw_faces"]],
        "size": [None, 300],
    }
    assert type(grid["rate"][0]) is float
    for bad, match in [
        ("seed", "KEY=V1"),
        ("seed=", "KEY=V1"),
        ("=1,2", "KEY=V1"),
        ("overrides.=1", "overrides.FIELD"),
        ("x=[1,", "not a YAML list"),
    ]:
        with pytest.raises(ValueError, match=match):
            _sweep.parse_sweep([bad])
    with pytest.raises(ValueError, match="swept twice"):
        _sweep.parse_sweep(["seed=1", "seed=2"])


def test_combinations_are_the_cross_product_last_key_fastest():
    combos = _sweep.combinations({"a": [1, 2], "b": ["x", "y", "z"]})
    assert combos == [{"a": a, "b": b} for a in (1, 2) for b in ("x", "y", "z")]
    with pytest.raises(ValueError, match="grid: a"):
        _sweep.combinations({"a": []})
    with pytest.raises(ValueError, match="grid: a"):
        _sweep.combinations({"a": "12"})
    assert (
        _sweep.label({"seed": 1, "overrides.tasks": ["digits", "lfw faces"]})
        == "seed=1,tasks=digits+lfw_faces"
    )


def test_every_run_is_checked_before_any_kernel(monkeypatch, tmp_path):
    ran = []
    monkeypatch.setattr(_notebooks, "run", lambda *a, **k: ran.append(a))
    with pytest.raises(ValueError, match="seed = 'x' is a str"):  # the second value is bad
        _sweep.sweep("quickstart", "smoke", {"seed": [0, "x"]}, out_dir=tmp_path)
    with pytest.raises(ValueError, match="not parameters"):
        _sweep.sweep("quickstart", "smoke", {"sede": [0, 1]}, out_dir=tmp_path)
    with pytest.raises(ValueError, match="both swept and fixed"):
        _sweep.sweep(
            "objectives",
            "smoke",
            {"overrides.train_size": [50, 60]},
            parameters={"overrides": {"train_size": 40}},
            out_dir=tmp_path,
        )
    with pytest.raises(ValueError, match="unknown EncodersConfig fields"):
        _sweep.sweep("objectives", "smoke", {"overrides.train_sise": [50]}, out_dir=tmp_path)
    assert ran == []


def test_plan_gives_each_run_its_own_folder_and_paper_dir(tmp_path):
    runs = _sweep.plan(
        "quickstart", "smoke", {"seed": [0, 1]}, parameters={"size": 200}, out_dir=tmp_path
    )
    assert [tag for tag, _, _ in runs] == ["seed=0", "seed=1"]
    assert [p for _, _, p in runs] == [
        {"size": 200, "seed": s, "paper_dir": str(tmp_path / f"seed={s}" / "paper")} for s in (0, 1)
    ]


def test_command_line_check_runs_nothing(capsys, monkeypatch):
    monkeypatch.setattr(_notebooks, "run", lambda *a, **k: pytest.fail("ran a notebook"))
    assert (
        runner.main(
            [
                "quickstart",
                "--profile",
                "smoke",
                "--sweep",
                "seed=0,1",
                "--sweep",
                "size=200,300",
                "--check",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "4 runs checked: seed=0,size=200, seed=0,size=300, seed=1,size=200" in out
    with pytest.raises(ValueError, match="one notebook"):
        runner.main(["quickstart", "parity_toy", "--sweep", "seed=0,1", "--check"])


def test_a_failed_run_is_reported_and_the_others_go_on(monkeypatch, tmp_path):
    def fake_run(name, profile, *, out_dir, parameters, progress):
        if parameters["seed"] == 1:
            raise RuntimeError("kernel died\nat the end")
        paper = tmp_path / "out" / f"seed={parameters['seed']}" / "paper"
        paper.mkdir(parents=True)
        (paper / "t.csv").write_text("k,v\na,1.5\nb,2.5\n")
        return out_dir / f"{name}.ipynb"

    monkeypatch.setattr(_notebooks, "run", fake_run)
    result = _sweep.sweep("quickstart", "smoke", {"seed": [0, 1]}, out_dir=tmp_path / "out")
    assert result.failed == ["seed=1"]
    assert list(result.runs["status"]) == ["ran", "failed"]
    assert result.runs.loc[1, "error"] == "at the end"
    assert result.values.to_dict("records") == [
        {"run": "seed=0", "seed": 0, "table": "t", "row": "k=a", "column": "v", "value": 1.5},
        {"run": "seed=0", "seed": 0, "table": "t", "row": "k=b", "column": "v", "value": 2.5},
    ]
    assert pd.read_csv(result.runs_path)["status"].tolist() == ["ran", "failed"]


def test_values_uses_the_manifest_and_the_claims_and_positions_for_duplicate_keys(tmp_path):
    (tmp_path / "manifest").mkdir()
    (tmp_path / "claims").mkdir()
    (tmp_path / "nb_a.csv").write_text("enc,task,x,ok\ne1,t1,1,true\ne1,t2,2,false\n")
    (tmp_path / "nb_b.csv").write_text("enc,x\ne1,3\ne1,4\n")  # keys repeat
    (tmp_path / "other.csv").write_text("k,v\na,9\n")  # not listed
    (tmp_path / "manifest" / "nb.csv").write_text(
        "file,kind,notebook,profile,date\nnb_a.csv,table,nb,smoke,d\nnb_b.csv,table,nb,smoke,d\n"
        "nb_a.png,figure,nb,smoke,d\n"
    )
    (tmp_path / "claims" / "nb.csv").write_text("id,ours\nc1,0.25\n")
    got = _sweep.values(tmp_path, "nb")
    assert list(zip(got["table"], got["row"], got["column"], got["value"])) == [
        ("nb_a", "enc=e1; task=t1", "x", 1.0),
        ("nb_a", "enc=e1; task=t1", "ok", 1.0),
        ("nb_a", "enc=e1; task=t2", "x", 2.0),
        ("nb_a", "enc=e1; task=t2", "ok", 0.0),
        ("nb_b", "0", "x", 3.0),
        ("nb_b", "1", "x", 4.0),
        ("claims/nb", "id=c1", "ours", 0.25),
    ]


@pytest.mark.notebook
@pytest.mark.slow
def test_sweep_of_the_quickstart_smoke_run_end_to_end(tmp_path, capsys):
    out = tmp_path / "sweep"
    argv = ["quickstart", "--profile", "smoke", "--sweep", "seed=0,1", "--out-dir", str(out)]
    assert runner.main(argv) == 0
    runs = pd.read_csv(out / "runs.csv")
    assert runs[["run", "seed", "status"]].values.tolist() == [
        ["seed=0", 0, "ran"],
        ["seed=1", 1, "ran"],
    ]
    table = pd.read_csv(out / "values.csv")
    assert list(table.columns) == ["run", "seed", "table", "row", "column", "value"]
    for seed in (0, 1):
        nb = nbformat.read(out / f"seed={seed}" / "quickstart.ipynb", as_version=4)
        params = nb.metadata["mdlnb"]["parameters"]
        assert params["seed"] == seed and params["profile"] == "smoke"
        assert params["paper_dir"] == str(out / f"seed={seed}" / "paper")
        # every number of the run's codelength table is in the sweep's table, once
        with open(out / f"seed={seed}" / "paper" / "quickstart_codelengths.csv") as f:
            saved = list(csv.DictReader(f))
        mine = table[(table["seed"] == seed) & (table["table"] == "quickstart_codelengths")]
        assert len(mine) == len(saved) * (len(saved[0]) - 1)
        for rec in saved:
            for column, text in rec.items():
                if column == "code":
                    continue
                hit = mine[(mine["row"] == f"code={rec['code']}") & (mine["column"] == column)]
                assert len(hit) == 1 and math.isclose(
                    hit["value"].iloc[0], float(text), rel_tol=1e-15
                )
    # another example order, another codelength
    fs = table[(table["row"] == "code=FixedShare(m=2)") & (table["column"] == "total [nats]")]
    assert fs["seed"].tolist() == [0, 1] and fs["value"].iloc[0] != fs["value"].iloc[1]
    capsys.readouterr()
    # a second call finds both runs done: nothing runs, the same table
    assert runner.main(argv) == 0
    assert "up to date" in capsys.readouterr().out
    assert pd.read_csv(out / "runs.csv")["status"].tolist() == ["up to date"] * 2
    pd.testing.assert_frame_equal(pd.read_csv(out / "values.csv"), table)
