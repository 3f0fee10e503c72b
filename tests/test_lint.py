"""The lint set-up: ruff's rule set flags what it was chosen for (and not what it
ignores on purpose), the formatter leaves the notebooks alone, `make lint` runs the
three checks and `make test` runs it, the pre-commit configuration is valid and its
notebook hook fails a notebook that jupytext would rewrite, mypy's files exist, and the
package ships py.typed."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib
import yaml

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
RUFF = [sys.executable, "-m", "ruff"]

_SNIPPET = """import os
import sys
import json
from typing import List


def f(xs: List[int], seen=[]):
    fns = []
    for x in xs:
        fns.append(lambda: x)
    double = lambda v: 2 * v
    for a, b in zip(xs, xs):
        seen.append(double(a) + b)
    return json.dumps(seen), sys.argv, fns
"""


def _codes(text: str, filename: str = "mdlnb/_snippet.py") -> set[str]:
    out = subprocess.run(
        [*RUFF, "check", "--output-format", "json", "--stdin-filename", filename, "-"],
        input=text,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert out.returncode in (0, 1), out.stderr
    return {d["code"] for d in json.loads(out.stdout)}


def test_ruff_flags_what_the_rule_set_was_chosen_for():
    codes = _codes(_SNIPPET)
    assert {"F401", "I001", "UP035", "UP006", "B006", "B023"} <= codes, codes
    assert not codes & {"B905", "E731", "E501"}  # ignored on purpose (pyproject)
    assert {"E402", "B018"} <= _codes("x = 1\nimport os\n\nos\n")
    assert _codes("x = 1\nimport os\n\nos\n", "notebooks/nb.py") == set()  # notebook cells
    assert "B023" not in _codes(_SNIPPET, "benchmarks/bench_x.py")


def test_selected_families_and_width():
    ruff = PYPROJECT["tool"]["ruff"]
    assert set(ruff["lint"]["select"]) >= {"F", "E", "W", "I", "UP", "B"}
    assert ruff["line-length"] == 100


def test_the_formatter_leaves_the_notebooks_alone(tmp_path):
    nb = ROOT / "notebooks" / "quickstart.py"
    out = subprocess.run(
        [*RUFF, "format", "--check", "--force-exclude", str(nb)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    copy = shutil.copy(nb, tmp_path / "quickstart.py")  # outside notebooks/: reformatted
    out = subprocess.run(
        [*RUFF, "format", "--check", "--config", str(ROOT / "pyproject.toml"), str(copy)],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 1


def _make_n(target: str) -> list[str]:
    out = subprocess.run(["make", "-n", target], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def test_make_lint_runs_ruff_the_formatter_and_mypy_and_make_test_runs_lint_first():
    lines = _make_n("lint")
    assert [
        next(i for i, s in enumerate(lines) if s.endswith(cmd))
        for cmd in ("ruff check .", "ruff format --check .", "mypy")
    ] == sorted(
        next(i for i, s in enumerate(lines) if s.endswith(cmd))
        for cmd in ("ruff check .", "ruff format --check .", "mypy")
    )
    test = _make_n("test")
    first_lint = next(i for i, s in enumerate(test) if s.endswith("ruff check ."))
    assert first_lint < next(i for i, s in enumerate(test) if "pytest" in s)
    fmt = _make_n("format")
    assert any(s.endswith("ruff check --fix .") for s in fmt)
    assert any(s.endswith("ruff format .") for s in fmt)


def test_lint_tools_are_pinned_in_the_test_extra_and_pre_commit_uses_the_same_ruff():
    extra = PYPROJECT["project"]["optional-dependencies"]["test"]
    ruff = next(r for r in extra if r.startswith("ruff"))
    assert ruff.startswith("ruff==") and any(r.startswith("mypy==") for r in extra)
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    repo = next(r for r in config["repos"] if r["repo"].endswith("/ruff-pre-commit"))
    assert repo["rev"] == "v" + ruff.split("==")[1]


def test_pre_commit_config_has_the_hooks_and_is_valid():
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    hooks = {h["id"] for r in config["repos"] for h in r["hooks"]}
    assert hooks >= {
        "ruff-check",
        "ruff-format",
        "jupytext-round-trip",
        "trailing-whitespace",
        "end-of-file-fixer",
        "check-yaml",
        "check-added-large-files",
    }
    if (
        shutil.which("pre-commit") is None
        and not (Path(sys.executable).parent / "pre-commit").exists()
    ):
        pytest.skip("pre-commit is not installed: validated by its schema only where it is")
    exe = shutil.which("pre-commit") or str(Path(sys.executable).parent / "pre-commit")
    out = subprocess.run(
        [exe, "validate-config", ".pre-commit-config.yaml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_notebook_hook_fails_a_notebook_jupytext_would_rewrite(tmp_path):
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    hook = next(h for r in config["repos"] for h in r["hooks"] if h["id"] == "jupytext-round-trip")
    entry = hook["entry"].split()
    assert entry[0] == "jupytext"
    cmd = [str(Path(sys.executable).parent / "jupytext"), *entry[1:]]
    notebooks = sorted((ROOT / "notebooks").glob("*.py"))
    out = subprocess.run([*cmd, *map(str, notebooks)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    # a copy beside the folder's jupytext.toml, its cell markers and metadata drifted
    shutil.copy(ROOT / "notebooks" / "jupytext.toml", tmp_path)
    source = (ROOT / "notebooks" / "quickstart.py").read_text()
    for drifted in (
        source.replace("# %% [markdown]", "#%% [markdown]", 1),
        source.replace('# %% tags=["parameters"]', '# %% tags=["parameters"] editable=true', 1),
    ):
        assert drifted != source
        (tmp_path / "quickstart.py").write_text(drifted)
        out = subprocess.run(
            [*cmd, str(tmp_path / "quickstart.py")], capture_output=True, text=True
        )
        assert out.returncode != 0


def test_mypy_checks_files_that_exist_and_the_package_ships_py_typed():
    files = PYPROJECT["tool"]["mypy"]["files"]
    assert {"mdlnb/__init__.py", "mdlnb/prequential", "mdlnb/switching"} <= set(files)
    assert all((ROOT / f).exists() for f in files)
    assert (ROOT / "mdlnb" / "py.typed").exists()
    assert "py.typed" in PYPROJECT["tool"]["setuptools"]["package-data"]["mdlnb"]
