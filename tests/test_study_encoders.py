"""The encoder study: per-pair measurements, resume, and the tables the notebooks show.

Tables are checked on hand-made frames against SciPy / plain NumPy; the
driver on a tiny real grid (two untrained encoders × digits and LFW faces).
"""

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from mdlnb import Task, prequential, switching
from mdlnb.board._arguments import resolve_protocol
from mdlnb.studies import encoder_grid as st
from mdlnb.studies.encoder_grid import _significance, _tables

# The notebooks' smoke profile (notebooks/profiles.yaml) is this grid: whichever runs first
# in a session pays, the others read the cached pairs.
TINY = dict(
    encoders=["random:resnet_XS", "random:resnet_S", "random:vit_XS"],
    tasks=["digits", "lfw_faces"],
    train_size=60,
    test_size=40,
    protocol="small",
    probe_readouts=["linear", "mlp1x64"],
    probe_steps=20,
    posterior_bins=8,
    workers=1,
)


# ----------------------------------------------------------------------------- pieces


def test_log_bins_cover_the_stream_once():
    for n, b in ((1, 4), (7, 3), (100, 10), (1437, 24)):
        e = st.stream_bins(n, b)
        assert e[0] == 0 and e[-1] == n and np.all(np.diff(e) > 0) and len(e) - 1 <= b + 1
    assert list(st.stream_bins(10, 100)) == list(range(11))


def test_map_switches_counts_argmax_changes():
    mat = np.array([[0.6, 0.4], [0.7, 0.3], [0.4, 0.6], [0.3, 0.7], [0.8, 0.2]])
    assert st.map_switches(mat) == 2
    rng = np.random.default_rng(0)
    m = rng.dirichlet(np.ones(3), size=50)
    top = [int(np.argmax(r)) for r in m]
    assert st.map_switches(m) == sum(a != b for a, b in zip(top, top[1:]))


@pytest.fixture(scope="module")
def digits_pair():
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    x = x.astype(np.float32)
    return Task("digits-px", x[:200], y[:200], 10), Task("digits-px-test", x[1500:], y[1500:], 10)


def test_compute_pair_matches_stage_1_and_2(digits_pair):
    train, test = digits_pair
    cfg = st.EncodersConfig(
        encoders=("random:resnet_XS",),
        tasks=("digits",),
        protocol="small",
        seeds=(0, 1),
        probe_readouts=("linear",),
        probe_steps=30,
        posterior_bins=6,
    )
    out = st.compute_pair(train, test, cfg)
    rows = {(s, m): v for s, m, v in out["rows"]}
    plan = resolve_protocol("small")
    for s in (0, 1):
        lm = prequential.run(train, plan.experts(), batch_size=plan.batch_size, seed=s)
        res = switching.codelength(lm.losses, plan.strategy, posterior=True)
        assert rows[(s, "codelength [nats]")] == pytest.approx(res.total_nats)
        assert rows[(s, "codelength [bits/example]")] == pytest.approx(
            res.total_nats / math.log(2) / train.n
        )
        assert rows[(s, "best expert [nats]")] == pytest.approx(
            lm.losses.astype(np.float64).sum(axis=0).min()
        )
        # posterior over readouts, summed over each readout's experts by hand
        post = res.posterior
        ros = [e.readout.name for e in lm.experts]
        names = list(dict.fromkeys(ros))
        mass = np.stack([post[:, [r == n for r in ros]].sum(axis=1) for n in names], axis=1)
        depth = {"linear": 0, "mlp1x64": 1}[names[int(np.argmax(mass.mean(axis=0)))]]
        assert rows[(s, "preferred readout depth")] == depth
        top = mass.argmax(axis=1)
        assert rows[(s, "readout switches")] == int(np.sum(top[1:] != top[:-1]))
        # trace: bin means of the posterior, cumulative code at the bin ends
        tr = pd.DataFrame(
            [p for p in out["posterior"] if p[0] == s], columns=["seed", "a", "b", "readout", "p"]
        )
        for (a, b), g in tr.groupby(["a", "b"]):
            assert g["p"].sum() == pytest.approx(1.0, abs=1e-5)
            want = mass[a:b, names.index("linear")].mean()
            assert g.set_index("readout").loc["linear", "p"] == pytest.approx(want, abs=1e-6)
        curve = [c for c in out["curve"] if c[0] == s]
        assert curve[-1][1] == train.n
        assert curve[-1][2] == pytest.approx(res.total_nats, rel=1e-5)
    acc = rows[(cfg.seed, "linear accuracy")]
    assert 0.5 < acc <= 1.0  # raw digits pixels, 30 probe steps: far above chance (0.1)
    assert rows[(cfg.seed, "best accuracy")] == acc  # only one family searched


