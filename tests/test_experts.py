"""Experts and grids: names, paper grid sizes, order, validation."""

import json

import pytest

import mdlnb
from mdlnb.board import experts, readouts
from mdlnb.board.experts import Expert


def test_name_format():
    e = Expert(readouts.mlp(2), learning_rate=3e-4, weight_decay=1e-4, ema=1e-2, replay_streams=10)
    assert e.name == "mlp2-lr3e-4-wd1e-4-ema1e-2-r10"
    e2 = Expert(
        readouts.linear(),
        1e-3,
        b1=0.5,
        weight_decay=0.0,
        ema=1.0,
        label_smoothing=0.1,
        replay_streams=3,
    )
    assert e2.name == "linear-lr1e-3-b1_0.5-wd0-ema1-ls0.1-r3"
    assert Expert(readouts.mlp(1, 512), 1.0).name == "mlp1x512-lr1-wd0-ema1-r10"


def test_config_roundtrip_and_json():
    e = Expert(
        readouts.mlp(3, 64),
        1e-3,
        b1=0.7,
        weight_decay=1e-6,
        ema=1e-4,
        label_smoothing=0.01,
        replay_streams=30,
    )
    cfg = json.loads(json.dumps(e.config()))
    assert Expert.from_config(cfg) == e
    assert cfg["readout_hidden_layers"] == 3 and cfg["learning_rate"] == 1e-3


def test_grid_cross_product_order():
    g = mdlnb.expert_grid(
        [readouts.linear(), readouts.mlp(1)],
        learning_rate=[1e-3, 1e-2],
        ema=[1.0, 0.1],
        replay_streams=5,
    )
    assert len(g) == 8
    assert [(e.readout.name, e.learning_rate, e.ema) for e in g[:4]] == [
        ("linear", 1e-3, 1.0),
        ("linear", 1e-3, 0.1),
        ("linear", 1e-2, 1.0),
        ("linear", 1e-2, 0.1),
    ]
    assert g[4].readout.name == "mlp1"
    assert all(e.replay_streams == 5 for e in g)


@pytest.mark.parametrize(
    "name, k",
    [
        ("vtab", 8 * 4 * 4 * 3 * 4 * 3),
        ("imagenet", 4 * 3 * 4 * 2 * 2 * 2),
        ("default", 4 * 5 * 2),
        ("deep", 5 * 5 * 2),
        ("small", 4),
    ],
)
def test_presets(name, k):
    g = experts.preset(name)
    assert len(g) == k
    assert len({e.name for e in g}) == k
    assert name in experts.PRESETS


def test_default_preset_learning_rates_bracket_the_measured_optimum():
    """The default grid was widened (issue 15): on the measured tasks the best
    learning rate was 1e-3 … 1e-2, so the grid must reach past both sides."""
    g = experts.preset("default")
    assert sorted({e.learning_rate for e in g}) == [3e-4, 1e-3, 3e-3, 1e-2, 3e-2]
    assert sorted({e.ema for e in g}) == [1e-2, 1.0]
    assert sorted({e.readout.name for e in g}) == ["linear", "mlp1", "mlp2", "mlp3"]


def test_deep_preset_is_default_to_four_hidden_layers():
    deep, default = experts.preset("deep"), experts.preset("default")
    assert sorted({e.readout.name for e in deep}) == ["linear", "mlp1", "mlp2", "mlp3", "mlp4"]
    assert {e.name for e in default} < {e.name for e in deep}
    assert {e.readout.width for e in deep if e.readout.name == "mlp4"} == {256}


def test_vtab_preset_is_table6():
    g = experts.preset("vtab")
    assert sorted({e.replay_streams for e in g}) == [3, 10, 30, 100]
    assert sorted({e.learning_rate for e in g}) == [1e-4, 3e-4, 1e-3, 3e-3]
    assert sorted({e.b1 for e in g}) == [0.5, 0.7, 0.9]
    assert sorted({e.weight_decay for e in g}) == [0.0, 1e-6, 1e-4, 1e-2]
    assert sorted({e.ema for e in g}) == [1e-4, 1e-2, 1.0]
    assert sorted({e.readout.hidden_layers for e in g}) == list(range(8))
    im = experts.preset("imagenet")
    assert sorted({e.weight_decay for e in im}) == [1e-2, 1.0]
    assert sorted({e.readout.name for e in im}) == ["linear", "mlp1", "mlp2", "mlp3"]
    assert 8 >= len(experts.preset("small"))
    assert 16 <= len(experts.preset("default")) <= 40  # CPU-sized


@pytest.mark.parametrize(
    "kwargs, arg",
    [
        (dict(learning_rate=0.0), "learning_rate"),
        (dict(learning_rate=float("nan")), "learning_rate"),
        (dict(learning_rate=1e-3, b1=1.0), "b1"),
        (dict(learning_rate=1e-3, weight_decay=-1.0), "weight_decay"),
        (dict(learning_rate=1e-3, ema=0.0), "ema"),
        (dict(learning_rate=1e-3, ema=1.5), "ema"),
        (dict(learning_rate=1e-3, label_smoothing=1.0), "label_smoothing"),
        (dict(learning_rate=1e-3, replay_streams=-1), "replay_streams"),
        (dict(learning_rate=1e-3, replay_streams=2.5), "replay_streams"),
    ],
)
def test_expert_validation(kwargs, arg):
    with pytest.raises(ValueError, match=arg):
        Expert(readouts.linear(), **kwargs)


def test_grid_validation():
    with pytest.raises(ValueError, match="learning_rate"):
        experts.expert_grid([readouts.linear()], learning_rate=[])
    with pytest.raises(ValueError, match="readouts"):
        experts.expert_grid([])
    with pytest.raises(ValueError, match="readouts"):
        experts.expert_grid(["linear"])
    with pytest.raises(ValueError, match="repeats"):
        experts.expert_grid([readouts.linear()], learning_rate=[1e-3, 1e-3])
    with pytest.raises(ValueError, match="name"):
        experts.preset("huge")
