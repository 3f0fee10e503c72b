"""Batched softmax fits (JAX) against the scipy fits they replace, on real features.

The features are the committed ViT-S encoders' on the embedded digits task (random
initialization, supervised, SimCLR, MAE): the few-shot regime of the study, where
the fits are hardest (N ≤ D + 1 at N/K = 2 … 5, near-separable classes).
Agreement is asserted within what the solvers' tolerance implies: J is
(1/β)-strongly convex, so two points whose gradients are below g in every entry
have objectives within ‖g‖²β/2 of the optimum and parameters within β‖g‖ of it.
"""

from __future__ import annotations

import numpy as np
import pytest

from mdlnb.baselines import transfer
from mdlnb.baselines.transfer import _softmax
from mdlnb.baselines.transfer._batched import linear_metrics
from mdlnb.baselines.transfer._softmax_batch import fit_batch

OBJECTIVES = ("random", "supervised", "simclr", "mae")


@pytest.fixture(scope="module")
def digits_features():
    from mdlnb import data
    from mdlnb.encoders import features
    from mdlnb.studies import pretraining

    task = data.load("digits", split="train")
    x = np.stack([features(pretraining.load_encoder(o, "vit", "S"), task).x for o in OBJECTIVES])
    return x, task.y


def _subsample(y, n, seed):
    from mdlnb.data import stratified_indices

    return stratified_indices(y, n, seed)


@pytest.mark.parametrize("n", [20, 50])
def test_fit_batch_matches_scipy_within_the_tolerance(digits_features, n):
    x, y = digits_features
    idx = _subsample(y, n, 0)
    xs, ys = x[:, idx].astype(np.float64), y[idx]
    betas = np.array([0.1 * n, n, 10 * n] * len(xs))
    stack = np.repeat(xs, 3, axis=0)
    got = fit_batch(stack, np.tile(ys, (len(stack), 1)), 10, betas)
    assert got.converged.all() and (got.grad_max <= 1e-8).all()
    d = xs.shape[2] + 1
    for i in range(len(stack)):
        ref = _softmax.fit(stack[i], ys, 10, betas[i])
        g = np.sqrt(d * 10) * 1e-8  # ‖g‖ ≤ √P · gtol
        assert got.loss[i] + got.penalty[i] == pytest.approx(
            ref.loss + ref.penalty, abs=g * g * betas[i] + 1e-12
        )
        assert np.abs(got.params[i] - ref.params).max() <= 2 * betas[i] * g
        assert got.hessian_trace[i] == pytest.approx(
            _softmax.hessian_trace(stack[i], ref.params, True), rel=1e-5
        )


def test_fit_batch_weights_drop_rows_like_a_smaller_problem(digits_features):
    x, y = digits_features
    idx = _subsample(y, 40, 1)
    xs, ys = x[1, idx].astype(np.float64), y[idx]
    keep = np.arange(40) % 2 == 0
    w = keep / keep.sum()
    got = fit_batch(xs[None], ys[None], 10, np.array([20.0]), weight=w[None])
    ref = _softmax.fit(xs[keep], ys[keep], 10, 20.0)
    assert got.loss[0] + got.penalty[0] == pytest.approx(ref.loss + ref.penalty, abs=1e-10)


def test_fit_batch_rejects_bad_input():
    x = np.zeros((2, 5, 3))
    y = np.zeros((2, 5), int)
    with pytest.raises(ValueError, match="x"):
        fit_batch(x[0], y, 2, 1.0)
    with pytest.raises(ValueError, match="y"):
        fit_batch(x, y[:, :4], 2, 1.0)
    with pytest.raises(ValueError, match="y"):
        fit_batch(x, y + 2, 2, 1.0)
    with pytest.raises(ValueError, match="beta"):
        fit_batch(x, y, 2, -1.0)
    with pytest.raises(ValueError, match="weight"):
        fit_batch(x, y, 2, 1.0, weight=np.zeros((2, 5)))
    with pytest.raises(ValueError, match="x"):
        fit_batch(np.full((2, 5, 3), np.nan), y, 2, 1.0)


def test_linear_metrics_match_the_scalar_metrics(digits_features):
    """LINEAR, LINEAR-VALID, PT-Gauss and both grids of a stack of subsamples, against
    :func:`mdlnb.baselines.transfer.linear` & co. one by one (scipy L-BFGS, gtol 1e-8)."""
    x, y = digits_features
    subs = [_subsample(y, 20, s) for s in (0, 1)] + [_subsample(y, 50, 2)]
    for idx in subs:
        xs = x[:, idx]
        ys = np.tile(y[idx], (len(xs), 1))
        seeds = [7, 8, 9, 10]
        got = linear_metrics(xs, ys, num_classes=10, valid_seeds=seeds)
        assert got["converged"]
        for k in range(len(xs)):
            f, yy = xs[k], y[idx]
            assert got["linear"][k] == pytest.approx(
                transfer.linear(f, yy, num_classes=10), abs=1e-9
            )
            # PT-Gauss adds the flatness term, which reads Tr ∇²L̂ at θ*: two fits that
            # meet gtol hold θ* within β‖g‖ of each other, and the trace moves with it
            assert got["pactran_gaussian"][k] == pytest.approx(
                transfer.pactran_gaussian(f, yy, num_classes=10), rel=1e-5
            )
            assert got["linear_valid"][k] == pytest.approx(
                transfer.linear_valid(f, yy, num_classes=10, seed=seeds[k]), rel=1e-5
            )
            grid = transfer.pactran_gaussian_grid(f, yy, num_classes=10)
            for key, v in grid.items():
                assert got["pactran_gaussian_grid"][key][k] == pytest.approx(v, rel=1e-5), key
            for bf in (0.1, 1.0, 10.0):
                assert got["linear_grid"][bf][k] == pytest.approx(
                    transfer.linear(f, yy, num_classes=10, beta_factor=bf), abs=1e-9
                )


def test_linear_metrics_rejects_bad_shapes():
    with pytest.raises(ValueError, match="features"):
        linear_metrics(np.zeros((5, 3)), np.zeros((5,), int), num_classes=2)
    with pytest.raises(ValueError, match="labels"):
        linear_metrics(np.zeros((1, 5, 3)), np.zeros((1, 4), int), num_classes=2)
    with pytest.raises(ValueError, match="valid_seeds"):
        linear_metrics(np.zeros((2, 6, 3)), np.tile([0, 1], (2, 3)), num_classes=2, valid_seeds=[1])
