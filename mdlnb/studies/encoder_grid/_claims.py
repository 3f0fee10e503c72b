"""The encoder study's claims (a1, a2, f, d1, d2, d3), decided on its tidy frames.

Every verdict comes from a rule of :mod:`mdlnb.research.claims` applied to the frames of
:class:`EncodersResult` (``frame``, ``posterior``, ``curves``); nothing is
decided by eye. Each rule and the paper's effect are fixed here, before any
run, and the verdict has two parts decided by one 95 % interval
(:func:`mdlnb.research.claims.effect_decision`): *direction* (replicated / reversed /
undetermined against no effect) and *size* (smaller / consistent / larger than
the paper's). The unit of replication is the task: encoders, orders and pairs
within a task share it. Li, Bornschein & Hutter 2023, arXiv:2302.09579:

* (a1) *linear and best-MLP accuracy rank encoders differently* (Sec. 4,
  Table 1a): the paper's statistic, 1 − τ between the average-rank orders of
  the encoders by linear and by best-MLP accuracy; percentile bootstrap over
  tasks; paper: 1 − 0.73 = 0.27.
* (a2) *MDL reconciles them* (Sec. 4, Table 1a): Δτ = τ(MLP, MDL) − τ(MLP,
  linear) between the average-rank orders, bootstrap over tasks; paper: 0.87 −
  0.73 = 0.14. Over every encoder of the grid (pre-registered: τ over more
  encoders is less coarse); more questions asked of the same procedural images
  are not independent tasks, so only more *tasks* would decide it.
* (f) *the order-to-order sd is small against the gaps between neighbouring
  encoders* (App. A.7): effect −log10 of the median over (task, encoder) cells
  of sd / gap to the nearest-ranked encoder (> 0 ⟺ sd < gap), bootstrap over
  tasks. The statistic depends on the stream length N: the sd of a sum of N
  per-example code differences grows as √N, a gap between encoders as N, so
  −log10(sd / gap) grows by ½·log10 N. The paper's value (sd 134 against gaps
  4,937 / 4,643 on Cifar100, N = 50,000: 1.54) is therefore compared at matched
  N, restated at this run's N under that law (1.54 − ½·log10(50,000 / N)), and
  the law itself is measured along the run's own prefixes (the slope of the
  statistic against log10 n, reported beside the verdict).
* (d1) *the posterior moves to deeper readouts as data grows* (Fig. 9): per
  (encoder, task) the posterior-mean readout depth in the last log-spaced bin
  of t minus that in the first bin starting at t ≥ 2B (after one whole batch
  of evidence; the first batch is coded uniformly); mean over orders and the
  task's encoders; t interval over tasks; paper: linear first, then 1–3 hidden
  layers: +1 hidden layer.
* (d2) *structured tasks prefer deeper readouts than natural ones* (Fig. 2):
  per task the preferred readout depth (mean over encoders and orders);
  structured tasks against natural ones, Welch interval (specialized tasks
  are reported beside, not pooled with either); paper: structured 3–7 vs
  natural 0–1 hidden layers: +2.
* (d3) *the move to deeper readouts is larger on structured tasks than on
  natural ones*: (d1)'s per-task change, structured against natural, Welch;
  paper (Fig. 9 against Fig. 2, qualitative): taken as +1 hidden layer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from mdlnb.board._arguments import resolve_protocol
from mdlnb.research import claims as C
from mdlnb.research import ranking
from mdlnb.studies.encoder_grid import _paper, _significance, _tables

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

    rf = _tables.rank_frame(frame, encoders=encoders)
    w = rf.pivot_table(index=["task", "encoder"], columns="method", values="rank")
    rows = []
    for task, g in w.groupby(level="task", sort=False):
        row = {"task": task}
        for a, b in (("linear", "mlp"), ("mlp", "mdl"), ("linear", "mdl")):
            x, y = g[a].to_numpy(float), g[b].to_numpy(float)
            row[f"{a} vs {b}"] = (
                np.nan if np.ptp(x) == 0 or np.ptp(y) == 0 else ranking.kendall_tau(x, y)
            )
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
        rows.append(
            dict(
                zip(keys, key),
                early=early,
                late=late,
                change=late - early,
                early_bin=f"[{int(after['t_start'].iloc[0])}, {int(after['t_end'].iloc[0])})",
            )
        )
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
    var = _significance.permutation_variance(frame, encoders)
    ok = var.dropna(subset=["sd [nats]", "sd / nearest gap"])
    ok = ok[ok["sd / nearest gap"] > 0]
    return var, ok, [g["sd / nearest gap"].to_numpy() for _, g in ok.groupby("task")]


def _fmt_taus(t) -> str:
    return ", ".join(f"{m} {t.loc[m]:.2f}" for m in t.index)


#: The paper's effects (units: τ, hidden layers, log10 of sd / gap), fixed before any run.
PAPER_EFFECTS = {
    "a1": 1 - 0.73,
    "a2": 0.87 - 0.73,
    "f": -float(np.log10(134 / 4643)),
    "d1": 1.0,
    "d2": 2.0,
    "d3": 1.0,
}
#: App. A.7's stream: Cifar100's 50,000 training examples.
PAPER_F_N = 50_000


def f_paper_at(n: int) -> float:
    """(f)'s paper value restated at stream length ``n``: 1.54 − ½·log10(50,000 / n)."""
    return PAPER_EFFECTS["f"] - 0.5 * float(np.log10(PAPER_F_N / n))


