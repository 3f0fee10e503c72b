"""The encoder study's claims (a1, a2, f, d1, d2, d3), decided on its tidy frames.

Every verdict comes from a rule of :mod:`mdlnb.claims` applied to the frames of
:class:`EncodersResult` (``frame``, ``posterior``); nothing is decided by eye.
Each rule and the paper's effect size are fixed here, before any run, and each
can fail both ways (:func:`mdlnb.claims.effect_decision`): *holds* when the
95 % interval of the effect excludes zero on the claimed side, *does not
hold* when it lies on the other side or excludes the paper's effect,
*inconclusive* when it contains both, and then the claim says at how many
tasks the same spread would decide. The unit of replication is the task:
encoders, orders and pairs within a task share it.

* (a1) *linear and best-MLP accuracy rank encoders differently* (Sec. 4,
  Table 1a): per task 1 − τ_b(linear ranks, best-MLP ranks); the effect is
  its mean over tasks (t interval); paper: 1 − 0.73 = 0.27.
* (a2) *MDL reconciles them* (Sec. 4, Table 1a): the paper's own statistic,
  Δτ = τ(MLP, MDL) − τ(MLP, linear) between the average-rank orders over
  tasks, with a percentile bootstrap interval over tasks (2,000 resamples);
  paper: 0.87 − 0.73 = 0.14. Over every encoder of the grid by default: τ
  over more encoders is less coarse, which the power analysis needs
  (:mod:`._power`).
* (f) *the order-to-order sd is small against the gaps between neighbouring
  encoders* (App. A.7): effect −log10 of the median over (task, encoder)
  cells of sd / gap to the nearest-ranked encoder (> 0 ⟺ sd < gap), bootstrap
  interval over tasks (cells of one task share gaps); paper: sd 134 against
  gaps 4,937 / 4,643, −log10(0.029) = 1.54.
* (d1) *the posterior moves to deeper readouts as data grows* (Fig. 9): per
  (encoder, task) the posterior-mean readout depth Σ_r p(r)·depth(r) in the
  last log-spaced bin of t minus that in the first bin starting at t ≥ 2B —
  after one whole batch of evidence has updated the prior (the first batch is
  coded uniformly, so before 2B the posterior has seen at most a few
  examples); mean over orders and over the task's encoders; t interval over
  tasks; paper: linear first, then 1–3 hidden layers: +1 hidden layer.
* (d2) *structured tasks prefer deeper readouts* (Fig. 2): per task the
  preferred readout depth (mean over encoders and orders); structured tasks
  against all the others (natural and specialized), Welch interval of the
  difference; paper: structured 3–7 vs natural 0–1 hidden layers: +2.
* (d3) *the move to deeper readouts is larger on structured tasks*: (d1)'s
  per-task change, structured against the others, Welch; paper (Fig. 9
  against Fig. 2, qualitative): +1 hidden layer.
"""
from __future__ import annotations

import re
from typing import Any, Sequence

import numpy as np

from mdlnb.studies.encoders import _tables

_DEPTH = re.compile(r"^mlp(\d+)")


def readout_depth(name: str) -> int:
    """Hidden layers of a board readout name: ``"linear"`` → 0, ``"mlp3"`` or
    ``"mlp3x256"`` → 3 (ValueError naming ``name`` for anything else)."""
    if name == "linear":
        return 0
    m = _DEPTH.match(str(name))
    if m is None:
        raise ValueError(f"name: not a readout of the board (linear, mlp<L>...), got {name!r}")
    return int(m.group(1))


def per_task_agreement(frame, encoders: Sequence[str]):
    """Per task, Kendall τ_b between the per-task ranks of two methods, for the
    pairs (linear, mlp), (mlp, mdl), (linear, mdl): columns ``task`` and one
    per pair (NaN where a method ties every encoder on that task)."""
    import pandas as pd

    from mdlnb import ranking

    rf = _tables.rank_frame(frame, encoders=encoders)
    w = rf.pivot_table(index=["task", "encoder"], columns="method", values="rank")
    rows = []
    for task, g in w.groupby(level="task", sort=False):
        row = {"task": task}
        for a, b in (("linear", "mlp"), ("mlp", "mdl"), ("linear", "mdl")):
            x, y = g[a].to_numpy(float), g[b].to_numpy(float)
            row[f"{a} vs {b}"] = (np.nan if np.ptp(x) == 0 or np.ptp(y) == 0
                                  else ranking.kendall_tau(x, y))
        rows.append(row)
    return pd.DataFrame(rows)