# ----------------------------------------------------------------------------- tables


def _frame(values, metric="codelength [nats]", groups=None):
    """values: {task: {encoder: [value per seed]}}."""
    rows = []
    for task, d in values.items():
        for enc, vs in d.items():
            for s, v in enumerate(vs):
                rows.append(
                    dict(
                        encoder=enc,
                        architecture="a",
                        objective=enc,
                        size="S",
                        task=task,
                        group=(groups or {}).get(task, "natural"),
                        metric=metric,
                        value=v,
                        seed=s,
                    )
                )
    return pd.DataFrame(rows)


def test_average_ranks_and_friedman_match_scipy():
    rng = np.random.default_rng(3)
    encs, tasks = ["a", "b", "c", "d"], [f"t{i}" for i in range(7)]
    mdl = rng.normal(size=(7, 4)) + np.arange(4)
    acc = rng.uniform(size=(7, 4))
    f = pd.concat(
        [
            _frame({t: {e: [mdl[i, j]] for j, e in enumerate(encs)} for i, t in enumerate(tasks)}),
            _frame(
                {t: {e: [acc[i, j]] for j, e in enumerate(encs)} for i, t in enumerate(tasks)},
                "linear accuracy",
            ),
            _frame(
                {t: {e: [acc[i, j]] for j, e in enumerate(encs)} for i, t in enumerate(tasks)},
                "mlp accuracy",
            ),
        ]
    )
    tab = _tables.average_rank_table(f, encs).set_index("encoder")
    want_mdl = stats.rankdata(mdl, axis=1).mean(axis=0)
    want_lin = stats.rankdata(-acc, axis=1).mean(axis=0)
    np.testing.assert_allclose(tab.loc[encs, "mdl rank"], want_mdl)
    np.testing.assert_allclose(tab.loc[encs, "linear rank"], want_lin)
    np.testing.assert_allclose(
        tab.loc[encs, "mdl sd"], stats.rankdata(mdl, axis=1).std(axis=0, ddof=1)
    )
    fr = _significance.friedman_table(f, encs, groups=False).set_index("method")
    ref = stats.friedmanchisquare(*mdl.T)
    assert fr.loc["mdl", "chi2_F"] == pytest.approx(ref.statistic)
    assert fr.loc["mdl", "p"] == pytest.approx(ref.pvalue)


def test_cd_table_uses_the_correct_q_beside_the_paper():
    f = _frame({f"t{i}": {e: [float(j)] for j, e in enumerate("abcdef")} for i in range(19)})
    cd = _significance.cd_table(f, list("abcdef"), alpha=0.10).set_index("tasks")
    q = stats.studentized_range.ppf(0.90, 6, np.inf) / math.sqrt(2)
    assert cd.loc["all", "q"] == pytest.approx(q)
    assert cd.loc["all", "CD"] == pytest.approx(q * math.sqrt(6 * 7 / (6 * 19)))
    assert cd.loc["all", "CD"] == pytest.approx(cd.loc["all", "correct CD (paper r, N)"])
    assert cd.loc["all", "paper printed"] == 1.894
    assert cd.loc["all", "CD"] == pytest.approx(1.571, abs=1e-3)  # mdlnb.research.ranking docstring


