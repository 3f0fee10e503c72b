"""Public modules that the package layout of 2026-11 moved: their old import paths keep
working for the 0.1 series, each with a :class:`DeprecationWarning` naming the new path.

``import mdlnb.readouts`` (or ``from mdlnb import readouts``, or ``mdlnb.readouts`` after
``import mdlnb``) returns the very module object of ``mdlnb.board.readouts``, so
attributes, ``isinstance`` checks and monkeypatching behave exactly as with the new
path; submodules follow (``mdlnb.transfer._logme`` is ``mdlnb.baselines.transfer._logme``).
The aliases are served by a finder at the front of :data:`sys.meta_path`, installed by
``import mdlnb``; nothing is left on disk at the old paths.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import warnings
from types import ModuleType

#: Old dotted path → new dotted path, for every public module or package that moved.
MOVED: dict[str, str] = {
    "mdlnb.readouts": "mdlnb.board.readouts",
    "mdlnb.experts": "mdlnb.board.experts",
    "mdlnb.evaluation": "mdlnb.api.evaluation",
    "mdlnb.preference": "mdlnb.api.preference",
    "mdlnb.plots": "mdlnb.api.plots",
    "mdlnb.report": "mdlnb.api.output",
    "mdlnb.blockwise": "mdlnb.baselines.blockwise",
    "mdlnb.probes": "mdlnb.baselines.probes",
    "mdlnb.finetune": "mdlnb.baselines.finetune",
    "mdlnb.transfer": "mdlnb.baselines.transfer",
    "mdlnb.labelfree": "mdlnb.baselines.labelfree",
    "mdlnb.curves": "mdlnb.baselines.curves",
    "mdlnb.claims": "mdlnb.research.claims",
    "mdlnb.findings": "mdlnb.research.findings",
    "mdlnb.ranking": "mdlnb.research.ranking",
    "mdlnb.manifest": "mdlnb.research.manifest",
    "mdlnb.cli": "mdlnb.tools.cli",
    "mdlnb.runner": "mdlnb.tools.runner",
    "mdlnb.cache": "mdlnb.tools.cache",
    # study packages that shadowed the library's package names
    "mdlnb.studies.encoders": "mdlnb.studies.encoder_grid",
    "mdlnb.studies.switching": "mdlnb.studies.switching_strategies",
}

_HERE = os.path.abspath(__file__)
_INIT = os.path.join(os.path.dirname(_HERE), "__init__.py")  # mdlnb.__getattr__
_LAZY = os.path.join(os.path.dirname(_HERE), "infra", "_lazy.py")  # the packages' __getattr__


def new_name(fullname: str) -> str | None:
    """The new path of ``fullname`` (a moved module or anything below a moved package)."""
    for old, new in MOVED.items():
        if fullname == old or fullname.startswith(old + "."):
            return new + fullname[len(old) :]
    return None


def _stacklevel() -> int:
    """The ``stacklevel`` that points a warning at the user's import line: frames of
    this module, of the packages' ``__getattr__`` and of the import machinery are skipped.
    (:func:`warnings.warn` itself does not count ``importlib._bootstrap`` frames.)"""
    frame, level = sys._getframe(1), 1
    while frame is not None:
        name = frame.f_code.co_filename
        internal = "importlib" in name and "_bootstrap" in name
        if not (internal or name in (_HERE, _INIT, _LAZY) or name == importlib.__file__):
            break
        frame, level = frame.f_back, level + (not internal)
    return level


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finder and loader of the old paths: the loader hands back the moved module."""

    def __init__(self) -> None:
        self._specs: dict[str, importlib.machinery.ModuleSpec] = {}

    def find_spec(self, fullname, path=None, target=None):
        new = new_name(fullname)
        if new is None:
            return None
        spec = importlib.util.find_spec(new)
        if spec is None:
            return None
        return importlib.machinery.ModuleSpec(
            fullname, self, is_package=spec.submodule_search_locations is not None
        )

    def create_module(self, spec) -> ModuleType:
        new = new_name(spec.name)
        warnings.warn(
            f"{spec.name} moved to {new}; the old path is removed after the 0.1 series",
            DeprecationWarning,
            stacklevel=_stacklevel(),
        )
        module = importlib.import_module(new)
        self._specs[new] = module.__spec__  # the import system overwrites it with the alias's
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = self._specs.pop(module.__name__)  # it keeps its own name and spec

    def get_code(self, fullname):
        """``python -m <old path>``: warn from ``__main__`` (so the warning shows), then run
        the new module as ``__main__``."""
        new = new_name(fullname)
        old, new_cmd = fullname.removesuffix(".__main__"), new.removesuffix(".__main__")
        message = f"python -m {old} moved to python -m {new_cmd}; the old path is removed after the 0.1 series"
        return compile(
            f"import runpy, warnings\nwarnings.warn({message!r}, DeprecationWarning)\n"
            f"runpy.run_module({new!r}, run_name='__main__', alter_sys=True)\n",
            "<mdlnb>",
            "exec",
        )


def install() -> None:
    """Put the finder of the old paths at the front of :data:`sys.meta_path`, once."""
    if not any(isinstance(f, _Alias) for f in sys.meta_path):
        sys.meta_path.insert(0, _Alias())
