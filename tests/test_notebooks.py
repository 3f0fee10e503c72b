"""Every notebook's smoke run, and what it wrote: columns, finite values, codelengths
within log C (plus a stated margin) per example, quantities re-derived from other
columns or tables, a verdict on every claim, readable stored output, the HTML.

The runs are those of ``make smoke`` (``build/notebooks/smoke/*.ipynb``,
``build/paper-smoke/``; ``make test`` runs it first, so CI executes each notebook
once). A notebook whose executed copy is missing or stale (:func:`runner.stale`:
older than its source or the library, or run with other parameters) is run
here, into the same place.
"""

from __future__ import annotations

import math
import re

import nbformat
import numpy as np
import pandas as pd
import pytest

from mdlnb import data
from mdlnb.infra import _io
from mdlnb.research import claims, manifest
from mdlnb.tools import runner

NOTEBOOKS = runner.available()
PAPER = runner.ROOT / "build" / "paper-smoke"
LN2 = math.log(2)
# A switching code of experts that start at the uniform code pays at most log C
# per example plus what its prior pays over the best expert: on these small boards
# and streams below 0.5 nats per example (the regret bound over N ≥ 60 examples).
MARGIN_NATS = 0.5
MAX_STREAM_LINES = 40  # printed lines per cell: summaries, never per-step progress


def executed(name: str):
    """The executed smoke notebook ``name`` (run now if missing or stale)."""
    if name in ("scaling", "readout_preference"):
        executed("objectives")  # computes the shared encoder grid first
    path = runner.executed_path(name, "smoke")
    with _io.locked(path):  # pytest-xdist workers
        if runner.stale(name, "smoke"):
            runner.run(name, "smoke")
        html = path.with_suffix(".html")
        if not html.exists() or html.stat().st_mtime < path.stat().st_mtime:
            runner.to_html(path)
    return nbformat.read(path, as_version=4)


def log_classes(task) -> np.ndarray:
    """log C (nats) of registry task names (an array for a Series)."""
    table = data.info().set_index("name")["classes"]
    return np.log(pd.Series(task).map(table).to_numpy(dtype=float))


# ---- checks shared by the expectation table --------------------------------------


def has_columns(df, cols):
    missing = [c for c in cols if c not in df.columns]
    assert not missing, f"missing columns {missing}; has {list(df.columns)}"


def finite(df, cols):
    bad = [c for c in cols if not np.isfinite(df[c].to_numpy(dtype=float)).all()]
    assert not bad, f"non-finite values in {bad}"


def within(df, col, lo, hi):
    v = df[col].to_numpy(dtype=float)
    assert ((v >= lo) & (v <= hi)).all(), f"{col} outside [{lo}, {hi}]: {v.min()}..{v.max()}"


def per_example_nats(values, log_c, what):
    v = np.asarray(values, dtype=float)
    assert (v > 0).all(), f"{what}: a code of length <= 0 per example"
    excess = v - np.broadcast_to(log_c, v.shape)
    assert (excess <= MARGIN_NATS).all(), (
        f"{what}: {excess.max():.3f} nats per example above log C (margin {MARGIN_NATS})"
    )


# ---- what each notebook writes, and what must hold of it --------------------------


def _quickstart(p):
    df = pd.read_csv(p / "quickstart_codelengths.csv")
    has_columns(
        df, ["code", "total [nats]", "total [bits]", "per example [bits]", "vs best expert [nats]"]
    )
    finite(df, ["total [nats]", "total [bits]", "per example [bits]"])
    np.testing.assert_allclose(df["total [bits]"], df["total [nats]"] / LN2, rtol=1e-9)
    n = df["total [bits]"] / df["per example [bits]"]  # the stream length
    np.testing.assert_allclose(n, n.iloc[0], rtol=1e-9)
    assert n.iloc[0] == pytest.approx(round(n.iloc[0])) and n.iloc[0] >= 100
    per_example_nats(df["per example [bits]"] * LN2, math.log(10), "quickstart")


