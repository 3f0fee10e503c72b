"""mdlnb: which encoder is best for my task, all readouts considered?

Minimum-description-length evaluation of representations by readout-model
switching (stage 1: online training of a board of readouts, stage 2: a
switching strategy over their next-step log-losses). Units are nats inside;
every report labels nats and bits.

Submodules are imported lazily, so ``import mdlnb`` is cheap and a
notebook pays only for what it uses.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import TYPE_CHECKING, Any

from mdlnb import _moved
from mdlnb.core._task import Task
from mdlnb.infra import _warnings
from mdlnb.infra._lazy import submodule_getattr

if TYPE_CHECKING:  # the lazy exports below, for type checkers (py.typed); nothing at run time
    from mdlnb.api._compare import compare as compare
    from mdlnb.api._comparison import Comparison as Comparison
    from mdlnb.api._report import Report as Report
    from mdlnb.api.evaluation import evaluate as evaluate
    from mdlnb.api.preference import readout_preference as readout_preference
    from mdlnb.board._protocol import Protocol as Protocol
    from mdlnb.board._protocol import Prune as Prune
    from mdlnb.board._protocol import protocol as protocol
    from mdlnb.board.experts import Expert as Expert
    from mdlnb.board.experts import expert_grid as expert_grid
    from mdlnb.prequential import LossMatrix as LossMatrix
    from mdlnb.prequential._prune import PruningSimulation as PruningSimulation
    from mdlnb.prequential._prune import simulate_pruning as simulate_pruning

_moved.install()  # old paths of moved modules import, with a DeprecationWarning
_warnings.install()  # a report's warnings as one line, no source path (mdlnb.infra._warnings)

__version__ = "0.1.0"


def _public_submodules() -> tuple[str, ...]:
    """Public (no leading underscore) submodules and subpackages that exist on disk, so
    ``from mdlnb import *`` never names a module that is not there."""
    return tuple(
        sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))
    )


_SUBMODULES = _public_submodules()

#: Not library: the commands (``mdlnb.tools``: cli, runner, cache), the private floor
#: (``mdlnb.core``, ``mdlnb.infra``). They import as usual; ``from mdlnb import *`` leaves
#: them out.
_TOOLS = ("core", "infra", "tools")

# Top-level names re-exported from submodules: name -> module.
_EXPORTS = {
    "expert_grid": "mdlnb.board.experts",
    "Expert": "mdlnb.board.experts",
    "evaluate": "mdlnb.api.evaluation",
    "Report": "mdlnb.api._report",
    "LossMatrix": "mdlnb.prequential",
    "readout_preference": "mdlnb.api.preference",
    "compare": "mdlnb.api._compare",
    "Comparison": "mdlnb.api._comparison",
    "Protocol": "mdlnb.board._protocol",
    "Prune": "mdlnb.board._protocol",
    "simulate_pruning": "mdlnb.prequential._prune",
    "PruningSimulation": "mdlnb.prequential._prune",
    "protocol": "mdlnb.board._protocol",
}

#: ``from mdlnb import *``: the Task, the top-level functions and result types, and the
#: library's public submodules (not the tooling of :data:`_TOOLS`).
__all__ = ["Task", "__version__", *_EXPORTS, *(m for m in _SUBMODULES if m not in _TOOLS)]


_submodule = submodule_getattr("mdlnb", _SUBMODULES, also=lambda n: f"mdlnb.{n}" in _moved.MOVED)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    return _submodule(name)


def __dir__() -> list[str]:
    return sorted({*__all__, *_SUBMODULES})
