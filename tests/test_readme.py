"""Every ```python block of README.md and of each page of docs/ runs, in order, as one
script per page (each page in a scope of its own); every command line of their ```bash
blocks runs as a user types it (the ``make`` targets excepted, and notebook runs taken up
to the kernel; see NOT_RUN below); every relative link of those pages resolves.

The examples read ``features.npy`` and ``labels.npy`` from the working directory;
here they are real features (PCA-16 of the first 300 scikit-learn digits), written to
a temporary working directory. They use the 4-expert ``small`` protocol, so each page
runs in seconds.

A block that cannot run here (several hosts) is marked by an
``<!-- illustrative: why -->`` line right before it; every other block, indented
ones (inside lists) included, is executed.
"""

from __future__ import annotations

import re
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
#: README first, then docs/ by name: the pages whose blocks and links are checked
PAGES = [README, *sorted(DOCS.glob("*.md"))]
_BLOCK = re.compile(
    r"^(?P<marker>[ \t]*<!-- illustrative: (?P<why>[^>]*)-->\n\s*)?"
    r"(?P<indent>[ \t]*)```python\n(?P<body>.*?)^(?P=indent)```",
    flags=re.S | re.M,
)


def page_name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def blocks(text: str) -> list[tuple[str, str | None]]:
    """Every ```python block as (dedented source, the reason it is illustrative or None)."""
    return [
        (textwrap.dedent(m["body"]), m["why"].strip() if m["why"] else None)
        for m in _BLOCK.finditer(text)
    ]


def python_blocks(text: str) -> list[str]:
    """The blocks the test executes (all but the illustrative ones)."""
    return [src for src, why in blocks(text) if why is None]


def test_readme_is_short_and_links_every_docs_page():
    text = README.read_text()
    assert len(text.splitlines()) <= 250  # concept first; the rest lives in docs/
    assert len(PAGES) >= 6
    assert all(f"]({page_name(p)})" in text for p in PAGES[1:])


def test_readme_has_python_examples():
    found = {p: blocks(p.read_text()) for p in PAGES}
    assert len(found[README]) >= 2 and sum(map(len, found.values())) >= 8
    for page, got in found.items():
        assert all("mdlnb" in b or "jax" in b for b, _ in got), page
        # every ```python fence is found: none slips past the test unparsed
        fences = re.findall(r"^[ \t]*```python$", page.read_text(), flags=re.M)
        assert len(got) == len(fences), page
    illustrative = [why for got in found.values() for _, why in got if why]
    assert illustrative and all(why for why in illustrative)  # each says why


def _check_readme(scope: dict, out: str) -> None:
    rep = scope["rep"]
    assert rep.task_name == "digits|pca16" and rep.n == 300
    assert (
        rep.total_nats < 0.75 * rep.uniform_nats
    )  # real features compress the labels (small board)
    assert "rank encoders by this" in out
    assert list(scope["cmp"].table()["encoder"])[0] in {"pixels", "pca8", "randproj16"}


def _check_usage(scope: dict, out: str) -> None:
    assert "readout preference by examples seen" in out
    assert len(scope["reps"]) == 3 and len({r.losses.seed for r in scope["reps"]}) == 3
    assert scope["reg"].n == 442 and "density" in out
    assert set(scope["by_layer"]) == {
        "efficientnet_lite0_32px/stage5",
        "efficientnet_lite0_32px/head",
    }


def _check_protocols(scope: dict, out: str) -> None:
    assert scope["rep1"].protocol.strategy.m == 11 and scope["rep1"].losses.seed == 1


def _check_notebooks(scope: dict, out: str) -> None:
    assert scope["params"]["seed"] == 1 and scope["params"]["size"] == 400


#: page → what its blocks must have computed (every page with executed blocks has one)
CHECKS = {
    "README.md": _check_readme,
    "docs/usage.md": _check_usage,
    "docs/protocols.md": _check_protocols,
    "docs/notebooks.md": _check_notebooks,
}


def _run_pages() -> list[Path]:
    return [p for p in PAGES if python_blocks(p.read_text())]


def test_every_page_with_examples_is_checked():
    assert {page_name(p) for p in _run_pages()} == set(CHECKS)


@pytest.mark.parametrize("page", _run_pages(), ids=page_name)
def test_python_examples_run(page, tmp_path, monkeypatch, capsys):
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
        warnings.simplefilter("error", DeprecationWarning)  # the pages use the current API
        for block in python_blocks(page.read_text()):
            exec(compile(block, page_name(page), "exec"), scope)
    out = capsys.readouterr().out
    plt.close("all")
    CHECKS[page_name(page)](scope, out)


# ----------------------------------------------------------------------------- links
#
# Every relative link of README.md and docs/*.md names an existing file or folder,
# and an anchor (``page.md#heading``) names a heading of that page, spelled as GitHub
# spells it (lower case, punctuation dropped, spaces as hyphens).