def rank_tables(frame, encoders: Sequence[str]) -> list:
    """Per task, the encoders' ranks (rows, in ``encoders`` order) by method (columns)."""
    rf = _tables.rank_frame(frame, encoders=encoders)
    w = rf.pivot_table(index=["task", "encoder"], columns="method", values="rank")
    return [g.droplevel("task").reindex(list(encoders)) for _, g in w.groupby(level="task")]


def _average_orders(tables: Sequence):
    avg = sum(t.to_numpy(float) for t in tables) / len(tables)
    cols = list(tables[0].columns)
    return {m: avg[:, cols.index(m)] for m in ("linear", "mlp", "mdl")}


def order_disagreement(tables: Sequence) -> float:
    """(a1)'s statistic on per-task rank tables: 1 − τ(linear, MLP) of the
    average-rank orders (NaN when an average order ties every encoder)."""
    o = _average_orders(tables)
    if min(np.ptp(o["linear"]), np.ptp(o["mlp"])) == 0:
        return float("nan")
    return 1.0 - float(ranking.kendall_tau(o["linear"], o["mlp"]))


def delta_tau(tables: Sequence) -> float:
    """(a2)'s statistic on per-task rank tables: τ(MLP, MDL) − τ(MLP, linear) of the
    average-rank orders (NaN when an average order ties every encoder)."""
    o = _average_orders(tables)
    if min(np.ptp(o["linear"]), np.ptp(o["mlp"]), np.ptp(o["mdl"])) == 0:
        return float("nan")
    return float(
        ranking.kendall_tau(o["mlp"], o["mdl"]) - ranking.kendall_tau(o["mlp"], o["linear"])
    )


def _log_ratio_median(cells: Sequence) -> float:
    return float(-np.log10(np.median(np.concatenate([np.asarray(c) for c in cells]))))


def order_noise_along_n(curves, encoders: Sequence[str], groups: dict, *, min_n: int = 64):
    """(f)'s statistic at every prefix n of the streams (the bin ends of ``curves``
    from ``min_n`` on, where every (task, encoder) has every order): columns ``task``,
    ``n``, ``log_ratio`` (−log10 of the task's median sd / nearest gap at n); ``groups``:
    task → group."""
    import pandas as pd

    c = curves[curves["encoder"].isin(list(encoders)) & (curves["n"] >= min_n)]
    frame = c.rename(columns={"cumulative [nats]": "value"}).assign(
        metric="codelength [nats]", group=c["task"].map(groups)
    )
    rows = []
    for n, g in frame.groupby("n", sort=True):
        _, ok, cells = order_noise_cells(g, encoders)
        for task, t in ok.groupby("task", sort=True):
            rows.append(
                {
                    "task": task,
                    "n": int(n),
                    "log_ratio": float(-np.log10(np.median(t["sd / nearest gap"]))),
                }
            )
    return pd.DataFrame(rows, columns=["task", "n", "log_ratio"])


def slope_parts(along) -> list[tuple[float, float]]:
    """Per task, (Σ x̃ỹ, Σ x̃²) of (f)'s statistic ỹ against x̃ = log10 n, both centred
    within the task: the pieces of :func:`n_slope`, which a bootstrap over tasks sums."""
    out = []
    for _, g in along.groupby("task", sort=True):
        x = np.log10(g["n"].to_numpy(float))
        y = g["log_ratio"].to_numpy(float)
        x, y = x - x.mean(), y - y.mean()
        out.append((float((x * y).sum()), float((x * x).sum())))
    return out


def n_slope(parts) -> float:
    """Least-squares slope of (f)'s statistic against log10 n, pooled over tasks with a
    per-task intercept, from :func:`slope_parts` (the ½·log10 N law predicts 0.5)."""
    sxy, sxx = (sum(p[i] for p in parts) for i in (0, 1))
    return sxy / sxx if sxx > 0 else float("nan")


