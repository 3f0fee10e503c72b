"""Every ```python block of README.md runs, in order, as one script.

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

README = Path(__file__).resolve().parents[1] / "README.md"
_BLOCK = re.compile(r"^(?P<marker>[ \t]*<!-- illustrative: (?P<why>[^>]*)-->\n\s*)?"
                    r"(?P<indent>[ \t]*)```python\n(?P<body>.*?)^(?P=indent)```",
                    flags=re.S | re.M)


def blocks(text: str) -> list[tuple[str, str | None]]:
    """Every ```python block as (dedented source, the reason it is illustrative or None)."""
    return [(textwrap.dedent(m["body"]), m["why"].strip() if m["why"] else None)
            for m in _BLOCK.finditer(text)]


def python_blocks(text: str) -> list[str]:
    """The blocks the test executes (all but the illustrative ones)."""
    return [src for src, why in blocks(text) if why is None]


def test_readme_has_python_examples():
    found = blocks(README.read_text())
    assert len(found) >= 5 and all("mdlnb" in b or "jax" in b for b, _ in found)
    # every ```python fence is found: none slips past the test unparsed
    assert len(found) == len(re.findall(r"^[ \t]*```python$", README.read_text(), flags=re.M))
    illustrative = [why for _, why in found if why]
    assert illustrative and all(why for why in illustrative)      # each says why


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
        warnings.simplefilter("ignore", UserWarning)   # grid-edge warnings are the point, not an error
        warnings.simplefilter("error", DeprecationWarning)   # the README uses the current API
        for block in python_blocks(README.read_text()):
            exec(compile(block, "README.md", "exec"), scope)
    out = capsys.readouterr().out
    plt.close("all")
    rep = scope["rep"]
    assert rep.task_name == "digits|pca16" and rep.n == 300
    assert rep.total_nats < 0.75 * rep.uniform_nats   # real features compress the labels (small board)
    assert "rank encoders by this" in out and "readout preference by examples seen" in out
    assert len(scope["reps"]) == 3 and len({r.losses.seed for r in scope["reps"]}) == 3
    assert scope["rep1"].protocol.strategy.m == 11 and scope["rep1"].losses.seed == 1
    assert list(scope["cmp"].table()["encoder"])[0] in {"pixels", "pca8", "randproj16"}
