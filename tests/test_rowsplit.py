"""The Bayesian mixture split over row parts (mdlnb/switching/_rowsplit.py)
against the one-part pass and a float64 NumPy closed form."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import logsumexp

from mdlnb import switching as sw
from mdlnb.switching import _rowsplit, forward


def test_num_parts_depends_on_n_only():
    m = _rowsplit.MIN_ROWS
    assert [_rowsplit.num_parts(n) for n in (1, 2 * m - 1, 2 * m, 4 * m - 1, 4 * m, 10**7)] == [
        1,
        1,
        2,
        2,
        4,
        4,
    ]


@pytest.fixture(scope="module")
def L():
    rng = np.random.default_rng(11)
    n, k = 4 * _rowsplit.MIN_ROWS + 37, 6  # 4 parts, none a multiple of its segments
    L = rng.gamma(2.0, 0.6, size=(n, k)).astype(np.float32)
    L[:, 2] += 0.01  # a near tie with expert 0 keeps two experts alive
    L[5000:, 4] = np.nan  # a diverged expert: probability 0 from row 5000
    L[9, 5] = np.inf
    return L


def test_parts_match_one_pass(L):
    s = sw.BayesianMixture(initial=[0.3, 0.2, 0.2, 0.1, 0.1, 0.1])
    st, p = forward.init_state(s, L.shape[1]), s.params(L.shape[1])
    Ld = jnp.asarray(L)
    a = forward.run_all(s.skeleton(), p, st, Ld, posterior=True, linear=False)
    b = _rowsplit.run_all(p, st, Ld, posterior=True)
    np.testing.assert_allclose(np.asarray(b[1]), np.asarray(a[1]), atol=2e-6)
    np.testing.assert_array_equal(np.asarray(b[3]), np.asarray(a[3]))
    assert float(b[0].total_nats) == pytest.approx(float(a[0].total_nats), rel=1e-7)
    assert int(b[0].t) == L.shape[0]
    # the posterior of the experts that matter, and the final state, agree
    pa, pb = np.exp(np.asarray(a[2])), np.exp(np.asarray(b[2]))
    np.testing.assert_allclose(pb, pa, atol=1e-5)
    np.testing.assert_allclose(
        np.exp(np.asarray(b[0].log_weights)), np.exp(np.asarray(a[0].log_weights)), atol=1e-5
    )


def test_codelength_of_a_device_array_against_float64_closed_form(L):
    # Bayes: −log Σ_k w_k exp(−Σ_t L[t, k]), NaN read as +inf (expert 4 drops out)
    w = np.array([0.3, 0.2, 0.2, 0.1, 0.1, 0.1])
    S = np.where(np.isnan(L), np.inf, L).astype(np.float64).sum(axis=0)
    want = -logsumexp(np.log(w) - S)
    assert jax.default_backend() != "cpu" or _rowsplit.applies(sw.BayesianMixture(), L.shape[0])
    got = sw.codelength(jnp.asarray(L), sw.BayesianMixture(initial=w), posterior=False)
    assert got.total_nats == pytest.approx(want, rel=2e-7)
    # the per-step losses are the telescoped log-sums: partial sums against float64 too
    t = 3 * _rowsplit.MIN_ROWS + 5  # inside the last part
    St = np.where(np.isnan(L[:t]), np.inf, L[:t]).astype(np.float64).sum(axis=0)
    assert np.sum(got.per_step_nats[:t]) == pytest.approx(-logsumexp(np.log(w) - St), rel=2e-7)


def test_split_pass_is_deterministic(L):
    a = sw.codelength(jnp.asarray(L), "bayes", posterior=False)
    b = sw.codelength(jnp.asarray(L), "bayes", posterior=False)
    assert a.total_nats == b.total_nats and np.array_equal(a.per_step_nats, b.per_step_nats)


def test_threads_only_execute_programs_compiled_in_the_calling_thread():
    """The pool's threads never compile nor write the compilation cache: every program
    of a pass (the totals and one per part) is compiled in the calling thread before they
    start (concurrent compilations and cache writes from the pool were the lead followed
    for the worker segfaults of benchmarks/RESULTS.md, 2026-11-27)."""
    import threading

    from jax import monitoring

    compiled_in = []

    def on_compile(event, duration, **kw):
        if event == "/jax/core/compile/backend_compile_duration":
            compiled_in.append(threading.current_thread().name)

    monitoring.register_event_duration_secs_listener(on_compile)
    try:
        n, k = 4 * _rowsplit.MIN_ROWS + 3, 7  # K = 7: programs no other test compiled
        L = np.random.default_rng(2).exponential(1.0, size=(n, k)).astype(np.float32)
        s = sw.BayesianMixture()
        st, p = forward.init_state(s, k), s.params(k)
        _rowsplit.run_all(p, st, jnp.asarray(L), posterior=False)
    finally:
        monitoring.unregister_event_duration_listener(on_compile)
    assert compiled_in and set(compiled_in) == {threading.current_thread().name}, compiled_in