def _a_claims(frame, encoders, a2_encoders, level: float, paper) -> list:
    k = len(encoders)
    tables = rank_tables(frame, encoders)
    ours = _tables.ranking_agreement(frame, encoders).set_index("methods")["kendall tau"]
    d = C.bootstrap_effect(
        tables, order_disagreement, paper_effect=PAPER_EFFECTS["a1"], level=level, unit="tasks"
    )
    a1 = C.Claim.decided(
        "a1",
        "Linear-probe and best-MLP accuracy rank the pretrained encoders differently.",
        "Li et al. 2023 Sec. 4, Table 1a",
        "1 − τ(linear, MLP) of the average-rank orders "
        f"{1 - paper.loc['linear vs mlp']:.2f} (6 encoders, 19 tasks)",
        f"1 − Kendall τ between the average-rank orders of {k} encoders by linear and by "
        "best-MLP accuracy over tasks; percentile bootstrap over tasks (2,000 resamples)",
        d,
        effect="1 − τ(linear, MLP) of average-rank orders",
        our_value=f"{d.detail}; average-rank orders of these {k} encoders: {_fmt_taus(ours)}",
    )
    tables = rank_tables(frame, a2_encoders)
    orders = _tables.ranking_agreement(frame, a2_encoders).set_index("methods")["kendall tau"]
    d = C.bootstrap_effect(
        tables, delta_tau, paper_effect=PAPER_EFFECTS["a2"], level=level, unit="tasks"
    )
    a2 = C.Claim.decided(
        "a2",
        "MDL with readout switching reconciles them: its order agrees with the best-MLP "
        "order more than the linear order does.",
        "Li et al. 2023 Sec. 4, Table 1a",
        f"Δτ = τ(MLP, MDL) {paper.loc['mlp vs mdl']:.2f} − τ(MLP, linear) "
        f"{paper.loc['linear vs mlp']:.2f} = {PAPER_EFFECTS['a2']:.2f} (average-rank orders)",
        f"Δτ of the average-rank orders over tasks, k = {len(a2_encoders)} encoders "
        "(pre-registered: only more tasks, not more questions of the same images, would "
        "decide it); percentile bootstrap over tasks (2,000 resamples)",
        d,
        effect="Δτ(MLP; MDL − linear)",
        our_value=f"{d.detail}; average-rank orders of these {len(a2_encoders)} encoders: "
        f"{_fmt_taus(orders)}",
    )
    return [a1, a2]


def _f_claim(result, encoders, level: float):
    var, ok, cells = order_noise_cells(result.frame, encoders)
    orders = int(var["orders"].min()) if len(var) else 0
    n = int(min(result.sizes.values()))
    paper_n = f_paper_at(n)
    d = C.bootstrap_effect(
        cells if orders >= 2 else [],
        _log_ratio_median,
        paper_effect=paper_n,
        level=level,
        unit="tasks",
    )
    groups = result.frame.drop_duplicates("task").set_index("task")["group"].to_dict()
    along = order_noise_along_n(result.curves, encoders, groups)
    parts = slope_parts(along)
    slope, s_lo, s_hi = (
        C.bootstrap_interval(parts, n_slope, level=level)
        if len(parts) >= 2
        else (n_slope(parts), float("nan"), float("nan"))
    )
    pp = _significance.PAPER_PERMUTATION
    paper_ratio = pp["std"] / min(pp["mean"] - pp["above"], pp["below"] - pp["mean"])
    r = ok["sd / nearest gap"]
    return C.Claim.decided(
        "f",
        "The codelength's standard deviation over data orders is small against the gaps "
        "between encoders ranked next to each other.",
        "Li et al. 2023 App. A.7",
        f"ResNet-50 SUP on Cifar100 (N = {PAPER_F_N:,}), {pp['orders']} orders: sd "
        f"{pp['std']:.0f} nats against gaps {pp['mean'] - pp['above']:.0f} / "
        f"{pp['below'] - pp['mean']:.0f} (sd / gap {paper_ratio:.3f}, −log10 "
        f"{PAPER_EFFECTS['f']:.2f}); at N = {n:,} under the ½·log10 N law: {paper_n:.2f}",
        f"per (task, encoder) cell at N = {n:,}, sd over {orders} orders / gap to the "
        "nearest-ranked encoder; effect −log10 of the median ratio (> 0: sd < gap), compared "
        f"with the paper's restated at N = {n:,}; percentile bootstrap over tasks",
        d,
        effect=f"−log10 median(sd / gap) at N = {n:,}",
        our_value=(
            f"sd < gap in {int((r < 1).sum())}/{len(r)} cells, median sd / gap "
            f"{r.median():.3f}; {d.detail}; the law measured along the run's prefixes "
            f"(n = {int(along['n'].min()) if len(along) else 0}–{n:,}): slope of the "
            f"statistic against log10 n {slope:.3f}, 95% bootstrap interval "
            f"[{s_lo:.3f}, {s_hi:.3f}] (law: 0.5)"
        ),
    )


