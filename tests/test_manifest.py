"""paper/README.md: manifests merged, every listed file exists and parses."""

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from mdlnb.api import output
from mdlnb.research import manifest

PAPER = Path(__file__).resolve().parent.parent / "paper"


def _paper(tmp_path):
    output.save_table(pd.DataFrame({"a": [1.0, 2.0]}), "nb_table", tmp_path)
    fig, ax = plt.subplots()
    ax.plot([0, 1])
    output.save_figure(fig, "nb_figure", tmp_path)
    plt.close(fig)
    output.save_table(pd.DataFrame({"b": [3]}), "other_table", tmp_path)
    return tmp_path


def test_record_merge_check(tmp_path):
    p = _paper(tmp_path)
    manifest.record(p, "nb", "smoke", pattern="nb_*", date="2026-01-02")
    df = pd.read_csv(p / "manifest" / "nb.csv")
    assert list(df["file"]) == ["nb_figure.png", "nb_table.csv"]
    assert list(df["kind"]) == ["figure", "table"] and set(df["date"]) == {"2026-01-02"}
    assert manifest.main([str(p)]) == 0
    text = (p / "README.md").read_text()
    assert (
        "| [nb_table.csv](nb_table.csv) ([md](nb_table.md)) | table | nb | smoke | 2026-01-02 |"
        in text
    )
    assert (
        "| [other_table.csv](other_table.csv) ([md](other_table.md)) | table | unrecorded |" in text
    )
    assert manifest.check(p) == 3
    (p / "nb_figure.png").write_bytes(b"not a png")
    with pytest.raises(ValueError, match="nb_figure.png"):
        manifest.check(p)
    with pytest.raises(ValueError, match="files"):
        manifest.record(p, "nb", "smoke", files=["missing.csv"])


def test_committed_readme_lists_every_file_and_each_parses():
    readme = PAPER / "README.md"
    if not readme.exists():
        pytest.skip("paper/README.md not generated yet")
    text = readme.read_text()
    files = sorted(p.name for p in PAPER.iterdir() if p.suffix in (".csv", ".png"))
    assert files, "paper/ has no tables or figures"
    missing = [f for f in files if f"[{f}]({f})" not in text]
    assert not missing, (
        f"paper/README.md does not list {missing}; run python -m mdlnb.research.manifest paper/"
    )
    assert manifest.check(PAPER) == len(files)


def test_every_committed_figure_has_a_caption_and_the_readme_shows_it():
    from mdlnb.research._captions import CAPTIONS

    figures = sorted(p.name for p in PAPER.glob("*.png"))
    assert figures
    missing = [f for f in figures if f not in CAPTIONS]
    assert not missing, f"no caption in mdlnb/research/_captions.py for {missing}"
    readme = (PAPER / "README.md").read_text()
    if "## Figures" in readme:  # written by the manifest since captions exist
        assert "(no caption)" not in readme
        for f in figures:
            assert f"![{f}]({f})\n\n{CAPTIONS[f]}" in readme, f


def test_merge_adds_the_setting_and_captions(tmp_path):
    import matplotlib

    from mdlnb.research import claims

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1])
    fig.savefig(tmp_path / "quickstart_posterior.png")
    fig.savefig(tmp_path / "odd_figure.png")
    plt.close(fig)
    manifest.record(tmp_path, "nb", "smoke", pattern="*.png")
    claims.write_setting([("tasks", "19 VTAB", "17 embedded")], tmp_path, "nb")
    text = manifest.merge(tmp_path).read_text()
    assert "| nb | tasks | 19 VTAB | 17 embedded |" in text
    assert text.index("## The setting") < text.index("## Files") < text.index("## Figures")
    assert "### odd_figure.png\n\n![odd_figure.png](odd_figure.png)\n\n(no caption)" in text
    assert "The quickstart: the posterior over readouts" in text
