"""Plots draw what they are given (values read back from the artists), run
headless, and the table/figure writers produce exact, atomic files."""

import math

import matplotlib
import numpy as np
import pandas as pd
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from mdlnb.api import (
    output,
    plots,  # noqa: E402
)


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _posterior_frame(n=50, groups=("linear", "mlp1", "mlp2"), seed=0):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(len(groups)), size=n)
    return pd.DataFrame(
        {
            "t": np.repeat(np.arange(n), len(groups)),
            "readout": np.tile(groups, n),
            "probability": p.reshape(-1),
        }
    ), p


def test_posterior_area_stacks_one_area_per_group_to_one():
    frame, p = _posterior_frame()
    ax = plots.posterior_area(frame, by="readout")
    assert len(ax.collections) == 3
    # the legend reads top down as the stack does: the deepest readout first
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["mlp2", "mlp1", "linear"]
    assert ax.get_xscale() == "log" and ax.get_ylim() == (0.0, 1.0)

    # upper edge of area j at t is the cumulative sum p[t, :j+1]: 1 for the last area
    def upper(j, t):
        v = ax.collections[j].get_paths()[0].vertices
        return v[np.isclose(v[:, 0], t), 1].max()

    for t in (1, 10, 49):
        assert upper(2, t) == pytest.approx(1.0, abs=1e-9)
        assert upper(0, t) == pytest.approx(p[t, 0], abs=1e-9)
        assert upper(1, t) == pytest.approx(p[t, 0] + p[t, 1], abs=1e-9)
    first = ax.collections[0].get_paths()[0].vertices
    # t = 0 (the prior) cannot sit on a log axis and is dropped
    assert first[:, 0].min() == 1


def test_posterior_area_subsamples_long_sequences():
    frame, _ = _posterior_frame(n=5000, groups=("a", "b"))
    ax = plots.posterior_area(frame, by="readout", max_points=100, log_x=False)
    xs = np.unique(ax.collections[0].get_paths()[0].vertices[:, 0])
    assert len(xs) <= 100 and xs.min() == 0 and xs.max() == 4999
    with pytest.raises(ValueError, match="frame"):
        plots.posterior_area(frame.drop(columns="probability"))


def test_regret_lines_and_values():
    rng = np.random.default_rng(1)
    base = rng.exponential(size=300)
    a, b = base + 0.01, base - rng.uniform(0, 0.02, 300)
    ax = plots.regret({"a": a, "b": b}, base, baseline_label="expert 0")
    assert len(ax.lines) == 3  # two curves + the zero line
    xa, ya = ax.lines[0].get_xdata(), ax.lines[0].get_ydata()
    assert xa[0] == 1 and xa[-1] == 300
    np.testing.assert_allclose(ya, 0.01 * xa, rtol=1e-9)
    assert ax.lines[1].get_ydata()[-1] == pytest.approx(np.sum(b - base), rel=1e-9)
    ax_bits = plots.regret({"a": a}, base, units="bits")
    assert ax_bits.lines[0].get_ydata()[-1] == pytest.approx(3.0 / math.log(2), rel=1e-9)
    assert "bits" in ax_bits.get_ylabel()
    with pytest.raises(ValueError, match="units"):
        plots.regret({"a": a}, base, units="dits")
    with pytest.raises(ValueError, match="curves"):
        plots.regret({"a": a[:10]}, base)


def test_codelength_bars():
    totals = pd.Series({"mlp1": 300.0, "linear": 500.0, "mlp2": 400.0})
    ax = plots.codelengths(totals, n=100, reference={"switching": 250.0, "uniform": 600.0})
    widths = [p.get_width() for p in ax.patches]
    np.testing.assert_allclose(widths, np.array([300, 400, 500]) / 100 / math.log(2))
    assert [t.get_text() for t in ax.get_yticklabels()] == ["mlp1", "mlp2", "linear"]
    assert len(ax.lines) == 2
    assert ax.lines[0].get_xdata()[0] == pytest.approx(2.5 / math.log(2))


def test_to_markdown_exact():
    df = pd.DataFrame(
        {"expert": ["linear", "mlp|1"], "total [nats]": [1234.56789, 0.5], "N": [10, 20]}
    )
    assert output.to_markdown(df, digits=2) == (
        "| expert | total [nats] | N |\n"
        "|---|---:|---:|\n"
        "| linear | 1,234.57 | 10 |\n"
        "| mlp\\|1 | 0.5 | 20 |\n"
    )


def test_save_table_and_figure(tmp_path):
    df = pd.DataFrame({"a": [1.0, 2.5], "b": ["x", "y"]})
    csv, md = output.save_table(df, "t1", tmp_path / "paper")
    pd.testing.assert_frame_equal(pd.read_csv(csv), df)
    assert md.read_text() == output.to_markdown(df)
    ax = plots.regret({"a": np.ones(5)}, np.zeros(5))
    png = output.save_figure(ax, "fig", tmp_path / "paper")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # nothing but the three artifacts (no temporary files left behind)
    assert sorted(p.name for p in (tmp_path / "paper").iterdir()) == ["fig.png", "t1.csv", "t1.md"]
    with pytest.raises(ValueError, match="name"):
        output.save_table(df, "../escape", tmp_path)
    with pytest.raises(ValueError, match="df"):
        output.save_table({"a": 1}, "t2", tmp_path)
    with pytest.raises(ValueError, match="fig"):
        output.save_figure("not a figure", "f", tmp_path)