def depth_change(posterior, *, first_batch: int):
    """Per (encoder, task, group, seed): posterior-mean readout depth in the
    first bin with ``t_start ≥ first_batch`` (``early``) and in the last bin
    (``late``), and ``change`` = late − early (hidden layers)."""
    import pandas as pd

    p = posterior.assign(depth=posterior["readout"].map(readout_depth))
    p = p.assign(weighted=p["probability"] * p["depth"])
    keys = ["encoder", "task", "group", "seed"]
    mean = p.groupby(keys + ["t_start", "t_end"], sort=True)["weighted"].sum().reset_index()
    rows = []
    for key, g in mean.groupby(keys, sort=True):
        g = g.sort_values("t_start")
        after = g[g["t_start"] >= first_batch]
        if len(after) < 2:
            continue
        early, late = float(after["weighted"].iloc[0]), float(after["weighted"].iloc[-1])
        rows.append(dict(zip(keys, key), early=early, late=late, change=late - early,
                         early_bin=f"[{int(after['t_start'].iloc[0])}, "
                                   f"{int(after['t_end'].iloc[0])})"))
    return pd.DataFrame(rows, columns=keys + ["early", "late", "change", "early_bin"])


def depth_change_by_task(posterior, *, first_batch: int):
    """(d1)'s aggregation of :func:`depth_change`: ``(per order, per (encoder, task,
    group) mean over orders, per (task, group) mean over encoders)``."""
    ch = depth_change(posterior, first_batch=first_batch)
    cols = ["early", "late", "change"]
    pair = ch.groupby(["encoder", "task", "group"], sort=True)[cols].mean().reset_index()
    task = pair.groupby(["task", "group"], sort=True)[cols].mean().reset_index()
    return ch, pair, task


def order_noise_cells(frame, encoders: Sequence[str]):
    """(f)'s cells: ``(permutation_variance, its rows with a finite positive
    sd / nearest gap, the per-task arrays of those ratios)``."""
    var = _tables.permutation_variance(frame, encoders)
    ok = var.dropna(subset=["sd [nats]", "sd / nearest gap"])
    ok = ok[ok["sd / nearest gap"] > 0]
    return var, ok, [g["sd / nearest gap"].to_numpy() for _, g in ok.groupby("task")]


def _fmt_taus(t) -> str:
    return ", ".join(f"{m} {t.loc[m]:.2f}" for m in t.index)


#: The paper's effects (units: τ, hidden layers, log10 of sd / gap), fixed before any run.
PAPER_EFFECTS = {"a1": 1 - 0.73, "a2": 0.87 - 0.73, "f": -float(np.log10(134 / 4643)),
                 "d1": 1.0, "d2": 2.0, "d3": 1.0}


def rank_tables(frame, encoders: Sequence[str]) -> list:
    """Per task, the encoders' ranks (rows, in ``encoders`` order) by method (columns)."""
    rf = _tables.rank_frame(frame, encoders=encoders)
    w = rf.pivot_table(index=["task", "encoder"], columns="method", values="rank")
    return [g.droplevel("task").reindex(list(encoders)) for _, g in w.groupby(level="task")]


def delta_tau(tables: Sequence) -> float:
    """(a2)'s statistic on per-task rank tables: τ(MLP, MDL) − τ(MLP, linear) of the
    average-rank orders (NaN when an average order ties every encoder)."""
    from mdlnb import ranking

    avg = sum(t.to_numpy(float) for t in tables) / len(tables)
    cols = list(tables[0].columns)
    lin, mlp, mdl = (avg[:, cols.index(m)] for m in ("linear", "mlp", "mdl"))
    if min(np.ptp(lin), np.ptp(mlp), np.ptp(mdl)) == 0:
        return float("nan")
    return float(ranking.kendall_tau(mlp, mdl) - ranking.kendall_tau(mlp, lin))


def _log_ratio_median(cells: Sequence) -> float:
    return float(-np.log10(np.median(np.concatenate([np.asarray(c) for c in cells]))))


