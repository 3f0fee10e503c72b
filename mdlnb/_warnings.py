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

from mdlnb import _progress


class ResultWarning(UserWarning):
    """A statement about a result the reader should weigh (a UserWarning)."""


def _one_line(message, file=None) -> None:
    stream = file or (sys.stdout if _progress._in_kernel() else sys.stderr)
    try:
        print(f"warning: {message}", file=stream, flush=True)
    except (OSError, ValueError):  # a closed stream, as warnings.showwarning ignores
        pass


def install() -> None:
    """Show :class:`ResultWarning` as one line (:func:`_one_line`), every other warning
    as the ``warnings.showwarning`` in place before (idempotent)."""
    previous = warnings.showwarning
    if getattr(previous, "_mdlnb", False):
        return

    def show(message, category, filename, lineno, file=None, line=None):
        if isinstance(category, type) and issubclass(category, ResultWarning):
            return _one_line(message, file)
        return previous(message, category, filename, lineno, file, line)

    show._mdlnb = True
    warnings.showwarning = show
