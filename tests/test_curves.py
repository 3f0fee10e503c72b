"""Loss-data curves and the measures read off them (SDL paper Sec. 2–4, App. A–C)."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from mdlnb import data
from mdlnb.baselines import curves
from mdlnb.board import readouts
from mdlnb.core import _fit

N = np.array([10, 20, 40, 80])
L = np.array([2.0, 1.0, 0.5, 0.1])
C = 10


def hand_curve(loss=L):
    return curves.LossDataCurve.from_arrays(N, loss, num_classes=C, representation="hand")


def per_example_costs(n, loss, c, upto):
    """Reference by brute force: the cost of each example 0..upto-1 under the block code."""
    out = []
    for i in range(upto):
        trained = [k for k in range(len(n)) if n[k] <= i]
        out.append(math.log(c) if not trained else loss[trained[-1]])
    return np.array(out)


# ----------------------------------------------------------------------------- measures by hand


def test_va_mi_on_a_hand_curve():
    c = hand_curve()
    assert curves.va(c, 30).value == 1.0  # the probe trained on 20 <= 30 examples
    assert curves.va(c, 10).value == 2.0
    assert curves.va(c).value == 0.1 and curves.va(c).n == 80
    m = curves.mi(c)
    assert m.value == 0.1 and m.status == "estimate"


def test_mdl_is_the_left_edge_block_code():
    c = hand_curve()
    assert curves.mdl(c).value == pytest.approx(10 * math.log(10) + 10 * 2.0 + 20 * 1.0 + 40 * 0.5)
    assert curves.mdl(c, n=30).value == pytest.approx(10 * math.log(10) + 10 * 2.0 + 10 * 1.0)
    assert curves.mdl(c, n=7).value == pytest.approx(7 * math.log(10))
    assert "left-edge" in curves.mdl(c).convention and "log C" in curves.mdl(c).convention


def test_sdl_tight_and_lower_bound_by_hand():
    c = hand_curve()
    s = curves.sdl(c, 0.3)  # L(n_S) = 0.1 <= 0.15: tight (Alg. 1)
    assert s.value == pytest.approx(10 * (math.log(10) - 0.3) + 10 * 1.7 + 20 * 0.7 + 40 * 0.2)
    assert s.status == "tight" and s.tight
    s = curves.sdl(c, 0.15)  # L(n_S) = 0.1 > 0.075: crossed eps, but only a lower bound
    assert s.value == pytest.approx(10 * (math.log(10) - 0.15) + 10 * 1.85 + 20 * 0.85 + 40 * 0.35)
    assert s.status == "lower bound" and not s.tight
    s = curves.sdl(c, 3.0)  # eps above every loss (and log C): nothing in surplus
    assert s.value == 0.0 and s.status == "tight"


def test_esc_first_crossing_and_exceeded():
    c = hand_curve()
    e = curves.esc(c, 0.5)
    assert (e.n, e.bracket, e.exceeded) == (40, (20, 40), False)
    assert curves.esc(c, 3.0).n == 10 and curves.esc(c, 3.0).bracket == (0, 10)
    e = curves.esc(c, 0.05)
    assert e.exceeded and e.n is None and str(e) == "> 80" and e.value == math.inf
    assert e.status == "lower bound"


def test_measures_match_brute_force_on_random_curves():
    rng = np.random.default_rng(0)
    for _ in range(20):
        n = np.unique(rng.integers(1, 300, 8))
        loss = np.sort(rng.uniform(0, 3, len(n)))[::-1]
        c, eps = int(rng.integers(2, 20)), float(rng.uniform(0.05, 2))
        curve = curves.LossDataCurve.from_arrays(n, loss, num_classes=c)
        upto = int(rng.integers(1, n[-1] + 1))
        ref = per_example_costs(n, loss, c, upto)
        assert curves.mdl(curve, n=upto).value == pytest.approx(ref.sum())
        ref_all = per_example_costs(n, loss, c, int(n[-1]))
        assert curves.sdl(curve, eps).value == pytest.approx(np.clip(ref_all - eps, 0, None).sum())
        below = [k for k in n if loss[list(n).index(k)] <= eps]
        assert curves.esc(curve, eps).n == (below[0] if below else None)


def test_sdl_equals_algorithm_1_on_a_dense_grid():
    """Alg. 1: m = Σ_{n=1}^{M} [L_n − ε]₊, tight iff L_M <= ε/2. On every integer n
    (no uniform first block: plain arrays carry no C) the left-edge sum is the same
    whenever Alg. 1 says tight (the last term is then 0)."""
    m = np.arange(1, 201)
    loss = 0.02 + 3.0 / m
    eps = 0.1
    alg1 = np.clip(loss - eps, 0, None).sum()
    s = curves.sdl((m, loss), eps)
    assert s.status == "tight" and loss[-1] <= eps / 2
    assert s.value == pytest.approx(alg1)
    assert "left out" in s.convention
    s = curves.sdl((m, loss), 0.07)  # L_M = 0.035 > 0.035? equal → tight boundary
    assert s.status == ("tight" if loss[-1] <= 0.035 else "lower bound")
    s = curves.sdl((m, loss), 0.06)
    assert s.status == "lower bound"


def test_plain_arrays_average_seeds_and_need_num_classes_for_mdl():
    two = np.stack([L - 0.05, L + 0.05])
    assert curves.va((N, two), 40).value == pytest.approx(0.5)
    with pytest.raises(ValueError, match="num_classes"):
        curves.mdl((N, L))
    assert curves.mdl((N, L), C).value == pytest.approx(curves.mdl(hand_curve()).value)


@pytest.mark.parametrize(
    "call, arg",
    [
        (lambda: curves.va((N[::-1], L), 20), "curve"),
        (lambda: curves.va((N, L[:3]), 20), "curve"),
        (lambda: curves.va((N, np.array([1, np.nan, 1, 1])), 20), "curve"),
        (lambda: curves.va(np.zeros(3), 20), "curve"),
        (lambda: curves.va(hand_curve(), 5), "n"),
        (lambda: curves.va(hand_curve(), 100), "n"),
        (lambda: curves.sdl(hand_curve(), -1.0), "eps"),
        (lambda: curves.esc(hand_curve(), "x"), "eps"),
        (lambda: curves.mdl(hand_curve(), 1), "num_classes"),
        (lambda: curves.esc_refine(lambda s: s, 0.1, n_max=10, threshold="third"), "threshold"),
        (lambda: curves.esc_refine(lambda s: s, 0.1), "n_max"),
        (lambda: curves.esc_refine(3, 0.1, n_max=10), "source"),
    ],
)
def test_bad_input_names_the_argument(call, arg):
    with pytest.raises(ValueError, match=arg):
        call()


# ----------------------------------------------------------------------------- Alg. 2


def smooth(sizes):
    return 0.1 + 5.0 / np.asarray(sizes, np.float64) ** 0.7


def test_esc_refine_matches_a_dense_grid_with_few_evaluations():
    eps, top = 0.2, 100_000
    dense = np.arange(1, top + 1)
    truth = int(dense[np.argmax(smooth(dense) <= eps)])
    calls = []

    def probe(sizes):
        calls.append(len(sizes))
        return smooth(sizes)

    r = curves.esc_refine(probe, eps, n_max=top, rounds=6)
    assert r.n == truth and r.bracket[1] == truth and r.bracket[1] - r.bracket[0] == 1
    assert r.new_sizes == sum(calls) < 60  # vs 100,000 for the dense grid
    # starting from a coarse log-uniform curve: the first round is already done
    grid = curves.log_grid(top)
    r2 = curves.esc_refine(probe, eps, curve=(grid, smooth(grid)), rounds=6)
    assert r2.n == truth and r2.new_sizes < r.new_sizes
    assert (
        curves.esc((grid, smooth(grid)), eps).bracket[0]
        < truth
        <= curves.esc((grid, smooth(grid)), eps).n
    )
    # Alg. 2's own threshold, eps/2
    half = int(dense[np.argmax(smooth(dense) <= 0.3 / 2)])
    assert curves.esc_refine(probe, 0.3, n_max=top, rounds=6, threshold="half").n == half
    # never reached
    r3 = curves.esc_refine(probe, 0.05, n_max=top)
    assert r3.exceeded and str(r3) == f"> {top}" and r3.rounds == 1


# ----------------------------------------------------------------------------- training


@pytest.fixture(scope="module")
def digits():
    return data.load("digits")


def test_prefixes_are_nested():
    p = curves.permutations(50, [0, 1, 2])
    for row in p:
        assert sorted(row) == list(range(50))
        for a, b in [(5, 10), (10, 49)]:
            assert set(row[:a]) <= set(row[:b])
    assert not np.array_equal(p[0], p[1])


def test_vmapped_curve_equals_one_probe_trained_alone(digits):
    """The one-call vmapped trainer vs a plain loop over `_fit.step` on the prefix only."""
    ro = readouts.mlp(1, 32)
    sizes, seeds, steps, b = [12, 40, 150], [3, 7], 25, 16
    c = curves.loss_data_curve(
        digits, ro, sizes=sizes, seeds=seeds, steps=steps, batch_size=b, learning_rate=3e-3
    )
    pool, test = curves.split_test(digits, None)
    mu = pool.features.astype(np.float64).mean(0)
    sd = pool.features.astype(np.float64).std(0)
    sd = np.where(sd > 1e-6, sd, 1.0)
    z = lambda a: ((a - mu) / sd).astype(np.float32)
    h = _fit.hyper(3e-3)
    step = jax.jit(lambda st, xb, yb: _fit.step(ro.apply, st, h, xb, yb, 10, jnp.ones(b)))
    for r, s in enumerate(seeds):
        perm = np.random.default_rng(s).permutation(pool.n)
        key = jax.random.PRNGKey(s)
        for k, n in enumerate(sizes):
            xp, yp = z(pool.features[perm[:n]]), pool.y[perm[:n]]  # only the prefix
            st = _fit.init_state(ro.init, jax.random.fold_in(key, 0), xp.shape[1], 10, h)
            kd = jax.random.fold_in(key, 1)
            for i in range(steps):
                j = np.asarray(jax.random.randint(jax.random.fold_in(kd, i), (b,), 0, n))
                st = step(st, xp[j], yp[j])
            logits = ro.apply(st.ema_params, z(test.features))
            ref = float(np.mean(_fit.example_losses(logits, jnp.asarray(test.y))))
            acc = float(np.mean(np.argmax(logits, 1) == test.y))
            assert c.loss[r, k] == pytest.approx(ref, abs=1e-5)
            assert c.accuracy[r, k] == pytest.approx(acc, abs=1e-6)


def test_chunked_call_equals_one_call(digits):
    kw = dict(sizes=[10, 30, 90], seeds=2, steps=30, learning_rate=1e-3)
    a = curves.loss_data_curve(digits, readouts.linear(), **kw)
    b = curves.loss_data_curve(digits, readouts.linear(), chunk=4, **kw)
    np.testing.assert_allclose(a.loss, b.loss, atol=1e-6)


def test_trained_loss_decreases_with_n_on_a_real_task(digits):
    c = curves.loss_data_curve(
        digits,
        readouts.linear(),
        seeds=2,
        steps=150,
        learning_rate=3e-3,
        sizes=curves.log_grid(1150, 8),
    )
    rho = stats.spearmanr(c.sizes, c.mean_loss).statistic
    assert rho < -0.9
    assert c.mean_loss[-1] < 0.5 * c.mean_loss[0]
    assert c.accuracy.mean(0)[-1] > 0.9
    f = c.frame()
    assert list(f.columns) == ["representation", "seed", "n", "loss [nats]", "accuracy"]
    assert len(f) == 2 * len(c.sizes)
    s = c.summary()
    np.testing.assert_allclose(s["loss std [nats]"], np.std(c.loss, 0, ddof=1))


def test_early_stopping_holds_out_the_end_of_the_prefix(digits):
    """With one checkpoint after training, early stopping keeps either the initial parameters
    (the uniform code, log C) or the probe trained on the first n − ⌈f·n⌉ examples of the prefix
    with the same keys: the curve at (20, 200), f = 0.25, is the plain one at (15, 150) or log 10."""
    kw = dict(seeds=[0, 4], steps=30, learning_rate=1e-2)
    a = curves.loss_data_curve(
        digits, readouts.mlp(1, 16), sizes=[20, 200], early_stopping=0.25, evals=1, **kw
    )
    b = curves.loss_data_curve(digits, readouts.mlp(1, 16), sizes=[15, 150], **kw)
    trained = np.isclose(a.loss, b.loss, atol=1e-6)
    initial = np.isclose(a.loss, math.log(10), atol=1e-6)
    assert np.all(trained | initial) and trained.sum() >= 3
    assert np.all(trained[:, 1])  # 150 examples: training beats the uniform code
    assert a.meta["early_stopping"] == 0.25
    with pytest.raises(ValueError, match="early_stopping"):
        curves.loss_data_curve(digits, readouts.linear(), early_stopping=1.5, **kw)


def test_loss_data_curve_bad_input(digits):
    with pytest.raises(ValueError, match="sizes"):
        curves.loss_data_curve(digits, readouts.linear(), sizes=[10, 5000])
    with pytest.raises(ValueError, match="seeds"):
        curves.loss_data_curve(digits, readouts.linear(), seeds=0)
    with pytest.raises(ValueError, match="readout"):
        curves.loss_data_curve(digits, "mlp")
    with pytest.raises(ValueError, match="task"):
        curves.loss_data_curve((digits.x, digits.y))


def test_esc_refine_trains_only_inside_the_crossing(digits):
    kw = dict(readout=readouts.linear(), seeds=2, steps=60, learning_rate=3e-3)
    pool, test = curves.split_test(digits, None)
    c = curves.loss_data_curve(pool, test=test, sizes=curves.log_grid(pool.n, 6), **kw)
    eps = float(c.mean_loss[3])  # crosses between sizes 2 and 3 (or at 3)
    first = curves.esc(c, eps)
    r = curves.esc_refine(pool, eps, curve=c, test=test, rounds=1, **kw)
    new = [n for n in r.evaluated if n not in set(c.sizes.tolist())]
    assert new and all(first.bracket[0] < n <= first.bracket[1] for n in new)
    assert r.n <= first.n and r.curve is not None and len(r.curve.sizes) == len(c.sizes) + len(new)


def test_epsilon_from_probe_records_its_source(digits):
    e = curves.epsilon_from_probe(digits, readouts.linear(), seeds=2, steps=100, learning_rate=3e-3)
    assert 0 < e.value < math.log(10) and "Sec. 4.3" in e.source
    assert curves.sdl(hand_curve(), e).eps_source == e.source


# ----------------------------------------------------------------------------- parity toy


def test_noisy_label_loss_tends_to_binary_entropy():
    alpha = 0.1
    raw, noisy, _ = curves.parity_tasks(8, 25_000, alpha=alpha, seed=1)
    c = curves.algorithm_curve(noisy, "bernoulli", seeds=3, sizes=[10, 100, 20_000])
    h = -(alpha * math.log(alpha) + (1 - alpha) * math.log(1 - alpha))
    assert curves.binary_entropy(alpha) == pytest.approx(h)
    assert abs(c.mean_loss[-1] - h) < 0.01  # held-out noise rate ≈ alpha
    assert c.mean_loss[0] > c.mean_loss[-1]


def _span_brute_force(rows):
    span = {tuple(np.zeros(rows.shape[1], int))}
    for r in rows:
        span |= {tuple((np.array(v) + r) % 2) for v in span}
    return span


def test_gf2_rref_rank_and_prediction_by_enumeration():
    rng = np.random.default_rng(0)
    d = 6
    for m in (2, 5, 6, 9):
        x = rng.integers(0, 2, (m, d))
        rows, piv = curves.gf2_rref(x)
        assert 2 ** len(piv) == len(_span_brute_force(x))
        assert np.all(rows[:, piv] == np.eye(len(piv), dtype=np.uint8))
        s = rng.integers(0, 2, d)
        y = x @ s % 2
        xt = rng.integers(0, 2, (40, d))
        p = curves.gf2_fit(x, y, xt)
        # every secret consistent with the data, equally likely a priori
        secrets = [np.array(v) for v in np.ndindex(*(2,) * d) if np.all(x @ np.array(v) % 2 == y)]
        ref = np.mean([xt @ t % 2 for t in secrets], axis=0)
        np.testing.assert_allclose(p[:, 1], ref)


def test_gf2_zero_error_probability():
    """P(rank d among n uniform rows) = ∏_{i<d}(1 − 2^{i−n}) ≥ 1 − 2^{−(n−d)}; check empirically."""
    d, reps = 8, 400
    raw, _, _ = curves.parity_tasks(d, 3000, alpha=0.1, seed=2)
    c = curves.algorithm_curve(raw, "gf2", seeds=reps, sizes=[d, d + 2, d + 5])
    zero = (c.accuracy == 1.0).mean(axis=0)
    for k, n in enumerate(c.sizes):
        exact = np.prod([1 - 2.0 ** (i - n) for i in range(d)])
        assert exact >= 1 - 2.0 ** (d - n)
        assert abs(zero[k] - exact) < 4 * math.sqrt(exact * (1 - exact) / reps) + 0.01
    # the loss is log 2 × P(test x outside the span): 0 when the error is 0
    assert np.all(c.loss[c.accuracy == 1.0] == 0.0)


def test_parity_rankings_flip_for_va_not_for_sdl():
    raw, noisy, _ = curves.parity_tasks(10, 1000, alpha=0.1, seed=0)
    a = curves.algorithm_curve(noisy, "bernoulli", seeds=8, representation="A")
    b = curves.algorithm_curve(raw, "gf2", seeds=8, representation="B")
    assert curves.va(a, 5).value < curves.va(b, 5).value  # n << d: noisy label wins
    assert curves.va(a, 100).value > curves.va(b, 100).value  # n >> d: raw bits win
    eps = curves.binary_entropy(0.1) / 2
    assert curves.sdl(b, eps).tight and not curves.sdl(a, eps).tight
    assert curves.esc(a, eps).exceeded and not curves.esc(b, eps).exceeded
    with pytest.raises(ValueError, match="alpha"):
        curves.parity_tasks(4, 10, alpha=0.7)
    with pytest.raises(ValueError, match="y"):
        curves.gf2_fit(np.array([[1, 0], [1, 0]]), np.array([0, 1]), np.zeros((1, 2), int))


def test_measure_table_and_rankings_as_the_evaluation_set_grows():
    """Hand curves (C = 2, ε = 0.15): A flat at 0.35, B reaching 0 at n = 16. Values by hand."""
    n = np.array([1, 2, 4, 8, 16, 32])
    a = curves.LossDataCurve("A", n, np.full((2, 6), 0.35), None, (0, 1), 2)
    b = curves.LossDataCurve(
        "B", n, np.array([[0.69, 0.69, 0.69, 0.3, 0.0, 0.0]] * 2), None, (0, 1), 2
    )
    t = curves.measure_table([a, b], 0.15, at=[2, 4, 8, 16, 32])
    r = curves.rankings(t).set_index(["measure", "n"])["prefers"]
    assert r[("VA", 2)] == "A" and r[("VA", 8)] == "B"
    assert r[("MDL", 4)] == "A" and r[("MDL", 32)] == "B"
    assert r[("SDL", 8)] == "undetermined (all lower bounds)"
    assert r[("SDL", 16)] == "undetermined (a lower bound is smaller)"  # A: ≥ 3.54 < B 5.52
    assert r[("SDL", 32)] == "B" and r[("eSC", 16)] == "B" and r[("eSC", 8)].startswith("undet")
    row = t.set_index(["representation", "measure", "n"])
    lg = math.log(2)
    assert row.loc[("B", "SDL", 16), "value"] == pytest.approx(
        lg - 0.15 + 0.54 + 2 * 0.54 + 4 * 0.54 + 8 * 0.15
    )
    assert row.loc[("A", "SDL", 16), "value"] == pytest.approx(lg - 0.15 + 15 * 0.2)
    assert row.loc[("A", "SDL", 16), "shown"].startswith("≥")
    assert (
        row.loc[("A", "eSC", 32), "shown"] == "> 32" and row.loc[("A", "eSC", 32), "exceeded"] == 1
    )
    assert row.loc[("A", "MDL", 32), "value"] == pytest.approx(lg + 31 * 0.35)
    assert row.loc[("B", "MDL", 32), "seed std"] == 0.0
    off = curves.measure_table([a, b], 0.15, at=[3, 20]).set_index(
        ["representation", "measure", "n"]
    )
    assert off.loc[("B", "VA", 20), "value"] == 0.0 and off.loc[("B", "VA", 3), "value"] == 0.69
    assert off.loc[("B", "eSC", 20), "shown"] == "16"
    with pytest.raises(ValueError, match="n"):
        curves.truncate(a, 0)


def test_plot_draws_eps_and_the_esc_crossing():
    import matplotlib

    matplotlib.use("Agg")
    c = hand_curve()
    ax = curves.plot([c], 0.3)
    ys = [tuple(l.get_ydata()) for l in ax.lines]
    xs = [tuple(l.get_xdata()) for l in ax.lines]
    assert (0.3, 0.3) in ys  # the ε line
    assert (80, 80) in xs  # εSC = 80 at ε = 0.3
    assert ax.get_xscale() == "log"
    t = curves.measure_table([c], 0.3, at=[20, 80])
    axes = curves.plot_measures(t)
    assert len(axes) == 4 and axes[1].get_yscale() == "log"
    with pytest.raises(ValueError, match="table"):
        curves.plot_measures(t.drop(columns=["status"]))
    with pytest.raises(ValueError, match="curves"):
        curves.plot([], 0.3)
    import matplotlib.pyplot as plt

    plt.close("all")


def test_auto_chunk_by_hand():
    # linear 4 -> 3: 15 parameters, widths 3; 4 bytes × (5·15 + (3·2 + 5)·(3 + 4)) = 608 per probe
    from mdlnb.baselines.curves._curve import auto_chunk

    assert auto_chunk(readouts.linear(), 4, 3, 2, 5, budget=6080) == 10
    assert auto_chunk(readouts.linear(), 4, 3, 2, 5, budget=100) == 1


def test_winner_changes_reads_the_rankings():
    n = np.array([1, 2, 4, 8, 16, 32])
    a = curves.LossDataCurve("A", n, np.full((1, 6), 0.35), None, (0,), 2)
    b = curves.LossDataCurve("B", n, np.array([[0.69, 0.69, 0.69, 0.3, 0.0, 0.0]]), None, (0,), 2)
    ch = curves.winner_changes(curves.rankings(curves.measure_table([a, b], 0.15, at=[2, 8, 32])))
    ch = ch.set_index("measure")
    assert ch.loc["VA", "sequence"] == "A → B" and ch.loc["VA", "changed"]
    assert ch.loc["SDL", "sequence"] == "undetermined (all lower bounds) → B"
    assert ch.loc["SDL", "winners"] == "B" and not ch.loc["SDL", "changed"]
    with pytest.raises(ValueError, match="ranks"):
        curves.winner_changes(ch)


def test_winner_changes_keeps_returns():
    import pandas as pd

    ranks = pd.DataFrame(
        {
            "measure": ["VA"] * 4,
            "eps": [None] * 4,
            "n": [1, 2, 3, 4],
            "prefers": ["A", "B", "B", "A"],
        }
    )
    ch = curves.winner_changes(ranks).iloc[0]
    assert ch["sequence"] == "A → B → A" and ch["winners"] == "A, B, A" and ch["changed"]


def test_rankings_name_a_winner_only_beyond_the_seed_spread():
    import pandas as pd

    rows = []
    for n, (va_a, va_b, sd) in {10: (311.6, 313.7, 40.0), 100: (300.0, 400.0, 30.0)}.items():
        for rep, v in (("a", va_a), ("b", va_b)):
            rows.append(
                {
                    "representation": rep,
                    "measure": "MDL",
                    "n": n,
                    "eps": np.nan,
                    "value": v,
                    "shown": f"{v:.4g}",
                    "status": "value",
                    "seed std": sd,
                }
            )
    t = pd.DataFrame(rows)
    plain = curves.rankings(t).set_index("n")["prefers"]
    assert list(plain) == ["a", "a"]
    r = curves.rankings(t, spread=True).set_index("n")["prefers"]
    # 2.1 nats apart with sd 40 each: inside √(40² + 40²); 100 apart with sd 30: beyond 42.4
    assert r[10] == "tie (within the seed spread)" and r[100] == "a"
    ch = curves.winner_changes(curves.rankings(t, spread=True))
    assert not ch["changed"].any()