_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^[ \t]*```.*?^[ \t]*```", flags=re.S | re.M)


def anchors(text: str) -> set[str]:
    """GitHub's anchors of a page's headings (code blocks excluded)."""
    out = set()
    for m in re.finditer(r"^#{1,6} +(.+?) *$", _FENCE.sub("", text), flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", m[1].strip().lower()).replace(" ", "-")
        out.add(slug)
    return out


def links(text: str) -> list[str]:
    """Every link target outside code blocks and code spans."""
    prose = re.sub(r"`[^`\n]*`", "``", _FENCE.sub("", text))
    return _LINK.findall(prose)


def test_anchors_are_spelled_as_github_does():
    assert anchors("# The notebooks by hand (`make lab`)\n## Why m = 2\n") == {
        "the-notebooks-by-hand-make-lab",
        "why-m--2",
    }
    assert links("[a](x.md) `[b](y.md)` [c\n`d`](z.md#e) [w](https://x.org)") == [
        "x.md",
        "z.md#e",
        "https://x.org",
    ]


@pytest.mark.parametrize("page", PAGES, ids=page_name)
def test_relative_links_resolve(page):
    found = links(page.read_text())
    if page == README:
        assert len(found) >= 10
    for target in found:
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        assert dest.exists(), f"{page_name(page)}: {target} does not exist"
        assert dest.is_relative_to(ROOT), f"{page_name(page)}: {target} leaves the repository"
        if anchor:
            assert dest.suffix == ".md", target
            assert anchor in anchors(dest.read_text()), f"{page_name(page)}: no heading #{anchor}"


# ----------------------------------------------------------------------------- shell blocks
#
# The ```bash blocks of all the pages (README.md, then docs/ by name) are run the way a
# user types them: each command line (continuation lines joined, comments dropped) in a
# subprocess, ``.venv/bin/mdlnb`` being the venv's
# `mdlnb` entry point (``python -m mdlnb.tools.cli`` where there is none), in a working
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
#: `python -m mdlnb.tools.runner NAME ...` executes a notebook in a kernel (tens of seconds to
#: minutes; the smoke notebooks run in tests/test_notebooks.py). Here it runs up to the
#: kernel: the runner's own command line, with every notebook and `-p` value checked
#: (types included) as it does before any kernel starts; only `runner.run` is replaced.


def bash_commands(text: str) -> list[str]:
    """Every command line of a page's ```bash blocks, in order."""
    out = []
    for m in _BASH.finditer(text):
        body = textwrap.dedent(m["body"]).replace("\\\n", " ")
        for line in body.splitlines():
            cmd = re.sub(r"\s+#.*$", "", line).strip()
            if cmd and not cmd.startswith("#"):
                out.append(" ".join(cmd.split()))
    return out


def all_bash_commands() -> list[str]:
    """The command lines of README.md, then of each docs/ page."""
    return [c for page in PAGES for c in bash_commands(page.read_text())]


def classify(cmd: str) -> tuple[str, list[str] | str]:
    """``("run", argv after the program)``, ``("runner", argv)`` or ``("skip", why)``."""
    import shlex

    for prefix, why in NOT_RUN.items():
        if cmd.startswith(prefix):
            return "skip", why
    argv = shlex.split(cmd)
    if argv[0] == ".venv/bin/mdlnb":
        return "run", argv[1:]
    if argv[:3] == [".venv/bin/python", "-m", "mdlnb.tools.runner"]:
        return ("run-module" if "--check" in argv else "runner"), argv[3:]
    raise AssertionError(
        f"a shell command of a kind this test does not know: {cmd!r}"
        " (run it here, or say in NOT_RUN why not)"
    )


def test_readme_shell_commands_are_all_sorted():
    cmds = all_bash_commands()
    kinds = [classify(c)[0] for c in cmds]  # raises on an unknown kind
    assert len(cmds) >= 10 and kinds.count("run") >= 6 and "runner" in kinds
    assert all(why for kind, why in map(classify, cmds) if kind == "skip")


def _shell_inputs(cwd: Path) -> None:
    """The files the pages' commands read, from the first 150 scikit-learn digits:
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

    from mdlnb.tools import runner
    from mdlnb.tools.runner import _notebooks

    root = ROOT
    _shell_inputs(tmp_path)
    entry = Path(sys.executable).with_name("mdlnb")
    program = [str(entry)] if entry.exists() else [sys.executable, "-m", "mdlnb.tools.cli"]
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
    for cmd in all_bash_commands():
        kind, what = classify(cmd)
        if kind == "skip":
            skipped.append((cmd, what))
            continue
        if kind == "runner":  # everything but the kernel
            calls = []
            monkeypatch.setattr(
                _notebooks,
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
            [sys.executable, "-m", "mdlnb.tools.runner", *what]
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
