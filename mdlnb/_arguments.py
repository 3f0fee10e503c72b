"""The arguments :func:`mdlnb.evaluate`, :func:`mdlnb.compare` and :class:`mdlnb.Report`
share: a board of experts where one may be given by mistake, and the switching strategy
with fixed share's m."""

from __future__ import annotations

import dataclasses
from typing import Any

from mdlnb import switching
from mdlnb.experts import PRESETS, Expert


def looks_like_board(value: Any) -> bool:
    """An expert preset name, an Expert, or a non-empty list of Experts."""
    if isinstance(value, str):
        return value in PRESETS
    if isinstance(value, Expert):
        return True
    return (
        isinstance(value, (list, tuple))
        and bool(value)
        and all(isinstance(v, Expert) for v in value)
    )


def resolve_strategy(strategy: Any = None, m: float | None = None, *, default: Any = None) -> Any:
    """The switching strategy: ``default`` (a protocol's strategy; ``FixedShare()``,
    m = :data:`DEFAULT_M`, if None) when ``strategy`` is None, with ``m`` replacing
    fixed share's m; a name (with ``m`` passed on for fixed share) or a strategy
    object otherwise."""
    if strategy is None:
        base = switching.FixedShare() if default is None else switching.get_strategy(default)
        if m is None:
            return base
        if not isinstance(base, switching.FixedShare):
            raise ValueError(f"m: the protocol's strategy {type(base).__name__} has no m")
        return switching.FixedShare(m=m, weights=base.weights, initial=base.initial)
    if m is not None:
        if isinstance(strategy, str):
            return switching.get_strategy(strategy, m=m)
        raise ValueError(
            "m: only used with the default strategy or a strategy name; "
            "set m on the strategy object instead"
        )
    return switching.get_strategy(strategy)


def strategy_label(strategy: Any) -> str:
    """Short label, e.g. ``FixedShare(m=11)``: the class name and the fields that are set
    (a strategy's own ``label``, the same as its ``repr``)."""
    if hasattr(strategy, "label"):
        return str(strategy.label)
    if not dataclasses.is_dataclass(strategy):
        return repr(strategy)
    fields = {f.name: getattr(strategy, f.name) for f in dataclasses.fields(strategy)}
    args = ", ".join(
        f"{k}={v:g}" if isinstance(v, float) else f"{k}={v!r}"
        for k, v in fields.items()
        if v is not None
    )
    return f"{type(strategy).__name__}({args})"