def _parity_toy(p):
    for f in ("parity_measures.csv", "parity_mlp_measures.csv"):
        df = pd.read_csv(p / f)
        has_columns(
            df,
            ["representation", "measure", "n", "value", "status", "seed mean", "seed std", "units"],
        )
        assert set(df["measure"]) >= {"VA", "MDL", "SDL"}, f
        assert set(df["units"]) <= {"nats", "nats/example", "examples"}
        exact = df[df["status"] == "exact"]
        finite(exact, ["value", "seed mean"])
        assert (df["seed std"].dropna() >= 0).all()
        mdl = df[df["measure"] == "MDL"]
        assert (mdl["value"] > 0).all()
    sw = pd.read_csv(p / "parity_switching.csv")
    has_columns(
        sw,
        [
            "representation",
            "switching code [nats]",
            "bits / example",
            "best expert [nats]",
            "uniform [nats]",
        ],
    )
    finite(sw, ["switching code [nats]", "bits / example", "best expert [nats]", "uniform [nats]"])
    n = sw["uniform [nats]"] / LN2  # uniform code: n log 2
    np.testing.assert_allclose(n, np.round(n), atol=1e-6)
    np.testing.assert_allclose(
        sw["bits / example"], sw["switching code [nats]"] / (n * LN2), rtol=1e-9
    )
    per_example_nats(sw["switching code [nats]"] / n, LN2, "parity switching")


def _loss_data(p):
    cur = pd.read_csv(p / "loss_data_curves.csv")
    has_columns(cur, ["representation", "seed", "n", "loss [nats]", "accuracy"])
    finite(cur, ["n", "loss [nats]", "accuracy"])
    within(cur, "accuracy", 0, 1)
    assert (cur["loss [nats]"] > 0).all()
    m = pd.read_csv(p / "loss_data_measures.csv")
    has_columns(m, ["representation", "measure", "n", "value", "status", "units"])
    assert set(m["measure"]) >= {"VA", "MDL", "SDL"}
    finite(m[m["status"] == "exact"], ["value"])
    # block-wise MDL codes the first block with the uniform code, so at the
    # smallest n it is exactly n log 10 nats for every representation
    first = m[(m["measure"] == "MDL") & (m["n"] == m["n"].min())]
    np.testing.assert_allclose(first["value"], first["n"] * math.log(10), rtol=1e-6)
    ranks = pd.read_csv(p / "loss_data_rankings.csv")
    has_columns(ranks, ["measure", "n", "prefers"])
    # the first point: a chosen initial checkpoint codes at exactly log 10 (uniform readouts)
    first = pd.read_csv(p / "loss_data_first_point.csv")
    has_columns(
        first,
        [
            "representation",
            "n",
            "trained on",
            "held out",
            "seeds",
            "initial chosen",
            "mean loss [nats]",
        ],
    )
    assert ((first["initial chosen"] >= 0) & (first["initial chosen"] <= first["seeds"])).all()
    assert (first["trained on"] + first["held out"] == first["n"]).all()
    at_n1 = cur[cur["n"] == cur["n"].min()].groupby("representation")["loss [nats]"]
    np.testing.assert_allclose(
        first.set_index("representation")["mean loss [nats]"],
        at_n1.mean().loc[first["representation"]],
        rtol=1e-9,
    )
    uniform = at_n1.apply(lambda v: int((abs(v - math.log(10)) < 1e-5).sum()))
    assert (
        first.set_index("representation")["initial chosen"] == uniform.loc[first["representation"]]
    ).all()


def _shift(p):
    params = {**runner.notebook_parameters("shift"), **runner.profile_parameters("shift", "smoke")}
    runs = pd.read_csv(p / "shift_runs.csv")
    has_columns(
        runs,
        [
            "task",
            "factor",
            "seed",
            "encoder",
            "stream",
            "n",
            "num_classes",
            "from train split",
            "codelength [nats]",
            "per example [nats]",
        ],
    )
    finite(runs, ["codelength [nats]", "per example [nats]"])
    assert (runs["n"] == params["size"]).all()
    assert set(runs["stream"]) == {"original", "swapped", "reshuffled", "train then test"}
    per_example_nats(runs["per example [nats]"], log_classes(runs["task"]), "shift")
    np.testing.assert_allclose(
        runs["per example [nats]"], runs["codelength [nats]"] / runs["n"], rtol=1e-9
    )
    by = runs.groupby("stream")["from train split"]
    assert (by.min()["original"] == params["size"]) and by.max()["swapped"] == 0
    # the differences and the per-unit means re-derived from the runs
    wide = runs.pivot_table(
        index=["task", "seed", "encoder"], columns="stream", values="per example [nats]"
    )
    both = (wide["original"] + wide["swapped"]) / 2 - wide["reshuffled"]
    d = pd.read_csv(p / "shift_differences.csv")
    d = d[d["version"] == "original (both splits)"].set_index(["task", "seed", "encoder"])
    np.testing.assert_allclose(
        d.loc[both.index, "minus reshuffled [nats]"], both, rtol=1e-9, atol=1e-12
    )
    s = pd.read_csv(p / "shift_summary.csv").set_index("version")
    assert s.loc["original (both splits)", "minus reshuffled [nats]"] == pytest.approx(
        both.groupby(level=["task", "seed"]).mean().mean()
    )
    ranked = s.dropna(subset=["tau"])
    within(ranked, "tau", -1, 1)
    ranks = pd.read_csv(p / "shift_ranks.csv")
    _ranks_of(ranks, "reshuffled rank", len(ranks))


