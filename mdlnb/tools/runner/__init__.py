"""Run the experiment notebooks: jupytext ``.py`` → papermill → executed ``.ipynb``.

Each notebook's first tagged ``parameters`` cell holds the *default* profile
(CPU, minutes). ``notebooks/profiles.yaml`` holds the overrides of the other
profiles: ``smoke`` (CI, seconds) and ``full`` (GPU/TPU, real benchmarks)::

    python -m mdlnb.tools.runner --profile smoke quickstart parity_toy
    python -m mdlnb.tools.runner --profile smoke quickstart -p seed=1 -p size=400
    python -m mdlnb.tools.runner --profile smoke objectives -p overrides.train_size=100

``-p KEY=VALUE`` overrides one parameter (the value parsed as YAML); in Python,
``run(name, profile, parameters={...})``.

Where a run writes (:func:`destinations`), and the runner says so before and
after each notebook (notebook, HTML page, the figure and table files written):

* ``--paper`` (``make reproduce``): the executed notebook to
  ``build/notebooks/<profile>/NAME.ipynb`` (the make target) and what it saves
  (its ``paper_dir``) into the committed ``paper/`` — only when asked;
* smoke runs (``make smoke``): ``build/notebooks/smoke/`` and ``build/paper-smoke/``;
* any other run (``python -m mdlnb.tools.runner quickstart -p seed=1``):
  ``build/runs/<profile>/NAME.ipynb`` and ``build/runs/<profile>/paper/``.

An executed notebook is written only when the run succeeded, with its HTML page
beside it; ``metadata["mdlnb"]`` records parameters and wall time. Runs are in
batch mode: no per-step progress bars in the stored output (:mod:`mdlnb.infra._progress`).

Parameters are checked before any kernel starts, those of ``profiles.yaml``
(every entry of every notebook, first: ``--check`` does only that, and ``make
reproduce`` runs it before any notebook) and those of ``-p``/``parameters``:
a key that is not a parameter of the notebook is an error, as is a value whose
type differs from the parameter's (:func:`parameter_types`: an annotation in the
cell, ``size: int | None = None``; else the literal default's type — an int fits a
float default; else, for a ``None`` default, the types ``profiles.yaml`` gives it;
``None`` — YAML ``null``, "all" in the notebooks — fits any parameter), and for a
notebook that runs a
study (its parameter cell names a ``study``, or :data:`mdlnb.studies.NOTEBOOKS`
lists it) every field of its ``overrides`` — or, for a notebook with one
parameter per field, every such parameter — must be a field of that study's
``Config``, of the field's annotated type, and build a valid ``Config``.
``--compare-to-git REV`` ends the run by listing the numbers of the
committed ``paper/*.csv`` (at ``REV``) that moved beyond the tolerance of
:mod:`mdlnb.research._paperdiff`.

The Makefile drives it one notebook per target (``make reproduce``,
``make smoke``); the helpers it calls::

    python -m mdlnb.tools.runner --write-params          # profile stamps, rewritten only on change
    python -m mdlnb.tools.runner --html build/notebooks/default/quickstart.ipynb
    python -m mdlnb.tools.runner --summary --since EPOCH --compare-to-git HEAD

**Interactive runs** (JupyterLab, ``make lab``): every notebook calls
:func:`interactive_profile` right after its parameters cell; by hand it checks
the cell as the kernel ran it and applies its ``profile``
(:mod:`mdlnb.tools.runner._interactive`), under this runner (``MDLNB_RUNNER=1``) it
does nothing. The lab itself: :mod:`mdlnb.tools.runner._lab`.
"""

from __future__ import annotations

from mdlnb.tools.runner._cli import main
from mdlnb.tools.runner._execute import environ as _environ  # noqa: F401 (tests use it)
from mdlnb.tools.runner._interactive import interactive_profile
from mdlnb.tools.runner._notebooks import (
    available,
    check_profile,
    check_profiles,
    destinations,
    merged_parameters,
    notebook_dir,
    notebook_parameters,
    parameter_types,
    profile_parameters,
    run,
    stale,
    write_params,
)
from mdlnb.tools.runner._params import parse_parameters
from mdlnb.tools.runner._paths import (
    LAB_DIR,
    PROFILES,
    ROOT,
    RUNNER_ENV,
    executed_path,
    library_files,
    params_path,
)
from mdlnb.tools.runner._summary import (
    SUMMARY_COLUMNS,
    format_summary,
    notebook_title,
    summary,
    to_html,
)

__all__ = [
    "LAB_DIR",
    "PROFILES",
    "ROOT",
    "RUNNER_ENV",
    "SUMMARY_COLUMNS",
    "available",
    "check_profile",
    "check_profiles",
    "destinations",
    "executed_path",
    "format_summary",
    "interactive_profile",
    "library_files",
    "main",
    "merged_parameters",
    "notebook_dir",
    "notebook_parameters",
    "notebook_title",
    "parameter_types",
    "params_path",
    "parse_parameters",
    "profile_parameters",
    "run",
    "stale",
    "summary",
    "to_html",
    "write_params",
]
