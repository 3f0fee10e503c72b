"""One signature error for the data-first entry points (:func:`mdlnb.evaluate`,
:func:`mdlnb.compare`): too many positional arguments name the accepted forms.

Both take the data positionally (``evaluate(x, y)``, ``compare(encoders, y)``)
and everything else by keyword. Python's own message for a third positional
argument (``evaluate() takes from 0 to 2 positional arguments but 3 were
given``) says neither which forms exist nor that ``"small"`` belongs in
``experts=``. So each entry point gathers extra positional arguments in a
``*more`` parameter that it refuses at once with :func:`extra_positional`, and
:func:`data_first` hides that parameter from its signature (``inspect``,
``help``): the documented signature stays ``(x=None, y=None, *, experts=None,
...)``. No wrapper function is involved, so warnings issued with a
``stacklevel`` still point at the caller's line.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from mdlnb.board._arguments import looks_like_board


def _hint(value: Any) -> str:
    """What the extra argument looks like and where it goes."""
    if looks_like_board(value):
        named = f" {value!r}" if isinstance(value, str) else ""
        return f"is a board{named}: pass it as experts="
    if isinstance(value, str):
        return f"is the string {value!r}: pass experts=, strategy= or protocol= by keyword"
    return f"is a {type(value).__name__}: pass it by keyword"


def extra_positional(name: str, forms: str, more: Sequence[Any], positional: int = 2) -> TypeError:
    """The ``TypeError`` for ``name`` called with ``positional`` data arguments and
    ``more`` beyond them, quoting ``forms``."""
    return TypeError(
        f"{name}: got {positional + len(more)} positional arguments, the data take "
        f"at most {positional}; argument {positional + 1} {_hint(more[0])}. "
        f"Accepted: {forms}"
    )


def data_first(fn: Callable) -> Callable:
    """Hide ``fn``'s ``*more`` (var-positional) parameter from its signature; returns
    ``fn`` itself."""
    sig = inspect.signature(fn)
    fn.__signature__ = sig.replace(
        parameters=[
            p for p in sig.parameters.values() if p.kind is not inspect.Parameter.VAR_POSITIONAL
        ]
    )
    return fn