def _switching_strategies(p):
    cl = pd.read_csv(p / "switching_codelengths.csv")
    has_columns(
        cl,
        [
            "pair",
            "seed",
            "strategy",
            "num_classes",
            "n",
            "codelength [nats]",
            "nats per example",
            "regret [nats]",
        ],
    )
    finite(cl, cl.select_dtypes("number").columns)
    per_example_nats(cl["nats per example"], np.log(cl["num_classes"]), "switching")
    np.testing.assert_allclose(cl["nats per example"], cl["codelength [nats]"] / cl["n"], rtol=1e-9)
    assert (cl.loc[cl["strategy"] == "fixed share", "regret [nats]"] == 0).all()
    assert set(cl["strategy"]) == {
        "fixed share",
        "Bayesian mixture",
        "elementwise mixture",
        "switch distribution",
        "run-length",
    }
    sens = pd.read_csv(p / "switching_sensitivity.csv")
    assert set(sens["rate"]) == {"m", "constant α"}
    finite(sens, ["mean"])
    seq = pd.read_csv(p / "switching_sequence.csv")
    # allowing more switches can only lower the best sequence loss
    for _, g in seq.groupby(["pair", "seed"]):
        assert np.all(np.diff(g["best sequence [nats]"]) <= 1e-6)


def _data_efficiency(p):
    cl = pd.read_csv(p / "data_efficiency_codelengths.csv")
    has_columns(
        cl,
        [
            "task",
            "domain",
            "seed",
            "method",
            "n",
            "codelength [nats]",
            "nats per example",
            "regret [nats]",
            "crossing n",
        ],
    )
    assert set(cl["domain"]) == {"in-domain", "out-of-domain"}
    assert set(cl["method"]) == {"linear probe", "deep MLP", "fine-tuned", "from scratch"}
    finite(cl, ["n", "codelength [nats]", "nats per example", "regret [nats]"])
    per_example_nats(cl["nats per example"], log_classes(cl["task"]), "data efficiency")
    assert (cl.loc[cl["method"] == "from scratch", "regret [nats]"] == 0).all()
    # regret is a difference of codelengths of the same stream
    for _, g in cl.groupby(["encoder", "task", "domain", "seed"]):
        base = g.loc[g["method"] == "from scratch", "codelength [nats]"].item()
        np.testing.assert_allclose(g["regret [nats]"], g["codelength [nats]"] - base, atol=1e-6)
    crossing = cl["crossing n"].dropna()
    assert ((crossing >= 1) & (crossing <= cl.loc[crossing.index, "n"])).all()


def _encoder_frame(p, prefix):
    """The tidy frame of the encoder grid (objectives writes it)."""
    fr = pd.read_csv(p / f"{prefix}_frame.csv")
    has_columns(fr, ["encoder", "task", "group", "metric", "value", "seed"])
    finite(fr, ["value"])
    wide = fr.pivot_table(index=["encoder", "task", "seed"], columns="metric", values="value")
    bits = wide["codelength [bits/example]"].dropna()
    nats = wide.loc[bits.index, "codelength [nats]"]
    tasks = bits.index.get_level_values("task")
    per_example_nats(bits * LN2, log_classes(tasks), f"{prefix} MDL")
    n = nats / (bits * LN2)  # N per task, the same for every encoder
    for _, g in n.groupby(level="task"):
        np.testing.assert_allclose(g, g.iloc[0], rtol=1e-6)
    for acc in ("linear accuracy", "mlp accuracy", "best accuracy"):
        within(wide[[acc]].dropna(), acc, 0, 1)
    return fr


