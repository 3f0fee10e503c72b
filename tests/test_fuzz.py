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
from mdlnb import switching as sw
from mdlnb.board import readouts
from mdlnb.board.experts import Expert

DTYPES = [
    np.float16,
    np.float32,
    np.float64,
    np.int8,
    np.int32,
    np.int64,
    np.uint8,
    np.bool_,
    np.complex64,
]
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
            return np.asarray(
                draw(st.lists(st.sampled_from([0.0, 1.0, 2.0]), min_size=n, max_size=n)), np.float32
            )
        return np.asarray(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    kind = draw(st.sampled_from(["length", "neg", "big", "half", "nan", "2d", "str", "empty"]))
    if kind == "length":
        return np.zeros(n + draw(st.sampled_from([-1, 1])), int)
    if kind == "neg":
        return np.asarray(draw(st.lists(st.integers(-3, 1), min_size=n, max_size=n)))
    if kind == "big":
        return np.asarray(draw(st.lists(st.sampled_from([0, 1, 2**40]), min_size=n, max_size=n)))
    if kind == "half":
        return np.asarray(
            draw(st.lists(st.sampled_from([0.0, 1.0, 0.5, 1.5]), min_size=n, max_size=n)),
            np.float64,
        )
    if kind == "nan":
        return np.full(n, np.nan)
    if kind == "2d":
        return np.zeros((n, 2), int)
    if kind == "str":
        return np.asarray(["a"] * n)
    return np.zeros(0, int)


FAULTS = st.sampled_from([None, None, None, "x", "y", "num_classes"])


NUM_CLASSES_OK = st.sampled_from([None, 4, 5])
NUM_CLASSES_BAD = st.sampled_from([1, 0, -2, 2.5, 10**12, "3", True, 2, np.nan, np.inf, 4.0])


FUZZ = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)


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
    assert res.per_step_nats.shape == (n,) and np.all(np.isfinite(res.per_step_nats))
    assert np.all(res.per_step_nats >= -1e-6 * (1 + np.abs(res.per_step_nats)))
    assert res.total_nats == pytest.approx(float(np.sum(res.per_step_nats)), rel=1e-9, abs=1e-9)
    if posterior:
        np.testing.assert_allclose(res.posterior.sum(axis=1), 1.0, atol=1e-4)
    # diverged() lists exactly the columns with a non-finite entry
    with np.errstate(over="ignore"):
        L32 = np.asarray(L, np.float32)  # what the pass sees: > 3.4e38 is inf
    assert [kk for kk, _ in sw.diverged(L32)] == [
        kk for kk in range(k) if not np.all(np.isfinite(L32[:, kk]))
    ]


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
        assert want is None or L.ndim == 1  # (K,) is one row for a stream
        return
    if want is not None:
        assert got == pytest.approx(want, rel=1e-6, abs=1e-6)


# --------------------------------------------------------------------- evaluate


BOARD = [Expert(readouts.linear(), 1e-2, replay_streams=1)]


