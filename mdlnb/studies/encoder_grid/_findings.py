"""The encoder study's findings in words (Markdown), each beside the paper's
numbers: what the notebooks print under their tables. Each function reads an
:class:`~mdlnb.studies.encoder_grid._result.EncodersResult`'s tables and computes
nothing of its own."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from mdlnb.api.plots import family_label, size_label
from mdlnb.studies.encoder_grid import _diagnosis, _tables

if TYPE_CHECKING:
    from mdlnb.studies.encoder_grid._result import EncodersResult


def _f(x: float, d: int = 2) -> str:
    return f"{x:.{d}f}"


def objectives_findings(
    result: EncodersResult, encoders: Sequence[str], *, alpha: float = 0.10
) -> str:
    """What the objectives run found, beside Table 1a / Table 2 / App. A.7 (Markdown)."""
    t = result.average_ranks(encoders).set_index("encoder")
    cd = result.critical_differences(encoders, alpha=alpha).set_index("tasks")
    fr = result.friedman(encoders)
    fr_all = fr[fr["tasks"] == "all"].set_index("method")
    agree = result.ranking_agreement(encoders).set_index("methods")
    perm = result.permutation_summary(encoders).iloc[0]
    paper_perm = result.permutation_summary(encoders).iloc[1]
    best = {m: t[f"{m} rank"].idxmin() for m in _tables.METHODS}
    n_tasks, k = int(cd.loc["all", "N"]), len(encoders)
    spread = t["mdl rank"].max() - t["mdl rank"].min()
    cd_all = cd.loc["all", "CD"]
    verdict = (
        "the critical difference is undefined here (" + cd.loc["all", "note"] + ")"
        if not np.isfinite(cd_all)
        else "at least one pair differs significantly"
        if spread >= cd_all
        else "no pair of encoders differs significantly"
    )
    lines = [
        f"- **Best encoder** over {n_tasks} tasks, k = {k}: by linear accuracy "
        f"`{best['linear']}` (rank {_f(t.loc[best['linear'], 'linear rank'])}), by best-MLP "
        f"accuracy `{best['mlp']}` ({_f(t.loc[best['mlp'], 'mlp rank'])}), by MDL "
        f"`{best['mdl']}` ({_f(t.loc[best['mdl'], 'mdl rank'])} ± "
        f"{_f(t.loc[best['mdl'], 'mdl sd'])}). Paper Table 1a: ViT/B16 DINO under MLP and "
        "MDL (1.84, 1.89) and linear (2.26).",
        f"- **Do the methods select alike?** Kendall τ between average-rank orderings: "
        f"linear vs MLP {_f(agree.loc['linear vs mlp', 'this run'])} (paper "
        f"{_f(agree.loc['linear vs mlp', 'paper Table 1a'])}), linear vs MDL "
        f"{_f(agree.loc['linear vs mdl', 'this run'])} (paper "
        f"{_f(agree.loc['linear vs mdl', 'paper Table 1a'])}), MLP vs MDL "
        f"{_f(agree.loc['mlp vs mdl', 'this run'])} (paper "
        f"{_f(agree.loc['mlp vs mdl', 'paper Table 1a'])}).",
        f"- **Significance.** Friedman p (MDL) = {fr_all.loc['mdl', 'p']:.3g}, (linear) = "
        f"{fr_all.loc['linear', 'p']:.3g}, (MLP) = {fr_all.loc['mlp', 'p']:.3g}. Nemenyi CD "
        f"at α = {alpha:g} with the correct q = {_f(cd.loc['all', 'q'], 3)}: "
        f"{_f(cd.loc['all', 'CD'], 3)} rank units; the MDL average ranks span "
        f"{_f(spread)}, so {verdict}"
        f". The paper prints 1.894 for its r = 6, N = 19 (q = 3.12 stated); the correct q for "
        f"r = 6 is {_f(cd.loc['all', 'correct q (paper r)'], 3)}, CD "
        f"{_f(cd.loc['all', 'correct CD (paper r, N)'], 3)}.",
        f"- **Permutation variance (App. A.7).** Over {int(perm['orders'])} data orders the "
        f"codelength's sd is a median {_f(perm['median sd / gap'], 3)} (max "
        f"{_f(perm['max sd / gap'], 3)}) of the gap to the nearest-ranked encoder; sd < gap in "
        f"{perm['share sd < gap']:.0%} of {int(perm['cells'])} (task, encoder) cells. The "
        f"paper's single measurement: {_f(paper_perm['median sd / gap'], 3)}.",
    ]
    return "\n".join(lines)


def group_findings(result: EncodersResult, encoders: Sequence[str]) -> str:
    """Supervised vs self-supervised average MDL rank per task group (paper Table 2, Fig. 7)."""
    g = result.group_ranks(encoders).set_index("encoder")
    obj = result.encoders.set_index("encoder").loc[list(encoders), "objective"]
    out = []
    for grp in [c[:-5] for c in g.columns if c.endswith(" rank")]:
        sup = g.loc[obj.index[obj == "supervised"], f"{grp} rank"]
        ssl = g.loc[obj.index[~obj.isin(["supervised", "random"])], f"{grp} rank"]
        if sup.empty or ssl.empty:
            continue
        out.append(
            f"- {grp} ({int(g[f'{grp} tasks'].iloc[0])} tasks): supervised mean rank "
            f"{_f(sup.mean())}, self-supervised {_f(ssl.mean())}; best "
            f"`{g[f'{grp} rank'].idxmin()}`."
        )
    out.append(
        "- Paper Table 2: self-supervised encoders beat supervised ones on structured "
        "tasks (ViT SUP 5.75, ResNet SUP 4.75 vs BYOL 2.13, MAE 2.38, DINO 2.63) "
        "while supervised ViT is 2nd-3rd on natural tasks (2.86)."
    )
    return "\n".join(out)


def scaling_findings(result: EncodersResult, encoders: Sequence[str]) -> str:
    """Does a larger encoder of one family code shorter? (paper Table 1b, Fig. 8)."""
    t = result.scaling(encoders)
    diffs = result.scaling_differences(encoders).set_index("encoder")
    out = []
    for (arch, obj), g in t.sort_values("parameters").groupby(["architecture", "objective"]):
        if len(g) < 2:
            continue
        bits = g["bits/example"].to_numpy()
        trend = (
            "shorter with every size step"
            if np.all(np.diff(bits) < 0)
            else "longer with every size step"
            if np.all(np.diff(bits) > 0)
            else "not monotone in size"
        )
        sizes = ", ".join(
            f"{size_label(arch, s)} {_f(b, 3)} ± {_f(sd, 3)}"
            for s, b, sd in zip(g["size"], bits, g["bits/example sd (tasks)"])
        )
        d = diffs.loc[list(g["encoder"])[1:]]
        paired = ", ".join(
            f"{size_label(arch, r['size'])} {r['Δ bits/example']:+.3f} ± "
            f"{_f(r['Δ sd (orders)'], 3)}"
            for _, r in d.iterrows()
        )
        ref = size_label(arch, g["size"].iloc[0])
        out.append(
            f"- {family_label(arch, obj)}: {sizes} bits/example (± sd over tasks) — "
            f"{trend}. Paired with {ref} on the same tasks and orders: {paired} "
            f"bits/example (± sd over {int(d['orders'].max())} orders)."
        )
    out.append(
        "- Paper Table 1b: supervised ResNets do not improve with size, BYOL weakly "
        "(ResNet-101), ViT S→B improves significantly, MAE keeps improving up to "
        "ViT/L16; rank differences below 3.65 (r = 12, N = 19) are not significant."
    )
    return "\n".join(out)


def regret_findings(result: EncodersResult, larger: str, smaller: str) -> str:
    r = result.regret(larger, smaller)
    last = r.sort_values("n").groupby("task").tail(1)
    parts = [
        f"{task} {d:+.1f} ± {0.0 if np.isnan(sd) else sd:.1f}"
        for task, d, sd in zip(last["task"], last["larger − smaller [nats]"], last["sd [nats]"])
    ]
    return (
        f"- `{larger}` − `{smaller}` at the end of each stream "
        "(nats, ± sd over orders): " + "; ".join(parts) + "."
    )


def readout_findings(result: EncodersResult, encoders: Sequence[str] | None = None) -> str:
    """Preferred depth and switching frequency per task group (paper Fig. 2, Sec. 4)."""
    s = result.switching(encoders).set_index("group")
    lines = [
        f"- {g}: preferred readout depth {_f(r['preferred depth'])} ± "
        f"{_f(r['preferred depth sd'])} hidden layers; MAP-readout switches "
        f"{_f(r['per 1k examples'], 1)} ± {_f(r['per 1k sd'], 1)} per 1,000 examples "
        f"({int(r['runs'])} runs)."
        for g, r in s.iterrows()
    ]
    if {"natural", "structured"} <= set(s.index):
        deeper = s.loc["structured", "preferred depth"] > s.loc["natural", "preferred depth"]
        more = s.loc["structured", "per 1k examples"] > s.loc["natural", "per 1k examples"]
        lines.append(
            f"- Structured tasks prefer {'deeper' if deeper else 'no deeper'} "
            f"readouts than natural ones and switch {'more' if more else 'less'} "
            "often. Paper Fig. 2: structured datasets need deeper models (mostly "
            "3–7 hidden layers vs 0–1 on natural); switching is more frequent out "
            "of domain."
        )
    return "\n".join(lines)


def diagnosis_findings(
    result: EncodersResult,
    diagnosis,
    *,
    encoder: str = "supervised:vit_S:trained",
    reference: str = "random:vit_S:trained",
) -> str:
    """:meth:`diagnosis` in words (Markdown), ``encoder`` against ``reference``, after
    the two encoders' average ranks over the diagnosed encoders."""
    t = result.average_ranks(list(dict.fromkeys(diagnosis["encoder"]))).set_index("encoder")
    ranks = {
        e: " / ".join(f"{t.loc[e, f'{m} rank']:.2f}" for m in ("linear", "mlp", "mdl"))
        for e in (encoder, reference)
    }
    return (
        f"**Why {encoder} ranks where it does.** Average ranks over {len(result.sizes)} "
        f"tasks by linear accuracy / best-MLP accuracy / MDL: {encoder} {ranks[encoder]}, "
        f"{reference} {ranks[reference]} (of {len(t)} encoders). Its features are the "
        "ones its classifier head and its pretraining probe read (the mean of the patch "
        "tokens after the final LayerNorm), so the ranking is not a featurisation "
        "defect; what its features lose is below.\n\n"
        + _diagnosis.findings(diagnosis, encoder=encoder, reference=reference)
    )
