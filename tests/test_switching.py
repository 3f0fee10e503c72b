"""Stage 2 switching: brute force, closed forms, regret bounds, streaming, errors.

References are written here independently of mdlnb.switching: each strategy's
prior over expert sequences is spelled out from its definition (block
structures for the switch distribution and the run-length model) and summed
over all K^N sequences in float64.
"""

from __future__ import annotations

import itertools
import math
import re

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

from mdlnb import switching as sw

# ---------------------------------------------------------------- references


def _uniform(k):
    return np.full(k, 1.0 / k)


def _compositions(n):
    """All ordered block-length tuples summing to n."""
    if n == 0:
        yield ()
        return
    for first in range(1, n + 1):
        for rest in _compositions(n - first):
            yield (first,) + rest


def prior_fixed_share(n, k, alpha_of_t, w, init):
    """{sequence: prior} for p(ξ_t|ξ_{t-1}) = (1-α_t)[same] + α_t w(ξ_t)."""
    out = {}
    for seq in itertools.product(range(k), repeat=n):
        p = init[seq[0]]
        for t in range(2, n + 1):  # 1-indexed step t
            a = alpha_of_t(t)
            p *= (1 - a) * (seq[t - 1] == seq[t - 2]) + a * w[seq[t - 1]]
        out[seq] = p
    return out


def prior_blocks(n, k, block_prob, w, init):
    """{sequence: prior} from a prior over block lengths and i.i.d. block experts.

    block_prob(lengths) is the prior probability of the observed block lengths
    within [1, n] (the last block censored at n)."""
    out = {}
    for lengths in _compositions(n):
        pb = block_prob(lengths)
        for experts in itertools.product(range(k), repeat=len(lengths)):
            p = pb * init[experts[0]] * np.prod([w[e] for e in experts[1:]])
            seq = tuple(e for e, ln in zip(experts, lengths) for _ in range(ln))
            out[seq] = out.get(seq, 0.0) + p
    return out


def switch_block_prob(n, theta):
    """Switch distribution: π_T(t) = 1/(t(t-1)), t ≥ 2, conditioned on t > t_prev;
    each block is the last one w.p. θ."""
    pi_t = lambda t: 1.0 / (t * (t - 1))
    tail = lambda a: 1.0 - sum(pi_t(j) for j in range(2, a + 1))  # P(T > a)

    def prob(lengths):
        starts = np.cumsum((1,) + lengths[:-1])
        p = (1 - theta) ** (len(lengths) - 1)
        for prev, t in zip(starts[:-1], starts[1:]):
            p *= pi_t(t) / tail(prev)
        # after the last observed block start: stable, or unstable with next start > n
        p *= theta + (1 - theta) * tail(n) / tail(starts[-1])
        return p

    return prob


def run_length_pmf(r, R):
    """π_L(r): 1/(r(r+1)) below R, geometric tail from R on."""
    if r < R:
        return 1.0 / (r * (r + 1))
    return (1.0 / R) * (1.0 / (R + 1)) * (R / (R + 1)) ** (r - R)


def run_length_pmf_phases(R, J, rmax):
    """π_L(1 … rmax) of the run-length chain as documented: exact states with
    end hazard 1/(r+1) for r < R, then J phases with scale s = R·2^j, end
    hazard 1/(s+1), advance 1/s (none from the last). Propagated in NumPy."""
    h = [1 / (r + 1) for r in range(1, R)] + [1 / (R * 2**j + 1) for j in range(J)]
    a = [1.0] * (R - 1) + [1 / (R * 2**j) for j in range(J - 1)] + [0.0]
    h, a = np.array(h), np.array(a)
    v = np.zeros(len(h))
    v[0] = 1.0
    pmf = []
    for _ in range(rmax):
        pmf.append(v @ h)
        go = v * (1 - h)
        v = go * (1 - a) + np.concatenate([[0.0], (go * a)[:-1]])
    return np.array(pmf)


def run_length_block_prob(R, J, n):
    pmf = run_length_pmf_phases(R, J, n)

    def prob(lengths):
        p = np.prod([pmf[ln - 1] for ln in lengths[:-1]])
        survive = 1.0 - pmf[: lengths[-1] - 1].sum()
        return p * survive

    return prob


def test_run_length_prior_matches_its_closed_forms():
    pmf = run_length_pmf_phases(5, 1, 3000)  # one phase: power law + geometric tail
    np.testing.assert_allclose(pmf[:200], [run_length_pmf(r, 5) for r in range(1, 201)], rtol=1e-12)
    pmf = run_length_pmf_phases(4, 12, 200_000)
    np.testing.assert_allclose(pmf[:3], [1 / 2, 1 / 6, 1 / 12], rtol=1e-12)  # exact part
    assert pmf.sum() == pytest.approx(1.0, abs=1e-3)
    # heavy tail: survival at r decays roughly like 1/r (power law), not geometrically
    surv = 1 - np.cumsum(pmf)
    assert 0.2 < surv[9_999] * 10_000 < 5 and 0.2 < surv[99] * 100 < 5


def brute_force(L, prior):
    """(total nats, posterior (N, K)) by enumeration, float64."""
    n, k = L.shape
    total = 0.0
    post = np.zeros((n, k))
    for seq, p in prior.items():
        if p == 0.0:
            continue
        lik = np.exp(-L[np.arange(n), list(seq)])
        total += p * np.prod(lik)
        prefix = np.concatenate([[1.0], np.cumprod(lik)[:-1]])  # Π_{s<t}
        post[np.arange(n), list(seq)] += p * prefix
    return -math.log(total), post / post.sum(1, keepdims=True)


