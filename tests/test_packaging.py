"""The project's own files agree with each other."""

import re
from pathlib import Path

import tomllib
import yaml

ROOT = Path(__file__).resolve().parent.parent


def _name(req: str) -> str:
    return re.split(r"[<>=!~\[ ;]", req.strip(), maxsplit=1)[0].lower().replace("_", "-")


def test_environment_yml_lists_the_same_dependencies_as_pyproject():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    env = yaml.safe_load((ROOT / "environment.yml").read_text())["dependencies"]
    conda = [d for d in env if isinstance(d, str) and not d.startswith(("python", "pip"))]
    pip = [d for d in next(d for d in env if isinstance(d, dict))["pip"] if not d.startswith("-e")]
    assert {_name(d) for d in deps} == {_name(d) for d in conda + pip}
    # Same minimum versions too.
    spec = lambda reqs: {_name(d): d.replace(" ", "")[len(_name(d)) :] for d in reqs}
    assert spec(deps) == spec(conda + pip)


def test_ci_runs_make_test():
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_readme_opens_with_the_two_commands():
    head = (ROOT / "README.md").read_text()[:1500]
    assert "make reproduce" in head and "make test" in head


def test_no_ipynb_committed():
    import subprocess

    out = subprocess.run(["git", "ls-files", "*.ipynb"], cwd=ROOT, capture_output=True, text=True)
    assert out.stdout.strip() == ""


def test_notebooks_are_jupytext_percent_files_with_parameters():
    for nb in sorted((ROOT / "notebooks").glob("*.py")):
        text = nb.read_text()
        assert "# %%" in text, nb.name
        assert 'tags=["parameters"]' in text, f"{nb.name}: no papermill parameters cell"