def objectives_claims(result: Any, encoders: Sequence[str], *, alpha: float = 0.05,
                      a2_encoders: Sequence[str] | None = None) -> list:
    """Claims (a1), (a2) and (f) (module docstring) on ``encoders`` of ``result``;
    (a2) on ``a2_encoders`` (default: every encoder of the grid).
    ``alpha``: 1 − the intervals' level."""
    from mdlnb import claims as C
    from mdlnb.studies.encoders import _paper

    level = 1 - alpha
    frame = result.frame
    agree = per_task_agreement(frame, encoders)
    ours = _tables.ranking_agreement(frame, encoders).set_index("methods")["kendall tau"]
    paper = _paper.kendall_between_methods().set_index("methods")["kendall tau"]
    k, n = len(encoders), len(agree)
    lm = agree["linear vs mlp"].dropna().to_numpy()
    d = C.t_effect(1 - lm, paper_effect=PAPER_EFFECTS["a1"], level=level, unit="tasks")
    a1 = C.Claim.decided(
        "a1", "Linear-probe and best-MLP accuracy rank the pretrained encoders differently.",
        "Sec. 4, Table 1a", "1 − τ(linear, MLP) of the average-rank orders "
        f"{1 - paper.loc['linear vs mlp']:.2f} (r = 6, N = 19)",
        f"per task ({n} tasks, k = {k} encoders), 1 − Kendall τ_b between linear and best-MLP "
        f"accuracy ranks; {level:.0%} t interval of the mean over tasks: holds above 0, does "
        "not hold below 0 or below the paper's 0.27, else inconclusive", d,
        our_value=f"{d.detail}; average-rank orders of these {k} encoders: {_fmt_taus(ours)}")
    a2_encoders = list(a2_encoders or dict.fromkeys(frame["encoder"]))
    tables = rank_tables(frame, a2_encoders)
    a2_orders = _tables.ranking_agreement(frame, a2_encoders).set_index("methods")["kendall tau"]
    if len(tables) >= 2:
        value, lo, hi = C.bootstrap_interval(tables, delta_tau, level=level)
        d = C.effect_decision(value, lo, hi, paper_effect=PAPER_EFFECTS["a2"], n=len(tables),
                              unit="tasks", label=f"{level:.0%} bootstrap CI")
    else:
        d = C.Decision(C.INCONCLUSIVE, f"{len(tables)} task(s): no interval")
    a2 = C.Claim.decided(
        "a2", "MDL with readout switching reconciles them: its order agrees with the best-MLP "
        "order more than the linear order does.", "Sec. 4, Table 1a",
        f"Δτ = τ(MLP, MDL) {paper.loc['mlp vs mdl']:.2f} − τ(MLP, linear) "
        f"{paper.loc['linear vs mlp']:.2f} = {PAPER_EFFECTS['a2']:.2f} (average-rank orders)",
        f"Δτ of the average-rank orders over tasks, k = {len(a2_encoders)} encoders; "
        "percentile bootstrap over tasks "
        f"(2,000 resamples), {level:.0%} interval: holds above 0, does not hold below 0 or "
        "below the paper's 0.14, else inconclusive", d,
        our_value=f"{d.detail}; average-rank orders of these {len(a2_encoders)} encoders: "
                  f"{_fmt_taus(a2_orders)}")
    var, ok, cells = order_noise_cells(frame, encoders)
    orders = int(var["orders"].min()) if len(var) else 0
    if orders < 2 or len(cells) < 2:
        d = C.Decision(C.INCONCLUSIVE, f"{orders} data order(s), {len(cells)} task(s): "
                       "no interval")
    else:
        value, lo, hi = C.bootstrap_interval(cells, _log_ratio_median, level=level)
        d = C.effect_decision(value, lo, hi, paper_effect=PAPER_EFFECTS["f"], n=len(cells),
                              unit="tasks", label=f"{level:.0%} bootstrap CI")
    pp = _tables.PAPER_PERMUTATION
    paper_ratio = pp["std"] / min(pp["mean"] - pp["above"], pp["below"] - pp["mean"])
    r = ok["sd / nearest gap"]
    f = C.Claim.decided(
        "f", "The codelength's standard deviation over data orders is small against the gaps "
        "between encoders ranked next to each other.", "App. A.7",
        f"ResNet-50 SUP on Cifar100, {pp['orders']} orders: sd {pp['std']:.0f} nats against "
        f"gaps {pp['mean'] - pp['above']:.0f} / {pp['below'] - pp['mean']:.0f} "
        f"(sd / gap {paper_ratio:.3f}, −log10 {PAPER_EFFECTS['f']:.2f})",
        f"per (task, encoder) cell, sd over {orders} orders / gap to the nearest-ranked "
        "encoder; effect −log10 of the median ratio (> 0: sd < gap); bootstrap over tasks, "
        f"{level:.0%} interval: holds above 0, does not hold below 0 or below the paper's "
        "1.54, else inconclusive", d,
        our_value=(f"sd < gap in {int((r < 1).sum())}/{len(r)} cells, median sd / gap "
                   f"{r.median():.3f}; {d.detail}") if len(r) else d.detail)
    return [a1, a2, f]


