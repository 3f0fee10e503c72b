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


def _scaling_inputs():
    """Hand-made encoder study rows: two families, the Lite sizes close in parameters
    and rank (where the size labels collided)."""
    rng = np.random.default_rng(0)
    encs = {"lite0@64": ("efficientnet-lite", "supervised-imagenet", "lite0", 3_350_000, 1.60),
            "lite1@64": ("efficientnet-lite", "supervised-imagenet", "lite1", 4_108_848, 1.63),
            "lite2@64": ("efficientnet-lite", "supervised-imagenet", "lite2", 4_782_024, 1.61),
            "mae:vit_S:150": ("vit", "mae", "S", 71_296, 1.96),
            "mae:vit_M:150": ("vit", "mae", "M", 305_664, 1.95),
            "mae:vit_L:150": ("vit", "mae", "L", 803_584, 2.02)}
    rows = []
    for e, (a, o, z, _, base) in encs.items():
        for t, off in (("digits", -1.2), ("lfw_faces", 1.5), ("clevr_count", 0.8)):
            for s in range(3):
                b = base + off + 0.03 * s + rng.normal(0, 0.01)
                for metric, v in (("codelength [bits/example]", b), ("codelength [nats]", 300 * b),
                                  ("linear accuracy", 1 - b / 4), ("mlp accuracy", 1 - b / 5)):
                    rows.append(dict(encoder=e, architecture=a, objective=o, size=z, task=t,
                                     group="natural", metric=metric, value=v, seed=s))
    et = pd.DataFrame([dict(encoder=e, architecture=a, objective=o, size=z, parameters=p)
                       for e, (a, o, z, p, _) in encs.items()])
    return pd.DataFrame(rows), et, list(encs)


def test_scaling_figure_titles_legends_paired_bars_and_no_colliding_labels():
    from mdlnb.studies.encoders import _plots, _tables

    frame, et, encs = _scaling_inputs()
    table = _tables.scaling_table(frame, et, encs)
    diffs = _tables.scaling_differences(frame, et, encs)
    fig = _plots.scaling(table, diffs)
    left, right = fig.axes
    for ax in (left, right):                               # each panel: a title and a legend
        assert ax.get_title()
        texts = [t.get_text() for t in ax.get_legend().get_texts()]
        assert any(t.startswith("EfficientNet-Lite, supervised (ImageNet)") for t in texts)
        assert any(t.startswith("ViT, MAE") for t in texts)
        assert not any("efficientnet-lite" in t or "vit mae" in t for t in texts)   # no codes
    assert "Paired difference" in left.get_title() and "sd over 3 data orders" in left.get_title()
    assert "MDL rank" in right.get_title()
    # left: the paired differences (± sd over orders), not bits/example ± sd over tasks
    lite = diffs[diffs["architecture"] == "efficientnet-lite"].sort_values("parameters")
    line = next(ln for ln in left.lines if len(ln.get_xdata()) == 3
                and ln.get_xdata()[0] == lite["parameters"].iloc[0])
    np.testing.assert_allclose(np.asarray(line.get_ydata(), float), lite["Δ bits/example"])
    bars = next(c for c in left.collections if len(c.get_segments()) == 3
                and c.get_segments()[0][0][0] == lite["parameters"].iloc[0])
    half = [abs(seg[1][1] - seg[0][1]) / 2 for seg in bars.get_segments()]
    np.testing.assert_allclose(half, lite["Δ sd (orders)"], atol=1e-12)
    assert max(half) < 0.05 < table["bits/example sd (tasks)"].min()   # the old bars swamped it
    # every point labelled with its size, no two labels overlapping
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in (left, right):
        anns = [t for t in ax.texts]
        assert sorted(a.get_text() for a in anns) == ["Lite0", "Lite1", "Lite2", "ViT-L", "ViT-M",
                                                      "ViT-S"]
        boxes = [a.get_window_extent(renderer) for a in anns]
        for i in range(len(boxes)):
            for j in range(i + 1, len(boxes)):
                assert not boxes[i].overlaps(boxes[j]), (anns[i].get_text(), anns[j].get_text())
    plt.close(fig)


def test_regret_panel_titles_and_legend_are_readers_names():
    from mdlnb.studies.encoders import _plots, _tables

    curves = pd.DataFrame([dict(encoder=e, task=t, seed=s, n=n, **{"cumulative [nats]": n * k + s})
                           for e, k in (("lite2@64", 1.0), ("lite0@64", 1.1))
                           for t in ("digits", "lfw_faces") for s in range(3) for n in (10, 100)])
    ax = _plots.regret(_tables.regret_along_n(curves, "lite2@64", "lite0@64"),
                       groups={"digits": "natural", "lfw_faces": "specialized"})
    title = ax.get_title()
    assert title.startswith("EfficientNet-Lite2 (64 px) minus EfficientNet-Lite0 (64 px)")
    assert "lite2@64" not in title
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "natural (mean)", "specialized (mean)", "one task"]
    np.testing.assert_allclose(np.asarray(ax.lines[0].get_ydata(), float), [-1.0, -10.0])   # 10·(1 − 1.1), 100·…
    # one colour per group, not per task: the two tasks' lines differ only by group
    assert ax.lines[0].get_color() == _plots.GROUP_COLOURS["natural"]
    plt.close(ax.figure)


def test_scaling_findings_name_families_and_give_the_paired_differences():
    from types import SimpleNamespace

    from mdlnb.studies.encoders import _tables
    from mdlnb.studies.encoders._result import EncodersResult

    frame, et, encs = _scaling_inputs()
    diffs = _tables.scaling_differences(frame, et, encs).set_index("encoder")
    fake = SimpleNamespace(scaling=lambda e: _tables.scaling_table(frame, et, e),
                           scaling_differences=lambda e: _tables.scaling_differences(frame, et, e))
    text = EncodersResult.scaling_findings(fake, encs)
    assert "- ViT, MAE: ViT-S " in text and "- EfficientNet-Lite, supervised (ImageNet): Lite0" in text
    d = diffs.loc["mae:vit_L:150"]
    assert f"ViT-L {d['Δ bits/example']:+.3f} ± {d['Δ sd (orders)']:.3f}" in text
    assert "Paired with ViT-S" in text and "sd over 3 orders" in text