def test_regret_overlays_take_new_colours_and_draw_the_baseline_once():
    from matplotlib.colors import to_hex

    rng = np.random.default_rng(0)
    base = rng.exponential(size=30)
    ax = plots.regret({"a": base + 0.1}, base, baseline_label="best")
    plots.regret({"b": base - 0.1, "c": base}, base, baseline_label="best", ax=ax)
    plots.regret({"d": base + 0.2}, base, baseline_label="linear", ax=ax)
    curves = [ln for ln in ax.lines if ln.get_label() in "abcd"]
    assert [ln.get_label() for ln in curves] == ["a", "b", "c", "d"]
    assert len({to_hex(ln.get_color()) for ln in curves}) == 4
    zero = [ln for ln in ax.lines if ln.get_label().startswith("baseline")]
    assert len(zero) == 1 and zero[0].get_label() == "baseline: best / linear"
    assert curves[1].get_ydata()[-1] == pytest.approx(-0.1 * 30)


def test_kendall_figure_counts_encoders_from_the_plotted_table():
    long = pd.DataFrame(
        {
            "metric": ["leep", "logme"],
            "ratio": [2, 2],
            "tau": [0.75, -0.5],
            "ci": [0.1, 0.2],
            "encoders": [2, 3],
        }
    )
    ax = plots.kendall_bars(long, title="smoke (2 tasks)")
    assert ax.get_title() == "smoke (2 tasks), τ over 2–3 encoders"
    assert "error bars: 95 % interval" in ax.get_ylabel()
    ax = plots.kendall_bars(long[long.metric == "logme"])
    assert ax.get_title() == "τ over 3 encoders"


def test_depth_palette_one_ordered_colour_per_depth_everywhere():
    from matplotlib.colors import to_rgb

    pal = plots.depth_palette(["mlp2", "linear", "mlp1", "mlp3"])
    assert list(pal) == ["linear", "mlp1", "mlp2", "mlp3"]  # shallow to deep
    assert [pal[r] for r in pal] == list(plots.DEPTH_COLORS[:4])
    assert plots.depth_palette(["mlp2x64"])["mlp2x64"] == plots.DEPTH_COLORS[2]  # same depth
    two = plots.depth_palette(["mlp1", "mlp1x64"])
    assert two["mlp1"] == plots.DEPTH_COLORS[1] and two["mlp1x64"] != two["mlp1"]
    # neighbours in depth are far apart in colour (the old palette's mlp1 and mlp2 were not)
    rgb = np.array([to_rgb(c) for c in plots.DEPTH_COLORS])
    assert np.min(np.linalg.norm(np.diff(rgb, axis=0), axis=1)) > 0.15
    lum = rgb @ [0.299, 0.587, 0.114]
    assert np.all(np.diff(lum[1:]) > 0)  # deeper is lighter
    assert plots.readout_depth("mlp7x256") == 7 and plots.readout_depth("knn") is None


def test_posterior_area_colours_readouts_by_depth():
    frame, _ = _posterior_frame(groups=("mlp1", "linear", "mlp3", "mlp2"))
    ax = plots.posterior_area(frame, by="readout")
    from matplotlib.colors import to_hex

    drawn = [to_hex(c.get_facecolor()[0]) for c in ax.collections]
    assert drawn == list(plots.DEPTH_COLORS[:4])  # linear at the bottom


def test_loss_data_figure_keys_its_band_hatching_and_dotted_lines():
    from mdlnb.baselines import curves

    n = np.array([2, 4, 8, 16, 32])  # the parity toy's shapes, by hand
    a = curves.LossDataCurve(
        sizes=n,
        loss=np.array(
            [
                [0.36, 0.35, 0.34, 0.34, 0.33],
                [0.38, 0.36, 0.35, 0.34, 0.34],
                [0.35, 0.35, 0.33, 0.33, 0.33],
            ]
        ),
        accuracy=np.full((3, 5), 0.9),
        seeds=(0, 1, 2),
        representation="A",
    )
    b = curves.LossDataCurve(
        sizes=n,
        loss=np.array(
            [[0.7, 0.6, 0.05, 0.0, 0.0], [0.69, 0.65, 0.1, 0.0, 0.0], [0.7, 0.5, 0.0, 0.0, 0.0]]
        ),
        accuracy=np.full((3, 5), 0.9),
        seeds=(0, 1, 2),
        representation="B",
    )
    ax = curves.plot([a, b], 0.2, va_at=4)
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert texts[:2] == ["A", "B"]
    assert "band: ±1 sd over 3 seeds" in texts
    assert "hatched: SDL, the area above ε" in texts
    assert "dotted: εSC, first n with loss ≤ ε" in texts
    hatch = [h for h in ax.get_legend().legend_handles if h.get_label().startswith("hatched")]
    assert hatch[0].get_hatch() == "//"
    dotted = [h for h in ax.get_legend().legend_handles if h.get_label().startswith("dotted")]
    assert dotted[0].get_linestyle() == ":"
