"""What a reader sees (issue 25): result sentences that follow the numbers, rounded
and shortened tables, human labels, the codelength legend off the bars, the readout
heatmap's discrete colour bar."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import re  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from mdlnb.api import output, plots
from mdlnb.research import findings  # noqa: E402


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
    exact = pd.DataFrame(
        {"measure": ["VA", "MDL"], "changed": [True, True], "winners": ["A, B", "A, B"]}
    )
    mlp = pd.DataFrame(
        {"measure": ["VA", "MDL"], "changed": [True, False], "winners": ["A, B", "A"]}
    )
    text = findings.winners_compared(exact, mlp, labels=("exact", "MLP"))
    assert text.startswith("**On this run** the pictures differ for MDL:")
    assert "- MDL: with the exact it flips (A, B); with the MLP it does not flip (A)" in text
    same = findings.winners_compared(exact, exact, labels=("exact", "MLP"))
    assert same.startswith("**On this run** the two probes give the same picture")


def test_show_rounds_and_shortens_but_save_keeps_everything(tmp_path):
    df = pd.DataFrame(
        {
            "expert": [f"e{i}" for i in range(40)],
            "total [nats]": np.linspace(100.123456, 200.654321, 40),
        }
    )
    shown = output.show(df)
    lines = str(shown).splitlines()
    assert (
        lines[2] == "| e0 | 100.123 |" and len([x for x in lines if x.startswith("| e")]) == 1 + 12
    )
    assert lines[-1] == "… and 28 more rows (40 in all)."
    assert shown._repr_markdown_() == str(shown)
    assert "100.123456" in output.save_table(df, "t", tmp_path)[0].read_text()
    assert len(str(output.show(df, rows=None)).splitlines()) == 42
    with pytest.raises(ValueError, match="rows"):
        output.show(df, rows=0)


@pytest.mark.parametrize(
    "code,label",
    [
        ("lite0@32/digits", "EfficientNet-Lite0 (32 px) on digits"),
        ("pixels/fashion_mnist", "raw pixels on Fashion-MNIST"),
        ("simclr:resnet_M:20000/clevr_count", "ResNet-M, SimCLR (20,000 steps) on Clevr count"),
        ("random:vit_XS/lfw_faces", "ViT-XS, untrained on LFW faces"),
        ("lite2", "EfficientNet-Lite2"),
        ("my_encoder/my_task", "my_encoder on my task"),
    ],
)
def test_pair_labels(code, label):
    assert plots.pair_label(code) == label


def test_codelength_legend_sits_outside_the_bars():
    totals = {f"expert{i}": 100.0 + 10 * i for i in range(8)}
    ax = plots.codelengths(totals, n=100, reference={"switching": 105.0, "uniform": 230.0})
    fig = ax.figure
    fig.canvas.draw()
    legend = ax.get_legend().get_window_extent()
    axes_box = ax.get_window_extent()
    assert legend.x0 >= axes_box.x1  # right of the axes: covers no bar
    plt.close(fig)


def test_readout_heatmap_shows_the_mean_depth_over_orders():
    """The heatmap (its design of the encoder study's claim d2): the mean depth over orders
    per cell, to one decimal, on a colour bar from 0 (linear) to the deepest whole depth."""
    from mdlnb.studies.encoder_grid import _plots

    table = pd.DataFrame(
        [[0, 1.5, 3], [2, 0, 1]],
        index=["enc a", "enc b"],
        columns=["digits", "textures", "clevr_count"],
    )
    ax = _plots.preference_heatmap(
        table,
        {"digits": "natural", "textures": "natural", "clevr_count": "structured"},
        orders=3,
        agreement=0.5,
    )
    mesh = ax.collections[0]
    assert (mesh.norm.vmin, mesh.norm.vmax) == (0.0, 3.0)
    assert "hidden layers" in mesh.colorbar.ax.get_ylabel()
    assert sorted(t.get_text() for t in ax.texts if "." in t.get_text()) == sorted(
        f"{v:.1f}" for v in table.to_numpy().ravel()
    )
    assert [x.get_text() for x in ax.get_xticklabels()] == ["digits", "textures", "Clevr count"]
    assert "3 data orders" in ax.get_title() and "50%" in ax.get_title()
    plt.close(ax.figure)


def test_depth_cmap_gives_a_whole_depth_its_readout_colour():
    from matplotlib.colors import to_hex

    cmap = plots.depth_cmap(3)
    assert [to_hex(cmap(d / 3)) for d in range(4)] == list(plots.DEPTH_COLORS[:4])


def _scaling_inputs():
    """Hand-made encoder study rows: two families, the Lite sizes close in parameters
    and rank (where the size labels collided)."""
    rng = np.random.default_rng(0)
    encs = {
        "lite0@64": ("efficientnet-lite", "supervised-imagenet", "lite0", 3_350_000, 1.60),
        "lite1@64": ("efficientnet-lite", "supervised-imagenet", "lite1", 4_108_848, 1.63),
        "lite2@64": ("efficientnet-lite", "supervised-imagenet", "lite2", 4_782_024, 1.61),
        "mae:vit_S:150": ("vit", "mae", "S", 71_296, 1.96),
        "mae:vit_M:150": ("vit", "mae", "M", 305_664, 1.95),
        "mae:vit_L:150": ("vit", "mae", "L", 803_584, 2.02),
    }
    rows = []
    for e, (a, o, z, _, base) in encs.items():
        for t, off in (("digits", -1.2), ("lfw_faces", 1.5), ("clevr_count", 0.8)):
            for s in range(3):
                b = base + off + 0.03 * s + rng.normal(0, 0.01)
                for metric, v in (
                    ("codelength [bits/example]", b),
                    ("codelength [nats]", 300 * b),
                    ("linear accuracy", 1 - b / 4),
                    ("mlp accuracy", 1 - b / 5),
                ):
                    rows.append(
                        dict(
                            encoder=e,
                            architecture=a,
                            objective=o,
                            size=z,
                            task=t,
                            group="natural",
                            metric=metric,
                            value=v,
                            seed=s,
                        )
                    )
    et = pd.DataFrame(
        [
            dict(encoder=e, architecture=a, objective=o, size=z, parameters=p)
            for e, (a, o, z, p, _) in encs.items()
        ]
    )
    return pd.DataFrame(rows), et, list(encs)


def test_scaling_figure_titles_legends_paired_bars_and_no_colliding_labels():
    from mdlnb.studies.encoder_grid import _plots, _tables

    frame, et, encs = _scaling_inputs()
    table = _tables.scaling_table(frame, et, encs)
    diffs = _tables.scaling_differences(frame, et, encs)
    fig = _plots.scaling(table, diffs)
    left, right = fig.axes
    for ax in (left, right):  # each panel: a title and a legend
        assert ax.get_title()
        texts = [t.get_text() for t in ax.get_legend().get_texts()]
        assert any(t.startswith("EfficientNet-Lite, supervised (ImageNet)") for t in texts)
        assert any(t.startswith("ViT, MAE") for t in texts)
        assert not any("efficientnet-lite" in t or "vit mae" in t for t in texts)  # no codes
    assert "Paired difference" in left.get_title() and "sd over 3 data orders" in left.get_title()
    assert "MDL rank" in right.get_title()
    # left: the paired differences (± sd over orders), not bits/example ± sd over tasks
    lite = diffs[diffs["architecture"] == "efficientnet-lite"].sort_values("parameters")
    line = next(
        ln
        for ln in left.lines
        if len(ln.get_xdata()) == 3 and ln.get_xdata()[0] == lite["parameters"].iloc[0]
    )
    np.testing.assert_allclose(np.asarray(line.get_ydata(), float), lite["Δ bits/example"])
    bars = next(
        c
        for c in left.collections
        if len(c.get_segments()) == 3 and c.get_segments()[0][0][0] == lite["parameters"].iloc[0]
    )
    half = [abs(seg[1][1] - seg[0][1]) / 2 for seg in bars.get_segments()]
    np.testing.assert_allclose(half, lite["Δ sd (orders)"], atol=1e-12)
    assert max(half) < 0.05 < table["bits/example sd (tasks)"].min()  # the old bars swamped it
    # every point labelled with its size, no two labels overlapping
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in (left, right):
        anns = [t for t in ax.texts]
        assert sorted(a.get_text() for a in anns) == [
            "Lite0",
            "Lite1",
            "Lite2",
            "ViT-L",
            "ViT-M",
            "ViT-S",
        ]
        boxes = [a.get_window_extent(renderer) for a in anns]
        for i in range(len(boxes)):
            for j in range(i + 1, len(boxes)):
                assert not boxes[i].overlaps(boxes[j]), (anns[i].get_text(), anns[j].get_text())
    plt.close(fig)


def test_regret_panel_titles_and_legend_are_readers_names():
    from mdlnb.studies.encoder_grid import _plots, _tables

    curves = pd.DataFrame(
        [
            dict(encoder=e, task=t, seed=s, n=n, **{"cumulative [nats]": n * k + s})
            for e, k in (("lite2@64", 1.0), ("lite0@64", 1.1))
            for t in ("digits", "lfw_faces")
            for s in range(3)
            for n in (10, 100)
        ]
    )
    ax = _plots.regret(
        _tables.regret_along_n(curves, "lite2@64", "lite0@64"),
        groups={"digits": "natural", "lfw_faces": "specialized"},
    )
    title = ax.get_title()
    assert title.startswith("EfficientNet-Lite2 (64 px) minus EfficientNet-Lite0 (64 px)")
    assert "lite2@64" not in title
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "natural (mean)",
        "specialized (mean)",
        "one task",
    ]
    np.testing.assert_allclose(
        np.asarray(ax.lines[0].get_ydata(), float), [-1.0, -10.0]
    )  # 10·(1 − 1.1), 100·…
    # one colour per group, not per task: the two tasks' lines differ only by group
    assert ax.lines[0].get_color() == _plots.GROUP_COLOURS["natural"]
    plt.close(ax.figure)


def test_scaling_findings_name_families_and_give_the_paired_differences():
    from types import SimpleNamespace

    from mdlnb.studies.encoder_grid import _tables
    from mdlnb.studies.encoder_grid._result import EncodersResult

    frame, et, encs = _scaling_inputs()
    diffs = _tables.scaling_differences(frame, et, encs).set_index("encoder")
    fake = SimpleNamespace(
        scaling=lambda e: _tables.scaling_table(frame, et, e),
        scaling_differences=lambda e: _tables.scaling_differences(frame, et, e),
    )
    text = EncodersResult.scaling_findings(fake, encs)
    assert (
        "- ViT, MAE: ViT-S " in text and "- EfficientNet-Lite, supervised (ImageNet): Lite0" in text
    )
    d = diffs.loc["mae:vit_L:150"]
    assert f"ViT-L {d['Δ bits/example']:+.3f} ± {d['Δ sd (orders)']:.3f}" in text
    assert "Paired with ViT-S" in text and "sd over 3 orders" in text


# ---- "linear or deeper?" (issue 41): one statement per data-size bin, from several orders


@pytest.fixture(scope="module")
def depth_reports():
    """Three orders of the first 600 scikit-learn digits (PCA-8 features) coded by a board
    of a linear readout and two MLPs (one and two hidden layers of 32)."""
    from sklearn.datasets import load_digits
    from sklearn.decomposition import PCA

    import mdlnb
    from mdlnb.board import readouts

    x, y = load_digits(return_X_y=True)
    x = PCA(8, random_state=0).fit_transform(x[:600]).astype(np.float32)
    board = mdlnb.expert_grid(
        [readouts.linear(), readouts.mlp(1, 32), readouts.mlp(2, 32)],
        learning_rate=[3e-3],
        replay_streams=[5],
    )
    return [
        mdlnb.evaluate(x, y[:600], experts=board, seed=s, progress=False, name="pca8")
        for s in range(3)
    ]


def test_linear_or_deeper_from_the_tidy_posterior(depth_reports):
    """The deeper mass re-derived from each report's tidy readout posterior with pandas,
    its interval and answer from scipy's one-sample t-test against 1/2."""
    from scipy import stats

    import mdlnb

    pref = mdlnb.readout_preference(depth_reports)
    depth = pref.linear_or_deeper
    assert depth.deeper == ("mlp1x32", "mlp2x32") and depth.orders == 3
    post = pd.concat([r.readout_posterior().assign(order=i) for i, r in enumerate(depth_reports)])
    deep = post[post.readout != "linear"].groupby(["order", "t"])["probability"].sum()
    deep = deep.reset_index()
    for _, row in depth.table.iterrows():
        inside = deep[(deep.t >= row["n_from"]) & (deep.t < row["n_to"])]
        per_order = inside.groupby("order")["probability"].mean().to_numpy()
        assert row["deeper mass"] == pytest.approx(per_order.mean(), abs=1e-9)
        lo, hi = stats.t.interval(0.95, 2, loc=per_order.mean(), scale=stats.sem(per_order))
        assert (row["deeper low"], row["deeper high"]) == pytest.approx(
            (max(lo, 0.0), min(hi, 1.0)), abs=1e-9
        )
        p = stats.ttest_1samp(per_order, 0.5).pvalue
        want = "undecided" if not p < 0.05 else "deeper" if per_order.mean() > 0.5 else "linear"
        assert row["answer"] == want
    assert depth.table["answer"].iloc[-1] == "deeper"  # MLPs win on 600 digits
    n_from, answer = depth.settled
    assert answer == "deeper" and (depth.table["n_from"] >= n_from).sum() >= 2
    assert str(depth).startswith(
        f"linear or deeper (mlp1x32, mlp2x32 together), 3 orders: deeper from n ≈ {n_from:,}"
    )
    assert str(depth) in str(pref)  # printed with the preference


def test_orders_needed_is_the_smallest_count_whose_interval_excludes_a_half():
    from scipy import stats

    from mdlnb.api._depth import orders_needed

    for mean, sd in ((0.8, 0.1), (0.55, 0.2), (0.3, 0.05), (0.51, 0.03)):
        r = orders_needed(mean, sd)

        def width(k, sd=sd):
            return stats.t.ppf(0.975, k - 1) * sd / np.sqrt(k)

        assert width(r) < abs(mean - 0.5) and (r == 2 or width(r - 1) >= abs(mean - 0.5))
    assert orders_needed(0.5, 0.1) is None and orders_needed(0.9, 0.0) == 2
    assert orders_needed(0.5001, 0.4) is None  # beyond 1,000 orders


def test_one_order_decides_nothing_and_says_so(depth_reports):
    import mdlnb

    depth = mdlnb.readout_preference(depth_reports[0]).linear_or_deeper
    assert (depth.table["answer"] == "undecided").all() and depth.settled is None
    assert "one order: run several seeds to decide" in depth.text()


def test_comparison_table_cells_agree_with_each_other(depth_reports):
    """A comparison's depth columns are the LinearOrDeeper's numbers, and its sign-change
    cells describe one quantity: 'never' exactly when no order changes sign."""
    import re

    from sklearn.datasets import load_digits
    from sklearn.decomposition import PCA

    import mdlnb

    x, y = load_digits(return_X_y=True)
    x, y = x[:600].astype(np.float32), y[:600]
    board = depth_reports[0].losses.experts
    feats = {"pixels": x, "pca8": PCA(8, random_state=0).fit_transform(x).astype(np.float32)}
    cmp = mdlnb.compare(feats, y, experts=list(board), seeds=(0, 1, 2), progress=False)
    tab = cmp.table().set_index("encoder")
    shown = cmp.display_table().set_index("encoder")
    for e in cmp.encoders:
        d = cmp.linear_or_deeper(e)
        last = d.table.iloc[-1]
        assert tab.loc[e, "linear or deeper"] == d.text() == shown.loc[e, "linear or deeper"]
        assert tab.loc[e, "deeper mass (last bin)"] == last["deeper mass"]
        nums = [
            float(v) for v in re.findall(r"mass ([0-9.]+) \[([0-9.]+), ([0-9.]+)\]", d.text())[0]
        ]
        assert nums == pytest.approx(
            [round(last[k], 2) for k in ("deeper mass", "deeper low", "deeper high")], abs=1e-9
        )
        k = tab.loc[e, "orders with a sign change"]
        assert (k == 0) == np.isnan(tab.loc[e, "last sign change [n]"])
        assert (k < 2) == np.isnan(tab.loc[e, "last sign change std [n]"])
        if e != cmp.best:
            assert (shown.loc[e, "vs best changes sign"] == "never") == (k == 0)
    assert not any(c.startswith("none") for c in shown["readout by data size"])


# ---- pages a student can read alone (issue 41) ------------------------------------


@pytest.fixture(scope="module")
def digits_report():
    import mdlnb

    task = mdlnb.data.load("digits", size=300, seed=0)
    return task, mdlnb.evaluate(task, protocol="small", progress=False)


def test_codelength_table_says_how_each_code_codes(digits_report):
    import math

    _, rep = digits_report
    tab = rep.codelength_table().set_index("code")
    how = tab["how it codes"]
    assert "plain average of the K = 4 experts" in how["ElementwiseMixture()"]
    assert "never learn" in how["ElementwiseMixture()"]
    assert f"log K = {math.log(4):.1f} nats" in how["BayesianMixture()"]
    assert "m − 1 = 1 time over" in how["FixedShare(m=2)"]
    assert "m − 1 = 10 times" in how["FixedShare(m=11)"]
    assert how.str.len().min() > 20 and how.notna().all()
    assert "yardstick" in how.iloc[-2] and "knowing nothing" in how.iloc[-1]


def test_blockwise_notes_explain_the_blocks_above_the_uniform_code(digits_report):
    """The notes name exactly the blocks whose per-example code exceeds log C, their
    range, the unseen-class count (by a plain loop) and the sums, from the numbers."""
    import math
    import re

    from mdlnb.baselines import blockwise

    task, rep = digits_report
    block = blockwise.blockwise(task, rep.expert(), order=rep.losses.order, epochs=20)
    per = block.block_nats / block.block_sizes
    worse = [s for s in range(1, len(per)) if per[s] > math.log(10)]
    text = block.notes(task)
    assert worse, "the first blocks of 300 digits cost more than log 10 (the case explained)"
    assert f"**Blocks {worse[0]}–{worse[-1]} cost more than the uniform code.**" in text
    assert f"{per[worse].min():.1f}–{per[worse].max():.1f} nats per example" in text
    y = task.y[block.order]
    unseen = 0
    for s in worse:
        lo, hi = block.boundaries[s - 1], block.boundaries[s]
        unseen += sum(1 for t in range(lo, hi) if y[t] not in set(y[:lo].tolist()))
    assert re.search(rf"\b{unseen} of their {int(block.block_sizes[worse].sum())} examples", text)
    up_to = block.boundaries[worse[-1]]
    assert (
        f"up to n = {up_to:,} the block-wise code spent {block.block_nats[: worse[-1] + 1].sum():,.1f}"
        in text
    )
    assert f"{up_to * math.log(10):,.1f}" in text
    assert "**best epoch**: the epoch (of 20)" in text and "0 marks the uniform first block" in text
    assert (
        "Blocks"
        not in blockwise.BlockwiseResult(
            boundaries=np.array([1, 2]),
            block_nats=np.array([math.log(10), 0.1]),
            best_epoch=np.array([0, 3]),
            order=np.arange(2),
            num_classes=10,
            expert="e",
            meta={"epochs": 5, "holdout": 0.1},
        ).notes()
    )


@pytest.mark.slow  # the beyond study's small config: a minute on a quiet 2-core CPU
def test_beyond_figure_and_table_in_readers_words(tmp_path):
    """The regression figure names representations and units in words, keys its band, and
    its titles do not touch; the summary table has rounded, whole cells."""
    import re

    from mdlnb.studies import beyond
    from mdlnb.studies.beyond import _plots as _beyond_plots

    assert (
        _beyond_plots.representation_label("lite0@64/stage5")
        == "EfficientNet-Lite0 stage 5 features (64 px input)"
    )
    assert _beyond_plots.representation_label("pixels8x8") == "pixels averaged to 8×8"
    assert _beyond_plots.representation_label("pca2") == "top 2 principal components"
    result = beyond.run(
        beyond.BeyondConfig(
            image_size=80,
            resolution=32,
            layer="stage2",
            calibration_size=100,
            calibration_protocol="small",
            points=20,
        ),
        progress=False,
    )
    fig = result.plot_regression()
    fig.canvas.draw()
    texts = [t.get_text() for ax in fig.axes for t in ax.get_legend().get_texts()]
    assert not [t for t in texts if re.search(r"lite\d@|pixels\d|density nats", t)], texts
    assert any(t.startswith("EfficientNet-Lite0 stage 2 features (32 px input)") for t in texts)
    assert any(t.startswith("band: min–max over 3 orders") for t in texts)
    boxes = [ax.title.get_window_extent() for ax in fig.axes]
    assert not boxes[0].overlaps(boxes[1])  # titles do not touch
    assert all("density" in ax.get_ylabel() and "nats" in ax.get_ylabel() for ax in fig.axes)
    summary = result.regression_summary()
    assert list(summary.columns) == [
        "task",
        "representation",
        "D",
        "density code [nats/example]",
        "vs best [nats] (paired)",
        "MDL rank",
        "LogME [nats/example]",
        "LogME rank",
        "linear or deeper",
    ]
    assert summary["density code [nats/example]"].str.fullmatch(r"-?\d+\.\d{3} ± \d+\.\d{3}").all()
    assert summary["LogME [nats/example]"].str.fullmatch(r"[+-]\d+\.\d{2}").all()
    full = result.regression()
    for (_, s), (_, f) in zip(summary.iterrows(), full.iterrows()):  # the same numbers
        assert s["density code [nats/example]"].startswith(f"{f['per example [density nats]']:.3f}")
    plt.close(fig)


def test_a_study_shows_its_stages(monkeypatch, capsys):
    """A bar over the stages where someone watches, one line in batch mode, nothing when
    progress is False."""
    from mdlnb.infra import _progress
    from mdlnb.infra._stages import Stages

    monkeypatch.setattr(_progress, "interactive", lambda: True)
    monkeypatch.setenv(_progress.ENV, "0")  # batch: one summary line
    with Stages(("a", "b", "c"), desc="study", progress=None) as st:
        for name in ("a", "b", "c"):
            st.start(name)
    assert re.fullmatch(r"study: 3/3 stage in [\d.]+ s; c\n", capsys.readouterr().out)
    with Stages(("a",), desc="study", progress=False) as st:
        st.start("a")
    assert capsys.readouterr().out == ""
    monkeypatch.delenv(_progress.ENV)
    seen = []

    class Bar:
        def __init__(self, *a, total=None, desc="", unit="", **k):
            self.n, self.total = 0, total

        def update(self, k=1):
            self.n += k

        def set_postfix_str(self, s, refresh=True):
            seen.append((self.n, s))

        def close(self):
            seen.append(("closed", self.n))

    monkeypatch.setattr(_progress, "tqdm_class", lambda: Bar)
    with Stages(("a", "b"), desc="study", progress=None) as st:
        st.start("a")
        st.start("b")
    assert seen == [(0, "a"), (1, "b"), ("closed", 2)]
