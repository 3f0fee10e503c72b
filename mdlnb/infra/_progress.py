"""Progress bars where a person watches; one summary line in batch runs.

Every long loop of the package reports through :func:`bar`, which decides
how, from the environment variable ``MDLNB_PROGRESS``:

* ``"0"`` (also ``false``/``no``/``off``) — *batch mode*, set by
  :mod:`mdlnb.tools.runner` for the papermill runs of ``make reproduce`` / ``make
  smoke``: nothing is drawn while the loop runs, and a bar that is meant to
  stay (``leave=True``) prints **one line** when it closes, e.g.
  ``features: 12/12 pair in 3.4 s``. Executed notebooks stay readable (a
  text bar redrawn per step stores hundreds of lines in a cell).
* anything else (the default) — ``tqdm``: a widget bar inside a Jupyter
  kernel when ``ipywidgets`` is installed (the ``lab`` extra), else a text
  bar (without tqdm's ``IProgress not found`` warning).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any

from mdlnb.infra._io import switched_off

# Imported inside the functions that use them, so that importing this module does not load
# them: ipywidgets, tqdm.

ENV = "MDLNB_PROGRESS"
AUTO_DELAY_S = 3.0  # progress=None: a bar appears once the loop has run this long


def enabled() -> bool:
    """True unless ``MDLNB_PROGRESS`` switches bars off (batch mode)."""
    return not switched_off(ENV)


def _in_kernel() -> bool:
    """True inside a Jupyter (IPython) kernel."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    try:
        shell = ipython.get_ipython()
        return shell is not None and "IPKernelApp" in shell.config
    except Exception:  # pragma: no cover - an IPython without a shell
        return False


def tqdm_class() -> type:
    """``tqdm.notebook.tqdm`` in a kernel with ipywidgets, else ``tqdm.std.tqdm``."""
    if _in_kernel():
        try:
            import ipywidgets  # noqa: F401
            from tqdm.notebook import tqdm

            return tqdm
        except ImportError:
            pass
    from tqdm.std import tqdm

    return tqdm


class Summary:
    """A tqdm stand-in for batch mode: counts, draws nothing, and on
    :meth:`close` prints one line (``desc: n/total unit in s``, plus the last
    postfix) when ``leave``."""

    def __init__(
        self,
        iterable: Iterable | None = None,
        *,
        total: int | None = None,
        initial: int = 0,
        desc: str = "",
        unit: str = "it",
        leave: bool = True,
        file: Any = None,
    ):
        if total is None and iterable is not None and hasattr(iterable, "__len__"):
            total = len(iterable)
        self.iterable, self.total, self.n = iterable, total, int(initial)
        self.initial, self.desc, self.unit, self.leave = int(initial), desc, unit, leave
        self.postfix = ""
        self._file, self._t0, self._closed = file, time.perf_counter(), False

    def __iter__(self) -> Iterator:
        if self.iterable is None:
            raise ValueError("iterable: this bar was made without one")
        try:
            for item in self.iterable:
                yield item
                self.n += 1
        finally:
            self.close()

    def __enter__(self) -> Summary:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def update(self, n: int = 1) -> None:
        self.n += int(n)

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        self.postfix = str(s)

    def set_postfix(self, ordered_dict: Any = None, refresh: bool = True, **kwargs: Any) -> None:
        items = {**dict(ordered_dict or {}), **kwargs}
        self.postfix = ", ".join(f"{k}={v}" for k, v in items.items())

    def line(self) -> str:
        """The summary line :meth:`close` prints."""
        count = f"{self.n}/{self.total}" if self.total is not None else f"{self.n}"
        cached = f" ({self.initial} done before)" if self.initial else ""
        post = f"; {self.postfix}" if self.postfix else ""
        head = f"{self.desc}: " if self.desc else ""
        return f"{head}{count} {self.unit}{cached} in {time.perf_counter() - self._t0:.1f} s{post}"

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.leave:
            print(self.line(), file=self._file or sys.stdout, flush=True)


def interactive() -> bool:
    """True where a person watches: inside a Jupyter kernel, or stdout is a terminal."""
    if _in_kernel():
        return True
    out = sys.stdout
    try:
        return bool(out is not None and out.isatty())
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


def wanted(progress: Any, *, long: bool = True) -> bool:
    """The package's one ``progress`` rule (``evaluate``, ``compare``,
    ``prequential.run``, the studies' ``run``): ``True``/``False`` as given;
    ``None`` (the default everywhere) = auto, a bar when :func:`interactive`
    and the run is ``long``. In batch mode (``MDLNB_PROGRESS=0``) a wanted bar
    is one summary line (:func:`bar`)."""
    if progress is None:
        return bool(long) and interactive()
    return bool(progress)


def bar(
    iterable: Iterable | None = None,
    *,
    total: int | None = None,
    initial: int = 0,
    desc: str = "",
    unit: str = "it",
    leave: bool = True,
    delay: float = 0.0,
) -> Any:
    """A progress bar over ``iterable`` (or updated by hand with ``total``):
    tqdm (widget in a kernel with ipywidgets), or a :class:`Summary` in batch
    mode (``MDLNB_PROGRESS=0``). Supports iteration, ``update``, ``set_postfix``,
    ``set_postfix_str``, ``close`` and ``with``. ``delay``: seconds before the bar
    is drawn (tqdm's; a loop that ends sooner draws nothing)."""
    if not enabled():
        return Summary(iterable, total=total, initial=initial, desc=desc, unit=unit, leave=leave)
    return tqdm_class()(
        iterable, total=total, initial=initial, desc=desc, unit=unit, leave=leave, delay=delay
    )
