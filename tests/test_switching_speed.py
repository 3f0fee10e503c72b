"""The linear-space kernel of the switch distribution and the run-length model
(mdlnb/switching/_linear_hmm.py) against float64 NumPy forward passes written
from the priors' definitions, on sequences long enough for float32 rounding
and underflow to show (brute force on tiny cases is in test_switching.py)."""

import numpy as np
import pytest
from scipy.special import logsumexp

from mdlnb import switching as sw


def switch_float64(L, stable):
    """Koolen & de Rooij's switch HMM in float64 log space: rows (unstable, stable)."""
    n, k = L.shape
    with np.errstate(divide="ignore"):
        lw = np.log([[1 - stable], [stable]]) + np.full((2, k), -np.log(k))
    total, post = 0.0, np.empty((n, k))
    for t in range(n):
        post[t] = np.exp(logsumexp(lw, axis=0))
        joint = lw - L[t]
        lz = logsumexp(joint)
        total -= lz
        f = joint - lz
        h = 1.0 / (t + 2)
        with np.errstate(divide="ignore"):
            new = np.log(h) + logsumexp(f[0]) - np.log(k)
            lw = np.stack(
                [
                    np.logaddexp(np.log1p(-h) + f[0], np.log(1 - stable) + new),
                    np.logaddexp(f[1], np.log(stable) + new),
                ]
            )
    return total, post


def run_length_float64(L, strategy):
    """The run-length chain of ``RunLength.chain`` in float64 linear space."""
    n, k = L.shape
    h, a = strategy.chain()
    w = np.zeros((len(h), k))
    w[0] = 1.0 / k
    total, post = 0.0, np.empty((n, k))
    for t in range(n):
        post[t] = w.sum(0)
        c = L[t].min()
        q = w * np.exp(c - L[t])
        z = q.sum()
        total += c - np.log(z)
        f = q / z
        end = (h[:, None] * f).sum()
        move = ((1 - h) * a)[:, None] * f
        w = ((1 - h) * (1 - a))[:, None] * f
        w[0] += end / k
        w[1:] += move[:-1]
    return total, post


def fixed_share_float64(L, m):
    """Fixed share with α = min(1, (m − 1)/s) into step s ≥ 2, uniform prior, float64."""
    n, k = L.shape
    w = np.full(k, 1.0 / k)
    per, post = np.empty(n), np.empty((n, k))
    for t in range(n):
        post[t] = w
        q = w * np.exp(-L[t])
        per[t] = -np.log(q.sum())
        a = min(1.0, (m - 1.0) / (t + 2))
        w = (1 - a) * q / q.sum() + a / k
    return per, post


