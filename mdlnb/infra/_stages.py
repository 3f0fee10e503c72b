"""A study's named stages as one progress bar: what a long ``study.run`` cell shows.

A study's ``run`` is a few stages of very different lengths (curves, probes, stage 1
of several boards), each too short for the package's per-loop bars to appear, so
a cell of a minute showed nothing. :class:`Stages` is a bar over the stages, the
current one's name beside it: a widget in JupyterLab (the ``lab`` extra), a text
bar in a terminal, and in batch mode (``MDLNB_PROGRESS=0``, the runner) one line
when the study ends (:mod:`mdlnb.infra._progress`). ``progress`` follows the package's
rule (:func:`mdlnb.infra._progress.wanted`: ``None`` = where someone watches)::

    stages = Stages(("exact curves", "MLP curves", "switching"), desc="parity",
                    progress=progress)
    with stages:
        stages.start("exact curves"); ...
        stages.start("MLP curves"); ...
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mdlnb.infra import _progress


class Stages:
    """A bar over ``names`` (see the module docstring); a no-op when not wanted."""

    def __init__(self, names: Sequence[str], *, desc: str, progress: Any = None):
        self.names = tuple(names)
        self._bar = (
            _progress.bar(total=len(self.names), desc=desc, unit="stage")
            if _progress.wanted(progress)
            else None
        )
        self._started = 0

    def start(self, name: str) -> None:
        """Stage ``name`` begins (the previous one, if any, is done); ``names`` gave the
        count and the expected order."""
        if self._bar is None:
            return
        if self._started:
            self._bar.update(1)
        self._started += 1
        self._bar.set_postfix_str(name)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.update(len(self.names) - self._bar.n)
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Stages:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