def test_permutation_variance_gaps():
    f = _frame({"t": {"a": [10.0, 12.0, 14.0], "b": [20.0, 20.0, 23.0], "c": [40.0, 41.0, 39.0]}})
    v = _significance.permutation_variance(f, ["a", "b", "c"]).set_index("encoder")
    assert v.loc["a", "sd [nats]"] == pytest.approx(2.0)
    assert v.loc["b", "gap above [nats]"] == pytest.approx(21.0 - 12.0)
    assert v.loc["b", "gap below [nats]"] == pytest.approx(40.0 - 21.0)
    assert v.loc["b", "sd / nearest gap"] == pytest.approx(np.std([20, 20, 23], ddof=1) / 9.0)
    s = _significance.permutation_summary(v.reset_index())
    assert s.iloc[1]["median sd / gap"] == pytest.approx(134 / (60549 - 55906))  # nearer one


def test_regret_along_n_is_paired_by_order():
    c = pd.DataFrame(
        [
            dict(encoder=e, task="t", seed=s, n=n, **{"cumulative [nats]": v})
            for e, base in (("big", 0.0), ("small", 5.0))
            for s in range(3)
            for n, v in ((10, base + s), (20, 2 * base + s))
        ]
    )
    r = _tables.regret_along_n(c, "big", "small").set_index("n")
    assert r.loc[10, "larger − smaller [nats]"] == pytest.approx(-5.0)
    assert r.loc[20, "larger − smaller [nats]"] == pytest.approx(-10.0)
    assert r.loc[10, "sd [nats]"] == pytest.approx(0.0)  # the order offset cancels


def test_preferred_readout_mean_and_switching_by_group():
    f = pd.concat(
        [
            _frame(
                {"t1": {"a": [1, 1, 3]}, "t2": {"a": [0, 2, 2]}},
                "preferred readout depth",
                {"t1": "natural", "t2": "structured"},
            ),
            _frame(
                {"t1": {"a": [2, 4, 6]}, "t2": {"a": [10, 10, 10]}},
                "readout switches",
                {"t1": "natural", "t2": "structured"},
            ),
        ]
    )
    p = _tables.preferred_readout_table(f)
    assert p.loc["a", "t1"] == pytest.approx(5 / 3) and p.loc["a", "t2"] == pytest.approx(4 / 3)
    assert _tables.preference_agreement(f) == 0.0  # no cell has its orders agree
    s = _tables.switching_by_group(f, {"t1": 100, "t2": 200}).set_index("group")
    assert s.loc["natural", "per 1k examples"] == pytest.approx(40.0)
    assert s.loc["structured", "per 1k examples"] == pytest.approx(50.0)
    assert s.loc["structured", "preferred depth"] == pytest.approx(4 / 3)


# ----------------------------------------------------------------------------- driver


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """The TINY grid run once into a cache root of this module's own (compiled programs
    shared with the session's): the smoke notebooks and other tests compute the same
    pairs into the session's root, so there whether a pair is cached would depend on
    the order tests run in. Returns (root, config, first result)."""
    from mdlnb.infra._io import cache_root

    root = tmp_path_factory.mktemp("encoders-root")
    xla = cache_root() / "xla"
    if xla.exists():
        (root / "xla").symlink_to(xla.resolve(), target_is_directory=True)
    cfg = st.EncodersConfig.from_overrides(TINY)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MDLNB_CACHE", str(root))
        r = st.run(cfg, progress=False)
    return str(root), cfg, r


