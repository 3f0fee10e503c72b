"""The package's warnings about results, shown as one sentence.

A report's warnings (the best expert on an edge of the board's grid, a code
longer than the uniform code, nothing trained) are :class:`ResultWarning`\\ s.
Python shows a warning as ``path:line: Category: message`` plus the source
line, on stderr — in a Jupyter kernel a red box that reads like an error, and
the path and line (inside mdlnb) say nothing to the reader. :func:`install`
(done on ``import mdlnb``) shows this category as one line, ``warning:
message``, without a source path: on standard output inside a Jupyter kernel
(an interactive or papermill notebook), on stderr elsewhere (the command line,
scripts). Other warnings, and filters (``"once"``, ``"error"``,
``pytest.warns``), are untouched.
"""

from __future__ import annotations

import sys
import warnings


class ResultWarning(UserWarning):
    """A statement about a result the reader should weigh (a UserWarning)."""


def _show(message, category, filename, lineno, file=None, line=None):
    if isinstance(category, type) and issubclass(category, ResultWarning):
        from mdlnb import _progress

        stream = file or (sys.stdout if _progress._in_kernel() else sys.stderr)
        try:
            print(f"warning: {message}", file=stream, flush=True)
        except (OSError, ValueError):  # a closed stream, as warnings.showwarning ignores
            pass
        return
    _show.original(message, category, filename, lineno, file, line)


def install() -> None:
    """Route :class:`ResultWarning` through :func:`_show` (idempotent)."""
    if getattr(warnings.showwarning, "__name__", "") == "_show" \
            and getattr(warnings.showwarning, "__module__", "") == __name__:
        return
    _show.original = warnings.showwarning
    warnings.showwarning = _show
