"""The GitHub Actions workflows (.github/): they cannot run here, so what they are made of
is checked here — the workflow and action schemas (check-jsonschema's vendored copies), the
inputs against the notebooks and profiles that exist, and every command a step runs: a make
target through ``make -n``, the scripts of .github/scripts run for real (the runner call
with its arguments parsed and checked, the cache key recomputed, the paper/ comparison in a
throw-away repository)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from mdlnb import prequential
from mdlnb.tools import runner
from mdlnb.tools.runner._cli import parse_parameters, parser
from mdlnb.tools.runner._paths import PROFILES

ROOT = Path(__file__).resolve().parents[1]
GITHUB = ROOT / ".github"
WORKFLOWS = sorted((GITHUB / "workflows").glob("*.yml"))
ACTION = GITHUB / "actions" / "setup" / "action.yml"
SCRIPTS = GITHUB / "scripts"


def _load(path: Path) -> dict:
    # PyYAML reads the key `on` as True (YAML 1.1); GitHub reads it as "on"
    data = yaml.safe_load(path.read_text())
    return {("on" if k is True else k): v for k, v in data.items()}


def _steps():
    """(file, job, step) of every step of every workflow and of the set-up action."""
    for path in WORKFLOWS:
        for job, spec in _load(path)["jobs"].items():
            for step in spec["steps"]:
                yield path.name, job, step
    for step in _load(ACTION)["runs"]["steps"]:
        yield ACTION.name, "setup", step


def _commands() -> list[str]:
    """Every `run:` command, one per line, GitHub expressions kept."""
    return [
        line.strip()
        for _, _, step in _steps()
        if "run" in step
        for line in step["run"].splitlines()
        if line.strip()
    ]


def test_the_three_workflows_and_the_action_exist():
    assert [p.name for p in WORKFLOWS] == ["notebooks.yml", "reproduce.yml", "test.yml"]
    assert ACTION.exists()


def _check_jsonschema(schema: str, *paths: Path):
    return subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, *map(str, paths)],
        capture_output=True,
        text=True,
    )


def test_workflows_and_the_action_match_githubs_schemas(tmp_path):
    out = _check_jsonschema("vendor.github-workflows", *WORKFLOWS)
    assert out.returncode == 0, out.stdout + out.stderr
    out = _check_jsonschema("vendor.github-actions", ACTION)
    assert out.returncode == 0, out.stdout + out.stderr
    # the check can fail: a misspelt key, an unknown trigger
    bad = tmp_path / "bad.yml"
    bad.write_text((GITHUB / "workflows" / "test.yml").read_text().replace("runs-on:", "runs_on:"))
    assert _check_jsonschema("vendor.github-workflows", bad).returncode == 1
    bad.write_text(
        (GITHUB / "workflows" / "test.yml").read_text().replace("pull_request:", "pull-request:")
    )
    assert _check_jsonschema("vendor.github-workflows", bad).returncode == 1


def test_notebook_inputs_and_the_smoke_matrix_name_every_notebook_and_profile():
    nb = _load(GITHUB / "workflows" / "notebooks.yml")
    inputs = nb["on"]["workflow_dispatch"]["inputs"]
    assert inputs["notebook"]["options"] == runner.available()
    assert inputs["notebook"]["default"] in runner.available()
    assert tuple(inputs["profile"]["options"]) == PROFILES
    assert set(inputs) == {"notebook", "profile", "parameters", "sweep"}
    assert nb["jobs"]["smoke"]["strategy"]["matrix"]["notebook"] == runner.available()
    assert nb["on"]["schedule"] and _load(GITHUB / "workflows" / "reproduce.yml")["on"]["schedule"]


def test_every_job_sets_the_cache_folder_the_setup_action_caches():
    action = ACTION.read_text()
    assert "path: ${{ env.MDLNB_CACHE }}" in action
    assert "key: ${{ steps.keys.outputs.cache }}" in action
    for path in WORKFLOWS:
        wf = _load(path)
        for job, spec in wf["jobs"].items():
            env = {**wf.get("env", {}), **spec.get("env", {})}
            assert env.get("MDLNB_CACHE", "").startswith("${{ github.workspace }}/"), (path, job)
            uses = [s.get("uses") for s in spec["steps"]]
            assert uses[:2] == ["actions/checkout@v4", "./.github/actions/setup"], (path, job)


def test_inputs_reach_scripts_through_the_environment_only():
    # `${{ inputs.x }}` pasted into a shell line would run what a user typed as code
    for _, _, step in _steps():
        assert "inputs." not in step.get("run", "") or "python-version" in step["run"], step


# Every command a workflow runs, and the test below that exercises it.
KNOWN = {
    "make setup": "make -n",
    "make test": "make -n",
    "make reproduce 2>&1 | tee build-reproduce.log": "make -n",
    'bash .github/scripts/cache-key.sh "py${{ inputs.python-version }}" >> "$GITHUB_OUTPUT"': "test_cache_key_follows_the_packages_and_the_code_versions",
    "bash .github/scripts/run-notebook.sh": "test_run_notebook_passes_inputs_to_the_runner_as_checked_arguments",
    "bash .github/scripts/paper-diff.sh build/paper-diff": "test_paper_diff_fails_when_a_committed_number_moved",
    "bash .github/scripts/runner-chrome.sh": "test_runner_chrome_links_the_runners_driver",
}


def test_every_command_is_one_this_suite_exercises():
    assert sorted(set(_commands())) == sorted(KNOWN)
    assert sorted(p.name for p in SCRIPTS.iterdir()) == sorted(
        {re.search(r"scripts/(\S+)", c).group(1) for c in KNOWN if "scripts/" in c}
    )
    here = Path(__file__).read_text()
    for how in set(KNOWN.values()) - {"make -n"}:
        assert f"def {how}(" in here


@pytest.mark.parametrize(
    "target", sorted({c.split()[1] for c, how in KNOWN.items() if how == "make -n"})
)
def test_make_targets_of_the_workflows_exist(target):
    out = subprocess.run(["make", "-n", target], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    if target == "test":
        assert "ruff check" in out.stdout and "pytest" in out.stdout
    if target == "reproduce":
        assert "--compare-to-git HEAD" in out.stdout


def _git(cwd: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        "PATH": os.environ["PATH"],
    }
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    ).stdout


def _script_copy(tmp_path: Path, name: str) -> Path:
    """A repository in ``tmp_path`` holding only .github/scripts/``name``."""
    (tmp_path / ".github" / "scripts").mkdir(parents=True)
    return Path(shutil.copy(SCRIPTS / name, tmp_path / ".github" / "scripts" / name))


def _freeze_hash() -> str:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "freeze",
            "--exclude-editable",
            "--disable-pip-version-check",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return hashlib.sha256("".join(sorted(out.splitlines(keepends=True))).encode()).hexdigest()[:16]


def test_cache_key_follows_the_packages_and_the_code_versions(tmp_path):
    env = {**os.environ, "PYTHON": sys.executable}
    out = subprocess.run(
        ["bash", str(SCRIPTS / "cache-key.sh"), "py3.11"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    key = re.fullmatch(r"cache=mdlnb-(\w+)-py3\.11-deps-(\w{16})-code-(\w{16})\n", out)
    assert key, out
    assert key.group(2) == _freeze_hash()
    # the code part hashes the cache-version lines, prequential.CODE_VERSION's among them
    lines = subprocess.run(
        ["grep", "-rhE", r"^(CODE_|CACHE_)?VERSION = ", "--include=*.py", "mdlnb"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout
    assert f'CODE_VERSION = "{prequential.CODE_VERSION}"' in lines
    assert (
        key.group(3)
        == hashlib.sha256("".join(sorted(lines.splitlines(keepends=True))).encode()).hexdigest()[
            :16
        ]
    )
    # a bumped CODE_VERSION in a copy gives another key; other edits do not
    script = _script_copy(tmp_path, "cache-key.sh")
    code = tmp_path / "mdlnb" / "prequential" / "_onepass.py"
    code.parent.mkdir(parents=True)
    keys = []
    for text in (
        'CODE_VERSION = "prequential-v7"\n',
        'CODE_VERSION = "prequential-v7"\nx = 1\n',
        'CODE_VERSION = "prequential-v8"\n',
    ):
        code.write_text(text)
        keys.append(
            subprocess.run(
                ["bash", str(script), "py3.11"], env=env, capture_output=True, text=True, check=True
            ).stdout
        )
    assert keys[0] == keys[1] != keys[2]


def _notebook_step(job: str) -> dict:
    steps = _load(GITHUB / "workflows" / "notebooks.yml")["jobs"][job]["steps"]
    return next(s for s in steps if s.get("run") == "bash .github/scripts/run-notebook.sh")


def _runner_argv(tmp_path: Path, env: dict) -> list[list[str]]:
    """The command lines run-notebook.sh gives Python (a stand-in records them)."""
    log = tmp_path / "argv.jsonl"
    fake = tmp_path / "fake-python"
    fake.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        f"open({str(log)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n"
    )
    fake.chmod(0o755)
    subprocess.run(
        ["bash", str(SCRIPTS / "run-notebook.sh")],
        cwd=tmp_path,
        check=True,
        env={**os.environ, **env, "PYTHON": str(fake)},
        capture_output=True,
    )
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_run_notebook_passes_inputs_to_the_runner_as_checked_arguments(tmp_path):
    step = _notebook_step("run")
    assert step["env"]["PARAMETERS"] == "${{ inputs.parameters }}"
    out = str(tmp_path / "ci")
    env = {
        "NOTEBOOK": "quickstart",
        "PROFILE": "smoke",
        "OUT": out,
        "PARAMETERS": " seed=1 ;size=400\noverrides.x=[a, b]\n\n",
        "SWEEP": "",
    }
    (argv,) = _runner_argv(tmp_path, env)  # no executed notebook: no --html call
    assert argv == [
        "-m",
        "mdlnb.tools.runner",
        "quickstart",
        "--profile",
        "smoke",
        "--out-dir",
        out,
        "-p",
        "seed=1",
        "-p",
        "size=400",
        "-p",
        "overrides.x=[a, b]",
        "-p",
        f"paper_dir={out}/paper",
    ]
    args = parser("").parse_args(argv[2:])
    assert parse_parameters(args.parameter) == {
        "seed": 1,
        "size": 400,
        "overrides": {"x": ["a", "b"]},
        "paper_dir": f"{out}/paper",
    }
    # the runner takes these arguments, and checks them, before any kernel
    good = parse_parameters(["seed=1", "size=400", f"paper_dir={out}/paper"])
    assert runner.merged_parameters("quickstart", "smoke", good)["size"] == 400
    with pytest.raises(ValueError, match="sise"):
        runner.merged_parameters("quickstart", "smoke", parse_parameters(["sise=400"]))
    # a sweep: --sweep per item, each run's paper/ chosen by the sweep; an executed
    # notebook under OUT gets its HTML
    (tmp_path / "ci" / "seed=0").mkdir(parents=True)
    (tmp_path / "ci" / "seed=0" / "quickstart.ipynb").write_text("{}")
    (tmp_path / "ci" / "seed=0" / "quickstart.failed.ipynb").write_text("{}")
    (tmp_path / "argv.jsonl").unlink()
    run, html = _runner_argv(tmp_path, {**env, "PARAMETERS": "", "SWEEP": "seed=0,1; size=200,300"})
    assert run == [
        "-m",
        "mdlnb.tools.runner",
        "quickstart",
        "--profile",
        "smoke",
        "--out-dir",
        out,
        "--sweep",
        "seed=0,1",
        "--sweep",
        "size=200,300",
    ]
    assert html == ["-m", "mdlnb.tools.runner", "--html", f"{out}/seed=0/quickstart.ipynb"]


def test_run_notebook_check_runs_the_real_runner(tmp_path):
    env = {
        **os.environ,
        "NOTEBOOK": "quickstart",
        "PROFILE": "smoke",
        "OUT": str(tmp_path),
        "PYTHON": sys.executable,
    }
    for extra, ok in [
        ({"SWEEP": "seed=0,1"}, True),
        ({"SWEEP": "seed=0,x"}, False),
        ({"PARAMETERS": "seed=1"}, True),
    ]:
        out = subprocess.run(
            ["bash", str(SCRIPTS / "run-notebook.sh"), "--check"],
            env={**env, **extra},
            capture_output=True,
            text=True,
        )
        assert (out.returncode == 0) == ok, out.stdout + out.stderr
    assert (
        "2 runs checked: seed=0, seed=1"
        in subprocess.run(
            ["bash", str(SCRIPTS / "run-notebook.sh"), "--check"],
            env={**env, "SWEEP": "seed=0,1"},
            capture_output=True,
            text=True,
        ).stdout
    )


def test_smoke_matrix_runs_the_smoke_profile():
    step = _notebook_step("smoke")
    assert step["env"] == {
        "NOTEBOOK": "${{ matrix.notebook }}",
        "PROFILE": "smoke",
        "OUT": "build/ci",
    }


def test_paper_diff_fails_when_a_committed_number_moved(tmp_path):
    script = _script_copy(tmp_path, "paper-diff.sh")
    paper = tmp_path / "paper"
    (paper / "claims").mkdir(parents=True)
    (paper / "t.csv").write_text("k,v\na,1.0\nb,2.0\n")  # deterministic: no spread
    (paper / "s.csv").write_text("k,mean,std,count\na,10.0,1.0,8\n")  # 2 sd sqrt(2/8) = 1
    (paper / "claims" / "nb.csv").write_text("id,direction,size\nc1,replicated,smaller\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "paper")
    env = {**os.environ, "PYTHON": sys.executable}

    def run(t="1.0", mean="10.0", direction="replicated"):
        (paper / "t.csv").write_text(f"k,v\na,{t}\nb,2.0\n")
        (paper / "s.csv").write_text(f"k,mean,std,count\na,{mean},1.0,8\n")
        (paper / "claims" / "nb.csv").write_text(f"id,direction,size\nc1,{direction},smaller\n")
        out = subprocess.run(
            ["bash", str(script), "out"], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        return out.returncode, (tmp_path / "out" / "paper-diff.txt").read_text()

    code, text = run()
    assert code == 0 and "no committed number moved" in text and "none changed" in text
    assert run(t="1.0005")[0] == 0  # within 1e-9 + 1e-3 |old|
    code, text = run(mean="10.9")  # moved, within the table's spread
    assert code == 0 and "s.csv: 1 cell(s) moved, 0 beyond" in text
    code, text = run(mean="11.5")
    assert code == 1 and "s.csv: 1 cell(s) moved, 1 beyond" in text
    code, text = run(t="1.5")
    assert code == 1 and "t.csv: 1 cell(s) moved, 1 beyond" in text
    rows = (tmp_path / "out" / "paper-diff.csv").read_text().splitlines()
    assert rows[0].startswith("file,row,column,old,new,change") and rows[1].startswith(
        "t.csv,a,v,1.0,1.5"
    )
    assert "paper/t.csv" in (tmp_path / "out" / "paper-files.txt").read_text()
    code, text = run(direction="undetermined")  # every number as committed, a verdict moved
    assert code == 1 and "c1 (nb.csv): replicated, smaller -> undetermined, smaller" in text
    assert "c1" in (tmp_path / "out" / "verdicts.csv").read_text()


def test_runner_chrome_links_the_runners_driver(tmp_path):
    script = SCRIPTS / "runner-chrome.sh"
    links = tmp_path / "bin"
    links.mkdir()
    env = {**os.environ, "LINK_DIR": str(links)}
    env.pop("CHROMEWEBDRIVER", None)
    subprocess.run(["bash", str(script)], env=env, check=True)  # not on a runner
    assert list(links.iterdir()) == []
    driver = tmp_path / "chromedriver-linux64" / "chromedriver"
    driver.parent.mkdir()
    driver.write_text("#!/bin/sh\n")
    driver.chmod(0o755)
    env["CHROMEWEBDRIVER"] = str(driver.parent)
    subprocess.run(["bash", str(script)], env=env, check=True)
    assert (links / "chromedriver").resolve() == driver.resolve()
    subprocess.run(["bash", str(script)], env=env, check=True)  # a second time: as it is
    assert [p.name for p in links.iterdir()] == ["chromedriver"]
    # where `make browser-packages` looks, so it installs nothing
    assert "/usr/bin/chromedriver" in (ROOT / "Makefile").read_text()