def reference_prior(strategy, n, k):
    w = np.asarray(strategy.weights) if getattr(strategy, "weights", None) else _uniform(k)
    init = np.asarray(strategy.initial) if strategy.initial else w
    if isinstance(strategy, sw.BayesianMixture):
        return prior_fixed_share(n, k, lambda t: 0.0, w, init)
    if isinstance(strategy, sw.ElementwiseMixture):
        return prior_fixed_share(n, k, lambda t: 1.0, w, init)
    if isinstance(strategy, sw.FixedShare):
        if strategy.alpha is not None:
            return prior_fixed_share(n, k, lambda t: strategy.alpha, w, init)
        return prior_fixed_share(n, k, lambda t: min(1.0, (strategy.m - 1) / t), w, init)
    if isinstance(strategy, sw.SwitchDistribution):
        return prior_blocks(n, k, switch_block_prob(n, strategy.stable), w, init)
    if isinstance(strategy, sw.RunLength):
        return prior_blocks(
            n, k, run_length_block_prob(strategy.max_run, strategy.phases, n), w, init
        )
    raise AssertionError(strategy)


STRATEGIES = [
    sw.BayesianMixture(),
    sw.BayesianMixture(initial=[0.5, 0.3, 0.2]),
    sw.ElementwiseMixture(weights=[0.2, 0.5, 0.3]),
    sw.FixedShare(alpha=0.3),
    sw.FixedShare(m=2),
    sw.FixedShare(m=3.5, weights=[0.6, 0.3, 0.1], initial=[0.1, 0.1, 0.8]),
    sw.SwitchDistribution(),
    sw.SwitchDistribution(stable=0.2, weights=[0.3, 0.3, 0.4]),
    sw.RunLength(max_run=3, phases=1),
    sw.RunLength(max_run=1, phases=1, initial=[0.2, 0.2, 0.6]),
    sw.RunLength(max_run=2, phases=3),
    sw.RunLength(),
]


@pytest.mark.parametrize("strategy", STRATEGIES, ids=repr)
def test_cached_start_equals_params_and_init_state(strategy):
    """``forward.start`` (NumPy, one device_put, cached per (strategy, K))
    gives the same leaves as ``strategy.params`` and ``init_state`` (eager
    jnp): values, dtypes, shapes, weak types; a second call returns the
    same objects."""
    from mdlnb.switching import forward

    params, state = forward.start(strategy, 3)
    want_p, want_s = strategy.params(3), forward.init_state(strategy, 3)
    assert set(params) == set(want_p)
    for got, want in [*((params[n], want_p[n]) for n in want_p), *zip(state, want_s)]:
        got, want = jnp.asarray(got), jnp.asarray(want)
        assert (got.dtype, got.shape, got.weak_type) == (want.dtype, want.shape, want.weak_type)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert forward.start(strategy, 3)[1] is state
    with pytest.raises(ValueError, match="num_experts"):
        forward.start(strategy, 0)


def test_reference_priors_are_distributions():
    for s in STRATEGIES:
        total = sum(reference_prior(s, 5, 3).values())
        assert total == pytest.approx(1.0, abs=1e-12), s
    assert sum(run_length_pmf(r, 4) for r in range(1, 2000)) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("strategy", STRATEGIES, ids=repr)
def test_brute_force_total_and_posterior(strategy):
    rng = np.random.default_rng(abs(hash(repr(strategy))) % 2**32)
    for n in (1, 7):
        L = rng.exponential(1.5, size=(n, 3))
        L[rng.random(L.shape) < 0.1] *= 6  # a few large losses
        total, post = brute_force(L, reference_prior(strategy, n, 3))
        res = sw.codelength(L, strategy)
        assert res.total_nats == pytest.approx(total, rel=2e-6)
        np.testing.assert_allclose(res.posterior, post, atol=2e-6)
        assert res.per_step_nats.sum() == pytest.approx(res.total_nats, rel=1e-12)


@pytest.mark.parametrize("name", ["bayes", "elementwise", "fixed-share", "switch", "run-length"])
def test_brute_force_k2_by_name(name):
    strategy = sw.get_strategy(name)
    L = np.random.default_rng(3).exponential(1.0, size=(6, 2))
    total, post = brute_force(L, reference_prior(strategy, 6, 2))
    res = sw.codelength(L, name)
    assert res.total_nats == pytest.approx(total, rel=2e-6)
    np.testing.assert_allclose(res.posterior, post, atol=2e-6)


# ---------------------------------------------------------------- closed forms


@pytest.fixture(scope="module")
def L200():
    return np.random.default_rng(0).exponential(1.0, size=(200, 4)) + np.array(
        [0.0, 0.1, 0.3, 0.05]
    )


def test_bayesian_mixture_closed_form(L200):
    prior = np.array([0.1, 0.2, 0.3, 0.4])
    want = -logsumexp(np.log(prior) - L200.sum(0))
    assert sw.codelength(L200, sw.BayesianMixture(initial=prior)).total_nats == pytest.approx(
        want, rel=1e-6
    )
    # posterior at t is the normalized prior × likelihood of the first t−1 rows
    post = sw.codelength(L200, "bayes").posterior
    cum = np.vstack([np.zeros(4), np.cumsum(L200, 0)[:-1]])
    np.testing.assert_allclose(
        post, np.exp(-cum - logsumexp(-cum, axis=1, keepdims=True)), atol=1e-5
    )