def _objectives(p):
    _encoder_frame(p, "objectives")
    ranks = pd.read_csv(p / "objectives_ranks.csv")
    has_columns(ranks, ["encoder", "linear rank", "mlp rank", "mdl rank"])
    for c in ("linear rank", "mlp rank", "mdl rank"):
        _ranks_of(ranks, c, len(ranks))
    perm = pd.read_csv(p / "objectives_permutation.csv")
    has_columns(perm, ["task", "encoder", "mean [nats]", "sd [nats]"])
    assert (perm["sd [nats]"] >= 0).all()
    # Table 1a's pairs: wins + ties + losses = tasks; the paper's difference × (k − 1)/5
    pairs = pd.read_csv(p / "objectives_pairwise.csv")
    has_columns(pairs, ["id", "rank difference", "wins", "ties", "losses", "tasks", "k", "CD"])
    both = pairs[pairs["better"].ne("—") & pairs["worse"].ne("—")]  # both objectives run
    assert (both[["wins", "ties", "losses"]].sum(axis=1) == both["tasks"]).all()
    np.testing.assert_allclose(
        pairs["paper difference at k"], pairs["paper difference"] * (pairs["k"] - 1) / 5
    )
    has_columns(
        pd.read_csv(p / "objectives_group_contrasts.csv"),
        ["task", "group", "sup − ssl", "mae − others"],
    )


def _ranks_of(df, col, k):
    within(df, col, 1, k)
    assert df[col].sum() == pytest.approx(k * (k + 1) / 2)  # average ranks of k


def _scaling(p):
    t = pd.read_csv(p / "scaling_table.csv")
    has_columns(
        t,
        [
            "encoder",
            "parameters",
            "bits/example",
            "bits/example sd (tasks)",
            "linear rank",
            "mlp rank",
            "mdl rank",
        ],
    )
    finite(t, ["parameters", "bits/example", "bits/example sd (tasks)"])
    assert (t["parameters"] > 0).all()
    for c in ("linear rank", "mlp rank", "mdl rank"):
        _ranks_of(t, c, len(t))
    # bits/example re-derived from the tidy frame: mean over tasks of the mean over orders
    fr = pd.read_csv(p / "objectives_frame.csv")
    per_task = (
        fr[fr["metric"] == "codelength [bits/example]"]
        .groupby(["encoder", "task"])["value"]
        .mean()
        .groupby("encoder")
    )
    np.testing.assert_allclose(t["bits/example"], per_task.mean()[t["encoder"]], rtol=1e-9)
    np.testing.assert_allclose(
        t["bits/example sd (tasks)"], per_task.std()[t["encoder"]], rtol=1e-9
    )


def _readout_preference(p):
    pref = pd.read_csv(p / "readout_preference_preferred.csv").set_index("encoder")
    finite(pref, pref.columns)
    within(pref.melt(), "value", 0, 7)  # hidden layers: linear .. MLP-7
    sw = pd.read_csv(p / "readout_preference_switching.csv")
    has_columns(sw, ["group", "runs", "switches", "per 1k examples", "preferred depth"])
    finite(sw, ["switches", "per 1k examples", "preferred depth"])
    assert (sw["switches"] >= 0).all()
    within(sw, "preferred depth", 0, 7)
    # switches per 1,000 examples of the N coded examples of every task
    n = runner.profile_parameters("readout_preference", "smoke")["overrides"]["train_size"]
    np.testing.assert_allclose(sw["per 1k examples"], sw["switches"] * 1000 / n, rtol=1e-9)
    # the posterior behind the figure: a distribution over readouts in every bin of t
    post = pd.read_csv(p / "readout_preference_posterior.csv")
    has_columns(post, ["encoder", "task", "seed", "t_start", "t_end", "readout", "probability"])
    finite(post, ["probability"])
    within(post, "probability", 0, 1)
    sums = post.groupby(["encoder", "task", "seed", "t_start"])["probability"].sum()
    np.testing.assert_allclose(sums, 1.0, atol=1e-5)
    pairs = runner.profile_parameters("readout_preference", "smoke")["posterior_pairs"]
    assert set(zip(post["encoder"], post["task"])) == {tuple(q) for q in pairs}


def _transferability_baselines(p):
    k = pd.read_csv(p / "transferability_kendall_tidy.csv")
    has_columns(
        k, ["task", "ratio", "metric", "tau", "tau_std", "repeats", "encoders", "nonfinite"]
    )
    ok = k[k["nonfinite"] == 0]
    assert len(ok) > 0
    finite(ok, ["tau"])
    within(ok, "tau", -1, 1)
    assert (ok["tau_std"].dropna() >= 0).all()
    truth = pd.read_csv(p / "transferability_truth.csv")
    has_columns(truth, ["zoo", "encoder", "task", "finetune", "probe"])
    within(truth, "finetune", 0, 1)
    within(truth, "probe", 0, 1)
    noise = pd.read_csv(p / "transferability_truth_noise.csv")
    assert (noise["beyond_noise"] <= noise["pairs"]).all()
    k1 = pd.read_csv(p / "transferability_kendall.csv")
    ok1 = k1.dropna(subset=[c for c in k1.columns if c.startswith("lo ")])
    for c in [c for c in k1.columns if c.startswith("N/K=")]:
        assert (ok1[f"lo {c}"] <= ok1[c] + 1e-9).all() and (ok1[c] <= ok1[f"hi {c}"] + 1e-9).all()
    sc = pd.read_csv(p / "transferability_scores.csv")
    has_columns(sc, ["encoder", "task", "ratio", "n", "repeat", "metric", "value"])
    # a subsample at N/K = r holds r examples per class, and at least min_n = 20
    # (PACTran Sec. 4.1.4; the config's default, which the smoke profile keeps)
    classes = np.exp(log_classes(sc["task"]))
    np.testing.assert_allclose(sc["n"], np.maximum(sc["ratio"] * classes, 20))


