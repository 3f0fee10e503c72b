"""One signature error for the data-first entry points (:func:`mdlnb.evaluate`,
:func:`mdlnb.compare`): too many positional arguments name the accepted forms.

Both take the data positionally (``evaluate(x, y)``, ``compare(encoders, y)``)
and everything else by keyword. Python's own message for a third positional
argument (``evaluate() takes from 0 to 2 positional arguments but 3 were
given``) says neither which forms exist nor that ``"small"`` belongs in
``experts=``; :func:`data_first` raises the package's ``TypeError`` instead.
The wrapped function keeps its signature (``inspect.signature`` follows
``__wrapped__``), so help and the tests of defaults see the real one.
"""

from __future__ import annotations

import functools
from typing import Any, Callable


def _hint(value: Any) -> str:
    """What the extra argument looks like and where it goes."""
    from mdlnb.evaluation import _looks_like_board

    if _looks_like_board(value):
        named = f" {value!r}" if isinstance(value, str) else ""
        return f"is a board{named}: pass it as experts=..."
    if isinstance(value, str):
        return f"is the string {value!r}: pass experts=, strategy= or protocol= by keyword"
    return f"is a {type(value).__name__}: pass it by keyword"


def data_first(forms: str, positional: int = 2) -> Callable[[Callable], Callable]:
    """Decorate an entry point whose first ``positional`` parameters are the data:
    more positional arguments are a ``TypeError`` quoting ``forms``."""

    def decorate(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if len(args) > positional:
                raise TypeError(
                    f"{fn.__name__}: got {len(args)} positional arguments, the data take at "
                    f"most {positional}; argument {positional + 1} {_hint(args[positional])}. "
                    f"Accepted: {forms}")
            return fn(*args, **kwargs)

        return wrapper

    return decorate