def test_elementwise_mixture_closed_form(L200):
    w = np.array([0.4, 0.3, 0.2, 0.1])
    want = -logsumexp(np.log(w) - L200, axis=1).sum()
    res = sw.codelength(L200, sw.ElementwiseMixture(weights=w))
    assert res.total_nats == pytest.approx(want, rel=1e-6)
    np.testing.assert_allclose(res.posterior, np.broadcast_to(w, (200, 4)), rtol=1e-5)


def test_fixed_share_degenerate_rates(L200):
    bayes = sw.codelength(L200, "bayes").total_nats
    assert sw.codelength(L200, sw.FixedShare(alpha=0.0)).total_nats == pytest.approx(
        bayes, rel=1e-6
    )
    assert sw.codelength(L200, sw.FixedShare(m=1)).total_nats == pytest.approx(bayes, rel=1e-6)
    ew = sw.codelength(L200, "elementwise").total_nats
    assert sw.codelength(L200, sw.FixedShare(alpha=1.0)).total_nats == pytest.approx(ew, rel=1e-6)


def test_switch_distribution_degenerate_cases(L200):
    # θ = 1: the first block is stable, no switch ever: Bayesian mixture.
    bayes = sw.codelength(L200, "bayes").total_nats
    assert sw.codelength(L200, sw.SwitchDistribution(stable=1.0)).total_nats == pytest.approx(
        bayes, rel=1e-6
    )
    # θ = 0: never stable, new block at t w.p. 1/t: fixed share with α_t = 1/t (m = 2).
    fs = sw.codelength(L200, sw.FixedShare(m=2)).total_nats
    assert sw.codelength(L200, sw.SwitchDistribution(stable=0.0)).total_nats == pytest.approx(
        fs, rel=1e-6
    )


def test_run_length_one_state_is_fixed_share_half(L200):
    # R = 1: constant hazard 1/2 → fixed share with α = 1/2.
    fs = sw.codelength(L200, sw.FixedShare(alpha=0.5)).total_nats
    assert sw.codelength(L200, sw.RunLength(max_run=1, phases=1)).total_nats == pytest.approx(
        fs, rel=1e-6
    )


def test_single_expert_is_its_own_loss():
    L = np.random.default_rng(1).exponential(size=(50, 1))
    for name in sw.names():
        assert sw.codelength(L, name).total_nats == pytest.approx(L.sum(), rel=1e-6)


# ---------------------------------------------------------------- regret


def best_with_switches(L, s):
    """min over sequences with ≤ s switches of Σ_t L[t, ξ_t], and an argmin (DP).

    D[t, j, e]: least loss of rows 0..t with exactly j switches, ending in e."""
    n, k = L.shape
    D = np.full((n, s + 1, k), np.inf)
    D[0, 0] = L[0]
    for t in range(1, n):
        D[t] = D[t - 1]
        D[t, 1:] = np.minimum(D[t - 1, 1:], D[t - 1, :-1].min(1, keepdims=True))
        D[t] += L[t]
    j, e = np.unravel_index(np.argmin(D[-1]), D[-1].shape)
    seq = [e]
    for t in range(n - 1, 0, -1):
        if not np.isclose(D[t, j, e] - L[t, e], D[t - 1, j, e]):  # came by a switch
            j, e = j - 1, int(np.argmin(D[t - 1, j - 1]))
        seq.append(e)
    return D[-1].min(), np.array(seq[::-1])


def test_best_with_switches_brute_force():
    L = np.random.default_rng(13).exponential(1.0, size=(6, 3))
    for s in range(4):
        want = min(
            L[np.arange(6), list(q)].sum()
            for q in itertools.product(range(3), repeat=6)
            if sum(a != b for a, b in zip(q, q[1:])) <= s
        )
        best, seq = best_with_switches(L, s)
        assert best == pytest.approx(want)
        assert L[np.arange(6), seq].sum() == pytest.approx(want)
        assert np.sum(seq[1:] != seq[:-1]) <= s


def neg_log_prior_fixed_share(seq, k, m):
    """−log p(ξ) under fixed share with α_t = min(1, (m−1)/t), uniform w."""
    out = math.log(k)
    for t in range(2, len(seq) + 1):
        a = min(1.0, (m - 1) / t)
        same = seq[t - 1] == seq[t - 2]
        out -= math.log((1 - a) * same + a / k)
    return out


def fixed_share_bound(n, k, s, m):
    """Upper bound on −log p(ξ) for any ξ with s switches, fixed share
    α_t = c/t, c = m − 1 ∈ (0, 1], uniform w (nats).

    −log p(ξ) = log K + Σ_{switch t} −log(α_t/K) + Σ_{other t ≥ 2} −log(1 − α_t(K−1)/K).
    * switch at t: −log(c/(tK)) = log K + log(t/c) ≤ log K + log(N/c);
    * no switch:  −log(1 − α_t(K−1)/K) ≤ −log(1 − c/t) ≤ c·(−log(1 − 1/t)),
      because x ↦ −log(1 − x/t) is convex with value 0 at x = 0 (so it lies
      below its chord on [0, 1]); Σ_{t=2}^N −log(1 − 1/t) = log N.
    Total: (s + 1) log K + s log(N/c) + c log N.
    With s = m − 1 = c this is the paper's m log K + (m−1) log(N/(m−1))
    plus (m−1) log N, the cost of *not* switching, which the paper omits.
    """
    c = m - 1
    return (s + 1) * math.log(k) + s * math.log(n / c) + c * math.log(n)


