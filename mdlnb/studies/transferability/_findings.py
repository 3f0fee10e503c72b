"""What a run found, in words computed from its numbers, and its setting beside PACTran's."""

from __future__ import annotations

from typing import Any

import numpy as np

from mdlnb.research.ranking import kendall_tau
from mdlnb.studies.transferability._metrics import STATIC, display_name


def _fmt(row, r) -> str:
    return f"{row[f'N/K={r}']:.2f} [{row[f'lo N/K={r}']:.2f}, {row[f'hi N/K={r}']:.2f}]"


def _zoo_lines(zoo: str, g: Any, ratios: list[int]) -> list[str]:

    lines = []
    est = g[~g["metric"].isin(STATIC)]
    for r in ratios:
        col = f"N/K={r}"
        s = est.sort_values(col, ascending=False)
        top = s.iloc[0]
        tied = [x for _, x in s.iloc[1:].iterrows() if x[f"hi {col}"] >= top[f"lo {col}"]]
        lines.append(
            f"* {zoo}, N/K = {r}: highest mean τ {display_name(top['metric'])} "
            f"({_fmt(top, r)}), then "
            + ", ".join(
                f"{display_name(x['metric'])} ({_fmt(x, r)})" for _, x in s.iloc[1:4].iterrows()
            )
            + f". Intervals overlapping the top one: {len(tied)} of {len(s) - 1}."
        )
    if "mdl" in set(g["metric"]):
        parts = []
        for r in ratios:
            s = est.sort_values(f"N/K={r}", ascending=False).reset_index(drop=True)
            pos = int(s.index[s["metric"] == "mdl"][0])
            parts.append(f"N/K = {r}: {_fmt(s.iloc[pos], r)}, rank {pos + 1} of {len(s)}")
        lines.append(f"* {zoo}, MDL codelength: " + "; ".join(parts) + ".")
    for m in STATIC:
        row = g[g["metric"] == m]
        if not row.empty:
            lines.append(
                f"* {zoo}, static baseline {display_name(m)}: "
                + "; ".join(f"N/K = {r}: {_fmt(row.iloc[0], r)}" for r in ratios)
                + "."
            )
    return lines


def findings(result: Any) -> str:
    """Markdown bullets: per zoo the best metrics and their intervals, MDL's rank, the
    static baselines, how many checkpoint pairs the ground truth separates beyond noise
    and how fine-tuned and frozen-probe accuracy agree."""
    table = result.summary()
    if table.empty:
        return "* No Kendall τ could be computed (fewer than 2 encoders with values).\n"
    ratios = sorted(int(c[4:]) for c in table.columns if c.startswith("N/K="))
    lines = []
    for zoo, g in table.groupby("zoo", sort=False):
        lines += _zoo_lines(zoo, g, ratios)
    for zoo, g in result.noise.groupby("zoo", sort=True):
        lines.append(
            f"* {zoo}, ground truth: {int(g['beyond_noise'].sum()):,} of "
            f"{int(g['pairs'].sum()):,} checkpoint pairs "
            f"({g['beyond_noise'].sum() / max(g['pairs'].sum(), 1):.0%}) differ in "
            f"fine-tuned test accuracy beyond binomial noise (McNemar, 5 %; test sets "
            f"of {int(g['test_size'].min()):,}–{int(g['test_size'].max()):,}); per task "
            + ", ".join(f"{r.task} {r.fraction:.0%}" for r in g.itertuples())
            + "."
        )
    t = result.truth_table()
    if {"finetune", "probe"} <= set(t.columns):
        for zoo, g in t.groupby("zoo", sort=True):
            taus = [
                kendall_tau(h["probe"], h["finetune"])
                for _, h in g.groupby("task")
                if len(h) > 2 and np.ptp(h["probe"]) and np.ptp(h["finetune"])
            ]
            if taus:
                lines.append(
                    f"* {zoo}: frozen-probe and fine-tuned accuracy agree with mean "
                    f"Kendall τ {np.mean(taus):.2f} over {len(taus)} tasks (range "
                    f"{min(taus):.2f} to {max(taus):.2f})."
                )
    c = result.config
    lines.append(
        f"* Intervals: 95 % two-stage bootstrap ({c.resamples:,} resamples) over the "
        f"{len(c.tasks)} tasks, then each task's {c.repeats} subsamples per N/K."
    )
    return "\n".join(lines) + "\n"


def setting(result: Any) -> list[tuple[str, str, str]]:
    """PACTran's (Sec. 4.1, App. B) setting against this run's (claims page rows)."""
    c = result.config
    zoos = "; ".join(f"{z}: {len(n)} checkpoints" for z, n in c.zoos().items())
    return [
        (
            "checkpoints",
            "16 ImageNet checkpoints (Table 1; Fig. 1 on Cifar-10), the 10 of "
            "them with 2,048-d features (Table 7)",
            zoos + " (each zoo one feature size, ranked separately)",
        ),
        (
            "tasks",
            "9 VTAB tasks (natural, specialized, structured)",
            f"{len(c.tasks)} embedded tasks: {', '.join(c.tasks)}",
        ),
        (
            "ground truth",
            "lowest test error over 8 full fine-tunes (SGD, 4 rates × 2 lengths) "
            "and 5 top-layer L-BFGS fits",
            f"{c.truth}: fine-tuning {c.ft_steps} AdamW steps of "
            f"{c.ft_batch_size} at rates {', '.join(f'{v:g}' for v in c.ft_learning_rates)}, "
            f"chosen on {c.val_size} validation images; test sets ≤ {c.test_size:,} images",
        ),
        (
            "subsamples",
            "N/K ∈ {2, 5, 10}, N ≥ 20, 5 per setting",
            f"N/K ∈ {{{', '.join(map(str, c.ratios))}}}, N ≥ {c.min_n}, {c.repeats} per setting "
            f"(power analysis, mdlnb.studies.transferability._power)",
        ),
        ("intervals", "none reported", "95 % two-stage bootstrap over tasks, then subsamples"),
    ]
