"""Every ```python block of README.md runs, in order, as one script.

The README's examples read ``features.npy`` and ``labels.npy`` from the
working directory; here they are real features (PCA-16 of the first 300
scikit-learn digits), written to a temporary working directory.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def test_readme_has_python_examples():
    blocks = python_blocks(README.read_text())
    assert len(blocks) >= 2 and all("mdlnb" in b for b in blocks)


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
        for block in python_blocks(README.read_text()):
            exec(compile(block, "README.md", "exec"), scope)
    out = capsys.readouterr().out
    plt.close("all")
    rep = scope["rep"]
    assert rep.task_name == "digits|pca16" and rep.n == 300
    assert rep.total_nats < 0.5 * rep.uniform_nats            # real features compress the labels
    assert "rank encoders by this" in out and "readout preference by examples seen" in out
    assert len(scope["reps"]) == 3 and len({r.losses.seed for r in scope["reps"]}) == 3
