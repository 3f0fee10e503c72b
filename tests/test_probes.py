"""Accuracy probes (paper App. A.4): extreme tasks, and the grid search
checked against a brute-force loop over configurations."""

import numpy as np
import pytest

import mdlnb
from mdlnb.baselines import probes
from mdlnb.board import readouts

N, C, D = 400, 4, 6
READOUTS = [readouts.linear(), readouts.mlp(1, 16)]
GRID = {"learning_rate": [3e-3, 3e-2], "ema": [1.0, 1e-2]}
KW = dict(steps=150, batch_size=128)


def _task(separable, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, C, N)
    x = (
        (rng.normal(size=(C, D)) * 6.0)[y] + rng.normal(size=(N, D))
        if separable
        else rng.normal(size=(N, D))
    )
    return mdlnb.Task("sep" if separable else "noise", x.astype(np.float32), y, C)


def test_default_grid_is_paper_table_4():
    assert probes.DEFAULT_GRID == {
        "learning_rate": (1e-4, 3e-4, 1e-3, 3e-3),
        "weight_decay": (0.0, 1e-6, 1e-4, 1e-2),
        "ema": (1e-4, 1e-2, 1.0),
    }
    assert len(probes.grid_configs()) == 48


def test_separable_task_is_solved_by_a_linear_probe():
    df = probes.accuracy(_task(True), READOUTS, GRID, **KW).set_index("family")
    assert df.loc["linear", "test_accuracy"] >= 0.98
    assert df.loc["mlp", "test_accuracy"] >= 0.98
    assert df.loc["linear", "val_loss [nats]"] < 0.1
    # split sizes: 20 % test, then 10 % of the rest for validation
    assert (df.loc["linear", "n_test"], df.loc["linear", "n_val"], df.loc["linear", "n_train"]) == (
        80,
        32,
        288,
    )
    assert set(df.loc["mlp", ["readout"]]) == {"mlp1x16"}
    assert df.loc["linear", "configs"] == 4


def test_random_labels_give_chance_accuracy():
    df = probes.accuracy(_task(False), READOUTS, GRID, **KW)
    # 80 test examples: binomial sd of the accuracy around 1/4 is 0.048
    np.testing.assert_allclose(df["test_accuracy"], 1 / C, atol=0.15)
    # and the selected validation loss is no better than a little under log C
    assert np.all(df["val_loss [nats]"] > 0.8 * np.log(C))


def test_selection_matches_a_brute_force_loop():
    task = _task(True, seed=1)
    rest, test = probes.split(task, 0.2, seed=0)
    train, val = probes.split(rest, 0.1, seed=1)
    grid = {"learning_rate": [1e-3, 3e-2], "weight_decay": [0.0, 1e-2]}
    # same shapes as the accuracy tests (4 configs, KW), so the vmapped program is reused
    table = probes.search(train, val, test, READOUTS, grid, seed=3, **KW)
    configs = probes.grid_configs(grid)
    brute = []
    for ro in READOUTS:
        for i, cfg in enumerate(configs):
            r = probes.evaluate_config(ro, cfg, i, train, val, test, seed=3, **KW)
            brute.append((ro.family, ro.name, i, r["val_loss"], r["test_accuracy"]))
    np.testing.assert_allclose(table["val_loss"], [b[3] for b in brute], rtol=2e-4)
    np.testing.assert_allclose(table["test_accuracy"], [b[4] for b in brute], atol=1e-6)
    chosen = probes.select(table).set_index("family")
    for fam in ("linear", "mlp"):
        cands = [b for b in brute if b[0] == fam]
        best = min(cands, key=lambda b: b[3])
        assert chosen.loc[fam, "readout"] == best[1]
        assert chosen.loc[fam, "learning_rate"] == configs[best[2]]["learning_rate"]
        assert chosen.loc[fam, "weight_decay"] == configs[best[2]]["weight_decay"]
        assert chosen.loc[fam, "test_accuracy"] == pytest.approx(best[4], abs=1e-6)
    # the configurations really differ: selection is not a tie-break
    assert table["val_loss"].nunique() == len(table)


def test_split_is_a_partition():
    task = _task(True)
    a, b = probes.split(task, 0.25, seed=5)
    assert (a.n, b.n) == (300, 100)
    rows = {tuple(r) for r in np.concatenate([a.x, b.x])}
    assert len(rows) == N and rows == {tuple(r) for r in task.x}


@pytest.mark.parametrize(
    "kw, name",
    [
        (dict(grid={"lr": [1e-3]}), "grid"),
        (dict(grid={"learning_rate": [0.0]}), "grid"),
        (dict(grid={"ema": [1.5]}), "grid"),
        (dict(grid={"learning_rate": []}), "grid"),
        (dict(readouts=[]), "readouts"),
        (dict(steps=0), "steps"),
        (dict(test="x"), "test"),
        (dict(val_fraction=1.0), "fraction"),
    ],
)
def test_bad_input_names_the_argument(kw, name):
    with pytest.raises(ValueError, match=name):
        probes.accuracy(_task(True), **{"readouts": READOUTS, **kw})


def test_test_split_with_other_dimension_is_rejected():
    other = mdlnb.Task("o", np.zeros((10, D + 1), np.float32), np.arange(10) % C, C)
    with pytest.raises(ValueError, match="test"):
        probes.accuracy(_task(True), READOUTS, GRID, test=other, **KW)