@settings(
    max_examples=15, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(data=st.data())
def test_evaluate_tiny_inputs(data):
    """Tiny tasks through both stages (N ≤ 6, D ≤ 3, one linear expert, no cache)."""
    fault = data.draw(st.sampled_from([None, None, None, "x", "y", "batch_size", "seed"]))
    x = data.draw(feature_arrays(valid=fault != "x"))
    y = data.draw(label_arrays(x.shape[0] if x.ndim else 0, valid=fault != "y"))
    batch_size = data.draw(
        st.sampled_from([0, -1, 2.5, "4"] if fault == "batch_size" else [1, 2, 4])
    )
    seed = data.draw(
        st.sampled_from([-1, 2**40, 1.5, "a"] if fault == "seed" else [0, 1, 2**32 - 1])
    )
    try:
        rep = mdlnb.evaluate(
            (x, y), experts=BOARD, batch_size=batch_size, seed=seed, cache=False, progress=False
        )
    except (ValueError, TypeError) as e:
        _check_message(
            e, ("task_or_arrays", "x", "y", "task", "batch_size", "seed", "experts", "num_classes")
        )
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
@pytest.mark.parametrize("metric", ["hscore", "linear", "logme"])
def test_transfer_metrics(data, metric):
    """Feature-based transferability metrics on fuzzed (features, labels)."""
    from mdlnb.baselines import transfer

    fault = data.draw(FAULTS)
    x = data.draw(feature_arrays(valid=fault != "x", max_n=8))
    y = data.draw(label_arrays(x.shape[0] if x.ndim else 0, valid=fault != "y"))
    try:
        value = getattr(transfer, metric)(x, y)
    except (ValueError, TypeError) as e:
        _check_message(e, ("features", "labels", "num_classes", "x", "y"))
        return
    assert isinstance(value, float) and not math.isnan(value), value
    if metric == "logme" and value == math.inf:
        # unbounded evidence: some class's one-hot column is fit exactly by
        # features of rank < N (checked here by least squares, in float64)
        event("logme +inf (a class fit exactly)")
        f = np.asarray(x, np.float64)
        assert np.linalg.matrix_rank(f) < len(f)
        yy = np.asarray(y)
        res = [
            np.sum((f @ np.linalg.lstsq(f, (yy == k) * 1.0, rcond=None)[0] - (yy == k)) ** 2)
            for k in np.unique(yy)
        ]
        assert min(res) < 1e-9, res
        return
    event("finite result")
    assert math.isfinite(value), value


@settings(FUZZ, max_examples=80)
@given(
    a=hnp.arrays(np.float64, st.integers(0, 6), elements=st.sampled_from(SPECIAL)),
    b=hnp.arrays(np.float64, st.integers(0, 6), elements=st.sampled_from(SPECIAL)),
)
def test_kendall_tau(a, b):
    from mdlnb.research import ranking

    try:
        tau = ranking.kendall_tau(a, b)
    except (ValueError, TypeError) as e:
        _check_message(e, ("x", "y"))
        return
    event("result")
    assert isinstance(tau, float) and (math.isnan(tau) or -1.0 <= tau <= 1.0)


# --------------------------------------------------------------------- labelfree


def _finite_float(value) -> None:
    assert isinstance(value, float) and math.isfinite(value), value
    event("finite result")


LABELFREE = {
    "twonn_id": (lambda x, y: mdlnb.baselines.labelfree.twonn_id(x), ("z",)),
    "twonn_id_mle": (
        lambda x, y: mdlnb.baselines.labelfree.twonn_id(x, estimator="mle", discard_fraction=0.0),
        ("z",),
    ),
    "cluster_learnability": (
        lambda x, y: mdlnb.baselines.labelfree.cluster_learnability(x, 0, n_init=2, max_iter=10),
        ("z",),
    ),
    "uniformity": (lambda x, y: mdlnb.baselines.labelfree.uniformity(x), ("z",)),
    "alignment": (
        lambda x, y: mdlnb.baselines.labelfree.alignment(x, x[::-1] if x.ndim else x),
        ("z1", "z2"),
    ),
    "coding_rate_reduction": (
        lambda x, y: mdlnb.baselines.labelfree.coding_rate_reduction(x, y),
        ("z", "labels"),
    ),
    "coding_rate_reduction_kmeans": (
        lambda x, y: mdlnb.baselines.labelfree.coding_rate_reduction(x, key=0),
        ("z",),
    ),
    "rankme": (lambda x, y: mdlnb.baselines.labelfree.rankme(x), ("z",)),
}


@settings(FUZZ, max_examples=25)
@given(data=st.data())
@pytest.mark.parametrize("fn", sorted(LABELFREE))
def test_labelfree_metrics(data, fn):
    """Label-free metrics on fuzzed features (and labels for ΔR). The k-means based
    ones compile once per shape: fewer examples there (see the cheap ones' count)."""
    call, args = LABELFREE[fn]
    if (
        fn in ("cluster_learnability", "coding_rate_reduction_kmeans")
        and data.draw(st.integers(0, 5)) != 0
    ):
        return
    fault = data.draw(st.sampled_from([None, None, "x", "y"]))
    x = data.draw(feature_arrays(valid=fault != "x", max_n=8))
    y = data.draw(label_arrays(x.shape[0] if x.ndim else 0, valid=fault != "y"))
    try:
        value = call(x, y)
    except (ValueError, TypeError) as e:
        _check_message(e, args)
        return
    _finite_float(value)
    if fn.startswith("rankme"):
        assert 1.0 - 1e-3 <= value <= min(x.shape) + 1e-3
    if fn == "cluster_learnability":
        assert 0.0 <= value <= 1.0
    if fn.startswith("coding_rate_reduction"):
        assert value >= -1e-9


@settings(FUZZ, max_examples=60)
@given(
    a=hnp.arrays(np.float64, st.integers(0, 5), elements=st.sampled_from(SPECIAL)),
    b=hnp.arrays(np.float64, st.integers(0, 5), elements=st.sampled_from(SPECIAL)),
)
def test_clid(a, b):
    try:
        s = mdlnb.baselines.labelfree.clid(a, b)
    except (ValueError, TypeError) as e:
        _check_message(e, ("cl", "intrinsic_dim"))
        return
    event("finite result")
    assert s.shape == a.shape and np.all(np.isfinite(s)) and np.all((s >= 0) & (s <= 2))


# --------------------------------------------------------------------- ranking


@st.composite
def score_tables(draw):
    """Valid: (n ≥ 1 datasets, k ≥ 2 methods) finite scores with ties; invalid: other
    shapes, NaN/inf, one method, empty."""
    if draw(st.booleans()):
        shape = (draw(st.integers(1, 5)), draw(st.integers(2, 5)))
        return _array(draw, shape, draw(st.sampled_from(NUMERIC)), finite=True)
    ndim = draw(st.sampled_from([0, 1, 2, 2, 3]))
    shape = tuple(draw(st.integers(0, 4)) for _ in range(ndim))
    return _array(draw, shape, draw(st.sampled_from(DTYPES)))


@settings(FUZZ, max_examples=80)
@given(scores=score_tables(), hib=st.booleans(), tie=st.booleans())
def test_ranking_average_ranks_and_friedman(scores, hib, tie):
    from mdlnb.research import ranking

    try:
        r = ranking.average_ranks(scores, higher_is_better=hib)
    except (ValueError, TypeError) as e:
        _check_message(e, ("scores",))
        return
    n, k = scores.shape
    assert np.all(np.isfinite(r)) and float(r.sum()) == pytest.approx(k * (k + 1) / 2)
    try:
        f = ranking.friedman(scores, tie_correction=tie)
    except (ValueError, TypeError) as e:
        _check_message(e, ("scores",))
        assert tie, e  # only the tie correction may refuse
        return
    event("finite result")
    assert isinstance(f.statistic, float) and math.isfinite(f.statistic) and f.statistic >= -1e-9
    assert 0.0 <= f.pvalue <= 1.0
    assert not math.isnan(f.iman_davenport) and (
        math.isnan(f.iman_davenport_pvalue) or 0.0 <= f.iman_davenport_pvalue <= 1.0
    )


@settings(FUZZ, max_examples=60)
@given(
    k=st.sampled_from([2, 3, 10, 1, 0, -1, 2.5, np.nan, np.inf, "3", None]),
    n=st.sampled_from([1, 5, 0, -2, 1.5, np.nan, np.inf, "4", None]),
    alpha=st.sampled_from([0.05, 0.1, 0.0, 1.0, -0.1, np.nan, "x"]),
)
def test_nemenyi_cd(k, n, alpha):
    from mdlnb.research import ranking

    try:
        cd = ranking.nemenyi_cd(k, n, alpha)
    except (ValueError, TypeError) as e:
        _check_message(e, ("k", "n", "alpha"))
        return
    _finite_float(cd)
    assert cd > 0


@settings(FUZZ, max_examples=60)
@given(data=st.data())
def test_rank_product(data):
    from mdlnb.research import ranking

    m = data.draw(st.integers(0, 3))
    n = data.draw(st.integers(0, 5))
    scores = [
        data.draw(
            hnp.arrays(
                np.float64,
                n + data.draw(st.sampled_from([0, 0, 0, 1])),
                elements=st.sampled_from(SPECIAL),
            )
        )
        for _ in range(m)
    ]
    hib = data.draw(st.sampled_from([True, False, [True] * m, [False] * (m + 1)]))
    try:
        rp = ranking.rank_product(scores, higher_is_better=hib)
    except (ValueError, TypeError) as e:
        _check_message(e, ("scores", "higher_is_better"))
        return
    event("finite result")
    n = len(scores[0])
    assert rp.shape == (n,) and np.all(np.isfinite(rp)) and np.all((rp >= 1) & (rp <= n))


# --------------------------------------------------------------------- curves measures


@st.composite
def curve_points(draw):
    """Valid: increasing positive integer sizes with finite losses ≥ 0 (1-D or per-seed
    2-D); invalid: unsorted/duplicate/zero/fractional sizes, NaN/inf/negative losses,
    length mismatch, empty."""
    s = draw(st.integers(0, 5))
    sizes = np.cumsum(draw(st.lists(st.integers(1, 50), min_size=s, max_size=s))).astype(
        draw(st.sampled_from([np.int64, np.int32, np.float64]))
    )
    loss = np.abs(
        _array(
            draw,
            (draw(st.sampled_from([1, 2])), s),
            draw(st.sampled_from([np.float16, np.float32, np.float64])),
            finite=True,
        )
    )
    loss = loss[0] if draw(st.booleans()) else loss
    fault = draw(st.sampled_from([None, None, "n", "loss", "len", "type"]))
    if fault == "n" and s:
        sizes = sizes.astype(np.float64)
        sizes[draw(st.integers(0, s - 1))] = draw(
            st.sampled_from([0.0, -1.0, 1.5, np.nan, np.inf, sizes[0]])
        )
    elif fault == "loss" and s:
        loss = np.array(loss, np.float64)
        loss.flat[0] = draw(st.sampled_from([np.nan, np.inf, -1.0]))
    elif fault == "len":
        loss = loss[..., :-1] if s else np.zeros(1)
    elif fault == "type":
        return draw(st.sampled_from([None, 3.0, "curve", (sizes,), (sizes, loss, None)]))
    return (sizes, loss)


@settings(FUZZ, max_examples=80)
@given(
    curve=curve_points(),
    measure=st.sampled_from(["va", "mi", "mdl", "sdl", "esc"]),
    c=st.sampled_from([2, 10, None, 1, 2.5, True]),
    eps=st.sampled_from([0.1, 1.0, 0.0, -1.0, np.nan, np.inf, "0.1", None]),
    at=st.sampled_from([None, None, 1, 40, 10**6, 0, -3, 2.5]),
)
def test_curve_measures(curve, measure, c, eps, at):
    from mdlnb.baselines import curves

    calls = {
        "va": lambda: curves.va(curve, at),
        "mi": lambda: curves.mi(curve),
        "mdl": lambda: curves.mdl(curve, c, n=at),
        "sdl": lambda: curves.sdl(curve, eps, num_classes=c),
        "esc": lambda: curves.esc(curve, eps),
    }
    try:
        res = calls[measure]()
    except (ValueError, TypeError) as e:
        _check_message(e, ("curve", "n", "num_classes", "eps"))
        return
    event("finite result")
    sizes = np.asarray(curve[0])
    if measure == "esc":
        assert res.n_max == int(sizes[-1]) and (res.n is None or res.n in sizes.astype(int))
        return
    assert isinstance(res.value, float) and math.isfinite(res.value) and res.value >= 0
    if measure == "mdl":  # ≤ n · max(log C, max loss)
        m = int(sizes[-1]) if at is None else at
        bound = m * max(math.log(c), float(np.max(np.asarray(curve[1], np.float64))))
        assert res.value <= bound * (1 + 1e-9) + 1e-9


@pytest.mark.parametrize(
    "k, n, alpha, arg",
    [
        (np.nan, 5, 0.05, "k"),
        (np.inf, 5, 0.05, "k"),
        ("3", 5, 0.05, "k"),
        (None, 5, 0.05, "k"),
        (3, np.nan, 0.05, "n"),
        (3, np.inf, 0.05, "n"),
        (3, "4", 0.05, "n"),
        (3, None, 0.05, "n"),
        (True, 5, 0.05, "k"),
        (3, 5, "x", "alpha"),
        (3, 5, np.nan, "alpha"),
    ],
)
def test_nemenyi_cd_regressions(k, n, alpha, arg):
    """Found by test_nemenyi_cd: NaN/inf/str/None counts raised a raw
    'cannot convert float NaN to integer', OverflowError or TypeError."""
    from mdlnb.research import ranking

    with pytest.raises(ValueError, match=rf"^{arg}:"):
        ranking.nemenyi_cd(k, n, alpha)
    # integral floats are counts; the value is q_α √(k(k+1)/(6n)) with Demšar's q_0.05(3) = 2.343
    assert ranking.nemenyi_cd(3.0, 6.0) == pytest.approx(2.343 * math.sqrt(3 * 4 / 36), abs=1e-3)


# --------------------------------------------------------------------- data loaders


@settings(FUZZ, max_examples=40)
@given(data=st.data())
def test_task_from_npz_agrees_with_from_arrays(data):
    """A Task read back from an .npz of fuzzed arrays is the Task (or the error) that
    from_arrays gives on the same arrays."""
    import os
    import tempfile

    fault = data.draw(FAULTS)
    x = data.draw(feature_arrays(valid=fault != "x"))
    y = data.draw(label_arrays(x.shape[0] if x.ndim else 0, valid=fault != "y"))
    try:
        want = mdlnb.Task.from_arrays(x, y, name="t")
    except (ValueError, TypeError) as e:
        _check_message(e, ("x", "y", "num_classes", "name"))
        want = None
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.npz")
        np.savez(path, x=x, y=y)
        try:
            got = mdlnb.Task.from_npz(path)
        except (ValueError, TypeError) as e:
            _check_message(e, ("x", "y", "num_classes", "name", "path"))
            assert want is None, f"from_npz rejects what from_arrays accepts: {e}"
            return
    assert want is not None
    event("finite result")
    np.testing.assert_array_equal(got.y, want.y)
    np.testing.assert_array_equal(got.features, want.features)
    assert got.num_classes == want.num_classes


# --------------------------------------------------------------------- notebooks


@pytest.mark.parametrize(
    "overrides, field",
    [
        (dict(tasks=["no_such_task"]), "tasks"),
        (dict(encoders=["nope:x"]), "encoders"),
        (dict(train_size=-3), "train_size"),
        (dict(protocol="no_such_protocol"), "protocol"),
        (dict(bogus=1), "bogus"),
    ],
)
def test_notebook_invalid_parameter_fails_before_running(tmp_path, overrides, field):
    """A notebook run with an invalid override (unknown task, encoder or protocol,
    negative size, unknown field) is refused before papermill starts a kernel, with a
    ValueError naming the parameters, the notebook and the field; nothing is written."""
    from mdlnb.tools import runner

    with pytest.raises(ValueError, match=rf"^parameters: scaling\.smoke: .*{field}") as err:
        runner.run("scaling", "smoke", out_dir=tmp_path, parameters={"overrides": overrides})
    assert repr(next(iter(overrides.values()))).strip("[]") in str(err.value) or field == "bogus"
    with pytest.raises(ValueError, match=r"^parameters: scaling\.smoke sets \['alhpa'\]"):
        runner.run("scaling", "smoke", out_dir=tmp_path, parameters={"alhpa": 0.1})
    with pytest.raises(ValueError, match=r"^profile: "):
        runner.run("scaling", "quick", out_dir=tmp_path)
    with pytest.raises(ValueError, match=r"^name: no notebook 'scailng'"):
        runner.run("scailng", "smoke", out_dir=tmp_path)
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------- labelfree arguments

_Z = np.random.default_rng(0).normal(size=(12, 3)).astype(np.float32)
_Y = np.arange(12) % 3
LABELFREE_ARGS = {
    "discard_fraction": lambda v: mdlnb.baselines.labelfree.twonn_id(_Z, discard_fraction=v),
    "n_clusters": lambda v: mdlnb.baselines.labelfree.cluster_learnability(
        _Z, 0, n_clusters=v, n_init=1
    ),
    "n_neighbors": lambda v: mdlnb.baselines.labelfree.cluster_learnability(
        _Z, 0, n_neighbors=v, n_init=1
    ),
    "train_fraction": lambda v: mdlnb.baselines.labelfree.cluster_learnability(
        _Z, 0, train_fraction=v, n_init=1
    ),
    "max_iter": lambda v: mdlnb.baselines.labelfree.cluster_learnability(
        _Z, 0, max_iter=v, n_init=1
    ),
    "n_init": lambda v: mdlnb.baselines.labelfree.cluster_learnability(_Z, 0, n_init=v),
    "key": lambda v: mdlnb.baselines.labelfree.cluster_learnability(_Z, v, n_init=1),
    "t": lambda v: mdlnb.baselines.labelfree.uniformity(_Z, t=v),
    "alpha": lambda v: mdlnb.baselines.labelfree.alignment(_Z, _Z[::-1], alpha=v),
    "eps_sq": lambda v: mdlnb.baselines.labelfree.coding_rate_reduction(_Z, _Y, eps_sq=v),
    "eps": lambda v: mdlnb.baselines.labelfree.rankme(_Z, eps=v),
}


@settings(FUZZ, max_examples=70)
@given(
    arg=st.sampled_from(sorted(LABELFREE_ARGS)),
    v=st.sampled_from(
        [np.nan, np.inf, -np.inf, -1, 0, 1, 3, 0.5, 1.5, "a", None, True, 1e9, -0.0, 1e-300]
    ),
)
def test_labelfree_arguments(arg, v):
    """Scalar arguments of the label-free metrics on a fixed valid matrix. Found by the
    first run: NaN/inf/str/None for n_clusters, n_neighbors, max_iter, n_init raised a
    raw 'cannot convert float NaN to integer', OverflowError or int() TypeError; str or
    None for discard_fraction, train_fraction, t, alpha, eps_sq, eps a raw comparison
    TypeError; alignment(alpha=1e9) returned inf; n_init=1e9 ran out of memory."""
    try:
        value = LABELFREE_ARGS[arg](v)
    except (ValueError, TypeError) as e:
        _check_message(e, (arg,))
        return
    _finite_float(value)


# --------------------------------------------------------------------- regressions found by probing


@pytest.mark.parametrize(
    "call, arg",
    [
        # raw 'cannot convert float NaN to integer' / OverflowError / int() TypeError before
        (
            lambda v: __import__("mdlnb.research.ranking").ranking.friedman_from_ranks(
                [1.5, 1.5], v
            ),
            "n_datasets",
        ),
        # a raw 'ufunc isfinite not supported' TypeError for str/None before
        (
            lambda v: __import__("mdlnb.research.ranking").ranking.cd_cliques(
                np.array([1.0, 2.0, 3.0]), v
            ),
            "cd",
        ),
        # NaN results (scipy read any non-bool as a rank vector) before
        (
            lambda v: __import__("mdlnb.research.ranking").ranking.weighted_tau(
                [1, 2, 3.0], [3, 1, 2.0], rank=v
            ),
            "rank",
        ),
        # 2.5 and "3" silently became 2 and 3, NaN/inf raised raw int() errors before
        (
            lambda v: mdlnb.Task.from_arrays(np.ones((3, 2)), [0, 1, 1], num_classes=v),
            "num_classes",
        ),
    ],
)
@pytest.mark.parametrize("v", [np.nan, np.inf, 2.5, "a", None, [0, 0, 1]])
def test_argument_regressions(call, arg, v):
    if v is None and arg in ("num_classes",):
        assert call(v).num_classes == 2  # None: inferred
        return
    if arg == "cd" and v == 2.5:  # a valid critical difference
        assert len(call(v)) == 1 and len(call(v)[0]) == 3  # ranks 1, 2, 3: one clique
        return
    with pytest.raises((ValueError, TypeError), match=rf"^{arg}:"):
        call(v)


def test_argument_regressions_keep_valid_values():
    from scipy import stats

    from mdlnb.research import ranking

    assert ranking.weighted_tau([1, 2, 3.0], [3, 1, 2.0], rank=[2, 0, 1]) == pytest.approx(
        stats.weightedtau([1, 2, 3.0], [3, 1, 2.0], rank=[2, 0, 1]).statistic
    )
    assert ranking.friedman_from_ranks([1.0, 2.0], 4.0).n_datasets == 4
    assert (
        mdlnb.Task.from_arrays(np.ones((3, 2)), [0, 1, 1], num_classes=np.int64(3)).num_classes == 3
    )


# --------------------------------------------------------------------- hostile but valid inputs

try:  # JAX's extra dtypes (a dependency of jaxlib)
    import ml_dtypes

    BFLOAT16 = ml_dtypes.bfloat16
except ImportError:  # pragma: no cover
    BFLOAT16 = None

TRANSFORMS = ["plain", "1e30", "1e-30", "constant", "float16", "bfloat16", "int"]


def _hostile(x: np.ndarray, how: str) -> np.ndarray:
    """``x`` (float64) made numerically hostile but valid."""
    if how == "1e30":
        return x * 1e30
    if how == "1e-30":
        return x * 1e-30
    if how == "constant":
        return np.full_like(x, 3.25)
    if how == "float16":
        return x.astype(np.float16)
    if how == "bfloat16" and BFLOAT16 is not None:
        return x.astype(BFLOAT16)
    if how == "int":
        return np.round(x * 3).astype(np.int64)
    return x


@st.composite
def hostile_tasks(draw, max_n=12):
    """(features, labels, num_classes, transform): N = 1 … max_n or the extreme C = 1,000
    with N = 50; C = 1 … 3; features of scale 1e30 or 1e-30, constant, float16, bfloat16
    or integer; a third of the time a fault (NaN, labels out of range, a length mismatch)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    if draw(st.integers(0, 9)) == 0:
        n, c, d = 50, 1000, draw(st.sampled_from([1, 3]))
        y = rng.integers(0, c, n)
    else:
        n, c, d = draw(st.integers(1, max_n)), draw(st.integers(1, 3)), draw(st.integers(1, 4))
        y = rng.integers(0, c, n)
    how = draw(st.sampled_from(TRANSFORMS))
    x = _hostile(rng.normal(size=(n, d)), how)
    fault = draw(st.sampled_from([None, None, None, "nan", "label", "length"]))
    if fault == "nan":
        x = np.asarray(x, np.float64)
        x.flat[0] = np.nan
    elif fault == "label":
        y = y.copy()
        y[0] = draw(st.sampled_from([-1, 2**40]))
    elif fault == "length":
        y = y[:-1] if n > 1 else np.zeros(2, int)
    nc = c if draw(st.booleans()) or c == 1000 else None
    event(f"{how}, {'C=1000' if c == 1000 else f'N={n}'}, fault={fault}")
    return x, y, nc, fault


@settings(FUZZ, max_examples=12)
@given(data=st.data())
@pytest.mark.parametrize("metric", sorted(__import__("mdlnb.baselines.transfer").transfer.METRICS))
def test_every_transfer_metric_on_hostile_inputs(data, metric):
    """Each registered transferability metric (through ``score_all``, with source
    probabilities for those that need them): a ValueError/TypeError naming an argument,
    or a finite value (LogME's evidence is +inf only where a class is fit exactly)."""
    from mdlnb.baselines import transfer

    x, y, nc, fault = data.draw(hostile_tasks())
    n = len(x)
    z = np.random.default_rng(n).dirichlet(np.ones(4), size=n)
    try:
        with np.errstate(all="ignore"):
            value = transfer.score_all(x, y, z, metrics=[metric], num_classes=nc)[metric]
    except (ValueError, TypeError) as e:
        _check_message(e, ("features", "labels", "num_classes", "source_probs"))
        return
    assert fault is None, f"{fault} accepted: {value}"
    assert isinstance(value, float) and not math.isnan(value), value
    if value == math.inf:
        assert metric == "logme", value
        event("logme +inf")
        return
    event("finite result")
    assert math.isfinite(value), value


@pytest.mark.parametrize("metric", ["nleep", "n_pactran_dirichlet", "n_pactran_gamma"])
@pytest.mark.parametrize("how", ["1e30", "1e-30", "plain"])
def test_nleep_family_is_scale_invariant(metric, how):
    """Found by the hostile fuzz: features of scale 1e30 made sklearn's Gaussian mixture
    fail ("ill-defined empirical covariance"), raw; N = 1 gave sklearn's own error.
    The mixture now sees features brought to unit scale by a power of two, so the value
    is the same at every scale."""
    from mdlnb.baselines import transfer

    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(40, 5)), np.arange(40) % 4
    got = transfer.score_all(_hostile(x, how), y, metrics=[metric])[metric]
    want = transfer.score_all(x, y, metrics=[metric])[metric]
    assert math.isfinite(got) and got == pytest.approx(want, rel=1e-6)
    with pytest.raises(ValueError, match=r"^features: a Gaussian mixture needs at least 2"):
        transfer.score_all(x[:1], y[:1], metrics=[metric])


@pytest.mark.parametrize(
    "call",
    [
        lambda x, y: __import__("mdlnb").transfer.hscore(x, y),
        lambda x, y: __import__("mdlnb").transfer.logme(x, y),
        lambda x, y: __import__("mdlnb").labelfree.rankme(x),
        lambda x, y: __import__("mdlnb").Task.from_arrays(x, y).features.sum(),
        lambda x, y: __import__("mdlnb").switching.codelength(np.abs(x), "bayes").total_nats,
    ],
)
def test_bfloat16_inputs_are_widened_not_refused(call):
    """Found by the hostile fuzz: a bfloat16 array (JAX's ml_dtypes) was refused
    everywhere with "expected a numeric array, got dtype bfloat16"; it is widened to
    float32 exactly, so the value equals that of the float32 array."""
    if BFLOAT16 is None:
        pytest.skip("ml_dtypes not installed")
    x = np.random.default_rng(0).normal(size=(30, 3)).astype(BFLOAT16)
    y = np.arange(30) % 3
    assert float(call(x, y)) == pytest.approx(float(call(x.astype(np.float32), y)), rel=1e-6)


@pytest.mark.parametrize(
    "y, message",
    [
        (np.array([0, 1, 2**40]), "below 2\\*\\*31 - 1, got 1099511627776"),
        (np.array([0, 1, 2**31]), "below 2\\*\\*31 - 1, got 2147483648"),
        (np.array([0, 1, 2**64 - 1], np.uint64), "below 2\\*\\*31 - 1"),
        (np.array([0.0, 1.0, 1e20]), "too large for integers"),
    ],
)
def test_labels_beyond_int32_are_refused(y, message):
    """Found by the CLI fuzz: labels 2**40 were cast to int32 and wrapped to 0 (a task
    built, silently, on wrong labels); 2**31 wrapped to a negative label."""
    with pytest.raises(ValueError, match=rf"^y: .*{message}"):
        mdlnb.Task.from_arrays(np.ones((3, 2)), y)


# --------------------------------------------------------------------- stage 1 and 2 on hostile tasks


HOSTILE_BOARD = [
    Expert(readouts.linear(), 1e-2, replay_streams=1),
    Expert(readouts.mlp(1, 8), 1e-2, replay_streams=1),
]


@settings(
    max_examples=10, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(
    how=st.sampled_from(TRANSFORMS), shape=st.sampled_from(["N=1", "C=1", "C=1000,N=50", "N=24"])
)
def test_evaluate_and_prequential_on_hostile_tasks(how, shape):
    """``evaluate`` (both stages) and ``prequential.run`` on hostile but valid tasks: a
    finite codelength ≥ 0 whose per-step losses add up, never NaN or inf. One shape of
    (N, D) per case (few compilations: N = 24 or 50, D = 3)."""
    from mdlnb import prequential

    rng = np.random.default_rng(7)
    n, c = {"N=1": (1, 3), "C=1": (24, 1), "C=1000,N=50": (50, 1000), "N=24": (24, 3)}[shape]
    x = _hostile(rng.normal(size=(n, 3)), how)
    y = rng.integers(0, c, n)
    nc = max(c, 2)
    rep = mdlnb.evaluate(
        (x, y), experts=HOSTILE_BOARD, batch_size=8, num_classes=nc, cache=False, progress=False
    )
    assert math.isfinite(rep.total_nats) and rep.total_nats >= 0
    assert rep.total_nats == pytest.approx(float(rep.switch.per_step_nats.sum()), rel=1e-9)
    task = mdlnb.Task.from_arrays(x, y, num_classes=nc, name="hostile")
    lm = prequential.run(
        task, HOSTILE_BOARD, batch_size=8, replay_streams=1, cache=False, progress=False
    )
    assert lm.losses.shape == (n, 2) and np.all(np.isfinite(lm.losses)) and np.all(lm.losses >= 0)
    # the first batch is coded by the uniform distribution: log C nats each
    np.testing.assert_allclose(lm.losses[: min(8, n)], math.log(nc), rtol=1e-6)
    event(f"{how} {shape}")


# --------------------------------------------------------------------- the command line on malformed files


def _malformed(tmp, case: str) -> list[str]:
    """A command line for ``mdlnb`` on one malformed input file."""
    import pandas as pd

    d, x = str(tmp), np.ones((10, 3))
    if case == "npz_without_y":
        np.savez(f"{d}/f.npz", x=x)
        return ["evaluate", f"{d}/f.npz"]
    if case == "labels_beyond_int32":
        np.savez(f"{d}/f.npz", x=x, y=np.array([0, 1] * 4 + [2**40, 1]))
        return ["evaluate", f"{d}/f.npz"]
    if case == "labels_2_31":
        np.savez(f"{d}/f.npz", x=x, y=np.array([0, 1] * 4 + [2**31, 1]))
        return ["evaluate", f"{d}/f.npz"]
    if case == "parquet_of_strings":
        pd.DataFrame({"x": ["a", "b"] * 6, "y": ["u", "v"] * 6}).to_parquet(f"{d}/f.parquet")
        return ["evaluate", f"{d}/f.parquet"]
    if case == "parquet_string_features":
        pd.DataFrame({"a": ["1"] * 12, "y": [0, 1, 2] * 4}).to_parquet(f"{d}/f.parquet")
        return ["evaluate", f"{d}/f.parquet"]
    if case in ("empty_npz", "empty_parquet"):
        path = f"{d}/f.{case.split('_')[1]}"
        open(path, "wb").close()
        return ["evaluate", path]
    if case == "object_arrays":
        np.savez(f"{d}/f.npz", x=np.array([None] * 10, dtype=object), y=np.arange(10) % 2)
        return ["evaluate", f"{d}/f.npz"]
    if case == "switch_empty":
        open(f"{d}/l.npz", "wb").close()
        return ["switch", f"{d}/l.npz"]
    if case == "switch_npy":
        np.save(f"{d}/l.npy", np.ones((4, 2)))
        return ["switch", f"{d}/l.npy"]
    if case == "switch_strings":
        np.savez(f"{d}/l.npz", losses=np.array([["a", "b"]] * 5))
        return ["switch", f"{d}/l.npz"]
    if case == "compare_empty":
        open(f"{d}/a.npz", "wb").close()
        np.savez(f"{d}/b.npz", x=x, y=np.arange(10) % 2)
        return ["compare", f"{d}/a.npz", f"{d}/b.npz"]
    if case == "compare_truncated":
        np.savez(f"{d}/a.npz", x=x, y=np.arange(10) % 2)
        data = open(f"{d}/a.npz", "rb").read()
        open(f"{d}/b.npz", "wb").write(data[: len(data) // 2])
        return ["compare", f"{d}/a.npz", f"{d}/b.npz"]
    raise AssertionError(case)


@pytest.mark.parametrize(
    "case, arg",
    [
        ("npz_without_y", "labels"),
        ("labels_beyond_int32", "y"),
        ("labels_2_31", "y"),
        ("parquet_of_strings", "features"),
        ("parquet_string_features", "features"),
        ("empty_npz", "features"),
        ("empty_parquet", "features"),
        ("object_arrays", "features"),
        ("switch_empty", "losses"),
        ("switch_npy", "losses"),
        ("switch_strings", "losses"),
        ("compare_empty", "features"),
        ("compare_truncated", "features"),
    ],
)
def test_cli_on_malformed_files(tmp_path, capsys, case, arg):
    """Status 2 and one line naming the argument, for each malformed input; found by
    this test: labels 2**40 ran (wrapped to 0), 2**31 said "labels must be >= 0, got
    -2147483648", a parquet of strings gave a raw TypeError traceback or an error naming
    nothing, an empty, truncated or .npy file for `switch`/`compare` a raw EOFError,
    BadZipFile or AttributeError traceback."""
    from mdlnb.tools import cli

    rc = cli.main(_malformed(tmp_path, case))
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1, err
    assert re.match(rf"^mdlnb \w+: error: {arg}: ", err[0]), err[0]


# --------------------------------------------------------------------- the runner's -p values


P_VALUES = [
    "abc",
    "",
    "1e400",
    "-1",
    "0",
    "1.5",
    "true",
    "null",
    "[",
    "[]",
    "[0]",
    "[1, a]",
    ".nan",
    "-.inf",
    "1e-300",
    "3",
    "0.25",
    "[5, 10]",
    "{a: 1}",
]


@settings(FUZZ, max_examples=80)
@given(
    key=st.sampled_from(
        [
            "d",
            "n_examples",
            "alpha",
            "eps_fraction",
            "seeds",
            "at",
            "mlp_lr",
            "switching_lr",
            "seed",
            "paper_dir",
            "nope",
            "",
            "overrides.train_size",
        ]
    ),
    value=st.sampled_from(P_VALUES),
    sep=st.sampled_from(["=", "", "=="]),
)
def test_runner_parameters_are_refused_before_any_kernel(key, value, sep):
    """``-p KEY=VALUE`` for the parity notebook: either a ValueError that starts with
    ``parameter:`` / ``parameters:`` (before papermill starts anything), or parameters
    every check accepts. Found by this test: a negative seed, a learning rate ≤ 0 or
    NaN, ``at`` holding 0, ``eps_fraction = 0`` and an empty ``paper_dir`` (the
    repository root) were accepted and failed — or wrote — deep inside the notebook."""
    from mdlnb.tools import runner

    try:
        params = runner.merged_parameters(
            "parity_toy", "smoke", runner.parse_parameters([f"{key}{sep}{value}"])
        )
    except (ValueError, TypeError) as e:
        assert re.match(r"^parameters?: ", str(e)), str(e)
        event(f"refused: {str(e).split(':')[0]}")
        return
    event("accepted")
    from mdlnb.studies import parity

    cfg = parity.ParityConfig.from_parameters(
        {**runner.notebook_parameters("parity_toy"), **params}
    )
    assert cfg.seed >= 0 and cfg.mlp_lr > 0 and min(cfg.at) >= 1 and cfg.eps_fraction > 0
    assert str(params.get("paper_dir", "x")).strip()