def _adversarial(n, k, blocks, rng):
    """The best expert changes `blocks - 1` times; losses of the others are large."""
    L = rng.uniform(2.0, 6.0, size=(n, k))
    edges = np.linspace(0, n, blocks + 1).astype(int)
    for b in range(blocks):
        L[edges[b] : edges[b + 1], b % k] = rng.uniform(0, 0.1, size=edges[b + 1] - edges[b])
    return L, blocks - 1


@pytest.mark.parametrize("m", [1.5, 2.0])
def test_fixed_share_regret_bound(m):
    rng = np.random.default_rng(7)
    cases = [_adversarial(3000, 4, 4, rng), _adversarial(2500, 4, 2, rng)]
    cases.append((rng.exponential(1.0, size=(2000, 4)) + rng.uniform(0, 0.5, size=4), 1))
    L_late = rng.uniform(1, 3, size=(3500, 4))  # one switch at the very end
    L_late[:-1, 0] = 0.0
    L_late[-1, 1] = 0.0
    cases.append((L_late, 1))
    for L, s in cases:
        n, k = L.shape
        total = sw.codelength(L, sw.FixedShare(m=m), posterior=False).total_nats
        for s_ in range(s + 1):
            best, seq = best_with_switches(L, s_)
            assert L[np.arange(n), seq].sum() == pytest.approx(best)
            switches = int(np.sum(seq[1:] != seq[:-1]))
            # −log Σ ≤ −log(one term) for the DP-best sequence, exactly
            assert total <= best + neg_log_prior_fixed_share(seq, k, m) + 1e-6 * total
            assert (
                neg_log_prior_fixed_share(seq, k, m) <= fixed_share_bound(n, k, switches, m) + 1e-9
            )
            assert total <= best + fixed_share_bound(n, k, s_, m) + 1e-6 * total


def test_paper_fixed_share_bound_misses_the_no_switch_cost():
    # A loss matrix that forces one sequence (0,…,0,1): the codelength is −log p(ξ).
    n, k = 1000, 2
    L = np.full((n, k), np.inf)
    L[:-1, 0] = 0.0
    L[-1, 1] = 0.0
    got = sw.codelength(L, sw.FixedShare(m=2)).total_nats
    exact = neg_log_prior_fixed_share([0] * (n - 1) + [1], k, 2)
    assert got == pytest.approx(exact, rel=1e-6)
    # closed form: log 2 + Σ_{t<n} −log(1 − 1/(2t)) + log(2n) − log(1) … check two ways
    assert exact == pytest.approx(
        math.log(2) - sum(math.log(1 - 1 / (2 * t)) for t in range(2, n)) + math.log(2 * n)
    )
    paper = 2 * math.log(k) + 1 * math.log(n / 1)
    # the stated m log K + (m−1) log(N/(m−1)) is exceeded by ≈ (K−1)/K · log N
    assert got - paper > 0.45 * math.log(n)
    assert got <= fixed_share_bound(n, k, 1, 2)


def test_bayesian_mixture_regret():
    rng = np.random.default_rng(11)
    for k in (2, 5, 17):
        L = rng.exponential(1.0, size=(500, k))
        total = sw.codelength(L, "bayes", posterior=False).total_nats
        best = L.sum(0).min()
        assert best <= total <= best + math.log(k) + 1e-6 * total


# ---------------------------------------------------------------- kernels, streaming, dtypes


def test_linear_and_log_kernels_agree():
    L = jnp.asarray(np.random.default_rng(2).exponential(2.0, size=(512, 6)), jnp.float32)
    for s in (sw.FixedShare(m=2), sw.FixedShare(alpha=0.05)):
        assert sw.uses_linear_kernel(s, 6)
        a, pa = sw.step(s, sw.init_state(s, 6), L, linear=True)
        b, pb = sw.step(s, sw.init_state(s, 6), L, linear=False)
        np.testing.assert_allclose(pa, pb, rtol=2e-5, atol=2e-6)
        np.testing.assert_allclose(a.log_posterior, b.log_posterior, atol=1e-4)
    assert not sw.uses_linear_kernel(sw.FixedShare(m=1), 6)
    assert not sw.uses_linear_kernel(sw.FixedShare(alpha=1e-25), 6)


@pytest.mark.parametrize("name", sw.names())
def test_streaming_matches_batch(name):
    rng = np.random.default_rng(5)
    L = rng.exponential(1.0, size=(2500, 5)).astype(np.float32)
    batch = sw.codelength(L, name, chunk_rows=1024)  # three chunks inside codelength
    stream = sw.streaming(name, 5)
    parts, start = [], 0
    for size in (1, 7, 300, 16, 1000, 152, 1024):
        parts.append(
            stream.update(L[start] if size == 1 else L[start : start + size])
        )  # (K,) or (B, K)
        start += size
    assert start == 2500 and stream.num_steps == 2500
    assert stream.total_nats == pytest.approx(batch.total_nats, rel=1e-6)
    np.testing.assert_allclose(np.concatenate(parts), batch.per_step_nats, rtol=1e-5)
    np.testing.assert_allclose(
        stream.log_posterior,
        np.log(
            sw.codelength(np.vstack([L, np.zeros((1, 5))]), name, chunk_rows=1024).posterior[-1]
        ),
        atol=1e-5,
    )
    chunked = sw.codelength_chunked((L[i : i + 500] for i in range(0, 2500, 500)), name)
    assert chunked.total_nats == pytest.approx(batch.total_nats, rel=1e-6)
    # the reference: float64 sum of closed-form steps for the memoryless strategy
    if name == "elementwise":
        want = -logsumexp(np.log(0.2) - L.astype(np.float64), axis=1).sum()
        assert stream.total_nats == pytest.approx(want, rel=1e-7)


