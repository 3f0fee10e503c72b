"""Whether a parameter's value has the type its notebook or study expects: the checks
behind :func:`mdlnb.tools.runner.check_profile`, on values as YAML or a Python literal give
them."""

from __future__ import annotations

import collections.abc as abc
import types
import typing
from typing import Any


def type_of_default(default: Any) -> Any:
    """The type an override (other than None) of a parameter whose default is
    ``default`` must have: ``None`` = anything; a number default takes an int or a float (an int default
    an int); a list or tuple default a list or tuple; else the default's type."""
    if default is None:
        return Any
    if isinstance(default, bool):
        return bool
    if isinstance(default, (list, tuple)):
        return tuple
    if isinstance(default, dict):
        return dict
    return type(default)


def field_hints(cls: type) -> dict[str, Any]:
    """Field name → resolved type annotation of the dataclass ``cls`` (empty on failure)."""
    try:
        return typing.get_type_hints(cls)
    except Exception:  # an annotation that does not resolve: no type checks
        return {}


def matches(value: Any, hint: Any) -> bool:
    """Whether ``value`` (as YAML or a Python literal gives it) fits the type ``hint``:
    bool/int/float/str exactly (an int fits a float, a bool fits no number), a list or
    tuple fits a tuple/Sequence/list (elements checked), a dict fits a Mapping (keys
    and values checked), a union if one arm fits; anything else is not checked here."""
    if hint is Any or hint is object:
        return True
    if hint is None or hint is type(None):
        return value is None
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Union or origin is types.UnionType:
        return any(matches(value, a) for a in args)
    if origin is typing.Literal:
        return value in args
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    seq = (tuple, list, abc.Sequence)
    if hint in seq or origin in seq:
        if isinstance(value, str) or not isinstance(value, (list, tuple)):
            return False
        if not args:
            return True
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            return len(value) == len(args) and all(map(matches, value, args))
        return all(matches(v, args[0]) for v in value)
    if hint in (dict, abc.Mapping) or origin in (dict, abc.Mapping):
        if not isinstance(value, dict):
            return False
        if len(args) != 2:
            return True
        return all(matches(k, args[0]) and matches(v, args[1]) for k, v in value.items())
    return True


def hint_text(hint: Any) -> str:
    """``hint`` as an error message names it (``int``, ``tuple[int, ...]``, ``int | None``)."""
    if hint is type(None):
        return "None"
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return " | ".join(hint_text(a) for a in typing.get_args(hint))
    text = getattr(hint, "__name__", None) if not getattr(hint, "__args__", None) else None
    return text or str(hint).replace("typing.", "")


def article(word: str) -> str:
    """``word`` with its indefinite article (``an int``, ``a float``)."""
    return f"{'an' if word[:1] in 'aeiou' else 'a'} {word}"
