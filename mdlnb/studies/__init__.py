"""Studies: the logic behind the experiment notebooks, as small pure functions.

A notebook chooses parameters, calls one study module and saves what it
returns; everything it computes lives here, where tests can reach it.
"""

from __future__ import annotations

import importlib
from typing import Any

_SUBMODULES = ("data_efficiency", "switching", "transferability")

__all__ = list(_SUBMODULES)


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"mdlnb.studies.{name}")
    raise AttributeError(f"module 'mdlnb.studies' has no attribute {name!r}")