def _pretraining(p):
    from mdlnb.studies import pretraining

    enc = pd.read_csv(p / "pretraining_encoders.csv")
    has_columns(
        enc, ["encoder", "chosen_step", "trained_steps", "stop_reason", "probe_accuracy", "sha256"]
    )
    within(enc, "probe_accuracy", 0, 1)
    assert (enc["chosen_step"] <= enc["trained_steps"]).all()
    # the table is the committed artifacts: their provenance, checksums included
    provs = {f"{q['objective']}:{q['arch']}_{q['size']}": q for q in pretraining.verify()}
    assert set(enc["encoder"]) == set(provs)
    for _, r in enc.iterrows():
        assert r["sha256"] == provs[r["encoder"]]["sha256"]
    cur = pd.read_csv(p / "pretraining_probe_curves.csv")
    chosen = cur.merge(enc[["encoder", "chosen_step"]], on="encoder")
    chosen = chosen[chosen["step"] == chosen["chosen_step"]].set_index("encoder")
    np.testing.assert_allclose(
        chosen.loc[enc["encoder"], "probe_accuracy"], enc["probe_accuracy"], rtol=1e-5
    )
    # CLID Fig. 2's table: correlations over the grid, every committed encoder in each
    rob = pd.read_csv(p / "pretraining_clid_robustness.csv")
    has_columns(rob, ["clusters", "neighbours", "encoders", "pearson CLID", "pearson W-CLID"])
    assert (rob["encoders"] == len(enc)).all()
    for c in ("pearson CLID", "pearson W-CLID", "kendall CLID"):
        within(rob.dropna(subset=[c]), c, -1, 1)


def _layers(p):
    params = {
        **runner.notebook_parameters("layers"),
        **runner.profile_parameters("layers", "smoke"),
    }
    _layers_files(p, "layers", params["which"], "head", params)
    _layers_files(p, "layers_vit", params["vit_which"], "block1", params)
    lite, vit = (pd.read_csv(p / f"{x}_table.csv") for x in ("layers", "layers_vit"))
    assert set(lite["task"]) == set(vit["task"]) == set(params["task_names"])  # same tasks


