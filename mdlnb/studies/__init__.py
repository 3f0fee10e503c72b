"""Studies: the logic behind the experiment notebooks, one small package per experiment.

Every study follows the pattern of :mod:`mdlnb.studies.transferability`; a new
one copies it:

* **Config ↔ notebook parameters.** A frozen dataclass ``<Name>Config``
  (exported also as ``Config``) holds every parameter and is the *only* place
  its defaults live: the defaults are the CPU run that ``make reproduce``
  makes. The notebook's parameter cell holds ``study = "<name>"`` and
  ``overrides = {}``; ``notebooks/profiles.yaml`` lists per profile only the
  fields that change, and :func:`mdlnb.tools.runner.profile_parameters` rejects an
  unknown field (``Config.from_overrides``). Settings that decide a
  codelength are fields that map one to one onto a protocol.
* **run() → result with tidy frames.** ``run(config, *, progress, cache)``
  drives the computation in units of work (one subsample, one encoder × task),
  each cached on disk under a hash of its inputs, so an interrupted run
  resumes; a progress bar counts units (``progress=None``, the default: a bar when
  interactive, :func:`mdlnb.infra._progress.wanted`). It returns a frozen result dataclass
  of tidy DataFrames (one row per observation, units in column names).
* **Spreads.** Every table that averages over subsamples or seeds carries its
  spread (standard deviation, or the half-width of a 95 % interval) next to
  the mean, and figures draw it.
* **result.save(dir)** writes the paper files (CSV + Markdown tables, PNG
  figures) atomically through :mod:`mdlnb.api.output`; the same result gives
  byte-identical files, so a same-machine rerun reproduces ``paper/`` bit for
  bit (``tests/test_reproducible.py``).
* **Prose numbers from the result.** What the notebook says about its numbers
  comes from a result method (``result.findings()``, Markdown) or a library
  call displayed as Markdown — never typed by hand.

The notebook then only sets parameters, calls ``run``, shows and saves, and
ends with :func:`finish` (claims, manifest).

A notebook's parameters reach its study one of two ways: as ``overrides``, a
mapping of config fields (the encoder and transferability notebooks), or one
parameter per config field, of the same name and default
(``Config.from_parameters(globals())``: switching_strategies, data_efficiency,
loss_data, parity_toy, layers, beyond_classification, shift). :data:`NOTEBOOKS` says which study each
notebook runs; :func:`mdlnb.tools.runner.check_profile` checks a profile's values
against that study's ``Config``.
"""

from __future__ import annotations

import importlib

from mdlnb import _moved
from mdlnb.infra._lazy import submodule_getattr
from mdlnb.studies._base import StudyConfig, finish

_SUBMODULES = (
    "beyond",
    "data_efficiency",
    "encoder_grid",
    "layers",
    "loss_data",
    "parity",
    "pretraining",
    "shift",
    "switching_strategies",
    "transferability",
)

#: Notebook (``notebooks/<name>.py``) → the study it runs; a notebook not listed runs none.
NOTEBOOKS = {
    "beyond_classification": "beyond",
    "data_efficiency": "data_efficiency",
    "layers": "layers",
    "loss_data": "loss_data",
    "objectives": "encoder_grid",
    "parity_toy": "parity",
    "pretraining": "pretraining",
    "readout_preference": "encoder_grid",
    "scaling": "encoder_grid",
    "shift": "shift",
    "switching_strategies": "switching_strategies",
    "transferability_baselines": "transferability",
}

__all__ = ["NOTEBOOKS", "StudyConfig", "config_class", "finish", "study_of", *_SUBMODULES]


def config_class(study: str) -> type:
    """The ``Config`` dataclass of study package ``mdlnb.studies.<study>``."""
    if study not in _SUBMODULES:
        raise ValueError(f"study: unknown study {study!r}; known: {list(_SUBMODULES)}")
    return importlib.import_module(f"mdlnb.studies.{study}").Config


def study_of(notebook: str) -> str | None:
    """The study notebook ``notebook`` runs (:data:`NOTEBOOKS`), or None."""
    return NOTEBOOKS.get(notebook)


# old names (mdlnb.studies.encoders, .switching) import through mdlnb._moved, with a warning
__getattr__ = submodule_getattr(
    __name__, _SUBMODULES, also=lambda n: f"{__name__}.{n}" in _moved.MOVED
)
