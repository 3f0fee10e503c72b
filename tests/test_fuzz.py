"""Fuzzed inputs to the public entry points: every call either raises a ValueError
(or TypeError) whose message starts with the name of the offending argument, or
returns a finite, correctly typed result, never another exception.

Inputs: random shapes (N = 0, 1, …; K = 1; D = 0, 1; N < D), dtypes (float16/32/64,
ints, bools, complex, strings), NaN/±inf, negative, huge, non-integer or
out-of-range labels, constant or duplicated features, single-sample classes.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import mdlnb
from mdlnb import readouts
from mdlnb import switching as sw
from mdlnb.experts import Expert

DTYPES = [np.float16, np.float32, np.float64, np.int8, np.int32, np.int64, np.uint8, np.bool_,
          np.complex64]
SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 1e-30, 1e30, 1e300, -1e30, np.nan, np.inf, -np.inf]


def _check_message(err: Exception, args: tuple[str, ...]) -> None:
    """The message names an argument: it starts with ``<arg>:`` (or ``<arg>[...]:``)."""
    msg = str(err)
    head = re.match(r"^([A-Za-z_][\w.]*)", msg)
    assert head and head.group(1).split(".")[0] in args, f"message names no argument: {msg!r}"
    event(f"{type(err).__name__} naming {head.group(1)}")


FINITE = [0.0, 1.0, -1.0, 0.5, 2.0, 1e-30, 1e3, -7.0]
NUMERIC = [np.float16, np.float32, np.float64, np.int8, np.int32, np.int64, np.uint8, np.bool_]


def _array(draw, shape, dtype, *, finite=False):
    kind = np.dtype(dtype).kind
    if kind not in "fc":
        return draw(hnp.arrays(dtype, shape))
    a = draw(hnp.arrays(np.float64, shape, elements=st.sampled_from(FINITE if finite else SPECIAL)))
    with np.errstate(over="ignore", invalid="ignore"):
        return a.astype(dtype)


@st.composite
def feature_arrays(draw, valid: bool, max_n=6):
    """Valid: (N ≥ 1, D ≥ 1) finite numbers, incl. N < D, D = 1, constant or duplicated
    columns. Invalid: any rank, empty, NaN/inf/overflow, complex."""
    if valid:
        shape = (draw(st.integers(1, max_n)), draw(st.integers(1, 4)))
        a = _array(draw, shape, draw(st.sampled_from(NUMERIC)), finite=True)
    else:
        ndim = draw(st.sampled_from([0, 1, 2, 2, 3]))
        shape = tuple(draw(st.integers(0, max_n)) for _ in range(ndim))
        a = _array(draw, shape, draw(st.sampled_from(DTYPES)))
    kind = draw(st.sampled_from(["random", "constant", "duplicated"]))
    if kind == "constant" and a.size:
        a = np.full_like(a, a.flat[0])
    elif kind == "duplicated" and a.ndim == 2 and a.shape[1] >= 1:
        a = np.repeat(a[:, :1], a.shape[1], axis=1)
    return a


@st.composite
def label_arrays(draw, n, valid: bool):
    """Valid: N integer labels in [0, 4) (ints, integral floats or bools; single-sample
    classes common). Invalid: wrong length, negative, huge, non-integer, NaN, 2-D, strings."""
    if valid:
        kind = draw(st.sampled_from(["int", "float", "bool"]))
        if kind == "int":
            return np.asarray(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), np.int64)
        if kind == "float":
            return np.asarray(draw(st.lists(st.sampled_from([0.0, 1.0, 2.0]), min_size=n,
                                            max_size=n)), np.float32)
        return np.asarray(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    kind = draw(st.sampled_from(["length", "neg", "big", "half", "nan", "2d", "str", "empty"]))
    if kind == "length":
        return np.zeros(n + draw(st.sampled_from([-1, 1])), int)
    if kind == "neg":
        return np.asarray(draw(st.lists(st.integers(-3, 1), min_size=n, max_size=n)))
    if kind == "big":
        return np.asarray(draw(st.lists(st.sampled_from([0, 1, 2**40]), min_size=n, max_size=n)))
    if kind == "half":
        return np.asarray(draw(st.lists(st.sampled_from([0.0, 1.0, 0.5, 1.5]), min_size=n,
                                        max_size=n)), np.float64)
    if kind == "nan":
        return np.full(n, np.nan)
    if kind == "2d":
        return np.zeros((n, 2), int)
    if kind == "str":
        return np.asarray(["a"] * n)
    return np.zeros(0, int)


FAULTS = st.sampled_from([None, None, None, "x", "y", "num_classes"])


NUM_CLASSES_OK = st.sampled_from([None, 4, 5])
NUM_CLASSES_BAD = st.sampled_from([1, 0, -2, 2.5, 10**12, "3", True, 2])


FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow],
                derandomize=True)


# --------------------------------------------------------------------- Task.from_arrays


@FUZZ
@given(data=st.data())
def test_task_from_arrays(data):
    fault = data.draw(FAULTS)
    x = data.draw(feature_arrays(valid=fault != "x"))
    y = data.draw(label_arrays(x.shape[0] if x.ndim else 0, valid=fault != "y"))
    c = data.draw(NUM_CLASSES_BAD if fault == "num_classes" else NUM_CLASSES_OK)
    try:
        task = mdlnb.Task.from_arrays(x, y, num_classes=c)
    except (ValueError, TypeError) as e:
        _check_message(e, ("x", "y", "num_classes", "name"))
        assert fault is not None, f"valid input rejected: {e}"
        return
    event("finite result")
    assert isinstance(task, mdlnb.Task)
    assert task.num_classes >= 2 and isinstance(task.num_classes, int)
    assert task.y.dtype.kind == "i" and task.y.min() >= 0 and task.y.max() < task.num_classes
    assert task.n == x.shape[0] >= 1 and task.x.shape == x.shape
    assert np.all(np.isfinite(task.features))


# --------------------------------------------------------------------- switching.codelength


@st.composite
def loss_matrices(draw):
    """Valid: (N ≥ 1, K ≤ 3) losses ≥ 0 with some NaN/+inf (diverged experts) and huge
    values; invalid: other ranks, empty, negative or −inf entries, complex, bools."""
    if draw(st.booleans()):
        shape = (draw(st.integers(1, 6)), draw(st.integers(1, 3)))
        a = np.abs(_array(draw, shape, draw(st.sampled_from([np.float16, np.float32, np.float64]))))
        return a
    ndim = draw(st.sampled_from([0, 1, 2, 2, 3]))
    shape = tuple(draw(st.integers(0, 3)) for _ in range(ndim))
    return _array(draw, shape, draw(st.sampled_from(DTYPES)))


STRATEGY_NAMES = sw.names()


@settings(FUZZ, max_examples=80)
@given(L=loss_matrices(), name=st.sampled_from(STRATEGY_NAMES), posterior=st.booleans())
def test_switching_codelength(L, name, posterior):
    try:
        res = sw.codelength(L, name, posterior=posterior)
    except (ValueError, TypeError) as e:
        _check_message(e, ("losses",))
        return
    event("finite result")
    n, k = L.shape
    assert isinstance(res.total_nats, float) and math.isfinite(res.total_nats)
    assert res.per_step.shape == (n,) and np.all(np.isfinite(res.per_step))
    assert np.all(res.per_step >= -1e-6 * (1 + np.abs(res.per_step)))
    assert res.total_nats == pytest.approx(float(np.sum(res.per_step)), rel=1e-9, abs=1e-9)
    if posterior:
        np.testing.assert_allclose(res.posterior.sum(axis=1), 1.0, atol=1e-4)
    # diverged() lists exactly the columns with a non-finite entry
    with np.errstate(over="ignore"):
        L32 = np.asarray(L, np.float32)                  # what the pass sees: > 3.4e38 is inf
    assert [kk for kk, _ in sw.diverged(L32)] == \
            [kk for kk in range(k) if not np.all(np.isfinite(L32[:, kk]))]


@settings(FUZZ, max_examples=40)
@given(L=loss_matrices(), name=st.sampled_from(STRATEGY_NAMES))
def test_streaming_matches_batch_or_raises_the_same(L, name):
    try:
        want = sw.codelength(L, name, posterior=False).total_nats
    except (ValueError, TypeError) as e:
        _check_message(e, ("losses",))
        want = None
    try:
        stream = sw.streaming(name, L.shape[-1] if L.ndim >= 1 and L.shape[-1] else 1)
        stream.update(L)
        got = stream.total_nats
    except (ValueError, TypeError) as e:
        _check_message(e, ("chunk", "num_experts"))
        assert want is None or L.ndim == 1               # (K,) is one row for a stream
        return
    if want is not None:
        assert got == pytest.approx(want, rel=1e-6, abs=1e-6)


# --------------------------------------------------------------------- evaluate


BOARD = [Expert(readouts.linear(), 1e-2, replay_streams=1)]


@settings(max_examples=15, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_evaluate_tiny_inputs(data):
    """Tiny tasks through both stages (N ≤ 6, D ≤ 3, one linear expert, no cache)."""
    fault = data.draw(st.sampled_from([None, None, None, "x", "y", "batch_size", "seed"]))
    x = data.draw(feature_arrays(valid=fault != "x"))
    y = data.draw(label_arrays(x.shape[0] if x.ndim else 0, valid=fault != "y"))
    batch_size = data.draw(st.sampled_from([0, -1, 2.5, "4"] if fault == "batch_size" else [1, 2, 4]))
    seed = data.draw(st.sampled_from([-1, 2**40, 1.5, "a"] if fault == "seed" else [0, 1, 2**32 - 1]))
    try:
        rep = mdlnb.evaluate((x, y), BOARD, batch_size=batch_size, seed=seed, cache=False,
                             progress=False)
    except (ValueError, TypeError) as e:
        _check_message(e, ("task_or_arrays", "x", "y", "task", "batch_size", "seed",
                           "experts", "num_classes"))
        assert fault is not None, f"valid input rejected: {e}"
        return
    event("finite result")
    assert isinstance(rep, mdlnb.Report)
    assert math.isfinite(rep.total_nats) and rep.total_nats >= 0
    # one expert: the switching code is that expert's prequential code
    assert rep.total_nats == pytest.approx(float(rep.losses.losses.sum(dtype=np.float64)), rel=1e-5)
    assert rep.diverged == []


# --------------------------------------------------------------------- transfer, ranking


@settings(FUZZ, max_examples=60)
@given(data=st.data())
@pytest.mark.parametrize("metric", [
    "hscore", "linear",
    pytest.param("logme", marks=pytest.mark.xfail(
        reason="found by this test: transfer.logme returns NaN on all-zero features "
               "(e.g. x = zeros((2, 1)), y = [0, 1]); mdlnb/transfer/logme.py is owned by "
               "the transfer work", strict=False)),
])
def test_transfer_metrics(data, metric):
    """Feature-based transferability metrics on fuzzed (features, labels)."""
    from mdlnb import transfer

    fault = data.draw(FAULTS)
    x = data.draw(feature_arrays(valid=fault != "x", max_n=8))
    y = data.draw(label_arrays(x.shape[0] if x.ndim else 0, valid=fault != "y"))
    try:
        value = getattr(transfer, metric)(x, y)
    except (ValueError, TypeError) as e:
        _check_message(e, ("features", "labels", "num_classes", "x", "y"))
        return
    event("finite result")
    assert isinstance(value, float) and math.isfinite(value), value


@settings(FUZZ, max_examples=80)
@given(a=hnp.arrays(np.float64, st.integers(0, 6), elements=st.sampled_from(SPECIAL)),
       b=hnp.arrays(np.float64, st.integers(0, 6), elements=st.sampled_from(SPECIAL)))
def test_kendall_tau(a, b):
    from mdlnb import ranking

    try:
        tau = ranking.kendall_tau(a, b)
    except (ValueError, TypeError) as e:
        _check_message(e, ("x", "y"))
        return
    event("result")
    assert isinstance(tau, float) and (math.isnan(tau) or -1.0 <= tau <= 1.0)
