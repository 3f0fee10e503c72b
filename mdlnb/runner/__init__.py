"""Run the experiment notebooks: jupytext ``.py`` → papermill → executed ``.ipynb``.

Each notebook's first tagged ``parameters`` cell holds the *default* profile
(CPU, minutes). ``notebooks/profiles.yaml`` holds the overrides of the other
profiles: ``smoke`` (CI, seconds) and ``full`` (GPU/TPU, real benchmarks)::

    python -m mdlnb.runner --profile smoke quickstart parity_toy
    python -m mdlnb.runner --profile smoke quickstart -p seed=1 -p size=400
    python -m mdlnb.runner --profile smoke objectives -p overrides.train_size=100

``-p KEY=VALUE`` overrides one parameter (the value parsed as YAML); in Python,
``run(name, profile, parameters={...})``.

Executed notebooks go to ``build/notebooks/<profile>/NAME.ipynb`` (written
only when the run succeeded; ``metadata["mdlnb"]`` records parameters and
wall time), in batch mode: no per-step progress bars in the stored output
(:mod:`mdlnb._progress`). What a notebook saves goes to its ``paper_dir``
parameter: ``paper/`` for the default and full profiles,
``build/paper-smoke/`` for smoke runs.

Parameters are checked before any kernel starts, those of ``profiles.yaml``
(every entry of every notebook, first: ``--check`` does only that, and ``make
reproduce`` runs it before any notebook) and those of ``-p``/``parameters``:
a key that is not a parameter of the notebook is an error, as is a value whose
type differs from the parameter cell's default (an int fits a float default;
a ``None`` default takes anything, and ``None`` — YAML ``null``, "all" in the
notebooks — fits any parameter), and for a notebook that runs a
study (its parameter cell names a ``study``, or :data:`mdlnb.studies.NOTEBOOKS`
lists it) every field of its ``overrides`` — or, for a notebook with one
parameter per field, every such parameter — must be a field of that study's
``Config``, of the field's annotated type, and build a valid ``Config``.
``--compare-to-git REV`` ends the run by listing the numbers of the
committed ``paper/*.csv`` (at ``REV``) that moved beyond the tolerance of
:mod:`mdlnb._paperdiff`.

The Makefile drives it one notebook per target (``make reproduce``,
``make smoke``); the helpers it calls::

    python -m mdlnb.runner --write-params          # profile stamps, rewritten only on change
    python -m mdlnb.runner --html build/notebooks/default/quickstart.ipynb
    python -m mdlnb.runner --summary --since EPOCH --compare-to-git HEAD

**Interactive runs** (JupyterLab, ``make lab``): every notebook calls
:func:`interactive_profile` right after its parameters cell. Run by this
runner (which sets ``MDLNB_RUNNER=1`` for its kernels) the call does nothing —
papermill has injected the profile's values already. Run by hand, it applies
the ``profiles.yaml`` entry of the ``profile`` set in the parameters cell
(``profile = "smoke"`` then means the smoke run) and sends what the notebook
writes to ``build/lab/paper`` instead of the committed ``paper/``.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from mdlnb.runner._cli import parse_parameters, parser
from mdlnb.runner._execute import environ as _environ  # noqa: F401 (tests use it)
from mdlnb.runner._execute import execute
from mdlnb.runner._paths import (LAB_DIR, PROFILES, ROOT, RUNNER_ENV, executed_path,
                                 library_files, params_path, shown)
from mdlnb.runner._summary import (SUMMARY_COLUMNS, format_summary, notebook_title, summary,
                                   to_html)
from mdlnb.runner._types import article, field_hints, hint_text, matches, type_of_default

__all__ = ["LAB_DIR", "PROFILES", "ROOT", "RUNNER_ENV", "SUMMARY_COLUMNS", "available",
           "check_profile", "check_profiles", "executed_path", "format_summary",
           "interactive_profile", "library_files", "main", "merged_parameters",
           "notebook_dir", "notebook_parameters", "notebook_title", "params_path",
           "parse_parameters", "profile_parameters", "run", "stale", "summary", "to_html",
           "write_params"]

# jupytext, nbformat, yaml, mdlnb._io (its hashlib, tempfile, zipfile) and
# mdlnb._paperdiff (subprocess) are imported inside the functions that use them, and the
# studies (JAX) inside check_profile: the light commands (--help, --summary) start
# without them.


def notebook_dir() -> Path:
    return ROOT / "notebooks"


def available() -> list[str]:
    """Names of the experiment notebooks (``notebooks/*.py``)."""
    return sorted(p.stem for p in notebook_dir().glob("*.py") if not p.stem.startswith("_"))


def notebook_parameters(name: str) -> dict[str, Any]:
    """Names and default values of the first ``parameters``-tagged cell of notebook
    ``name`` (values that are not literals come back as their source text)."""
    import jupytext

    src = notebook_dir() / f"{name}.py"
    if not src.exists():
        raise ValueError(f"name: no notebook {name!r}; available: {available()}")
    nb = jupytext.read(src)
    cell = next((c for c in nb.cells if c.cell_type == "code"
                 and "parameters" in c.get("metadata", {}).get("tags", [])), None)
    if cell is None:
        return {}
    out: dict[str, Any] = {}
    for node in ast.parse(cell.source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                out[node.targets[0].id] = ast.get_source_segment(cell.source, node.value)
    return out


def _profile_table() -> dict[str, Any]:
    import yaml

    path = notebook_dir() / "profiles.yaml"
    table = yaml.safe_load(path.read_text()) if path.exists() else {}
    return dict(table or {})


def check_profile(name: str, profile: str, params: Mapping[str, Any], *,
                  source: str = "profiles.yaml") -> None:
    """ValueError if ``params`` sets a name the notebook has no parameter for, or (for a
    study notebook: its ``study`` parameter, else :data:`mdlnb.studies.NOTEBOOKS`) a
    value its study's ``Config`` rejects: an ``overrides`` field it lacks, or, for a
    notebook with one parameter per field, a parameter of the wrong type or value.
    The message starts with ``source`` (where the parameters came from), then names
    the notebook, the profile and the offending parameter or field."""
    declared = notebook_parameters(name)
    unknown = sorted(set(params) - set(declared))
    if unknown:
        raise ValueError(f"{source}: {name}.{profile} sets {unknown}, which are not "
                         f"parameters of notebooks/{name}.py; it has {sorted(declared)}")
    literal = _literal_parameters(name)
    for key, value in params.items():
        if key in literal and value is not None \
                and not matches(value, type_of_default(declared[key])):
            raise ValueError(f"{source}: {name}.{profile}: {key} = {value!r} is "
                             f"{article(type(value).__name__)}, but the default in notebooks/"
                             f"{name}.py ({declared[key]!r}) is {article(type(declared[key]).__name__)}")
    from mdlnb import studies   # here, not at the top: `--help` and `--summary` need no study

    study = params.get("study", declared.get("study")) or studies.study_of(name)
    if study is None:
        return
    cls = studies.config_class(study)
    if "overrides" in declared:     # the study's fields, as one mapping
        overrides = params.get("overrides", declared.get("overrides")) or {}
        prefix = "overrides."
    else:                           # one notebook parameter per field, of the same name
        fields = {f.name for f in dataclasses.fields(cls)}
        overrides = {k: v for k, v in params.items() if k in fields}
        prefix = ""
    if isinstance(overrides, Mapping):
        hints = field_hints(cls)
        for field, value in overrides.items():
            if field in hints and not matches(value, hints[field]):
                raise ValueError(f"{source}: {name}.{profile}: {prefix}{field} = "
                                 f"{value!r} is {article(type(value).__name__)}, but "
                                 f"{cls.__name__}.{field} is {hint_text(hints[field])}")
    try:
        cls.from_overrides(overrides)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{source}: {name}.{profile}: {err}") from None




def _literal_parameters(name: str) -> set[str]:
    """The parameters of notebook ``name`` whose default is a literal (the others come
    back from :func:`notebook_parameters` as source text: their type is unknown)."""
    import jupytext

    nb = jupytext.read(notebook_dir() / f"{name}.py")
    cell = next((c for c in nb.cells if c.cell_type == "code"
                 and "parameters" in c.get("metadata", {}).get("tags", [])), None)
    out = set()
    for node in ast.parse(cell.source if cell is not None else "").body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            try:
                ast.literal_eval(node.value)
            except ValueError:
                continue
            out.add(node.targets[0].id)
    return out












def check_profiles() -> None:
    """:func:`check_profile` for every notebook and profile of ``profiles.yaml``; an
    entry for a notebook that does not exist, or an unknown profile, is an error too."""
    for name, profiles in _profile_table().items():
        if name not in available():
            raise ValueError(f"profiles.yaml: no notebook {name!r}; available: {available()}")
        for profile, params in (profiles or {}).items():
            if profile not in PROFILES:
                raise ValueError(f"profiles.yaml: {name}.{profile}: profile must be one of "
                                 f"{PROFILES}")
            check_profile(name, profile, dict(params or {}))


def profile_parameters(name: str, profile: str) -> dict[str, Any]:
    """Papermill parameters for notebook ``name`` under ``profile`` (checked by
    :func:`check_profile`)."""
    if profile not in PROFILES:
        raise ValueError(f"profile: must be one of {PROFILES}, got {profile!r}")
    params = dict(_profile_table().get(name, {}).get(profile, {}) or {})
    check_profile(name, profile, params)
    params.setdefault("profile", profile)
    if profile == "smoke":  # smoke runs never overwrite the committed paper/
        params.setdefault("paper_dir", str(ROOT / "build" / "paper-smoke"))
    return params






def write_params(root: str | Path | None = None) -> list[Path]:
    """Write every notebook's ``profiles.yaml`` entry, per profile, to :func:`params_path`
    — only where the text changed, so an edit of one notebook's profile leaves the
    other stamps' modification times (and so their notebooks) alone. Returns the
    stamps written."""
    from mdlnb._io import atomic_write_text

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


def merged_parameters(name: str, profile: str,
                      parameters: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Notebook ``name``'s papermill parameters under ``profile`` with ``parameters`` on
    top (a mapping ``overrides`` is merged into the profile's field by field), checked —
    names, types against the parameter cell's defaults, a study config's fields and
    values (:func:`check_profile`) — so a bad value fails before any kernel starts."""
    params = profile_parameters(name, profile)
    extra = dict(parameters or {})
    if isinstance(extra.get("overrides"), Mapping) and isinstance(params.get("overrides"), Mapping):
        extra["overrides"] = {**params["overrides"], **extra["overrides"]}
    params.update(extra)
    if extra:
        check_profile(name, profile, params, source="parameters")
    return params


def run(name: str, profile: str = "default", *, out_dir: str | Path | None = None,
        parameters: Mapping[str, Any] | None = None, cwd: str | Path | None = None,
        progress: bool = False, batch: bool = True) -> Path:
    """Execute one notebook; return the path of the executed ``.ipynb``.

    ``parameters`` override the profile's (:func:`merged_parameters`: checked, types
    included, before the kernel starts), e.g. ``run("quickstart", "smoke",
    parameters={"seed": 1, "size": 400})``; the command line's ``-p seed=1 -p size=400``.

    ``batch`` (default) runs the kernel with ``MDLNB_PROGRESS=0``: no
    per-step progress bars in the stored output, one line per stage
    (:mod:`mdlnb._progress`). ``progress``: papermill's own cell bar on the
    terminal. The executed notebook appears only when the run succeeded
    (written atomically; a failed run is left as ``NAME.failed.ipynb``), so a
    make target is never a half-run notebook. Its ``metadata["mdlnb"]`` records
    the profile, the parameters, start and end (UTC) and the wall time.
    """
    src = notebook_dir() / f"{name}.py"
    if not src.exists():
        raise ValueError(f"name: no notebook {name!r}; available: {available()}")
    params = merged_parameters(name, profile, parameters)
    return execute(src, executed_path(name, profile, out_dir), params, name=name,
                   profile=profile, cwd=cwd or ROOT, progress=progress, batch=batch)


def interactive_profile(namespace: dict, name: str) -> None:
    """Apply notebook ``name``'s profile to ``namespace`` (its ``globals()``) when it
    runs interactively; a no-op (returns ``{}``) under this runner.

    Called right after the parameters cell: the ``profile`` set there (``"smoke"``,
    ``"default"``, ``"full"``) selects the entry of ``notebooks/profiles.yaml``, as
    ``--profile`` does for a batch run, and its values replace the parameters
    cell's — except those edited in the cell (different from the notebook file's
    default), which win; for ``overrides`` field by field. ``paper_dir`` left at
    its default goes to ``build/lab/paper`` (a relative one is taken from the
    repository root, not the kernel's folder), so an interactive run never writes
    into ``paper/`` or ``notebooks/``. Prints one line saying what it set."""
    if os.environ.get(RUNNER_ENV) == "1":
        return
    profile = namespace.get("profile", "default")
    declared = notebook_parameters(name)
    literal = _literal_parameters(name)
    table = dict(_profile_table().get(name, {}).get(profile, {}) or {}) \
        if profile in PROFILES else None
    if table is None:
        raise ValueError(f"profile: must be one of {PROFILES}, got {profile!r}")

    def edited(key: str) -> bool:
        return key in namespace and key in literal and namespace[key] != declared[key]

    applied: dict[str, Any] = {}
    for key, value in table.items():
        if key == "overrides" and isinstance(value, Mapping):
            mine = namespace.get("overrides") or {}
            base = declared.get("overrides") if "overrides" in literal else {}
            kept = {k: v for k, v in dict(mine).items() if (base or {}).get(k, object()) != v}
            value = {**value, **kept}
        elif edited(key):
            continue
        applied[key] = value
    paper_dir = namespace.get("paper_dir")
    if "paper_dir" in declared:
        if paper_dir is None or paper_dir == declared["paper_dir"]:
            applied["paper_dir"] = str(LAB_DIR / "paper")
        elif not Path(paper_dir).is_absolute():
            applied["paper_dir"] = str(ROOT / paper_dir)
    check_profile(name, profile, {k: v for k, v in applied.items() if k != "paper_dir"},
                  source="interactive_profile")
    namespace.update(applied)
    listed = ", ".join(f"{k}={v!r}" if k != "overrides" else f"overrides ({len(v)} fields)"
                       for k, v in applied.items() if k != "paper_dir")
    where = shown(Path(applied.get("paper_dir", paper_dir or ".")))
    print(f"interactive run of {name}, profile {profile!r}"
          f"{': ' + listed if listed else ' (the parameters cell as it is)'}; writing to {where}")






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
    reasons = [f"{shown(p)} is newer" for p in [notebook_dir() / f"{name}.py", *library_files()]
               if p.stat().st_mtime > when]
    recorded = nbformat.read(out, as_version=4).metadata.get("mdlnb", {}).get("parameters")
    now = json.loads(json.dumps(profile_parameters(name, profile), default=str))
    if recorded != now:
        reasons.append(f"parameters changed: {recorded} -> {now}")
    return reasons
















def main(argv: Sequence[str] | None = None) -> int:
    args = parser(__doc__.splitlines()[0]).parse_args(argv)
    if args.write_params:
        write_params()
        return 0
    if args.html:
        for path in args.names:
            to_html(path)
        return 0
    if args.sweep:
        from mdlnb.runner import _sweep

        return _sweep.main(args)
    if args.check:
        try:
            check_profiles()
        except ValueError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
        print(f"notebooks/profiles.yaml: every entry checked ({len(available())} notebooks)")
        return 0
    names = args.names or available()
    overrides = parse_parameters(args.parameter)
    for name in names:   # every named notebook checked, with -p (types too), before any run
        merged_parameters(name, args.profile, overrides)
    since = args.since
    if not args.summary:
        since = time.time()
        for name in names:
            t0 = time.perf_counter()
            print(f">> {name} [{args.profile}] ...", flush=True)
            out = run(name, args.profile, out_dir=args.out_dir, progress=sys.stdout.isatty(),
                      parameters=overrides or None)
            print(f"   done in {time.perf_counter() - t0:.1f} s -> {out}", flush=True)
    if args.summary or len(names) > 1:
        print(format_summary(summary(names, args.profile, out_dir=args.out_dir, since=since),
                             args.profile), flush=True)
    if args.compare_to_git:
        from mdlnb import _paperdiff

        print(_paperdiff.report(
            _paperdiff.paper_diff(ROOT / "paper", rev=args.compare_to_git),
            verdicts=_paperdiff.verdict_changes(ROOT / "paper", rev=args.compare_to_git)),
            flush=True)
    return 0

