"""Block-wise MDL (Voita & Titov 2020): exact edge cases, units, and a plain
scikit-learn re-computation of the per-block codes."""

import math

import numpy as np
import pytest

import mdlnb
from mdlnb.baselines.blockwise import VOITA_FRACTIONS, blockwise, default_boundaries
from mdlnb.board import readouts
from mdlnb.board.experts import Expert


def _blobs(n, c, d, sep, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(c, d)) * sep
    y = rng.integers(0, c, size=n)
    x = centers[y] + rng.normal(size=(n, d))
    return mdlnb.Task(f"blobs{sep}", x.astype(np.float32), y, num_classes=c)


LINEAR = Expert(readouts.linear(), learning_rate=0.05)


def test_default_boundaries_double_like_voita_titov():
    b = default_boundaries(10_000)
    np.testing.assert_array_equal(b, [10, 20, 40, 80, 160, 320, 625, 1250, 2500, 5000, 10_000])
    assert VOITA_FRACTIONS[-1] == 1.0
    # Tiny N: at least one example per block, no duplicates, ends at N.
    np.testing.assert_array_equal(default_boundaries(50), [1, 3, 6, 12, 25, 50])


def test_one_block_is_the_uniform_code_exactly():
    task = _blobs(300, 7, 3, sep=5.0)
    r = blockwise(task, LINEAR, boundaries=[300])
    assert r.total_nats == 300 * math.log(7)
    assert r.total_bits == pytest.approx(300 * math.log2(7), rel=1e-12)
    assert r.best_epoch.tolist() == [0]


def test_units_and_bookkeeping():
    task = _blobs(200, 4, 3, sep=4.0)
    r = blockwise(task, LINEAR, boundaries=[20, 60, 120], epochs=5, min_steps=50)
    np.testing.assert_array_equal(r.boundaries, [20, 60, 120, 200])  # N appended
    np.testing.assert_array_equal(r.block_sizes, [20, 40, 60, 80])
    assert r.block_nats[0] == 20 * math.log(4)  # nats, not bits
    assert r.total_nats == pytest.approx(float(np.sum(r.block_nats)), rel=1e-12)
    assert r.total_bits == pytest.approx(r.total_nats / math.log(2), rel=1e-12)
    assert r.bits_per_example == pytest.approx(r.total_bits / 200, rel=1e-12)
    assert r.uniform_nats == pytest.approx(200 * math.log(4), rel=1e-12)
    df = r.to_frame()
    np.testing.assert_allclose(
        df["per example [bits]"] * math.log(2) * df["size"], r.block_nats, rtol=1e-12
    )


def test_separable_task_codes_far_below_uniform():
    task = _blobs(600, 5, 4, sep=8.0)
    r = blockwise(task, LINEAR, epochs=20, min_steps=400)
    # Everything but the first few tiny blocks is coded almost for free.
    assert r.nats_per_example < 0.15 * math.log(5)
    assert r.total_nats < 0.15 * r.uniform_nats


def test_matches_sklearn_logistic_regression_per_block():
    """Full-batch AdamW to convergence on an unregularized linear readout is
    maximum likelihood, so each block's code equals the log-loss of a
    scikit-learn multinomial logistic regression fit on the previous blocks."""
    from sklearn.linear_model import LogisticRegression

    task = _blobs(600, 3, 2, sep=1.2, seed=3)
    bounds = [100, 200, 400, 600]
    r = blockwise(
        task,
        LINEAR,
        boundaries=bounds,
        batch_size=None,
        holdout=0.0,
        epochs=10,
        min_steps=3000,
        seed=1,
    )
    x, y = task.features[r.order].astype(np.float64), task.y[r.order]
    expected = [100 * math.log(3)]
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        clf = LogisticRegression(C=np.inf, tol=1e-10, max_iter=10_000).fit(x[:lo], y[:lo])
        logp = clf.predict_log_proba(x[lo:hi])
        expected.append(-float(np.sum(logp[np.arange(hi - lo), y[lo:hi]])))
    np.testing.assert_allclose(r.block_nats, expected, rtol=5e-3)


def test_early_stopping_protects_against_overfitting_random_labels():
    rng = np.random.default_rng(0)
    task = mdlnb.Task(
        "noise",
        rng.normal(size=(400, 20)).astype(np.float32),
        rng.integers(0, 4, 400),
        num_classes=4,
    )
    big = Expert(readouts.mlp(1, 64), learning_rate=3e-3)
    kw = dict(boundaries=[50, 100, 200, 400], epochs=10, min_steps=200)
    stopped = blockwise(task, big, holdout=0.2, **kw)
    overfit = blockwise(task, big, holdout=0.0, **kw)
    assert overfit.total_nats > 1.2 * stopped.total_nats
    assert stopped.total_nats < 1.15 * stopped.uniform_nats
    assert np.all(stopped.best_epoch[1:] < 10)  # an early epoch was chosen


def test_order_argument_and_determinism():
    task = _blobs(200, 4, 3, sep=4.0)
    kw = dict(boundaries=[20, 60, 120], epochs=5, min_steps=50, seed=4)
    a = blockwise(task, LINEAR, **kw)
    b = blockwise(task, LINEAR, order=a.order, **kw)
    np.testing.assert_array_equal(a.block_nats, b.block_nats)
    c = blockwise(task, LINEAR, order=a.order[::-1], **kw)  # another sequence, another code
    assert c.total_nats != a.total_nats


@pytest.mark.parametrize(
    "kw, name",
    [
        (dict(boundaries=[50, 40]), "boundaries"),
        (dict(boundaries=[0, 40]), "boundaries"),
        (dict(boundaries=[10, 500]), "boundaries"),
        (dict(boundaries=[10.5]), "boundaries"),
        (dict(epochs=0), "epochs"),
        (dict(batch_size=0), "batch_size"),
        (dict(holdout=1.0), "holdout"),
        (dict(order=np.zeros(100, int)), "order"),
    ],
)
def test_bad_input_names_the_argument(kw, name):
    task = _blobs(100, 3, 2, sep=1.0)
    with pytest.raises(ValueError, match=name):
        blockwise(task, LINEAR, **kw)


def test_bad_expert_and_task():
    task = _blobs(100, 3, 2, sep=1.0)
    with pytest.raises(ValueError, match="expert"):
        blockwise(task, "linear")
    with pytest.raises(ValueError, match="task"):
        blockwise((task.x, task.y), LINEAR)
