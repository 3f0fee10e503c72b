"""Issue 14's claims (a), (d), (f) decided on the encoder study's frames.

Every verdict comes from a rule of :mod:`mdlnb.claims` applied to the tidy
frames of :class:`EncodersResult` (``frame``, ``posterior``); nothing is
decided by eye. The rules, and why:

* (a1) *linear and best-MLP accuracy rank encoders differently* (paper
  Table 1a, Sec. 4): per task, Kendall τ_b between the encoders' linear and
  best-MLP accuracy ranks; holds if the 95 % t-interval of the mean over tasks
  lies below 1, does not hold if every task's τ is exactly 1 (identical
  orders everywhere), inconclusive otherwise. A single run's accuracies carry
  probe and test-set noise that this rule does not separate from a real
  disagreement; the rule only says the disagreement is not one task's accident.
* (a2) *MDL reconciles them*: MDL's order agrees with the best-MLP order more
  than linear's does — per task d_t = τ_t(MLP, MDL) − τ_t(MLP, linear), a
  one-sided Wilcoxon signed-rank test over tasks at α = 0.05 (paper, average
  ranks of Table 1a: τ(MLP, MDL) = 0.87 > τ(MLP, linear) = 0.73). With ≤ 4
  tasks no outcome reaches p < 0.05 (exact p ≥ 1/16): inconclusive.
* (f) *the permutation std is small against the gaps* (App. A.7): per
  (task, encoder) the sd of the codelength over data orders against the gap
  to the nearest-ranked encoder; exact one-sided sign test that sd < gap in
  more cells than not (α = 0.05). Neighbouring cells share a gap, so the
  cells are not independent; the test is a summary, not an exact p.
* (d1) *the posterior moves to deeper readouts as data grows* (Fig. 9): per
  (encoder, task) the posterior-mean readout depth Σ_r p(r) · depth(r) in the
  last log-spaced bin of t minus that in the first bin that starts after the
  first batch (before it the posterior is the prior: the first batch is coded
  uniformly), averaged over data orders; exact sign test over pairs, α = 0.05.
* (d2) *structured tasks prefer deeper readouts than natural ones* (Fig. 2):
  the preferred readout depth argmax_r (1/T) Σ_t p(r | D_<t) averaged over
  orders, structured vs natural pairs, one-sided Mann–Whitney U, α = 0.05.
* (d3) *the move to deeper readouts is larger on structured tasks*: the same
  test on (d1)'s per-pair change.

(d2, d3) treat the (encoder, task) pairs as independent although they share
encoders and tasks; without both groups in the grid they are inconclusive.
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


def _fmt_taus(t) -> str:
    return ", ".join(f"{m} {t.loc[m]:.2f}" for m in t.index)


def objectives_claims(result: Any, encoders: Sequence[str], *, alpha: float = 0.05) -> list:
    """Claims (a1), (a2) and (f) (module docstring) on ``encoders`` of ``result``."""
    from mdlnb import claims as C
    from mdlnb.studies.encoders import _paper

    frame = result.frame
    agree = per_task_agreement(frame, encoders)
    ours = _tables.ranking_agreement(frame, encoders).set_index("methods")["kendall tau"]
    paper = _paper.kendall_between_methods().set_index("methods")["kendall tau"]
    k, n = len(encoders), len(agree)
    lm = agree["linear vs mlp"].dropna().to_numpy()
    if lm.size and np.all(lm == 1.0):
        d = C.Decision(C.FAILS, f"τ = 1 on all {lm.size} tasks")
    else:
        d = C.interval_excludes(lm, 1.0, side="below")
    a1 = C.Claim.decided(
        "a1", "Linear-probe and best-MLP accuracy rank the pretrained encoders differently.",
        "Sec. 4, Table 1a", "τ(linear, MLP) of the average-rank orders "
        f"{paper.loc['linear vs mlp']:.2f} (r = 6, N = 19)",
        f"per task ({n} tasks, k = {k} encoders), Kendall τ_b between linear and best-MLP "
        "accuracy ranks; holds if the 95 % t-interval of the mean lies below 1, does not hold "
        "if τ = 1 on every task, else inconclusive", d,
        our_value=f"per-task τ: {d.detail}; average-rank orders: {_fmt_taus(ours)}")
    both = agree[["mlp vs mdl", "linear vs mlp"]].dropna()
    d = C.paired_test(both["mlp vs mdl"], both["linear vs mlp"], alternative="greater",
                      alpha=alpha)
    a2 = C.Claim.decided(
        "a2", "MDL with readout switching reconciles them: its order agrees with the best-MLP "
        "order more than the linear order does.", "Sec. 4, Table 1a",
        f"τ(MLP, MDL) {paper.loc['mlp vs mdl']:.2f} > τ(MLP, linear) "
        f"{paper.loc['linear vs mlp']:.2f} (average-rank orders)",
        "per task, d = τ(MLP, MDL) − τ(MLP, linear) of the rank orders; one-sided Wilcoxon "
        f"signed-rank test of d > 0 over tasks at α = {alpha:g}", d,
        our_value=f"{d.detail}; average-rank orders: {_fmt_taus(ours)}")
    var = _tables.permutation_variance(frame, encoders)
    ok = var.dropna(subset=["sd [nats]", "sd / nearest gap"])
    gap = ok["sd [nats]"] / ok["sd / nearest gap"]
    orders = int(var["orders"].min()) if len(var) else 0
    if orders < 2:
        d = C.Decision(C.INCONCLUSIVE, f"{orders} data order(s): no standard deviation")
    else:
        d = C.paired_test(ok["sd [nats]"], gap, alternative="less", method="sign", alpha=alpha)
    pp = _tables.PAPER_PERMUTATION
    paper_ratio = pp["std"] / min(pp["mean"] - pp["above"], pp["below"] - pp["mean"])
    r = ok["sd / nearest gap"]
    f = C.Claim.decided(
        "f", "The codelength's standard deviation over data orders is small against the gaps "
        "between encoders ranked next to each other.", "App. A.7",
        f"ResNet-50 SUP on Cifar100, {pp['orders']} orders: sd {pp['std']:.0f} nats against "
        f"gaps {pp['mean'] - pp['above']:.0f} / {pp['below'] - pp['mean']:.0f} "
        f"(sd / gap {paper_ratio:.3f})",
        f"per (task, encoder) cell, sd over {orders} orders vs the gap to the nearest-ranked "
        f"encoder; exact one-sided sign test of sd < gap over cells at α = {alpha:g}", d,
        our_value=(f"sd < gap in {int((r < 1).sum())}/{len(r)} cells, median sd / gap "
                   f"{r.median():.3f} (max {r.max():.3f}); {d.detail}") if len(r) else d.detail)
    return [a1, a2, f]


def readout_claims(result: Any, encoders: Sequence[str] | None = None, *,
                   alpha: float = 0.05) -> list:
    """Claims (d1), (d2) and (d3) (module docstring) on ``encoders`` (default all)."""
    from mdlnb import claims as C
    from mdlnb._compare import resolve_protocol

    post = result.posterior
    frame = result.frame
    if encoders is not None:
        post = post[post["encoder"].isin(encoders)]
        frame = frame[frame["encoder"].isin(encoders)]
    batch = int(resolve_protocol(result.config.protocol).batch_size)
    ch = depth_change(post, first_batch=batch)
    pair = ch.groupby(["encoder", "task", "group"], sort=True)[["early", "late", "change"]] \
        .mean().reset_index()
    orders = len(result.config.seeds)
    d = C.paired_test(pair["late"], pair["early"], alternative="greater", method="sign",
                      alpha=alpha)
    up, down = int((pair["change"] > 0).sum()), int((pair["change"] < 0).sum())
    d1 = C.Claim.decided(
        "d1", "As data grows the readout posterior moves to deeper readouts.",
        "Sec. 4 'Readout Models', App. A.8 Fig. 9",
        "qualitative: ImageNet, linear first, then MLPs of 1–3 hidden layers (4 encoders)",
        "per (encoder, task), posterior-mean readout depth in the last log-spaced bin of t minus "
        f"that in the first bin after the first batch (B = {batch}), mean over {orders} "
        f"orders; exact one-sided sign test over pairs at α = {alpha:g}", d,
        our_value=(f"{up} pairs deeper, {down} shallower of {len(pair)}; mean change "
                   f"{pair['change'].mean():+.2f} hidden layers; {d.detail}" if len(pair) else
                   f"no (encoder, task) pair has 2 posterior bins after the first batch "
                   f"(streams of {sorted(set(result.sizes.values()))} examples, "
                   f"{result.config.posterior_bins} bins)"))
    pref = frame[frame["metric"] == "preferred readout depth"]
    pref = pref.groupby(["encoder", "task", "group"], sort=True)["value"].mean().reset_index()

    def split(df, col):
        s = df.loc[df["group"] == "structured", col].to_numpy()
        n = df.loc[df["group"] == "natural", col].to_numpy()
        return s, n

    def grouped(s, n):
        if s.size == 0 or n.size == 0:
            return C.Decision(C.INCONCLUSIVE, f"{s.size} structured and {n.size} natural pairs "
                              "in the grid: no comparison")
        return C.rank_sum_test(s, n, alternative="greater", alpha=alpha)

    s, n = split(pref, "value")
    d = grouped(s, n)
    d2 = C.Claim.decided(
        "d2", "Structured tasks prefer deeper readouts than natural tasks.",
        "Sec. 4 'Readout Models', Fig. 2",
        "qualitative: structured mostly 3–7 hidden layers, natural 0–1 (19 VTAB tasks)",
        "preferred readout depth per (encoder, task), mean over orders; one-sided Mann–Whitney U "
        f"of structured > natural at α = {alpha:g} (pairs taken as independent)", d,
        our_value=(f"mean depth structured {s.mean():.2f}, natural {n.mean():.2f}; {d.detail}"
                   if s.size and n.size else d.detail))
    s, n = split(pair, "change")
    d = grouped(s, n)
    d3 = C.Claim.decided(
        "d3", "The move to deeper readouts is larger on structured tasks than on natural ones.",
        "Sec. 4 'Readout Models', Fig. 2, Fig. 9", "qualitative",
        "(d1)'s change in posterior-mean depth per (encoder, task); one-sided Mann–Whitney U of "
        f"structured > natural at α = {alpha:g} (pairs taken as independent)", d,
        our_value=(f"mean change structured {s.mean():+.2f}, natural {n.mean():+.2f}; "
                   f"{d.detail}" if s.size and n.size else d.detail))
    return [d1, d2, d3]