@pytest.mark.parametrize("n", [9_001, 4_096 * 2 + 1_000])
def test_fixed_share_posterior_over_blocks_against_float64(n):
    """Fixed share's linear kernel stores the posterior 8 rows per loop step in
    blocks of 4,096 rows (K ≤ 256): several blocks, a padded last one, and a
    length that is not a multiple of 8, as a NumPy input (chunked, then whole)
    and as a device array, against a float64 forward pass."""
    import jax.numpy as jnp

    rng = np.random.default_rng(5)
    L = rng.exponential(1.0, size=(n, 6))
    L[:, 2] += np.r_[np.zeros(n // 2), np.full(n - n // 2, 0.5)]
    L = L.astype(np.float32)
    per, post = fixed_share_float64(L.astype(np.float64), 2.0)
    for got in (
        sw.codelength(L, sw.FixedShare(m=2), chunk_rows=4_096),
        sw.codelength(L, sw.FixedShare(m=2)),
        sw.codelength(jnp.asarray(L), sw.FixedShare(m=2)),
    ):
        np.testing.assert_allclose(got.per_step_nats, per, rtol=0, atol=2e-6)
        assert got.total_nats == pytest.approx(per.sum(), rel=1e-7)
        np.testing.assert_allclose(got.posterior, post, rtol=2e-5, atol=1e-9)


@pytest.fixture(scope="module")
def L():
    rng = np.random.default_rng(21)
    # 4 experts whose best changes twice, plus one that sometimes fails badly (120 nats)
    base = rng.exponential(1.0, size=(20_000, 5))
    base[:, 0] += np.r_[np.zeros(7_000), np.full(13_000, 0.3)]
    base[:, 1] += np.r_[np.full(7_000, 0.3), np.zeros(6_000), np.full(7_000, 0.3)]
    base[:, 2] += 0.1
    base[rng.random(20_000) < 0.01, 3] = 120.0
    return base.astype(np.float32)


@pytest.mark.parametrize("stable", [0.5, 0.9])
def test_switch_distribution_against_float64(L, stable):
    want, post = switch_float64(L.astype(np.float64), stable)
    got = sw.codelength(L, sw.SwitchDistribution(stable=stable))
    assert got.total_nats == pytest.approx(want, rel=1e-6)
    big = post > 1e-3
    assert np.max(np.abs(got.posterior - post)[big] / post[big]) < 1e-4


@pytest.mark.parametrize("strategy", [sw.RunLength(), sw.RunLength(max_run=3, phases=4)])
def test_run_length_against_float64(L, strategy):
    want, post = run_length_float64(L.astype(np.float64), strategy)
    got = sw.codelength(L, strategy)
    assert got.total_nats == pytest.approx(want, rel=1e-6)
    big = post > 1e-3
    assert np.max(np.abs(got.posterior - post)[big] / post[big]) < 1e-4


def test_nearly_stable_switch_posterior_does_not_drift():
    # θ = 0.999: an almost pure Bayesian mixture (no mixing → rounding would
    # accumulate) over 60,000 steps, experts 1e-3 nats apart per step
    n, k = 60_000, 4
    L = (np.random.default_rng(15).exponential(1.0, size=(n, k)) + [0, 1e-3, 2e-3, 3e-3]).astype(
        np.float32
    )
    strategy = sw.SwitchDistribution(stable=0.999)
    assert sw.uses_linear_kernel(strategy, k)
    want, post = switch_float64(L.astype(np.float64), 0.999)
    got = sw.codelength(L, strategy)
    assert got.total_nats == pytest.approx(want, rel=1e-7)
    big = post > 1e-3
    # float32 rounding grows like a random walk, ε·√N ≈ 1.5e-5 here (measured 4.7e-5)
    assert np.max(np.abs(got.posterior - post)[big] / post[big]) < 1e-4


def test_kernel_choice():
    assert not sw.uses_linear_kernel(sw.SwitchDistribution(stable=1.0), 4)  # Bayes: log kernel
    assert not sw.uses_linear_kernel(sw.RunLength(weights=[1.0, 0.0]), 2)
    assert sw.uses_linear_kernel(sw.RunLength(), 4)


def test_numpy_input_goes_to_xla_with_one_copy_at_most():
    import jax

    from mdlnb.switching._transport import to_device as _to_device

    rng = np.random.default_rng(31)
    L = rng.exponential(1.0, size=(300, 8)).astype(np.float32)
    a = np.asarray(_to_device(L))  # NumPy's 16-byte alignment: copied once, aligned
    np.testing.assert_array_equal(a, L)
    if jax.default_backend() == "cpu":
        assert a.ctypes.data % 64 == 0
        assert np.asarray(_to_device(a)).ctypes.data == a.ctypes.data  # aligned: aliased
    L64 = rng.exponential(1.0, size=(50, 3))
    L64[0, 0], L64[1, 1] = 1e300, np.nan  # beyond float32: +inf; NaN stays NaN
    b = np.asarray(_to_device(L64[:, ::-1]))  # float64, not contiguous
    with np.errstate(over="ignore"):
        want = L64[:, ::-1].astype(np.float32)
    np.testing.assert_array_equal(b, want)
    assert b[0, 2] == np.inf and np.isnan(b[1, 1])
    # and the posterior-writing call that uses it: same result as from a device array
    r = sw.codelength(np.repeat(L64[:, ::-1], 2, axis=0), "fixed-share", chunk_rows=32)
    s = sw.codelength(jax.numpy.asarray(np.repeat(want, 2, axis=0)), "fixed-share", chunk_rows=32)
    assert r.total_nats == s.total_nats
    np.testing.assert_array_equal(r.log_posterior, s.log_posterior)


def test_large_numpy_input_is_copied_in_row_parts(monkeypatch):
    import jax

    from mdlnb.switching import _transport

    monkeypatch.setattr(
        _transport, "_PARALLEL_COPY_BYTES", 1024
    )  # every part of this test in threads
    rng = np.random.default_rng(32)
    L64 = rng.exponential(1.0, size=(203, 7))  # 203 rows: parts of 50 and 51 rows
    L64[0, 0], L64[120, 3], L64[202, 6] = 1e300, np.nan, 1e39  # one in each of three parts
    with np.errstate(over="ignore"):
        want = L64.astype(np.float32)
    got = np.asarray(_transport.to_device(L64))
    np.testing.assert_array_equal(got, want)
    assert got[0, 0] == np.inf and got[202, 6] == np.inf and np.isnan(got[120, 3])
    # the chunked call without the posterior (each chunk through to_device): same as a device array
    r = sw.codelength(L64, "fixed-share", posterior=False, chunk_rows=64)
    s = sw.codelength(jax.numpy.asarray(want), "fixed-share", posterior=False, chunk_rows=64)
    assert r.total_nats == pytest.approx(s.total_nats, rel=1e-7)
    np.testing.assert_allclose(r.per_step_nats, s.per_step_nats, rtol=1e-6)