def objectives_claims(
    result: Any,
    encoders: Sequence[str],
    *,
    alpha: float = 0.05,
    a2_encoders: Sequence[str] | None = None,
) -> list:
    """Claims (a1), (a2) and (f) (module docstring) on ``encoders`` of ``result``;
    (a2) on ``a2_encoders`` (default: every encoder of the grid).
    ``alpha``: 1 − the intervals' level."""
    level = 1 - alpha
    frame = result.frame
    paper = _paper.kendall_between_methods().set_index("methods")["kendall tau"]
    a2_encoders = list(a2_encoders or dict.fromkeys(frame["encoder"]))
    return _a_claims(frame, encoders, a2_encoders, level, paper) + [
        _f_claim(result, encoders, level)
    ]


def _by_group(df, col: str) -> dict:
    return {
        g: df.loc[df["group"] == g, col].to_numpy()
        for g in ("structured", "natural", "specialized")
    }


def readout_claims(
    result: Any, encoders: Sequence[str] | None = None, *, alpha: float = 0.05
) -> list:
    """Claims (d1), (d2) and (d3) (module docstring) on ``encoders`` (default all).
    ``alpha``: 1 − the intervals' level."""
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
        "d1",
        "As data grows the readout posterior moves to deeper readouts.",
        "Li et al. 2023 Sec. 4 'Readout Models', App. A.8 Fig. 9",
        "ImageNet, linear first, then MLPs of 1–3 hidden layers (4 encoders): +1 hidden layer",
        "per (encoder, task), posterior-mean readout depth in the last log-spaced bin of t minus "
        f"that in the first bin from t = 2B = {2 * batch} on (after a batch of evidence), mean "
        f"over {orders} orders and the task's encoders; t interval over tasks",
        d,
        effect="change in posterior-mean depth [hidden layers]",
        our_value=(
            f"{up} (encoder, task) pairs deeper, {down} shallower of {len(pair)}; "
            f"reference bins {', '.join(bins[:3])}; {d.detail}"
            if len(pair)
            else f"no (encoder, task) pair has 2 posterior bins from t = {2 * batch} on"
        ),
    )
    deepest = max((readout_depth(r) for r in set(post["readout"])), default=0)
    pref = frame[frame["metric"] == "preferred readout depth"]
    pref = pref.groupby(["task", "group"], sort=True)["value"].mean().reset_index()
    g = _by_group(pref, "value")
    spec = (
        f"; specialized tasks beside: {g['specialized'].mean():.3g} (n = {g['specialized'].size})"
        if g["specialized"].size
        else ""
    )
    d = C.welch_effect(
        g["structured"], g["natural"], paper_effect=PAPER_EFFECTS["d2"], level=level, unit="tasks"
    )
    d2 = C.Claim.decided(
        "d2",
        "Structured tasks prefer deeper readouts than natural tasks.",
        "Li et al. 2023 Sec. 4 'Readout Models', Fig. 2",
        "structured mostly 3–7 hidden layers, natural 0–1 (19 VTAB tasks): +2 hidden layers",
        "per task, the preferred readout depth (mean over encoders and orders; the board's "
        f"deepest readout has {deepest} hidden layers, the paper's 7); structured "
        "tasks minus natural tasks, Welch interval",
        d,
        effect="structured − natural preferred depth [hidden layers]",
        our_value=d.detail + spec,
    )
    g = _by_group(task, "change")
    spec = (
        f"; specialized tasks beside: {g['specialized'].mean():.3g} (n = {g['specialized'].size})"
        if g["specialized"].size
        else ""
    )
    d = C.welch_effect(
        g["structured"], g["natural"], paper_effect=PAPER_EFFECTS["d3"], level=level, unit="tasks"
    )
    d3 = C.Claim.decided(
        "d3",
        "The move to deeper readouts is larger on structured tasks than on natural ones.",
        "Li et al. 2023 Sec. 4 'Readout Models', Fig. 2, Fig. 9",
        "qualitative; taken as +1 hidden layer",
        "(d1)'s per-task change in posterior-mean depth, structured tasks minus natural tasks, "
        "Welch interval",
        d,
        effect="structured − natural depth change [hidden layers]",
        our_value=d.detail + spec,
    )
    return [d1, d2, d3]
