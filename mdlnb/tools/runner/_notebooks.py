"""The notebooks, their parameters and profiles, and running one: what
:mod:`mdlnb.tools.runner` re-exports, and what its command line (:mod:`._cli`), sweeps
(:mod:`._sweep`) and interactive runs (:mod:`._interactive`) call.

Those modules import this one and call its functions through it (``_notebooks.run``),
so a test that replaces a function here replaces it for all of them.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mdlnb.infra._io import atomic_write_text
from mdlnb.tools.runner import _params
from mdlnb.tools.runner._execute import execute
from mdlnb.tools.runner._paths import (
    PROFILES,
    ROOT,
    executed_path,
    library_files,
    params_path,
    shown,
)
from mdlnb.tools.runner._summary import to_html
from mdlnb.tools.runner._types import article, field_hints, hint_text, matches

# yaml and nbformat are imported inside the
# functions that use them, and the studies (JAX) inside check_profile: the light commands
# (--help, --summary) start without them.


def notebook_dir() -> Path:
    return ROOT / "notebooks"


def available() -> list[str]:
    """Names of the experiment notebooks (``notebooks/*.py``)."""
    return sorted(p.stem for p in notebook_dir().glob("*.py") if not p.stem.startswith("_"))


def _declared(name: str) -> dict[str, Any]:
    """The :class:`~mdlnb.tools.runner._params.Parameter` s of notebook ``name``'s parameters cell."""
    src = notebook_dir() / f"{name}.py"
    if not src.exists():
        raise ValueError(f"name: no notebook {name!r}; available: {available()}")
    source = _params.parameters_source(src)
    return {} if source is None else _params.cell_parameters(source)


def notebook_parameters(name: str) -> dict[str, Any]:
    """Names and default values of the first ``parameters``-tagged cell of notebook
    ``name`` (values that are not literals come back as their source text)."""
    return {k: p.default for k, p in _declared(name).items()}


def parameter_types(name: str) -> dict[str, tuple[Any, str]]:
    """``{parameter: (type, where the type comes from)}`` of notebook ``name``: its
    annotation, its literal default's type, or for a ``None`` default the types
    ``profiles.yaml`` gives it (:mod:`mdlnb.tools.runner._params`)."""
    return _params.parameter_types(_declared(name), _params.profile_types(_profile_table(), name))


def _profile_table() -> dict[str, Any]:
    import yaml

    path = notebook_dir() / "profiles.yaml"
    table = yaml.safe_load(path.read_text()) if path.exists() else {}
    return dict(table or {})


def check_profile(
    name: str, profile: str, params: Mapping[str, Any], *, source: str = "profiles.yaml"
) -> None:
    """ValueError if ``params`` sets a name the notebook has no parameter for, or (for a
    study notebook: its ``study`` parameter, else :data:`mdlnb.studies.NOTEBOOKS`) a
    value its study's ``Config`` rejects: an ``overrides`` field it lacks, or, for a
    notebook with one parameter per field, a parameter of the wrong type or value.
    The message starts with ``source`` (where the parameters came from), then names
    the notebook, the profile and the offending parameter or field."""
    declared = notebook_parameters(name)
    unknown = sorted(set(params) - set(declared))
    if unknown:
        raise ValueError(
            f"{source}: {name}.{profile} sets {unknown}, which are not "
            f"parameters of notebooks/{name}.py; it has {sorted(declared)}"
        )
    types = parameter_types(name)
    for key, value in params.items():
        if key in types and value is not None and not matches(value, types[key][0]):
            raise ValueError(
                f"{source}: {name}.{profile}: {key} = {value!r} is "
                f"{article(type(value).__name__)}, but "
                + _expected(name, key, declared[key], *types[key])
            )
    from mdlnb import studies  # here, not at the top: `--help` and `--summary` need no study

    study = params.get("study", declared.get("study")) or studies.study_of(name)
    if study is None:
        return
    cls = studies.config_class(study)
    if "overrides" in declared:  # the study's fields, as one mapping
        overrides = params.get("overrides", declared.get("overrides")) or {}
        prefix = "overrides."
    else:  # one notebook parameter per field, of the same name
        fields = {f.name for f in dataclasses.fields(cls)}
        overrides = {k: v for k, v in params.items() if k in fields}
        prefix = ""
    if isinstance(overrides, Mapping):
        hints = field_hints(cls)
        for field, value in overrides.items():
            if field in hints and not matches(value, hints[field]):
                raise ValueError(
                    f"{source}: {name}.{profile}: {prefix}{field} = "
                    f"{value!r} is {article(type(value).__name__)}, but "
                    f"{cls.__name__}.{field} is {hint_text(hints[field])}"
                )
    try:
        cls.from_overrides(overrides)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{source}: {name}.{profile}: {err}") from None


def _expected(name: str, key: str, default: Any, hint: Any, where: str) -> str:
    """What the type error says the parameter wants, and why."""
    if where.startswith("its default"):
        return (
            f"the default in notebooks/{name}.py ({default!r}) is {article(type(default).__name__)}"
        )
    return f"notebooks/{name}.py's {key} takes {hint_text(hint)} ({where})"


def check_profiles() -> None:
    """:func:`check_profile` for every notebook and profile of ``profiles.yaml``; an
    entry for a notebook that does not exist, or an unknown profile, is an error too."""
    for name, profiles in _profile_table().items():
        if name not in available():
            raise ValueError(f"profiles.yaml: no notebook {name!r}; available: {available()}")
        for profile, params in (profiles or {}).items():
            if profile not in PROFILES:
                raise ValueError(
                    f"profiles.yaml: {name}.{profile}: profile must be one of {PROFILES}"
                )
            check_profile(name, profile, dict(params or {}))


def profile_parameters(name: str, profile: str, *, paper: bool = False) -> dict[str, Any]:
    """Papermill parameters for notebook ``name`` under ``profile`` (checked by
    :func:`check_profile`), with where its figures and tables go (``paper_dir``,
    :func:`destinations`): the committed ``paper/`` only when ``paper`` (what ``make
    reproduce`` asks for), else a folder under ``build/``."""
    if profile not in PROFILES:
        raise ValueError(f"profile: must be one of {PROFILES}, got {profile!r}")
    params = dict(_profile_table().get(name, {}).get(profile, {}) or {})
    check_profile(name, profile, params)
    params.setdefault("profile", profile)
    figures = destinations(name, profile, paper=paper)[1]
    if figures != ROOT / "paper":
        params.setdefault("paper_dir", str(figures))
    return params


def destinations(
    name: str, profile: str, *, paper: bool = False, out_dir: str | Path | None = None
) -> tuple[Path, Path]:
    """``(executed notebook, folder of its figures and tables)`` of a run:

    * ``paper`` (``--paper``; ``make reproduce``): ``build/notebooks/<profile>/NAME.ipynb``
      (the make target) and the committed ``paper/``;
    * smoke (``make smoke``): ``build/notebooks/smoke/NAME.ipynb`` and ``build/paper-smoke/``;
    * any other run: ``build/runs/<profile>/NAME.ipynb`` and ``build/runs/<profile>/paper/``
      — neither a make target nor a committed file.

    ``out_dir`` moves the notebook only. The HTML page lies beside the notebook."""
    if paper and profile == "smoke":
        raise ValueError(
            "paper: smoke runs never write the committed paper/ (they are "
            "seconds long, not the published numbers); drop --paper"
        )
    if paper or profile == "smoke":
        figures = ROOT / "paper" if paper else ROOT / "build" / "paper-smoke"
        return executed_path(name, profile, out_dir), figures
    runs = ROOT / "build" / "runs" / profile
    return executed_path(name, profile, out_dir or runs), runs / "paper"


def write_params(root: str | Path | None = None) -> list[Path]:
    """Write every notebook's ``profiles.yaml`` entry, per profile, to :func:`params_path`
    — only where the text changed, so an edit of one notebook's profile leaves the
    other stamps' modification times (and so their notebooks) alone. Returns the
    stamps written."""
    table, written = _profile_table(), []
    for name in available():
        for profile in PROFILES:
            entry = (table.get(name) or {}).get(profile) or {}
            text = json.dumps(entry, sort_keys=True, indent=1, default=str) + "\n"
            path = params_path(name, profile, root)
            if not path.exists() or path.read_text() != text:
                atomic_write_text(path, text)
                written.append(path)
    return written


def merged_parameters(
    name: str, profile: str, parameters: Mapping[str, Any] | None = None, *, paper: bool = False
) -> dict[str, Any]:
    """Notebook ``name``'s papermill parameters under ``profile`` with ``parameters`` on
    top (a mapping ``overrides`` is merged into the profile's field by field), checked —
    names, types against the parameter cell's defaults, a study config's fields and
    values (:func:`check_profile`) — so a bad value fails before any kernel starts."""
    params = profile_parameters(name, profile, paper=paper)
    extra = dict(parameters or {})
    if isinstance(extra.get("overrides"), Mapping) and isinstance(params.get("overrides"), Mapping):
        extra["overrides"] = {**params["overrides"], **extra["overrides"]}
    params.update(extra)
    if extra:
        check_profile(name, profile, params, source="parameters")
        if "paper_dir" in extra and not (
            isinstance(extra["paper_dir"], str) and extra["paper_dir"].strip()
        ):
            raise ValueError(
                f"parameters: {name}.{profile}: paper_dir must be a folder path, "
                f"got {extra['paper_dir']!r}"
            )
    return params


def run(
    name: str,
    profile: str = "default",
    *,
    out_dir: str | Path | None = None,
    parameters: Mapping[str, Any] | None = None,
    cwd: str | Path | None = None,
    progress: bool = False,
    batch: bool = True,
    paper: bool = False,
    html: bool = True,
) -> Path:
    """Execute one notebook; return the path of the executed ``.ipynb``.

    ``parameters`` override the profile's (:func:`merged_parameters`: checked, types
    included, before the kernel starts), e.g. ``run("quickstart", "smoke",
    parameters={"seed": 1, "size": 400})``; the command line's ``-p seed=1 -p size=400``.
    What the notebook saves goes to the committed ``paper/`` only with ``paper=True``
    (``--paper``, as ``make reproduce`` runs it); see :func:`destinations`.

    ``batch`` (default) runs the kernel with ``MDLNB_PROGRESS=0``: no
    per-step progress bars in the stored output, one line per stage
    (:mod:`mdlnb.infra._progress`). ``progress``: papermill's own cell bar on the
    terminal. The executed notebook appears only when the run succeeded
    (written atomically; a failed run is left as ``NAME.failed.ipynb``), so a
    make target is never a half-run notebook; ``html``: its HTML page beside it.
    Its ``metadata["mdlnb"]`` records the profile, the parameters, start and end
    (UTC) and the wall time.
    """
    src = notebook_dir() / f"{name}.py"
    if not src.exists():
        raise ValueError(f"name: no notebook {name!r}; available: {available()}")
    params = merged_parameters(name, profile, parameters, paper=paper)
    nb = destinations(name, profile, paper=paper, out_dir=out_dir)[0]
    out = execute(
        src, nb, params, name=name, profile=profile, cwd=cwd or ROOT, progress=progress, batch=batch
    )
    if html:
        to_html(out)
    return out


def stale(name: str, profile: str, *, out_dir: str | Path | None = None) -> list[str]:
    """Why notebook ``name``'s executed ``.ipynb`` under ``profile`` is out of date
    (empty when current) — the rule of the Makefile: it is missing, older than its
    source or a library file, or was run with other parameters than
    :func:`profile_parameters` gives now."""
    import nbformat

    out = executed_path(name, profile, out_dir)
    if not out.exists():
        return [f"{out} does not exist"]
    when = out.stat().st_mtime
    reasons = [
        f"{shown(p)} is newer"
        for p in [notebook_dir() / f"{name}.py", *library_files()]
        if p.stat().st_mtime > when
    ]
    recorded = nbformat.read(out, as_version=4).metadata.get("mdlnb", {}).get("parameters")
    paper = recorded is not None and "paper_dir" not in recorded and profile != "smoke"
    now = json.loads(json.dumps(profile_parameters(name, profile, paper=paper), default=str))
    if recorded != now:
        reasons.append(f"parameters changed: {recorded} -> {now}")
    return reasons