def _layers_files(p, prefix, which, ref, params):
    tab = pd.read_csv(p / f"{prefix}_table.csv")
    has_columns(
        tab,
        [
            "task",
            "layer",
            "feature dim",
            "n",
            "orders",
            "per example [bits]",
            "per example std [bits]",
            "total [nats]",
            "total std [nats]",
            f"vs {ref} [nats]",
            f"vs {ref} std [nats]",
            "vs best [nats]",
            "rank",
            "orders ranked first",
        ],
    )
    finite(
        tab,
        [
            "per example [bits]",
            "per example std [bits]",
            "total [nats]",
            f"vs {ref} [nats]",
            "vs best [nats]",
        ],
    )
    assert (tab["n"] == params["size"]).all() and (tab["orders"] >= 3).all()
    per_example_nats(tab["per example [bits]"] * LN2, log_classes(tab["task"]), "layers")
    np.testing.assert_allclose(
        tab["total [nats]"], tab["per example [bits]"] * LN2 * tab["n"], rtol=1e-9
    )
    for _, g in tab.groupby("task"):
        assert sorted(g["layer"]) == sorted(which)
        assert g.loc[g["layer"] == ref, f"vs {ref} [nats]"].item() == 0
        assert g["orders ranked first"].sum() >= g["orders"].iloc[0]  # ties count twice
        within(g, "rank", 1, len(which))
    # the table's means and paired differences re-derived from the per-order runs
    runs = pd.read_csv(p / f"{prefix}_runs.csv")
    has_columns(runs, ["task", "layer", "seed", "total [nats]", "vs reference [nats]"])
    own = runs[runs["layer"] == ref].set_index(["task", "seed"])["total [nats]"]
    np.testing.assert_allclose(
        runs["vs reference [nats]"],
        runs["total [nats]"] - own.loc[list(zip(runs["task"], runs["seed"]))].to_numpy(),
        rtol=1e-9,
        atol=1e-9,
    )
    agg = runs.groupby(["task", "layer"])[["total [nats]", "vs reference [nats]"]]
    key = list(zip(tab["task"], tab["layer"]))
    np.testing.assert_allclose(agg.mean().loc[key, "total [nats]"], tab["total [nats]"], rtol=1e-9)
    np.testing.assert_allclose(
        agg.std().loc[key, "vs reference [nats]"].fillna(0),
        tab[f"vs {ref} std [nats]"].fillna(0),
        rtol=1e-6,
        atol=1e-9,
    )
    # along n: zero on the first batch (the uniform code for every layer), the table's
    # paired difference at n = N
    cur = pd.read_csv(p / f"{prefix}_along_n.csv")
    has_columns(cur, ["task", "layer", "n", "mean", "std", "min", "max"])
    finite(cur, ["mean", "min", "max"])
    b = mdlnb_protocol_batch("small")
    assert (cur.loc[cur["n"] <= b, ["mean", "min", "max"]].abs() <= 1e-9).all().all()
    assert ((cur["min"] <= cur["mean"] + 1e-9) & (cur["mean"] <= cur["max"] + 1e-9)).all()
    last = cur[cur["n"] == params["size"]].set_index(["task", "layer"])
    np.testing.assert_allclose(last.loc[key, "mean"], tab[f"vs {ref} [nats]"], rtol=1e-6, atol=1e-3)
    lead = pd.read_csv(p / f"{prefix}_leaders.csv").set_index("task")
    best = tab[tab["rank"] == 1].groupby("task")["layer"].first()
    assert (lead.loc[best.index, "best"] == best).all()
    within(lead, "from n", 1, params["size"])


def mdlnb_protocol_batch(name):
    import mdlnb

    return mdlnb.protocol(name).batch_size


def _beyond_classification(p):
    params = {
        **runner.notebook_parameters("beyond_classification"),
        **runner.profile_parameters("beyond_classification", "smoke"),
    }
    tab = pd.read_csv(p / "beyond_regression.csv")
    has_columns(
        tab,
        [
            "task",
            "representation",
            "n",
            "orders",
            "per example [density nats]",
            "total [nats]",
            "vs best [nats]",
            "rank",
            "LogME [nats/example]",
            "LogME rank",
        ],
    )
    finite(
        tab,
        ["per example [density nats]", "total [nats]", "vs best [nats]", "LogME [nats/example]"],
    )
    assert set(tab["task"]) == {"diabetes", params["image_task"]} and (tab["orders"] >= 3).all()
    np.testing.assert_allclose(
        tab["total [nats]"], tab["per example [density nats]"] * tab["n"], rtol=1e-9
    )
    runs = pd.read_csv(p / "beyond_regression_runs.csv")
    agg = runs.groupby(["task", "representation"])["total [nats]"].mean()
    np.testing.assert_allclose(
        agg.loc[list(zip(tab["task"], tab["representation"]))], tab["total [nats]"], rtol=1e-9
    )
    cal = pd.read_csv(p / "beyond_calibration.csv")
    cr = pd.read_csv(p / "beyond_calibration_runs.csv")
    d = (cr["on [nats]"] - cr["off [nats]"]).groupby(cr["representation"]).mean()
    np.testing.assert_allclose(d.loc[cal["representation"]], cal["on - off [nats]"], rtol=1e-9)
    assert (cal["n"] == params["calibration_size"]).all()
    per_example_nats(
        cr[["off [nats]", "on [nats]"]].to_numpy() / params["calibration_size"],
        math.log(10),
        "beyond calibration",
    )


