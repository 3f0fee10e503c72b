"""What a reader sees (issue 25): result sentences that follow the numbers, rounded
and shortened tables, human labels, the codelength legend off the bars, the readout
heatmap's discrete colour bar."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from mdlnb import findings, plots, report  # noqa: E402


def test_blockwise_sentence_takes_its_direction_from_the_numbers():
    shorter = findings.blockwise_vs_online(295.9, 511.2, 300, expert="mlp1x64")
    assert "block-wise code (295.9 nats) is **shorter**" in shorter
    assert "online code of the same expert, `mlp1x64`, (511.2 nats) by 215.3 nats" in shorter
    assert "(0.718 nats per example over N = 300)" in shorter
    assert "does **not** hold here" in shorter
    longer = findings.blockwise_vs_online(600.0, 511.2, 300)
    assert "is **longer**" in longer and "by 88.8 nats" in longer and longer.endswith("holds here.")


def test_posterior_share_says_from_when_or_that_it_does_not():
    t = np.arange(10)
    held = pd.Series([0.1, 0.95, 0.5, 0.92, 0.93, 0.95, 0.97, 0.98, 0.99, 0.99], index=t)
    text = findings.posterior_share(held, threshold=0.9, who="MLP readouts", where="B")
    assert "hold more than 90% of the posterior from t = 3 on" in text
    assert "(t = 9; 99.0% there)" in text
    never = pd.Series([0.1, 0.6, 0.85, 0.7, 0.4, 0.3, 0.3, 0.2, 0.2, 0.25], index=t)
    text = findings.posterior_share(never, threshold=0.9, who="MLP readouts", where="B")
    assert "do **not** hold 90% of the posterior" in text
    assert "25.0% at t = 9 (at most 85.0%, at t = 2)" in text


def test_winners_compared_names_the_measures_that_differ():
    exact = pd.DataFrame({"measure": ["VA", "MDL"], "changed": [True, True],
                          "winners": ["A, B", "A, B"]})
    mlp = pd.DataFrame({"measure": ["VA", "MDL"], "changed": [True, False],
                        "winners": ["A, B", "A"]})
    text = findings.winners_compared(exact, mlp, labels=("exact", "MLP"))
    assert text.startswith("**On this run** the pictures differ for MDL:")
    assert "- MDL: with the exact it flips (A, B); with the MLP it does not flip (A)" in text
    same = findings.winners_compared(exact, exact, labels=("exact", "MLP"))
    assert same.startswith("**On this run** the two probes give the same picture")


def test_show_rounds_and_shortens_but_save_keeps_everything(tmp_path):
    df = pd.DataFrame({"expert": [f"e{i}" for i in range(40)],
                       "total [nats]": np.linspace(100.123456, 200.654321, 40)})
    shown = report.show(df)
    lines = str(shown).splitlines()
    assert lines[2] == "| e0 | 100.123 |" and len([x for x in lines if x.startswith("| e")]) == 1 + 12
    assert lines[-1] == "… and 28 more rows (40 in all)."
    assert shown._repr_markdown_() == str(shown)
    assert "100.123456" in report.save_table(df, "t", tmp_path)[0].read_text()
    assert len(str(report.show(df, rows=None)).splitlines()) == 42
    with pytest.raises(ValueError, match="rows"):
        report.show(df, rows=0)


@pytest.mark.parametrize("code,label", [
    ("lite0@32/digits", "EfficientNet-Lite0 (32 px) on digits"),
    ("pixels/fashion_mnist", "raw pixels on Fashion-MNIST"),
    ("simclr:resnet_M:20000/clevr_count", "ResNet-M, SimCLR (20,000 steps) on Clevr count"),
    ("random:vit_XS/lfw_faces", "ViT-XS, untrained on LFW faces"),
    ("lite2", "EfficientNet-Lite2"),
    ("my_encoder/my_task", "my_encoder on my task"),
])
def test_pair_labels(code, label):
    assert plots.pair_label(code) == label


def test_codelength_legend_sits_outside_the_bars():
    totals = {f"expert{i}": 100.0 + 10 * i for i in range(8)}
    ax = plots.codelengths(totals, n=100, reference={"switching": 105.0, "uniform": 230.0})
    fig = ax.figure
    fig.canvas.draw()
    legend = ax.get_legend().get_window_extent()
    axes_box = ax.get_window_extent()
    assert legend.x0 >= axes_box.x1                      # right of the axes: covers no bar
    plt.close(fig)


def test_readout_heatmap_has_one_colour_per_depth_and_integer_ticks():
    from mdlnb.studies.encoders import _plots

    table = pd.DataFrame([[0, 1, 3], [2, 0, 1]], index=["enc a", "enc b"],
                         columns=["digits", "textures", "clevr_count"])
    ax = _plots.preference_heatmap(table, {"digits": "natural", "textures": "natural",
                                           "clevr_count": "structured"})
    cbar = ax.collections[0].colorbar
    assert list(cbar.get_ticks()) == [0, 1, 2, 3]
    assert ax.collections[0].cmap.N == 4                  # discrete: a colour per depth
    assert "hidden layers" in cbar.ax.get_ylabel()
    assert [x.get_text() for x in ax.get_xticklabels()] == ["digits", "textures", "Clevr count"]
    plt.close(ax.figure)
