"""Every ```python block of README.md runs, in order, as one script; every command
line of its ```bash blocks runs as a user types it (the ``make`` targets excepted, and
notebook runs taken up to the kernel; see NOT_RUN below).

The README's examples read ``features.npy`` and ``labels.npy`` from the
working directory; here they are real features (PCA-16 of the first 300
scikit-learn digits), written to a temporary working directory. They use
the 4-expert ``small`` protocol, so the whole README runs in seconds.

A block that cannot run here (several hosts) is marked in the README by an
``<!-- illustrative: why -->`` line right before it; every other block,
indented ones (inside lists) included, is executed.
"""

from __future__ import annotations

import re
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
_BLOCK = re.compile(
    r"^(?P<marker>[ \t]*<!-- illustrative: (?P<why>[^>]*)-->\n\s*)?"
    r"(?P<indent>[ \t]*)```python\n(?P<body>.*?)^(?P=indent)```",
    flags=re.S | re.M,
)


def blocks(text: str) -> list[tuple[str, str | None]]:
    """Every ```python block as (dedented source, the reason it is illustrative or None)."""
    return [
        (textwrap.dedent(m["body"]), m["why"].strip() if m["why"] else None)
        for m in _BLOCK.finditer(text)
    ]


def python_blocks(text: str) -> list[str]:
    """The blocks the test executes (all but the illustrative ones)."""
    return [src for src, why in blocks(text) if why is None]


def test_readme_has_python_examples():
    found = blocks(README.read_text())
    assert len(found) >= 5 and all("mdlnb" in b or "jax" in b for b, _ in found)
    # every ```python fence is found: none slips past the test unparsed
    assert len(found) == len(re.findall(r"^[ \t]*```python$", README.read_text(), flags=re.M))
    illustrative = [why for _, why in found if why]
    assert illustrative and all(why for why in illustrative)  # each says why


def test_readme_python_examples_run(tmp_path, monkeypatch, capsys):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from sklearn.datasets import load_digits
    from sklearn.decomposition import PCA

    x, y = load_digits(return_X_y=True)
    x, y = x[:300], y[:300]
    np.save(tmp_path / "features.npy", PCA(16, random_state=0).fit_transform(x).astype(np.float32))
    np.save(tmp_path / "labels.npy", y)
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter(
            "ignore", UserWarning
        )  # grid-edge warnings are the point, not an error
        warnings.simplefilter("error", DeprecationWarning)  # the README uses the current API
        for block in python_blocks(README.read_text()):
            exec(compile(block, "README.md", "exec"), scope)
    out = capsys.readouterr().out
    plt.close("all")
    rep = scope["rep"]
    assert rep.task_name == "digits|pca16" and rep.n == 300
    assert (
        rep.total_nats < 0.75 * rep.uniform_nats
    )  # real features compress the labels (small board)
    assert "rank encoders by this" in out and "readout preference by examples seen" in out
    assert len(scope["reps"]) == 3 and len({r.losses.seed for r in scope["reps"]}) == 3
    assert scope["rep1"].protocol.strategy.m == 11 and scope["rep1"].losses.seed == 1
    assert list(scope["cmp"].table()["encoder"])[0] in {"pixels", "pca8", "randproj16"}


# ----------------------------------------------------------------------------- shell blocks
#
# The ```bash blocks are run the way a user types them: each command line (continuation
# lines joined, comments dropped) in a subprocess, ``.venv/bin/mdlnb`` being the venv's
# `mdlnb` entry point (``python -m mdlnb.cli`` where there is none), in a working
# directory holding the files the commands name (real digits features, N = 150). What
# is not run says why, below; a command of another kind fails the test until it is
# sorted here.

_BASH = re.compile(r"^(?P<indent>[ \t]*)```bash\n(?P<body>.*?)^(?P=indent)```", flags=re.S | re.M)

#: command prefix → why the test does not run it
NOT_RUN = {
    "make ": "a make target: sets up .venv and Debian packages, then regenerates paper/, runs "
    "the test suite or trains encoders (minutes to hours); tests/test_makefile.py "
    "checks the recipes",
}
#: `python -m mdlnb.runner NAME ...` executes a notebook in a kernel (tens of seconds to
#: minutes; the smoke notebooks run in tests/test_notebooks.py). Here it runs up to the
#: kernel: the runner's own command line, with every notebook and `-p` value checked
#: (types included) as it does before any kernel starts; only `runner.run` is replaced.


def bash_commands(text: str) -> list[str]:
    """Every command line of the ```bash blocks, in order."""
    out = []
    for m in _BASH.finditer(text):
        body = textwrap.dedent(m["body"]).replace("\\\n", " ")
        for line in body.splitlines():
            cmd = re.sub(r"\s+#.*$", "", line).strip()
            if cmd and not cmd.startswith("#"):
                out.append(" ".join(cmd.split()))
    return out