EXPECT = {
    "beyond_classification": (
        [
            "beyond_regression.csv",
            "beyond_regression_runs.csv",
            "beyond_regression_along_n.csv",
            "beyond_calibration.csv",
            "beyond_calibration_runs.csv",
            "beyond_regression_codelengths.png",
            "beyond_calibration.png",
        ],
        _beyond_classification,
    ),
    "layers": (
        [
            "layers_table.csv",
            "layers_runs.csv",
            "layers_along_n.csv",
            "layers_leaders.csv",
            "layers_codelengths.png",
            "layers_vit_table.csv",
            "layers_vit_runs.csv",
            "layers_vit_along_n.csv",
            "layers_vit_leaders.csv",
            "layers_vit_codelengths.png",
        ],
        _layers,
    ),
    "pretraining": (
        [
            "pretraining_encoders.csv",
            "pretraining_probe_curves.csv",
            "pretraining_probe_curves.png",
            "pretraining_tracking.csv",
            "pretraining_tracking.png",
            "pretraining_across_models.csv",
            "pretraining_clid_robustness.csv",
            "pretraining_clid_landscape.png",
            "pretraining_clid_robustness.png",
        ],
        _pretraining,
    ),
    "quickstart": (["quickstart_codelengths.csv", "quickstart_posterior.png"], _quickstart),
    "parity_toy": (
        [
            "parity_curves.png",
            "parity_rankings.csv",
            "parity_measures.csv",
            "parity_mlp_measures.csv",
            "parity_switching.csv",
            "parity_switching_posterior.png",
        ],
        _parity_toy,
    ),
    "loss_data": (
        [
            "loss_data_curves.csv",
            "loss_data_curves.png",
            "loss_data_measures.csv",
            "loss_data_measures.png",
            "loss_data_rankings.csv",
            "loss_data_final.csv",
            "loss_data_esc_refined.csv",
            "loss_data_first_point.csv",
        ],
        _loss_data,
    ),
    "shift": (
        [
            "shift_runs.csv",
            "shift_differences.csv",
            "shift_units.csv",
            "shift_summary.csv",
            "shift_ranks.csv",
            "shift_along_n.csv",
            "shift_paper.csv",
            "shift_effects.png",
            "shift_ranks.png",
            "shift_along_n.png",
        ],
        _shift,
    ),
    "switching_strategies": (
        [
            "switching_codelengths.csv",
            "switching_sensitivity.csv",
            "switching_sequence.csv",
            "switching_regret.png",
            "switching_sensitivity.png",
            "switching_bound.png",
        ],
        _switching_strategies,
    ),
    "data_efficiency": (
        ["data_efficiency_codelengths.csv", "data_efficiency_regret.png"],
        _data_efficiency,
    ),
    "objectives": (
        [
            "objectives_frame.csv",
            "objectives_ranks.csv",
            "objectives_permutation.csv",
            "objectives_pairwise.csv",
            "objectives_group_contrasts.csv",
            "objectives_clid_transfer.csv",
        ],
        _objectives,
    ),
    "scaling": (["scaling_table.csv", "scaling_codelength_vs_parameters.png"], _scaling),
    "readout_preference": (
        [
            "readout_preference_preferred.csv",
            "readout_preference_switching.csv",
            "readout_preference_posteriors.png",
            "readout_preference_posterior.csv",
        ],
        _readout_preference,
    ),
    "transferability_baselines": (
        [
            "transferability_kendall_tidy.csv",
            "transferability_truth.csv",
            "transferability_scores.csv",
            "transferability_kendall.png",
            "transferability_figure1.png",
            "transferability_clid_table2.csv",
        ],
        _transferability_baselines,
    ),
}
# Claims each notebook must decide (more may be added; every row needs a verdict).
# The claims each notebook decides (issue 14).
CLAIMS = {
    "switching_strategies": {"b1", "b2", "c1", "c2"},
    "data_efficiency": {"e1", "e2", "e3"},
    "objectives": {
        "a1",
        "a2",
        "f",
        "l",
        "n1",
        "n2",
        "n3",
        "n4",
        "n5",
        "n6",
        "n7",
        "o1",
        "o2",
        "o3",
        "o4",
        "p4",
        "p5",
    },
    "readout_preference": {"d1", "d2", "d3", "k"},
    "scaling": {"j1", "j2"},
    "pretraining": {"m", "p1", "p2", "p3"},
    "parity_toy": {"g1", "g2", "g3"},
    "loss_data": {"q1", "q2", "q3"},
    "shift": {"r1", "r2"},
    "transferability_baselines": {"h1", "h2", "h3", "h4", "i1", "i2", "i3"},
}


def test_every_notebook_has_expectations():
    assert sorted(EXPECT) == sorted(NOTEBOOKS)


def test_the_checks_reject_bad_tables():
    df = pd.DataFrame({"a": [1.0, np.nan], "b": [0.5, 1.5]})
    with pytest.raises(AssertionError, match="non-finite"):
        finite(df, ["a", "b"])
    with pytest.raises(AssertionError, match="outside"):
        within(df, "b", 0, 1)
    with pytest.raises(AssertionError, match="missing columns"):
        has_columns(df, ["a", "c"])
    per_example_nats([math.log(2) + MARGIN_NATS - 1e-9], math.log(2), "ok")
    with pytest.raises(AssertionError, match="above log C"):
        per_example_nats([0.1, math.log(2) + MARGIN_NATS + 1e-6], math.log(2), "x")
    with pytest.raises(AssertionError, match="<= 0"):
        per_example_nats([0.0], math.log(2), "x")
    np.testing.assert_allclose(log_classes(["digits", "lfw_faces"]), np.log([10, 2]))


