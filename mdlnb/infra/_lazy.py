"""A package's submodules imported when first used (PEP 562's module ``__getattr__``).

``mdlnb``, :mod:`mdlnb.api`, :mod:`mdlnb.baselines` and :mod:`mdlnb.studies` load a
submodule only when a caller reaches it, so that ``import mdlnb`` and the command line
start without JAX or a study's dependencies; each package's ``TYPE_CHECKING`` imports
name the same submodules for IDEs and type checkers.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from types import ModuleType


def submodule_getattr(
    package: str, names: Iterable[str], *, also: Callable[[str], bool] = lambda name: False
) -> Callable[[str], ModuleType]:
    """A module-level ``__getattr__`` for ``package``: ``package.<name>`` imported for a
    ``name`` in ``names`` (or one that ``also`` accepts, e.g. an old path that
    :mod:`mdlnb._moved` serves), an ``AttributeError`` naming the package otherwise."""
    known = frozenset(names)

    def __getattr__(name: str) -> ModuleType:
        if name in known or also(name):
            return importlib.import_module(f"{package}.{name}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