def test_run_tidy_frame_and_resume(tmp_path, tiny_run, monkeypatch):
    root, cfg, r = tiny_run
    monkeypatch.setenv("MDLNB_CACHE", root)
    assert list(r.frame.columns) == st.FRAME_COLUMNS
    assert r.cached_pairs == 0
    assert set(r.frame["group"]) == {"natural", "specialized"}
    assert set(r.frame["metric"]) == set(st.METRICS)
    n_rows = 6 * (5 * 3 + 3)  # 6 pairs × (5 MDL metrics × 3 orders + 3 accuracies)
    assert len(r.frame) == n_rows
    # a killed run: one pair's file is gone; the rerun recomputes that pair only
    from mdlnb.infra._io import cache_dir

    files = sorted(cache_dir("studies/encoders").glob("pair-random_resnet_XS-digits-*.json"))
    assert len(files) == 1
    files[0].unlink()
    again = st.run(cfg, progress=False)
    assert again.cached_pairs == 5
    pd.testing.assert_frame_equal(r.frame, again.frame)
    json.loads(files[0].read_text())  # rewritten whole
    # slices the notebooks use
    encs = r.select(architecture=["resnet", "vit"])
    assert encs == ["random:resnet_XS", "random:resnet_S", "random:vit_XS"]
    assert r.select(size="XS") == ["random:resnet_XS", "random:vit_XS"]
    rows = r.encoder_rows(["random:vit_XS", "random:resnet_XS"])
    assert list(rows["encoder"]) == ["random:resnet_XS", "random:vit_XS"]  # config order
    t = r.average_ranks(encs)
    assert t["mdl rank"].sum() == pytest.approx(6.0)  # ranks 1..3 on every task
    paths = r.save(tmp_path, parts={"ranks": t, "cd": r.plot_cd(encs)}, frame=True)
    assert (tmp_path / "encoders_frame.csv").exists() and (tmp_path / "encoders_cd.png").exists()
    assert len(paths) == 2 * 2 + 2 + 1  # encoders, frame, ranks (csv + md); cd.png
    assert not list(tmp_path.glob("*timing*"))  # wall times would make paper/ differ per run
    post = r.posteriors([("random:resnet_XS", "digits")])
    assert set(post["encoder"]) == {"random:resnet_XS"} and set(post["task"]) == {"digits"}
    np.testing.assert_allclose(
        post.groupby(["seed", "t_start"])["probability"].sum(), 1.0, atol=1e-6
    )
    with pytest.raises(ValueError, match="pairs"):
        r.posteriors([("random:resnet_XS", "no_such_task")])


def test_config_errors():
    with pytest.raises(ValueError, match="tasks: unknown"):
        st.EncodersConfig(tasks=("nope",))
    with pytest.raises(ValueError, match="overrides: unknown"):
        st.EncodersConfig.from_overrides({"encoder": ["x"]})
    with pytest.raises(ValueError, match="protocol"):
        st.EncodersConfig(protocol="huge")
    with pytest.raises(ValueError, match="encoders"):
        st.EncodersConfig(encoders=("lite9x",))
    with pytest.raises(ValueError, match="workers"):
        st.EncodersConfig(workers=0)


@pytest.mark.slow
def test_worker_processes_give_the_same_frame(tiny_run, monkeypatch):
    """Two lost pairs recomputed by two spawned worker processes (each imports JAX and
    compiles the probe programs again: the costly part of this test)."""
    from mdlnb.infra._io import cache_dir

    root, cfg, _ = tiny_run
    monkeypatch.setenv("MDLNB_CACHE", root)
    r = st.run(cfg, progress=False)  # every pair cached by the fixture
    assert r.cached_pairs == 6
    for f in sorted(cache_dir("studies/encoders").glob("pair-random_*-lfw_faces-*.json"))[:2]:
        f.unlink()
    par = st.run(cfg.replace(workers=2), progress=False)
    assert par.cached_pairs == 4
    pd.testing.assert_frame_equal(r.frame, par.frame)