def test_pure_step_inside_lax_scan():
    rng = np.random.default_rng(9)
    L = rng.exponential(1.0, size=(40, 32, 3)).astype(np.float32)  # 40 batches of 32 rows
    strategy = sw.FixedShare(m=2)

    @jax.jit
    def run(L):
        def body(state, rows):
            return sw.step(strategy, state, rows)

        return jax.lax.scan(body, sw.init_state(strategy, 3), L)

    state, ps = run(L)
    ref = sw.codelength(L.reshape(-1, 3), strategy)
    np.testing.assert_allclose(np.asarray(ps).reshape(-1), ref.per_step_nats, rtol=1e-5)
    assert int(state.t) == 1280
    assert float(state.total_nats) == pytest.approx(ref.total_nats, rel=1e-6)  # Kahan in float32


def test_float32_float64_and_jax_inputs_agree():
    L = np.random.default_rng(4).exponential(1.0, size=(300, 4))
    for name in sw.names():
        a = sw.codelength(L, name).total_nats
        assert sw.codelength(L.astype(np.float32), name).total_nats == pytest.approx(a, rel=1e-6)
        assert sw.codelength(jnp.asarray(L, jnp.float32), name).total_nats == pytest.approx(
            a, rel=1e-6
        )


def test_total_precision_against_float64_reference():
    # 200k steps: float32 per step, float64 accumulation.
    L = np.random.default_rng(6).exponential(1.0, size=(200_000, 3)).astype(np.float32)
    want = -logsumexp(np.log(np.array([0.5, 0.3, 0.2])) - L.astype(np.float64), axis=1).sum()
    got = sw.codelength(L, sw.ElementwiseMixture(weights=[0.5, 0.3, 0.2]), posterior=False)
    assert got.total_nats == pytest.approx(want, rel=1e-7)


# ---------------------------------------------------------------- +inf


def test_diverged_expert_gets_zero_weight():
    rng = np.random.default_rng(8)
    L = rng.exponential(1.0, size=(60, 3))
    L[20:, 2] = np.inf
    res = sw.codelength(L, "bayes")
    want = -logsumexp(np.log(1 / 3) - L[:, :2].sum(0))
    assert res.total_nats == pytest.approx(want, rel=1e-6)
    assert np.all(res.posterior[21:, 2] == 0.0) and res.posterior[20, 2] > 0
    for name in ("fixed-share", "switch", "run-length", "elementwise"):
        small = L[:7].copy()
        small[3:, 1] = np.inf
        strategy = sw.get_strategy(name)
        total, post = brute_force(small, reference_prior(strategy, 7, 3))
        res = sw.codelength(small, strategy)
        assert res.total_nats == pytest.approx(total, rel=2e-6)
        np.testing.assert_allclose(res.posterior, post, atol=2e-6)


def test_all_infinite_row_names_the_step():
    L = np.ones((10, 3))
    L[6] = np.inf
    for name in sw.names():
        with pytest.raises(ValueError, match=r"losses: every expert .* step t=7"):
            sw.codelength(L, name)
    stream = sw.streaming("fixed-share", 3)
    stream.update(L[:5])
    with pytest.raises(ValueError, match=r"chunk: every expert .* step t=7"):
        stream.update(L[5:])
    assert stream.num_steps == 5  # the bad chunk was not consumed
    stream.update(L[5:6])
    assert stream.num_steps == 6


def test_zero_probability_mixture_is_an_error():
    L = np.ones((10, 2))
    L[2, 0] = np.inf  # expert 0 fails at t=3: Bayes drops it for good
    L[5, 1] = np.inf  # expert 1 fails at t=6: Bayes has no mass left
    with pytest.raises(ValueError, match="zero probability at step t=6"):
        sw.codelength(L, "bayes")
    # fixed share moves mass back to expert 0 after t=3
    total, _ = brute_force(L[:7], reference_prior(sw.FixedShare(), 7, 2))
    assert sw.codelength(L[:7], "fixed-share").total_nats == pytest.approx(total, rel=2e-6)


# ---------------------------------------------------------------- result helpers


