"""mdlnb.runner: parameters read from the notebook, profiles checked before anything runs."""

from __future__ import annotations

import pytest

from mdlnb import runner

_NOTEBOOK = '''# %% tags=["parameters"]
profile = "default"
paper_dir = "paper"
study = "transferability"
overrides = {}
size = None  # a comment
steps = 2 * 50

# %%
print(overrides)
'''


@pytest.fixture
def fake_notebooks(tmp_path, monkeypatch):
    (tmp_path / "toy.py").write_text(_NOTEBOOK)
    monkeypatch.setattr(runner, "notebook_dir", lambda: tmp_path)
    return tmp_path


def test_notebook_parameters_reads_the_parameters_cell(fake_notebooks):
    params = runner.notebook_parameters("toy")
    assert params == {"profile": "default", "paper_dir": "paper", "study": "transferability",
                      "overrides": {}, "size": None, "steps": "2 * 50"}
    with pytest.raises(ValueError, match="name"):
        runner.notebook_parameters("nope")


@pytest.mark.parametrize("yaml_text,match", [
    ("toy:\n  smoke:\n    sizes: 3\n", r"\['sizes'\].*not parameters"),
    ("toy:\n  smoke:\n    overrides:\n      repeat: 2\n", "unknown TransferabilityConfig fields"),
    ("toy:\n  full:\n    overrides:\n      repeats: 0\n", "repeats"),
    ("toy:\n  huge:\n    size: 3\n", "profile"),
    ("other:\n  smoke:\n    size: 3\n", "no notebook 'other'"),
])
def test_check_profiles_rejects_unknown_names_fields_and_values(fake_notebooks, yaml_text,
                                                                   match):
    (fake_notebooks / "profiles.yaml").write_text(yaml_text)
    with pytest.raises(ValueError, match=match):
        runner.check_profiles()


def test_profile_parameters_checks_and_fills_defaults(fake_notebooks):
    (fake_notebooks / "profiles.yaml").write_text(
        "toy:\n  smoke:\n    size: 3\n    overrides:\n      repeats: 2\n")
    runner.check_profiles()
    p = runner.profile_parameters("toy", "smoke")
    assert p["size"] == 3 and p["overrides"] == {"repeats": 2} and p["profile"] == "smoke"
    assert p["paper_dir"].endswith("paper-smoke")                 # smoke never writes paper/
    (fake_notebooks / "profiles.yaml").write_text("toy:\n  smoke:\n    sise: 3\n")
    with pytest.raises(ValueError, match="sise"):
        runner.profile_parameters("toy", "smoke")


def test_repository_profiles_are_valid():
    runner.check_profiles()


def test_main_checks_all_profiles_first_and_ends_with_the_paper_diff(tmp_path, monkeypatch,
                                                                     capsys):
    import subprocess

    ran = []
    monkeypatch.setattr(runner, "run", lambda name, profile, **kw: ran.append(name) or name)
    real = runner.notebook_dir()
    monkeypatch.setattr(runner, "notebook_dir", lambda: real)
    monkeypatch.setattr(runner, "ROOT", tmp_path)          # paper/ of a throw-away repo
    (tmp_path / "paper").mkdir()
    (tmp_path / "paper" / "t.csv").write_text("k,v\na,1.0\n")
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": __import__("os").environ["PATH"]}
    for cmd in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "p"]):
        subprocess.run(["git", *cmd], cwd=tmp_path, check=True, env=env, capture_output=True)
    (tmp_path / "paper" / "t.csv").write_text("k,v\na,2.0\n")
    assert runner.main(["--profile", "smoke", "--compare-to-git", "HEAD", "quickstart"]) == 0
    out = capsys.readouterr().out
    assert ran == ["quickstart"]
    assert "t.csv: 1 cell(s) moved" in out and "1 -> 2" in out
    with pytest.raises(ValueError, match="name"):          # checked before anything runs
        runner.main(["--profile", "smoke", "quickstart", "no_such_notebook"])
    assert ran == ["quickstart"]