def classify(cmd: str) -> tuple[str, list[str] | str]:
    """``("run", argv after the program)``, ``("runner", argv)`` or ``("skip", why)``."""
    import shlex

    for prefix, why in NOT_RUN.items():
        if cmd.startswith(prefix):
            return "skip", why
    argv = shlex.split(cmd)
    if argv[0] == ".venv/bin/mdlnb":
        return "run", argv[1:]
    if argv[:3] == [".venv/bin/python", "-m", "mdlnb.runner"]:
        return ("run-module" if "--check" in argv else "runner"), argv[3:]
    raise AssertionError(
        f"README.md: a shell command of a kind this test does not know: {cmd!r}"
        " (run it here, or say in NOT_RUN why not)"
    )


def test_readme_shell_commands_are_all_sorted():
    cmds = bash_commands(README.read_text())
    kinds = [classify(c)[0] for c in cmds]  # raises on an unknown kind
    assert len(cmds) >= 10 and kinds.count("run") >= 6 and "runner" in kinds
    assert all(why for kind, why in map(classify, cmds) if kind == "skip")


def _shell_inputs(cwd: Path) -> None:
    """The files the README's commands read, from the first 150 scikit-learn digits:
    every representation 16-d (pixels: the 8×8 images pooled to 4×4), so that all the
    commands share one compiled stage-1 program (through the persistent cache)."""
    from sklearn.datasets import load_digits
    from sklearn.decomposition import PCA

    x, y = load_digits(return_X_y=True)
    x, y = x[:150].astype(np.float32), y[:150]
    pixels = x.reshape(-1, 4, 2, 4, 2).mean(axis=(2, 4)).reshape(-1, 16)
    pca = PCA(16, random_state=0).fit_transform(x).astype(np.float32)
    rp = (x @ np.random.default_rng(0).normal(size=(64, 16))).astype(np.float32)
    np.savez(cwd / "features.npz", x=pca, y=y)
    for name, feats in (
        ("a", pca),
        ("b", rp),
        ("c", pixels),
        ("pixels", pixels),
        ("pca16", pca),
        ("randproj16", rp),
    ):
        np.savez(cwd / f"{name}.npz", x=feats)
    np.save(cwd / "y.npy", y)
    rng = np.random.default_rng(1)  # (N, K) next-step log-losses
    np.savez(cwd / "losses.npz", losses=rng.uniform(0.1, 3.0, size=(150, 4)).astype(np.float32))


@pytest.mark.slow  # about a minute of CPU: the default board compiled, 24 compare runs
def test_readme_shell_commands_run(tmp_path, monkeypatch):
    import os
    import subprocess
    import sys
    import time

    from mdlnb import runner

    root = README.parent
    _shell_inputs(tmp_path)
    entry = Path(sys.executable).with_name("mdlnb")
    program = [str(entry)] if entry.exists() else [sys.executable, "-m", "mdlnb.cli"]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [str(root), *filter(None, [os.environ.get("PYTHONPATH")])]
        ),  # this checkout's mdlnb
        "MDLNB_PROGRESS": "0",
    }
    # `mdlnb cache --clear` deletes: it gets a cache of its own, never the session's (whose
    # compiled-program kind is shared with other sessions)
    own_cache = tmp_path / "own-cache"
    ran, checked, skipped = [], [], []
    for cmd in bash_commands(README.read_text()):
        kind, what = classify(cmd)
        if kind == "skip":
            skipped.append((cmd, what))
            continue
        if kind == "runner":  # everything but the kernel
            calls = []
            monkeypatch.setattr(
                runner,
                "run",
                lambda name, profile, calls=calls, **kw: (
                    calls.append((name, profile, kw.get("parameters")))
                    or tmp_path / f"{name}.ipynb"
                ),
            )
            assert runner.main(what) == 0, cmd
            assert calls and all(p == "smoke" for _, p, _ in calls), cmd
            checked.append(cmd)
            continue
        argv = (
            [sys.executable, "-m", "mdlnb.runner", *what]
            if kind == "run-module"
            else [*program, *what]
        )
        run_env = {**env, "MDLNB_CACHE": str(own_cache)} if what[:1] == ["cache"] else env
        t0 = time.perf_counter()
        proc = subprocess.run(
            argv, cwd=tmp_path, env=run_env, capture_output=True, text=True, timeout=600
        )
        print(f"{time.perf_counter() - t0:6.1f} s  {cmd}")
        assert proc.returncode == 0, f"{cmd}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
        for out in re.findall(r"\S+\.(?:csv|png)\b", cmd):  # files the command writes
            assert (tmp_path / out).stat().st_size > 0, (cmd, out)
        ran.append(cmd)
    assert any(c.startswith(".venv/bin/mdlnb evaluate") for c in ran)
    assert sum(c.startswith(".venv/bin/mdlnb compare") for c in ran) == 2
    assert any("--check" in c for c in ran) and len(checked) == 2
    assert {why for _, why in skipped} == set(NOT_RUN.values())
    post = __import__("pandas").read_csv(tmp_path / "post.csv")
    assert list(post.columns) == ["t", "expert", "readout", "probability"]
    assert post["t"].min() == 0 and post["t"].max() == 149