def _stream_text(cell) -> list[str]:
    return [o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream"]


@pytest.mark.notebook
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_smoke(name):
    nb = executed(name)
    errors = [
        o
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if o.get("output_type") == "error"
    ]
    assert not errors
    assert nb.metadata["mdlnb"]["profile"] == "smoke"
    # readable: no redrawn progress bars, no widget fallback, a few lines per cell
    for i, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        text = "".join(_stream_text(cell))
        assert "\r" not in text and "IProgress" not in text, f"cell {i}: progress bar output"
        assert text.count("\n") <= MAX_STREAM_LINES, f"cell {i}: {text.count(chr(10))} lines"
    # the HTML rendering, with the notebook's title
    html = runner.executed_path(name, "smoke").with_suffix(".html").read_text()
    title = re.search(
        r"^# (.+)$", next(c.source for c in nb.cells if c.cell_type == "markdown"), re.M
    ).group(1)
    assert title.split("`")[0].strip()[:20] in html
    files, check = EXPECT[name]
    missing = [f for f in files if not (PAPER / f).is_file()]
    assert not missing, f"{name} did not write {missing}"
    check(PAPER)
    for f in files:
        if f.endswith(".png"):
            assert (PAPER / f).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.notebook
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_claims_and_manifest(name):
    executed(name)
    path = PAPER / "claims" / f"{name}.csv"
    if name in CLAIMS or path.exists():
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
        assert list(df.columns) == list(claims.COLUMNS)
        assert set(df["notebook"]) == {name}
        claim = df["kind"] == "claim"
        assert set(df.loc[claim, "direction"]) <= set(claims.DIRECTIONS)
        assert set(df.loc[claim, "size"]) <= set(claims.SIZES)
        assert set(df.loc[~claim, "direction"]) <= {claims.PASSES, claims.FAILS}
        assert (df["our_value"].str.len() > 0).all() and (df["rule"].str.len() > 0).all()
        assert set(df["id"]) >= CLAIMS.get(name, set())
    # every notebook records what it wrote; each listed file exists and parses
    m = pd.read_csv(PAPER / "manifest" / f"{name}.csv")
    assert set(m["notebook"]) == {name} and set(m["profile"]) == {"smoke"}
    assert set(m["file"]) >= {f for f in EXPECT[name][0]}
    for f in m["file"]:
        assert (PAPER / f).is_file(), f
    assert manifest.check(PAPER) >= len(m)


@pytest.mark.notebook
def test_parity_claims_hold_on_the_smoke_run():
    """The exact algorithms flip VA/MDL even at the smoke size (d = 6); SDL/εSC, judged at
    an ε both representations can reach, may not name a winner yet, but never two."""
    executed("parity_toy")
    df = pd.read_csv(PAPER / "claims" / "parity_toy.csv").set_index("id")
    # every seed flips (share 1: the paper's size); 2 smoke seeds cannot settle the direction
    assert df.loc["g1", "estimate"] == df.loc["g2", "estimate"] == 1.0
    assert df.loc["g1", "size"] == df.loc["g2", "size"] == "consistent"
    assert df.loc["g3", "kind"] == "check"


def test_profiles_are_known():
    with pytest.raises(ValueError, match="profile"):
        runner.profile_parameters("quickstart", "huge")


def test_encoder_notebooks_share_one_grid():
    """objectives, scaling and readout_preference read one mdlnb.studies.encoder_grid grid:
    the same overrides in every profile, so CI (and make reproduce) computes it once
    (the Makefile runs objectives first)."""
    from mdlnb.studies.encoder_grid import EncodersConfig

    for profile in ("smoke", "default", "full"):
        grids = [
            runner.profile_parameters(n, profile).get("overrides", {})
            for n in ("objectives", "scaling", "readout_preference")
        ]
        assert grids[0] == grids[1] == grids[2], profile
        EncodersConfig.from_overrides(grids[0])  # every field known and valid
    text = (runner.ROOT / "Makefile").read_text()
    assert re.search(
        r"scaling\.ipynb \$\(NB_DIR\)/readout_preference\.ipynb: \| "
        r"\$\(NB_DIR\)/objectives\.ipynb",
        text,
    )
