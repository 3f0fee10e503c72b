"""The switching study's tables: slices of the pairs' frames, spread over orders.

Each takes the :class:`~mdlnb.studies.switching_strategies._pair.PairResult` of every
(pair, order) and returns a tidy DataFrame; ``mean``/``std`` (ddof 1)/``min``/
``max``/``count`` columns are over orders (:func:`spread`).
"""

from __future__ import annotations

from collections.abc import Sequence

from mdlnb.studies.switching_strategies._pair import PairResult, final_regrets, gather, spread


def regret_spread(results: Sequence[PairResult]):
    """Regret to fixed share per (pair, strategy, n), nats (Fig. 5's curves)."""
    return spread(gather(results, "regret"), ["pair", "strategy", "n"], "regret [nats]")


def final_regret(results: Sequence[PairResult]):
    """Regret to fixed share at n = N per (pair, strategy), nats."""
    final = final_regrets(results)
    return spread(
        final.melt(id_vars=["pair", "seed"], var_name="strategy", value_name="regret [nats]"),
        ["pair", "strategy"],
        "regret [nats]",
    )


def sensitivity_spread(results: Sequence[PairResult]):
    """Fixed share's regret to the best single expert per (pair, rate, value), nats."""
    return spread(
        gather(results, "sensitivity"), ["pair", "rate", "value"], "regret to best expert [nats]"
    )


def bound_spread(results: Sequence[PairResult]):
    """Regret to the best single expert per (pair, n), nats, and the never-switch
    bound beside it (``bound [nats]``, the same for every order)."""
    bound = gather(results, "bound")
    out = spread(bound, ["pair", "n"], "regret [nats]")
    limit = bound.groupby(["pair", "n"])["bound [nats]"].first().reset_index()
    return out.merge(limit, on=["pair", "n"])


def last_switches(results: Sequence[PairResult]):
    """The ``switches`` frame at n = N of every (pair, order)."""
    sw = gather(results, "switches")
    return sw[sw["n"] == sw.groupby(["pair", "seed"])["n"].transform("max")]


def frequency(results: Sequence[PairResult]):
    """Changes of the favourite readout over the whole stream, per pair."""
    return spread(last_switches(results), ["pair"], "map switches")


def tv_spread(results: Sequence[PairResult]):
    """Total-variation distance between consecutive posteriors, over n and orders, per pair."""
    return spread(gather(results, "switches"), ["pair"], "tv")
