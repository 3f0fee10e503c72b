"""mdlnb.tools.runner: parameters read from the notebook, profiles checked before anything runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mdlnb.tools import runner
from mdlnb.tools.runner import _notebooks

_NOTEBOOK = """# %% tags=["parameters"]
profile = "default"
paper_dir = "paper"
study = "transferability"
overrides = {}
size = None  # a comment
steps = 2 * 50
seed = 0
rate = 0.5
tags = ["a"]

# %%
print(overrides)
"""


@pytest.fixture
def fake_notebooks(tmp_path, monkeypatch):
    (tmp_path / "toy.py").write_text(_NOTEBOOK)
    monkeypatch.setattr(_notebooks, "notebook_dir", lambda: tmp_path)
    return tmp_path


def test_notebook_parameters_reads_the_parameters_cell(fake_notebooks):
    params = runner.notebook_parameters("toy")
    assert params == {
        "profile": "default",
        "paper_dir": "paper",
        "study": "transferability",
        "overrides": {},
        "size": None,
        "steps": "2 * 50",
        "seed": 0,
        "rate": 0.5,
        "tags": ["a"],
    }
    with pytest.raises(ValueError, match="name"):
        runner.notebook_parameters("nope")


@pytest.mark.parametrize(
    "yaml_text,match",
    [
        ("toy:\n  smoke:\n    sizes: 3\n", r"\['sizes'\].*not parameters"),
        (
            "toy:\n  smoke:\n    overrides:\n      repeat: 2\n",
            "unknown TransferabilityConfig fields",
        ),
        ("toy:\n  full:\n    overrides:\n      repeats: 0\n", "repeats"),
        ("toy:\n  huge:\n    size: 3\n", "profile"),
        ("other:\n  smoke:\n    size: 3\n", "no notebook 'other'"),
    ],
)
def test_check_profiles_rejects_unknown_names_fields_and_values(fake_notebooks, yaml_text, match):
    (fake_notebooks / "profiles.yaml").write_text(yaml_text)
    with pytest.raises(ValueError, match=match):
        runner.check_profiles()


def test_profile_parameters_checks_and_fills_defaults(fake_notebooks):
    (fake_notebooks / "profiles.yaml").write_text(
        "toy:\n  smoke:\n    size: 3\n    overrides:\n      repeats: 2\n"
    )
    runner.check_profiles()
    p = runner.profile_parameters("toy", "smoke")
    assert p["size"] == 3 and p["overrides"] == {"repeats": 2} and p["profile"] == "smoke"
    assert p["paper_dir"].endswith("paper-smoke")  # smoke never writes paper/
    (fake_notebooks / "profiles.yaml").write_text("toy:\n  smoke:\n    sise: 3\n")
    with pytest.raises(ValueError, match="sise"):
        runner.profile_parameters("toy", "smoke")


def test_repository_profiles_are_valid():
    # the runner finds the repository it lives in: every notebook, so the check is not vacuous
    root = Path(__file__).resolve().parents[1]
    assert runner.ROOT == root and runner.notebook_dir() == root / "notebooks"
    assert runner.available() == sorted(p.stem for p in (root / "notebooks").glob("*.py"))
    assert "quickstart" in runner.available() and len(runner.available()) >= 12
    runner.check_profiles()


def test_main_checks_all_profiles_first_and_ends_with_the_paper_diff(tmp_path, monkeypatch, capsys):
    import subprocess

    ran = []
    monkeypatch.setattr(_notebooks, "run", lambda name, profile, **kw: ran.append(name) or name)
    real = runner.notebook_dir()
    monkeypatch.setattr(_notebooks, "notebook_dir", lambda: real)
    monkeypatch.setattr(_notebooks, "ROOT", tmp_path)  # paper/ of a throw-away repo
    (tmp_path / "paper").mkdir()
    (tmp_path / "paper" / "t.csv").write_text("k,v\na,1.0\n")
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        "PATH": __import__("os").environ["PATH"],
    }
    for cmd in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "p"]):
        subprocess.run(["git", *cmd], cwd=tmp_path, check=True, env=env, capture_output=True)
    (tmp_path / "paper" / "t.csv").write_text("k,v\na,2.0\n")
    assert runner.main(["--profile", "smoke", "--compare-to-git", "HEAD", "quickstart"]) == 0
    out = capsys.readouterr().out
    assert ran == ["quickstart"]
    assert "t.csv: 1 cell(s) moved" in out and "1 -> 2" in out
    with pytest.raises(ValueError, match="name"):  # checked before anything runs
        runner.main(["--profile", "smoke", "quickstart", "no_such_notebook"])
    assert ran == ["quickstart"]


_RUNNABLE = """# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% tags=["parameters"]
profile = "default"
paper_dir = "paper"
fail = False

