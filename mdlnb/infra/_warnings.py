"""The package's warnings about results, shown as one sentence, once.

A report's warnings (the best expert on an edge of the board's grid, a code
longer than the uniform code, nothing trained) are :class:`ResultWarning`\\ s;
:func:`mdlnb.compare` issues each of its runs' warnings once, as a
``UserWarning`` starting ``compare:``. Python shows a warning as
``path:line: Category: message`` plus the source line, on stderr — in a
Jupyter kernel a red box that reads like an error, and the path and line
(inside mdlnb) say nothing to the reader. :func:`install` (done on ``import
mdlnb``) shows these as one line, ``warning: message``, without a source path:

* **in an IPython shell or Jupyter kernel** (an interactive or papermill
  notebook) on standard output, at the end of the cell that raised them, and
  only those the cell's printouts did not show already: ``print(rep)`` and
  ``print(cmp)`` list their warnings under the numbers (:func:`printed` marks
  them), so ``rep = mdlnb.evaluate(...); print(rep)`` shows each warning once,
  in the report, and ``rep = mdlnb.evaluate(...)`` alone shows it once, after
  the cell's other output;
* **elsewhere** (scripts) at once, on stderr; the command line (:mod:`mdlnb.tools.cli`)
  hides them while it runs, since it prints the report with its warnings.

Other warnings, and filters (``"once"``, ``"error"``, ``pytest.warns``, which
record instead of showing), are untouched.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterable

from mdlnb.infra import _progress


class ResultWarning(UserWarning):
    """A statement about a result the reader should weigh (a UserWarning)."""


COMPARE_PREFIX = "compare: "
#: In a shell with cell events: the one-line texts waiting for the end of the cell, and the
#: sentences the cell's printouts showed.
_pending: list[str] = []
_printed: set[str] = set()
_deferred = {"on": False}


def _one_line(message, file=None) -> None:
    stream = file or (sys.stdout if _progress._in_kernel() else sys.stderr)
    try:
        print(f"warning: {message}", file=stream, flush=True)
    except (OSError, ValueError):  # a closed stream, as warnings.showwarning ignores
        pass


def printed(sentences: Iterable[str]) -> None:
    """Mark ``sentences`` as shown by a printout (a report's or a comparison's warnings):
    the end of the cell does not show them again."""
    for s in sentences:
        _printed.add(str(s))
        _printed.add(COMPARE_PREFIX + str(s))


def flush(*_: object) -> None:
    """Show the cell's waiting warnings that no printout showed, each once; forget both
    lists (an IPython ``post_run_cell`` callback)."""
    shown = set()
    for text in _pending:
        if text not in _printed and text not in shown:
            shown.add(text)
            _one_line(text)
    _pending.clear()
    _printed.clear()


def _ours(message, category) -> bool:
    return isinstance(category, type) and (
        issubclass(category, ResultWarning)
        or (category is UserWarning and str(message).startswith(COMPARE_PREFIX))
    )


def _cell_events():
    """IPython's event manager when running under an IPython shell, else None."""
    ipython = sys.modules.get("IPython")
    try:
        shell = ipython.get_ipython() if ipython is not None else None
    except Exception:  # pragma: no cover - an IPython without a shell
        return None
    return getattr(shell, "events", None)


def install() -> None:
    """Show the package's result warnings as one line (:func:`_one_line`) — at the end of
    the cell under IPython, unless a printout showed them — every other warning as the
    ``warnings.showwarning`` in place before (idempotent)."""
    previous = warnings.showwarning
    if getattr(previous, "_mdlnb", False):
        return
    events = _cell_events()
    if events is not None:
        try:
            events.register("post_run_cell", flush)
            _deferred["on"] = True
        except Exception:  # pragma: no cover - an IPython without that event
            pass

    def show(message, category, filename, lineno, file=None, line=None):
        if _ours(message, category):
            if _deferred["on"] and file is None:
                _pending.append(str(message))
                return None
            return _one_line(message, file)
        return previous(message, category, filename, lineno, file, line)

    show._mdlnb = True
    warnings.showwarning = show