def readout_claims(result: Any, encoders: Sequence[str] | None = None, *,
                   alpha: float = 0.05) -> list:
    """Claims (d1), (d2) and (d3) (module docstring) on ``encoders`` (default all).
    ``alpha``: 1 − the intervals' level."""
    from mdlnb import claims as C
    from mdlnb._compare import resolve_protocol

    level = 1 - alpha
    post = result.posterior
    frame = result.frame
    if encoders is not None:
        post = post[post["encoder"].isin(encoders)]
        frame = frame[frame["encoder"].isin(encoders)]
    batch = int(resolve_protocol(result.config.protocol).batch_size)
    ch, pair, task = depth_change_by_task(post, first_batch=2 * batch)
    orders = len(result.config.seeds)
    d = C.t_effect(task["change"], paper_effect=PAPER_EFFECTS["d1"], level=level, unit="tasks")
    up, down = int((pair["change"] > 0).sum()), int((pair["change"] < 0).sum())
    bins = sorted(set(ch["early_bin"])) if len(ch) else []
    d1 = C.Claim.decided(
        "d1", "As data grows the readout posterior moves to deeper readouts.",
        "Sec. 4 'Readout Models', App. A.8 Fig. 9",
        "ImageNet, linear first, then MLPs of 1–3 hidden layers (4 encoders): +1 hidden layer",
        "per (encoder, task), posterior-mean readout depth in the last log-spaced bin of t minus "
        f"that in the first bin from t = 2B = {2 * batch} on (after a batch of evidence), mean "
        f"over {orders} orders and the task's encoders; {level:.0%} t interval over tasks: holds "
        "above 0, does not hold below 0 or below the paper's +1, else inconclusive", d,
        our_value=(f"{up} (encoder, task) pairs deeper, {down} shallower of {len(pair)}; "
                   f"reference bins {', '.join(bins[:3])}; {d.detail}" if len(pair) else
                   f"no (encoder, task) pair has 2 posterior bins from t = {2 * batch} on "
                   f"(streams of {sorted(set(result.sizes.values()))} examples, "
                   f"{result.config.posterior_bins} bins)"))
    pref = frame[frame["metric"] == "preferred readout depth"]
    pref = pref.groupby(["task", "group"], sort=True)["value"].mean().reset_index()

    def split(df, col):
        s = df.loc[df["group"] == "structured", col].to_numpy()
        o = df.loc[df["group"] != "structured", col].to_numpy()
        return s, o

    s, o = split(pref, "value")
    d = C.welch_effect(s, o, paper_effect=PAPER_EFFECTS["d2"], level=level, unit="tasks")
    d2 = C.Claim.decided(
        "d2", "Structured tasks prefer deeper readouts than natural tasks.",
        "Sec. 4 'Readout Models', Fig. 2",
        "structured mostly 3–7 hidden layers, natural 0–1 (19 VTAB tasks): +2 hidden layers",
        "per task, the preferred readout depth (mean over encoders and orders); structured "
        f"tasks minus all others (natural and specialized), {level:.0%} Welch interval: holds "
        "above 0, does not hold below 0 or below the paper's +2, else inconclusive", d)
    s, o = split(task, "change")
    d = C.welch_effect(s, o, paper_effect=PAPER_EFFECTS["d3"], level=level, unit="tasks")
    d3 = C.Claim.decided(
        "d3", "The move to deeper readouts is larger on structured tasks than on natural ones.",
        "Sec. 4 'Readout Models', Fig. 2, Fig. 9", "qualitative; taken as +1 hidden layer",
        "(d1)'s per-task change in posterior-mean depth, structured tasks minus all others, "
        f"{level:.0%} Welch interval: holds above 0, does not hold below 0 or below +1, else "
        "inconclusive", d)
    return [d1, d2, d3]