# %%
import os
from mdlnb.infra import _progress
print("progress:", os.environ.get("MDLNB_PROGRESS"))
for _ in _progress.bar(range(300), desc="steps", unit="step"):
    pass
assert not fail, "asked to fail"
"""


def test_run_writes_only_successful_notebooks_with_their_metadata_and_html(tmp_path, monkeypatch):
    import os

    import nbformat

    nbs = tmp_path / "nbs"
    nbs.mkdir()
    (nbs / "toy.py").write_text(_RUNNABLE)
    (nbs / "profiles.yaml").write_text("toy:\n  smoke:\n    fail: true\n")
    monkeypatch.setattr(_notebooks, "notebook_dir", lambda: nbs)
    out_dir = tmp_path / "out"
    started = __import__("time").time()
    out = runner.run("toy", "default", out_dir=out_dir, paper=True)
    assert out == out_dir / "toy.ipynb" and sorted(p.name for p in out_dir.iterdir()) == [
        "toy.html",
        "toy.ipynb",
    ]  # no input/running copies left
    nb = nbformat.read(out, as_version=4)
    meta = nb["metadata"]["mdlnb"]
    assert meta["profile"] == "default" and meta["parameters"] == {"profile": "default"}
    assert 0 < meta["wall_s"] < 120 and meta["finished_epoch"] >= started
    text = "".join(o.get("text", "") for c in nb["cells"] for o in c.get("outputs", []))
    assert "progress: 0" in text  # the kernel ran in batch mode
    # 300 steps of a bar leave one summary line, no redrawn text bar
    assert "\r" not in text and re.search(r"^steps: 300/300 step in [\d.]+ s$", text, re.M)
    assert len(text.splitlines()) == 2
    assert runner.stale("toy", "default", out_dir=out_dir) == []
    html = out_dir / "toy.html"  # written by run, beside it
    assert "progress: 0" in html.read_text() and runner.to_html(out) == html
    with pytest.raises(ValueError, match="ipynb"):
        runner.to_html(out_dir / "toy.html")

    # the smoke profile fails: the good notebook of the other profile is untouched,
    # the failed run is kept for reading, and no smoke notebook appears
    with pytest.raises(Exception, match="asked to fail"):
        runner.run("toy", "smoke", out_dir=tmp_path / "smoke")
    assert sorted(p.name for p in (tmp_path / "smoke").iterdir()) == ["toy.failed.ipynb"]
    assert not (tmp_path / "smoke" / "toy.html").exists()
    table = runner.summary(["toy"], "smoke", out_dir=tmp_path / "smoke")
    assert table["status"].tolist() == ["failed"]
    table = runner.summary(["toy"], "default", out_dir=out_dir, since=started)
    assert table["status"].tolist() == ["ran"] and table["wall [s]"].item() == meta["wall_s"]
    assert table["html"].item().endswith("toy.html")
    assert runner.summary(["toy"], "default", out_dir=out_dir, since=meta["finished_epoch"] + 1)[
        "status"
    ].tolist() == ["up to date"]
    assert runner.summary(["toy"], "full", out_dir=tmp_path / "none")["status"].tolist() == [
        "missing"
    ]
    assert "1 ran" in runner.format_summary(
        runner.summary(["toy"], "default", out_dir=out_dir, since=started), "default"
    )

    # stale: a newer source, or parameters other than the recorded ones
    (nbs / "profiles.yaml").write_text("toy:\n  default:\n    fail: false\n")
    assert any("parameters changed" in r for r in runner.stale("toy", "default", out_dir=out_dir))
    (nbs / "profiles.yaml").write_text("")
    assert runner.stale("toy", "default", out_dir=out_dir) == []  # a --paper run stays one
    (nbs / "profiles.yaml").write_text("")
    t = out.stat().st_mtime + 5
    os.utime(nbs / "toy.py", (t, t))
    assert [r for r in runner.stale("toy", "default", out_dir=out_dir)] == [
        f"{nbs / 'toy.py'} is newer"
    ]


def test_run_restores_the_environment(fake_notebooks, monkeypatch):
    import os

    monkeypatch.setenv("MDLNB_PROGRESS", "1")
    with runner._environ({"MDLNB_PROGRESS": "0", "MDLNB_X_TEST": "y"}):
        assert os.environ["MDLNB_PROGRESS"] == "0" and os.environ["MDLNB_X_TEST"] == "y"
    assert os.environ["MDLNB_PROGRESS"] == "1" and "MDLNB_X_TEST" not in os.environ


def test_write_params_rewrites_only_changed_entries(fake_notebooks, tmp_path):
    import os

    (fake_notebooks / "other.py").write_text(_NOTEBOOK)
    (fake_notebooks / "profiles.yaml").write_text(
        "toy:\n  smoke:\n    size: 3\nother:\n  smoke:\n    size: 4\n"
    )
    root = tmp_path / "stamps"
    written = runner.write_params(root)
    assert len(written) == 2 * len(runner.PROFILES)
    toy, other = (runner.params_path(n, "smoke", root) for n in ("toy", "other"))
    assert toy.read_text() == '{\n "size": 3\n}\n'
    assert runner.params_path("toy", "full", root).read_text() == "{}\n"
    for p in (toy, other):
        os.utime(p, (1, 1))
    (fake_notebooks / "profiles.yaml").write_text(
        "# a comment\ntoy:\n  smoke:\n    size: 3\nother:\n  smoke:\n    size: 5\n"
    )
    assert runner.write_params(root) == [other]
    assert toy.stat().st_mtime == 1 and other.stat().st_mtime > 1


@pytest.mark.parametrize(
    "yaml_text,match",
    [
        (
            "toy:\n  smoke:\n    seed: '1'\n",
            r"toy.smoke: seed = '1' is a str, but the default .*\(0\) is an int",
        ),
        ("toy:\n  smoke:\n    seed: 1.5\n", "seed = 1.5 is a float"),
        ("toy:\n  smoke:\n    seed: true\n", "seed = True is a bool"),
        ("toy:\n  smoke:\n    rate: fast\n", "rate = 'fast' is a str"),
        ("toy:\n  smoke:\n    tags: a\n", "tags = 'a' is a str"),
        (
            "toy:\n  smoke:\n    overrides:\n      repeats: '2'\n",
            r"overrides.repeats = '2' is a str, but TransferabilityConfig.repeats is int",
        ),
        ("toy:\n  smoke:\n    overrides:\n      tasks: digits\n", r"overrides.tasks = 'digits'"),
        ("toy:\n  smoke:\n    overrides:\n      mdl_m: [11]\n", r"overrides.mdl_m = \[11\]"),
    ],
)
def test_check_profiles_checks_types(fake_notebooks, yaml_text, match):
    (fake_notebooks / "profiles.yaml").write_text(yaml_text)
    with pytest.raises(ValueError, match=match):
        runner.check_profiles()


def test_types_that_fit(fake_notebooks):
    """An int fits a float default, None fits anything, a non-literal default is not
    checked, a list fits a tuple field, None fits an `int | None` field."""
    (fake_notebooks / "profiles.yaml").write_text(
        "toy:\n  smoke:\n    rate: 1\n    seed: null\n    steps: many\n    size: 3\n"
        "    tags: [b, c]\n    overrides:\n      tasks: [digits]\n      pretrain_size: null\n"
        "      mdl_m: 2\n      metrics: null\n"
    )
    runner.check_profiles()


def test_parse_parameters_reads_yaml_values():
    got = runner.parse_parameters(
        [
            "seed=1",
            "size=400",
            "rate=1e-3",
            "name=digits",
            "flag=true",
            "none=null",
            "tags=[a, b]",
            "overrides.train_size=100",
            "overrides.tasks=[digits]",
        ]
    )
    assert got == {
        "seed": 1,
        "size": 400,
        "rate": 0.001,
        "name": "digits",
        "flag": True,
        "none": None,
        "tags": ["a", "b"],
        "overrides": {"train_size": 100, "tasks": ["digits"]},
    }
    assert type(got["seed"]) is int and type(got["rate"]) is float
    for bad in ("seed", "=1", "overrides.=1", "x=[1"):
        with pytest.raises(ValueError, match="parameter"):
            runner.parse_parameters([bad])


def test_parameters_merge_into_the_profile_and_are_checked_before_any_run(
    fake_notebooks, monkeypatch
):
    (fake_notebooks / "profiles.yaml").write_text(
        "toy:\n  smoke:\n    size: 3\n    overrides:\n      repeats: 2\n      min_n: 5\n"
    )
    p = runner.merged_parameters("toy", "smoke", {"seed": 4, "overrides": {"repeats": 3}})
    assert p["seed"] == 4 and p["size"] == 3
    assert p["overrides"] == {"repeats": 3, "min_n": 5}  # merged field by field
    with pytest.raises(ValueError, match="^parameters: toy.smoke: seed = 'x' is a str"):
        runner.merged_parameters("toy", "smoke", {"seed": "x"})
    ran = []
    monkeypatch.setattr(
        _notebooks, "run", lambda name, profile, **kw: ran.append((name, kw)) or name
    )
    assert (
        runner.main(
            [
                "--profile",
                "smoke",
                "toy",
                "-p",
                "seed=1",
                "-p",
                "size=400",
                "-p",
                "overrides.repeats=4",
            ]
        )
        == 0
    )
    assert ran[0][0] == "toy"
    assert ran[0][1]["parameters"] == {"seed": 1, "size": 400, "overrides": {"repeats": 4}}
    with pytest.raises(ValueError, match="seed = 'one'"):
        runner.main(["--profile", "smoke", "toy", "-p", "seed=one"])
    with pytest.raises(ValueError, match="toy.smoke: repeats: must be an integer >= 1, got 0"):
        runner.main(["--profile", "smoke", "toy", "-p", "overrides.repeats=0"])
    assert len(ran) == 1  # nothing else ran


def test_check_flag_validates_the_whole_table(fake_notebooks, capsys):
    (fake_notebooks / "profiles.yaml").write_text("toy:\n  smoke:\n    size: 3\n")
    assert runner.main(["--check"]) == 0
    (fake_notebooks / "profiles.yaml").write_text(
        "toy:\n  smoke:\n    size: 3\n  full:\n    seed: '0'\n"
    )
    assert runner.main(["--check"]) == 2
    assert "toy.full: seed = '0'" in capsys.readouterr().err


def test_run_checks_parameter_types_before_the_kernel(fake_notebooks, monkeypatch, tmp_path):
    import papermill

    started = []
    monkeypatch.setattr(papermill, "execute_notebook", lambda *a, **k: started.append(a))
    with pytest.raises(ValueError, match="seed = '1' is a str"):
        runner.run("toy", "smoke", out_dir=tmp_path, parameters={"seed": "1"})
    assert started == []


def test_makefile_checks_the_profiles_before_the_notebooks():
    from pathlib import Path

    text = (Path(runner.ROOT) / "Makefile").read_text()
    recipe = text.split("\nreproduce: setup encoders\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert "mdlnb.tools.runner --check" in recipe[0] and "notebooks" in recipe[1]


def test_only_paper_runs_write_into_paper_and_the_runner_says_where_things_go(
    fake_notebooks, monkeypatch, capsys
):
    """Without --paper a default or full run writes under build/runs/<profile>/ (notebook,
    HTML, figures), smoke under build/paper-smoke; --paper (make reproduce) writes the
    committed paper/ and says so; --paper with smoke is refused."""
    root = runner.ROOT
    nb, figs = runner.destinations("toy", "default")
    assert (nb, figs) == (root / "build/runs/default/toy.ipynb", root / "build/runs/default/paper")
    assert runner.destinations("toy", "full", paper=True) == (
        root / "build/notebooks/full/toy.ipynb",
        root / "paper",
    )
    assert runner.destinations("toy", "smoke")[1] == root / "build/paper-smoke"
    with pytest.raises(ValueError, match="smoke runs never write the committed paper"):
        runner.destinations("toy", "smoke", paper=True)
    assert runner.profile_parameters("toy", "default")["paper_dir"] == str(figs)
    assert "paper_dir" not in runner.profile_parameters("toy", "default", paper=True)

    calls = []

    def fake_run(name, profile, **kw):
        calls.append(kw["paper"])
        return runner.destinations(name, profile, paper=kw["paper"])[0]

    monkeypatch.setattr(_notebooks, "run", fake_run)
    assert runner.main(["toy", "-p", "seed=1"]) == 0
    out = capsys.readouterr().out
    assert calls == [False] and "figures and tables to build/runs/default/paper/" in out
    assert "committed" not in out
    assert "notebook  build/runs/default/toy.ipynb" in out
    assert "html      build/runs/default/toy.html" in out
    assert runner.main(["--paper", "toy"]) == 0
    out = capsys.readouterr().out
    assert calls == [False, True]
    assert "figures and tables to paper/ -- into the committed paper/ (--paper)" in out


def test_annotations_and_profiles_type_a_none_default_before_the_kernel(
    fake_notebooks, monkeypatch
):
    """`size = None` takes the types profiles.yaml gives it (an int here), `size: int |
    None = None` its annotation: a string for either fails before any kernel starts."""
    import papermill

    started = []
    monkeypatch.setattr(papermill, "execute_notebook", lambda *a, **k: started.append(a))
    (fake_notebooks / "profiles.yaml").write_text("toy:\n  smoke:\n    size: 3\n")
    with pytest.raises(
        ValueError,
        match=r"size = '300' is a str, but notebooks/toy.py's size "
        r"takes int \| None \(the values notebooks/profiles",
    ):
        runner.run("toy", "default", parameters={"size": "300"})
    (fake_notebooks / "toy.py").write_text(
        _NOTEBOOK.replace("size = None", "size: int | None = None")
    )
    (fake_notebooks / "profiles.yaml").write_text("")
    assert runner.parameter_types("toy")["size"][1] == "its annotation"
    with pytest.raises(ValueError, match=r"size = '300' is a str.*\(its annotation\)"):
        runner.main(["toy", "-p", "size='300'"])
    runner.merged_parameters("toy", "default", {"size": 300})  # an int fits
    assert started == []
    assert runner.notebook_parameters("toy")["size"] is None
    (fake_notebooks / "toy.py").write_text(
        _NOTEBOOK.replace("size = None", "size: open('x') = None")
    )
    with pytest.raises(ValueError, match="annotation"):
        runner.notebook_parameters("toy")


def test_quickstart_size_is_typed():
    hint, where = runner.parameter_types("quickstart")["size"]
    assert where == "its annotation"
    with pytest.raises(ValueError, match="size = '300' is a str"):
        runner.merged_parameters("quickstart", "smoke", {"size": "300"})


def test_the_command_line_describes_itself_with_the_packages_first_line():
    from mdlnb.tools.runner import _cli

    assert (runner.__doc__ or "").splitlines()[0] == _cli.DESCRIPTION
