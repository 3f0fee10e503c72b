"""Stage 1's progress: a ``(done, total, best_nats_per_example)`` callback after
every compiled call — the caller's own, a drawn bar (:mod:`mdlnb.infra._progress`), or
nothing."""

from __future__ import annotations

import math
from collections.abc import Callable

from mdlnb.infra import _progress

ProgressFn = Callable[[int, int, float], None]


def bar_shown(progress) -> bool:
    """Whether :func:`make_progress` draws a bar (not a callback, not batch mode)."""
    return not callable(progress) and _progress.enabled() and _progress.wanted(progress, long=True)


def make_progress(progress, n, k):
    """A ``(done, total, best_nats_per_example)`` callback and a closer, for a stream
    of ``n`` examples on ``k`` experts."""
    if callable(progress):
        return progress, lambda: None
    # None (auto) where a person watches: a bar once stage 1 has run AUTO_DELAY_S
    # (digits on the default board, N·K = 7e4, takes a minute on a CPU), at once
    # when it is known to be long (N·K ≥ 2e6) or asked for
    if not _progress.wanted(progress, long=True):
        return (lambda *a: None), lambda: None
    at_once = progress is not None or n * k >= 2_000_000
    bar = _progress.bar(
        total=n,
        unit="ex",
        desc="prequential",
        leave=False,
        delay=0.0 if at_once else _progress.AUTO_DELAY_S,
    )

    def update(done, total, best):
        bar.update(done - bar.n)
        bar.set_postfix_str(f"best {best / math.log(2):.3f} bits/ex", refresh=False)

    return update, bar.close
