"""The arguments :func:`mdlnb.evaluate`, :func:`mdlnb.compare`,
:func:`mdlnb.prequential.run` and the studies share: the protocol a call runs
(:func:`resolve_protocol`, the one place a protocol is resolved), the board of
experts where one may be given by mistake, and the switching strategy with fixed
share's m."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mdlnb import switching
from mdlnb.board._protocol import Protocol
from mdlnb.board._protocol import protocol as preset
from mdlnb.board.experts import PRESETS, Expert

#: Fields a protocol mapping may give (those of :class:`mdlnb.Protocol`, ``experts`` as
#: another name for ``board``, and ``m`` for fixed share's m).
PROTOCOL_FIELDS = (
    "name",
    "board",
    "experts",
    "batch_size",
    "strategy",
    "m",
    "standardize",
    "clip",
    "replay_streams",
    "seed",
)


def resolve_protocol(
    protocol: Any = None,
    experts: Any = None,
    *,
    strategy: Any = None,
    m: float | None = None,
    **fields: Any,
) -> Protocol:
    """The :class:`mdlnb.Protocol` a call runs: ``protocol`` with the call's own
    arguments applied.

    ``protocol`` is None (``"default"``), a preset name (:func:`mdlnb.protocol`), a
    :class:`mdlnb.Protocol`, or a mapping of its fields applied to ``"default"``
    (``experts`` may stand for ``board``; ``m`` sets fixed share's m). The arguments
    that are not None override it: ``experts`` (the board: a list of Experts or a
    preset name), ``strategy`` and ``m`` (:func:`resolve_strategy`, with the
    protocol's strategy as the default), and ``fields`` (``batch_size``, ``seed``,
    ``standardize``, ``replay_streams``, …). With none, ``protocol`` itself is
    returned; a field that changes a preset's value renames it ``"<preset>
    (modified)"`` (:meth:`mdlnb.Protocol.replace`).
    """
    proto = _protocol_of(protocol).resolve(board=_board_of(experts), **fields)
    if strategy is None and m is None:
        return proto
    return proto.resolve(strategy=resolve_strategy(strategy, m, default=proto.strategy))


def _protocol_of(protocol: Any) -> Protocol:
    """The Protocol that ``protocol`` (None, a preset name, a Protocol or a mapping) names."""
    if protocol is None or isinstance(protocol, (str, Protocol)):
        return preset("default" if protocol is None else protocol)
    if not isinstance(protocol, Mapping):
        raise ValueError(
            f"protocol: expected None, a preset name, a Protocol or a mapping, "
            f"got {type(protocol).__name__}"
        )
    try:
        return _protocol_from_mapping(protocol)
    except ValueError as e:
        raise ValueError(f"protocol: {e}") from None


def _protocol_from_mapping(spec: Mapping[str, Any]) -> Protocol:
    """``"default"`` with the fields of ``spec`` (:data:`PROTOCOL_FIELDS`)."""
    spec = dict(spec)
    unknown = set(spec) - set(PROTOCOL_FIELDS)
    if unknown:
        raise ValueError(f"unknown fields {sorted(unknown)}; use {list(PROTOCOL_FIELDS)}")
    if "experts" in spec:
        if "board" in spec:
            raise ValueError("give the board as 'board' or 'experts', not both")
        spec["board"] = spec.pop("experts")
    m = spec.pop("m", None)
    if m is not None or isinstance(spec.get("strategy"), str):
        spec["strategy"] = resolve_strategy(spec.get("strategy"), m)
    return preset("default").replace(**spec)


def _board_of(experts: Any) -> Any:
    """``experts`` checked: None, a preset name, or a non-empty list of Experts."""
    if experts is None or isinstance(experts, str):
        return experts
    experts = [experts] if isinstance(experts, Expert) else list(experts)
    if not experts:
        raise ValueError("experts: must contain at least one Expert")
    for e in experts:
        if not isinstance(e, Expert):
            raise ValueError(f"experts: expected Expert objects, got {type(e).__name__}")
    return experts


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