def test_scaling_differences_are_paired_by_task_and_order():
    """Δ_s(e) = mean over tasks of bits(e, t, s) − bits(smallest of e's family, t, s);
    the table's mean/sd over orders, checked against a loop over the raw numbers."""
    rng = np.random.default_rng(11)
    fam = {
        "s": ("vit", "mae", "S", 10),
        "m": ("vit", "mae", "M", 100),
        "l": ("vit", "mae", "L", 1000),
        "r0": ("resnet", "byol", "S", 50),
        "r1": ("resnet", "byol", "M", 500),
    }
    tasks = ["t0", "t1", "t2", "t3"]
    hard = dict(zip(tasks, [0.5, 2.0, 3.5, 1.0]))  # task difficulty: a big spread
    bits = {
        (e, t, s): hard[t] + 0.1 * s + rng.normal(0, 0.05)
        for e in fam
        for t in tasks
        for s in range(3)
    }
    frame = pd.DataFrame(
        [
            dict(
                encoder=e,
                architecture=fam[e][0],
                objective=fam[e][1],
                size=fam[e][2],
                task=t,
                group="natural",
                metric="codelength [bits/example]",
                value=v,
                seed=s,
            )
            for (e, t, s), v in bits.items()
        ]
    )
    et = pd.DataFrame(
        [
            dict(encoder=e, architecture=a, objective=o, size=z, parameters=p)
            for e, (a, o, z, p) in fam.items()
        ]
    )
    d = _tables.scaling_differences(frame, et, ["l", "s", "m", "r1", "r0"]).set_index("encoder")
    for enc, ref in (("s", "s"), ("m", "s"), ("l", "s"), ("r0", "r0"), ("r1", "r0")):
        per_order = [
            np.mean([bits[(enc, t, s)] - bits[(ref, t, s)] for t in tasks]) for s in range(3)
        ]
        assert d.loc[enc, "reference"] == ref
        assert d.loc[enc, "Δ bits/example"] == pytest.approx(np.mean(per_order), abs=1e-12)
        assert d.loc[enc, "Δ sd (orders)"] == pytest.approx(np.std(per_order, ddof=1), abs=1e-12)
        assert d.loc[enc, "reference bits/example"] == pytest.approx(
            np.mean([bits[(ref, t, s)] for t in tasks for s in range(3)])
        )
    assert (d["orders"] == 3).all() and (d["tasks"] == 4).all()
    # the pairing removes task difficulty: sd over orders ≪ sd over tasks
    assert d.loc["l", "Δ sd (orders)"] < 0.1 < np.std(list(hard.values()))


def test_mdl_rows_of_a_stream_of_one_batch(monkeypatch, digits_pair):
    """N ≤ B: the pair's MDL rows are the uniform code (prequential.run compiles nothing
    for it) and its preferred readout depth is NaN, not a KeyError."""
    from mdlnb.prequential import _run as stage1
    from mdlnb.studies.encoder_grid import _pair

    monkeypatch.setattr(stage1, "run_pass", lambda *a, **k: pytest.fail("stage 1 ran"))
    monkeypatch.setattr(stage1._slicing, "run_pass", lambda *a, **k: pytest.fail("stage 1 ran"))
    train = digits_pair[0]
    small = Task("digits-px-20", train.x[:20], train.y[:20], 10)
    cfg = st.EncodersConfig(
        encoders=("random:resnet_XS",),
        tasks=("digits",),
        protocol="small",
        seeds=(0, 1),
        probe_readouts=("linear",),
        posterior_bins=4,
    )
    rows = {(s, m): v for s, m, v in _pair.mdl_rows(small, cfg, cache=False)["rows"]}
    for s in (0, 1):
        assert rows[(s, "codelength [nats]")] == pytest.approx(20 * math.log(10), rel=1e-7)
        assert rows[(s, "codelength [bits/example]")] == pytest.approx(math.log2(10), rel=1e-7)
        assert math.isnan(rows[(s, "preferred readout depth")])
