"""Sentences that state a result, written from the result.

A notebook's prose may explain what to expect; a statement of what *this run*
found (which code is shorter, where the posterior went) must take its numbers
and its direction from the run, or a smoke run's prose contradicts its own
output. Each function here returns Markdown; notebooks show it with
``display(Markdown(...))``.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _nats(v: float) -> str:
    return f"{v:,.1f} nats"


def blockwise_vs_online(
    block_nats: float, online_nats: float, n: int, *, expert: str | None = None
) -> str:
    """The block-wise code (Voita & Titov) against the online prequential code of the
    same expert on the same ``n`` examples: which is shorter, by how much, and whether
    the expectation "fewer updates, a looser code" held on this run."""
    diff = block_nats - online_nats
    who = f" of the same expert, `{expert}`," if expert else " of the same expert"
    if abs(diff) < 0.05:
        return (
            f"**On this run** the block-wise code ({_nats(block_nats)}) and the online "
            f"code{who} ({_nats(online_nats)}) are equally long."
        )
    shorter = diff < 0
    verdict = (
        "does **not** hold here: the block-wise models, each trained from scratch "
        "for many epochs on all earlier blocks, predicted better than the online "
        "expert's few replay steps per batch"
        if shorter
        else "holds here"
    )
    return (
        f"**On this run** the block-wise code ({_nats(block_nats)}) is "
        f"**{'shorter' if shorter else 'longer'}** than the online code{who} "
        f"({_nats(online_nats)}) by {_nats(abs(diff))} ({abs(diff) / n:.3f} nats per "
        f"example over N = {n:,}). The expectation that fewer updates give a looser "
        f"code {verdict}."
    )


def posterior_share(mass: Any, *, threshold: float, who: str, where: str) -> str:
    """Where the posterior mass ``mass`` (a Series over t, examples seen) of the
    readouts ``who`` stands against ``threshold``: from which t on it stays above it
    to the end of the stream, or that it does not end above it (its final and
    largest values)."""
    t = np.asarray(mass.index)
    m = np.asarray(mass, dtype=float)
    pct = f"{threshold:.0%}"
    if m[-1] > threshold:
        below = t[m <= threshold]
        start = int(below.max()) + 1 if below.size else int(t.min())
        return (
            f"**On this run**, on {where}, the {who} hold more than {pct} of the "
            f"posterior from t = {start:,} on, to the end of the stream "
            f"(t = {int(t[-1]):,}; {m[-1]:.1%} there)."
        )
    k = int(np.argmax(m))
    return (
        f"**On this run**, on {where}, the {who} do **not** hold {pct} of the posterior "
        f"at the end of the stream: {m[-1]:.1%} at t = {int(t[-1]):,} (at most "
        f"{m[k]:.1%}, at t = {int(t[k]):,}). The posterior has not settled on them "
        f"within these {int(t[-1]) + 1:,} examples."
    )


def winners_compared(first: Any, second: Any, *, labels: tuple[str, str]) -> str:
    """Whether each measure's winner changes with n under two probes (``first``,
    ``second``: :func:`mdlnb.baselines.curves.winner_changes` tables), one line per measure,
    and whether the two pictures agree."""
    a = first.groupby("measure", sort=False).agg(
        changed=("changed", "any"), winners=("winners", "first")
    )
    b = second.groupby("measure", sort=False).agg(
        changed=("changed", "any"), winners=("winners", "first")
    )
    lines, differ = [], []
    for m in [m for m in a.index if m in b.index]:
        fa, fb = bool(a.loc[m, "changed"]), bool(b.loc[m, "changed"])
        if fa != fb:
            differ.append(m)

        def said(row, flips):
            return (
                f"it flips ({row['winners']})"
                if flips
                else f"it does not flip ({row['winners'] or 'no winner named'})"
            )

        lines.append(
            f"- {m}: with the {labels[0]} {said(a.loc[m], fa)}; with the {labels[1]} "
            f"{said(b.loc[m], fb)}"
        )
    head = (
        "**On this run** the two probes give the same picture: each measure flips, or "
        "not, under both."
        if not differ
        else f"**On this run** the pictures differ for {', '.join(differ)}: the {labels[1]} "
        f"do not reproduce what the {labels[0]} show at these sizes."
    )
    return head + "\n\n" + "\n".join(lines)