def test_units_and_frame():
    L = np.random.default_rng(10).exponential(1.0, size=(30, 3))
    r = sw.codelength(L, "switch")
    assert r.total_bits == pytest.approx(r.total_nats / math.log(2))
    assert r.bits_per_example == pytest.approx(r.total_nats / math.log(2) / 30)
    assert r.nats_per_example == pytest.approx(r.total_nats / 30)
    assert r.cumulative_nats[-1] == pytest.approx(r.total_nats)
    np.testing.assert_allclose(r.posterior.sum(1), 1.0, atol=1e-5)
    # summary: a one-row DataFrame with units in the column names, as Report.summary()
    row = r.summary().iloc[0]
    assert len(r.summary()) == 1 and row["N"] == 30
    assert row["per example [bits]"] == pytest.approx(r.bits_per_example)
    assert row["total [nats]"] == r.total_nats
    # t = examples seen before the prediction, 0 … N−1, as Report.posterior and the CLI
    assert list(r.to_frame(every=10).t.unique()) == [0, 10, 20]
    df = r.to_frame(names=["lin", "mlp1", "mlp2"])
    assert list(df.columns) == ["t", "expert", "readout", "probability"] and len(df) == 90
    sub = df[(df.t == 4) & (df.expert == "mlp1")]
    assert sub.probability.item() == pytest.approx(r.posterior[4, 1])
    np.testing.assert_allclose(df[df.t == 0].probability, 1 / 3, rtol=1e-6)  # the prior
    from mdlnb.api.evaluation import posterior_frame

    pd.testing.assert_frame_equal(df, posterior_frame(r.posterior, ["lin", "mlp1", "mlp2"]))
    ro = r.to_frame(names=["lin", "mlp1", "mlp2"], readouts=["linear", "mlp1", "mlp1"])
    assert list(ro.readout[ro.t == 0]) == ["linear", "mlp1", "mlp1"]
    np.testing.assert_allclose(df.groupby("t", observed=True).probability.sum(), 1.0, atol=1e-5)
    with pytest.raises(ValueError, match="names"):
        r.to_frame(names=["a"])
    with pytest.raises(ValueError, match="posterior"):
        sw.codelength(L, "switch", posterior=False).posterior  # noqa: B018 - the access raises


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "bad, match",
    [
        (np.ones(5), "losses: expected a 2-D"),
        (np.ones((2, 3, 4)), "losses: expected a 2-D"),
        (np.ones((0, 3)), "losses: needs N >= 1"),
        (np.ones((3, 0)), "losses: needs N >= 1"),
        (
            np.array([[np.nan, np.nan], [1.0, 1.0]]),
            r"losses: every expert has an infinite loss at step t=1",
        ),
        (np.array([[1.0, 1.0], [1.0, -0.5]]), r"losses: negative loss at step t=2"),
        (np.array([[1.0, 1.0], [-np.inf, 1.0]]), r"losses: negative loss at step t=2"),
        (np.array([["a", "b"]]), "losses"),
    ],
)
def test_bad_losses(bad, match):
    with pytest.raises(ValueError, match=match):
        sw.codelength(bad, "bayes")


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: sw.FixedShare(m=0.5), "m: must be"),
        (lambda: sw.FixedShare(m=float("nan")), "m: must be"),
        (lambda: sw.FixedShare(alpha=1.5), r"alpha: must lie in \[0, 1\]"),
        (lambda: sw.FixedShare(alpha=-0.1), "alpha"),
        (lambda: sw.FixedShare(alpha=0.1, m=2), "alpha, m"),
        (lambda: sw.ElementwiseMixture(weights=[0.5, 0.6]), "weights: must sum to 1"),
        (lambda: sw.FixedShare(weights=[1.5, -0.5]), "weights: entries must be"),
        (lambda: sw.BayesianMixture(initial=[0.2, 0.2]), "initial: must sum to 1"),
        (lambda: sw.SwitchDistribution(stable=2.0), "stable"),
        (lambda: sw.RunLength(max_run=0), "max_run"),
        (lambda: sw.RunLength(max_run=2.5), "max_run"),
        (lambda: sw.RunLength(phases=0), "phases"),
        (lambda: sw.get_strategy("nope"), "strategy: unknown strategy 'nope'"),
        (lambda: sw.get_strategy(3), "strategy"),
        (lambda: sw.get_strategy("fixed-share", beta=1), "strategy: bad options"),
        (lambda: sw.codelength(np.ones((3, 2)), "teleport"), "strategy: unknown"),
        (
            lambda: sw.codelength(np.ones((3, 2)), sw.FixedShare(weights=[0.2, 0.3, 0.5])),
            "weights: has 3 entries but the losses have K = 2",
        ),
        (lambda: sw.streaming("bayes", 3).update(np.ones((2, 4))), "chunk: has 4 experts"),
        (lambda: sw.init_state(sw.FixedShare(), 0), "num_experts"),
    ],
)
def test_value_errors(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_get_strategy():
    assert sw.get_strategy("fixed_share", m=3) == sw.FixedShare(m=3)
    assert sw.get_strategy("Run-Length", max_run=4) == sw.RunLength(max_run=4)
    s = sw.SwitchDistribution()
    assert sw.get_strategy(s) is s
    assert sw.FixedShare() == sw.FixedShare(m=2)


# ---------------------------------------------------------------- properties


@settings(max_examples=25, deadline=None)
@given(
    st.integers(1, 6),
    st.integers(1, 3),
    st.integers(0, 2**31 - 1),
    st.sampled_from(["bayes", "elementwise", "fixed-share", "switch", "run-length"]),
)
def test_property_between_single_sequence_and_zero(n, k, seed, name):
    """Every code costs at least 0 and at most any one sequence's loss − log prior;
    in particular the constant sequences."""
    L = np.random.default_rng(seed).exponential(1.0, size=(n, k))
    strategy = sw.get_strategy(name, **({"max_run": 2} if name == "run-length" else {}))
    prior = reference_prior(strategy, n, k)
    total = sw.codelength(L, strategy).total_nats
    assert total >= -1e-6
    for e in range(k):
        seq = (e,) * n
        assert total <= L[:, e].sum() - math.log(prior[seq]) + 1e-5 * (1 + total)
    assert total == pytest.approx(brute_force(L, prior)[0], rel=5e-6, abs=1e-6)


@pytest.mark.parametrize("name", ["fixed-share", "switch"])
def test_device_array_in_place_path_matches_chunked(name):
    # A JAX array longer than chunk_rows takes the single in-place pass (run_all).
    L = np.random.default_rng(12).exponential(1.0, size=(2500, 4)).astype(np.float32)
    a = sw.codelength(L, name, chunk_rows=1024)
    b = sw.codelength(jnp.asarray(L), name, chunk_rows=1024)
    assert b.total_nats == pytest.approx(a.total_nats, rel=1e-6)
    np.testing.assert_allclose(b.log_posterior, a.log_posterior, atol=1e-5)
    bad = L.copy()
    bad[2400, :] = np.nan
    with pytest.raises(
        ValueError, match="losses: every expert has an infinite loss at step t=2401"
    ):
        sw.codelength(jnp.asarray(bad), name, chunk_rows=1024)


def test_numeric_parameters_do_not_recompile(monkeypatch):
    from mdlnb.infra import _mapguard
    from mdlnb.switching import forward

    # the map guard may drop every compiled program between two calls: not here
    monkeypatch.setattr(_mapguard, "relieve", lambda **_: False)
    L = np.random.default_rng(14).exponential(1.0, size=(100, 3))
    sw.codelength(L, sw.FixedShare(m=2))
    before = forward.run_chunk._cache_size()
    totals = [
        sw.codelength(L, sw.FixedShare(m=m, weights=w)).total_nats
        for m, w in [(1.5, None), (3.0, [0.2, 0.3, 0.5])]
    ]
    assert forward.run_chunk._cache_size() == before
    # and the traced numbers are really used: both differ from m = 2 and each other
    assert (
        len({round(v, 6) for v in totals + [sw.codelength(L, sw.FixedShare(m=2)).total_nats]}) == 3
    )


def test_bayes_posterior_does_not_drift_over_long_sequences():
    # No mixing → float32 rounding would accumulate; the double-float log weights keep it exact.
    n, k = 100_000, 4
    L = (np.random.default_rng(15).exponential(1.0, size=(n, k)) + [0, 1e-3, 2e-3, 3e-3]).astype(
        np.float32
    )
    cum = np.vstack([np.zeros(k), np.cumsum(L.astype(np.float64), 0)[:-1]])
    want = np.exp(-cum - logsumexp(-cum, axis=1, keepdims=True))
    got = sw.codelength(L, "bayes").posterior
    big = want > 1e-3
    assert np.max(np.abs(got - want)[big] / want[big]) < 1e-5


# ---------------------------------------------------------------- diverged experts (NaN = +inf)


def _diverging(n=7, k=3, col=1, at=3, seed=21):
    """Losses with expert ``col`` NaN from row ``at`` on (what an overflowed expert gives)."""
    L = np.random.default_rng(seed).exponential(1.0, size=(n, k))
    L[at:, col] = np.nan
    return L


@pytest.mark.parametrize("strategy", STRATEGIES, ids=repr)
def test_nan_column_is_an_infinite_loss_against_brute_force(strategy):
    """A NaN column is coded as +inf (probability 0): total and posterior match the
    brute-force sum over all 3^7 sequences with an inf column, in the batch pass,
    the stream, and the pure step."""
    L = _diverging()
    ref_L = np.where(np.isnan(L), np.inf, L)
    total, post = brute_force(ref_L, reference_prior(strategy, 7, 3))
    assert math.isfinite(total)
    res = sw.codelength(L, strategy)
    assert res.total_nats == pytest.approx(total, rel=2e-6)
    np.testing.assert_allclose(res.posterior, post, atol=2e-6)
    assert np.all(np.isfinite(res.per_step_nats))
    stream = sw.streaming(strategy, 3)
    stream.update(L[:2])
    stream.update(L[2:])
    assert stream.total_nats == pytest.approx(total, rel=2e-6)
    state, ps = sw.step(strategy, sw.init_state(strategy, 3), jnp.asarray(L, jnp.float32))
    assert float(np.sum(np.asarray(ps, np.float64))) == pytest.approx(total, rel=2e-6)


def test_diverged_expert_has_zero_weight_from_then_on():
    L = _diverging(n=40, k=3, col=2, at=10)
    bayes = sw.codelength(L, "bayes")
    assert np.all(bayes.posterior[11:, 2] == 0.0) and bayes.posterior[10, 2] > 0
    # closed form (Bayes): −log Σ_k w_k exp(−Σ_t L_tk) over the two finite experts
    assert bayes.total_nats == pytest.approx(-logsumexp(np.log(1 / 3) - L[:, :2].sum(0)), rel=1e-6)
    # fixed share: the filtered weight of the diverged expert is 0, so its predictive
    # weight at t+1 is exactly the share α_{t+1}·w_k = (m−1)/(t+1)·(1/3) it is given back
    fs = sw.codelength(L, sw.FixedShare(m=2))
    t = np.arange(12, 41)  # 1-indexed steps after t = 11
    np.testing.assert_allclose(fs.posterior[t - 1, 2], 1.0 / t / 3, rtol=1e-5)


def test_diverged_lists_experts_and_first_step():
    L = np.ones((6, 4), np.float32)
    L[3:, 1] = np.nan  # expert 1 from t=4
    L[1, 3] = np.inf  # expert 3 at t=2 only
    L[5, 3] = np.nan
    assert sw.diverged(L) == [(1, 4), (3, 2)]
    assert sw.diverged(np.ones((3, 2))) == [] and sw.diverged(np.ones((3, 2), int)) == []
    with pytest.raises(ValueError, match="losses: expected a 2-D"):
        sw.diverged(np.ones(3))


@pytest.fixture(scope="module")
def diverging_digits():
    """A real run: digits, a board whose third expert (lr = 1e20) overflows to NaN."""
    import mdlnb
    from mdlnb import prequential
    from mdlnb.board import readouts
    from mdlnb.board.experts import Expert

    task = mdlnb.data.load("digits")
    task = mdlnb.Task.from_arrays(
        task.features[:320], task.y[:320], num_classes=10, name="digits320"
    )
    board = [
        Expert(readouts.linear(), 1e-2, replay_streams=2),
        Expert(readouts.mlp(1, 32), 1e-3, replay_streams=2),
        Expert(readouts.mlp(1, 32), 1e20, replay_streams=2),
    ]
    return prequential.run(task, board, batch_size=32, cache=False)


@pytest.mark.slow
def test_real_diverging_expert_is_reported_and_the_code_stays_finite(diverging_digits):
    from mdlnb import Report

    lm = diverging_digits
    name = lm.names[2]
    assert lm.diverged() == [(name, 33)]  # finite on the uniform first batch
    assert np.all(lm.losses[32:, 2] == np.inf)  # NaN stored as +inf
    assert np.all(np.isfinite(lm.losses[:, :2]))
    assert lm.best_expert()[0] != 2
    with pytest.warns(
        sw.DivergenceWarning, match=rf"1 of 3 experts diverged.*{re.escape(name)} at t=33"
    ):
        rep = Report.from_losses(lm, "bayes")
    assert rep.diverged == [(name, 33)]
    L64 = lm.losses.astype(np.float64)
    want = -logsumexp(np.log(1 / 3) - L64[:, :2].sum(0))  # Bayes closed form, 2 finite experts
    assert rep.total_nats == pytest.approx(want, rel=1e-6)
    with pytest.warns(sw.DivergenceWarning):
        fs = Report.from_losses(lm)  # default fixed share (m = 11)
    # never worse than the best expert plus −log of fixed share's prior on "always that expert":
    # w_k Π_{t=2..N} (1 − α_t + α_t w_k), α_t = min(1, (m − 1)/t), w_k = 1/3
    a = np.minimum(1.0, 10.0 / np.arange(2, lm.n + 1))
    bound = lm.best_expert()[1] + math.log(3) - np.log(1 - a + a / 3).sum()
    assert math.isfinite(fs.total_nats) and lm.best_expert()[1] - 50 < fs.total_nats <= bound
    # around the divergence (rows 28–35), against brute force over all 3^8 sequences
    window = L64[28:36]
    total, post = brute_force(window, reference_prior(sw.FixedShare(alpha=0.1), 8, 3))
    res = sw.codelength(window, sw.FixedShare(alpha=0.1))
    assert res.total_nats == pytest.approx(total, rel=2e-6)
    np.testing.assert_allclose(res.posterior, post, atol=2e-6)


def _brute_force_log(L, prior):
    """(total, posterior) by enumeration in log space (float64): exact for huge losses."""
    n, k = L.shape
    seqs = [(s, p) for s, p in prior.items() if p > 0]
    logs = np.array([math.log(p) - L[np.arange(n), list(s)].sum() for s, p in seqs])
    total = -logsumexp(logs)
    post = np.zeros((n, k))
    for t in range(n):
        prefix = np.array([math.log(p) - L[np.arange(t), list(s)[:t]].sum() for s, p in seqs])
        for j in range(k):
            mask = np.array([s[t] == j for s, _ in seqs])
            post[t, j] = logsumexp(prefix[mask]) if mask.any() else -np.inf
        post[t] = np.exp(post[t] - logsumexp(post[t]))
    return total, post


@pytest.mark.parametrize("strategy", STRATEGIES, ids=repr)
def test_huge_finite_losses_keep_the_posterior_normalised(strategy):
    """Found by fuzzing: losses of 1e10–1e30 nats (a nearly diverged expert gives 1e27)
    left the Bayes weights unnormalised (posterior summing to 1.5, a negative step loss):
    the log-normalizer was a difference of numbers near −1e10. Against log-space brute force."""
    L = np.array(
        [
            [0, 0, 1e10],
            [1e10, 1e10, 0],
            [0, 0, 0],
            [1e30, 3e10, 1e30],
            [2.0, 0.5, 1.0],
            [1e30, 1e30, 1e30],
        ],
        np.float32,
    )
    total, post = _brute_force_log(L.astype(np.float64), reference_prior(strategy, 6, 3))
    res = sw.codelength(L, strategy)
    assert res.total_nats == pytest.approx(total, rel=1e-6)
    np.testing.assert_allclose(res.posterior, post, atol=2e-6)
    assert np.all(res.per_step_nats >= 0)
