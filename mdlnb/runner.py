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

import argparse
import ast
import contextlib
import dataclasses
import datetime
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from mdlnb import _progress

PROFILES = ("smoke", "default", "full")
ROOT = Path(__file__).resolve().parent.parent
RUNNER_ENV = "MDLNB_RUNNER"       # "1" in the kernels this runner starts
LAB_DIR = ROOT / "build" / "lab"  # where interactive runs write (paper_dir = LAB_DIR / "paper")


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
                and not _matches(value, _type_of_default(declared[key])):
            raise ValueError(f"{source}: {name}.{profile}: {key} = {value!r} is "
                             f"{_a(type(value).__name__)}, but the default in notebooks/"
                             f"{name}.py ({declared[key]!r}) is {_a(type(declared[key]).__name__)}")
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
        hints = _field_hints(cls)
        for field, value in overrides.items():
            if field in hints and not _matches(value, hints[field]):
                raise ValueError(f"{source}: {name}.{profile}: {prefix}{field} = "
                                 f"{value!r} is {_a(type(value).__name__)}, but "
                                 f"{cls.__name__}.{field} is {_hint_text(hints[field])}")
    try:
        cls.from_overrides(overrides)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{source}: {name}.{profile}: {err}") from None


# ----------------------------------------------------------------------------- types


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


def _type_of_default(default: Any) -> Any:
    """The type an override (other than None) of a parameter whose default is
    ``default`` must have: ``None`` = anything; a number default takes an int or a float (an int default
    an int); a list or tuple default a list or tuple; else the default's type."""
    if default is None:
        return Any
    if isinstance(default, bool):
        return bool
    if isinstance(default, (list, tuple)):
        return tuple
    if isinstance(default, dict):
        return dict
    return type(default)


def _field_hints(cls: type) -> dict[str, Any]:
    """Field name → resolved type annotation of the dataclass ``cls`` (empty on failure)."""
    import typing

    try:
        return typing.get_type_hints(cls)
    except Exception:  # an annotation that does not resolve: no type checks
        return {}


def _matches(value: Any, hint: Any) -> bool:
    """Whether ``value`` (as YAML or a Python literal gives it) fits the type ``hint``:
    bool/int/float/str exactly (an int fits a float, a bool fits no number), a list or
    tuple fits a tuple/Sequence/list (elements checked), a dict fits a Mapping (keys
    and values checked), a union if one arm fits; anything else is not checked here."""
    import collections.abc as abc
    import types
    import typing

    if hint is Any or hint is object:
        return True
    if hint is None or hint is type(None):
        return value is None
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Union or origin is types.UnionType:
        return any(_matches(value, a) for a in args)
    if origin is typing.Literal:
        return value in args
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    seq = (tuple, list, abc.Sequence)
    if hint in seq or origin in seq:
        if isinstance(value, str) or not isinstance(value, (list, tuple)):
            return False
        if not args:
            return True
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            return len(value) == len(args) and all(map(_matches, value, args))
        return all(_matches(v, args[0]) for v in value)
    if hint in (dict, abc.Mapping) or origin in (dict, abc.Mapping):
        if not isinstance(value, dict):
            return False
        if len(args) != 2:
            return True
        return all(_matches(k, args[0]) and _matches(v, args[1]) for k, v in value.items())
    return True


def _hint_text(hint: Any) -> str:
    text = getattr(hint, "__name__", None) if not getattr(hint, "__args__", None) else None
    return text or str(hint).replace("typing.", "")


def _a(word: str) -> str:
    return f"{'an' if word[:1] in 'aeiou' else 'a'} {word}"


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


def executed_path(name: str, profile: str, out_dir: str | Path | None = None) -> Path:
    """Where :func:`run` writes notebook ``name``'s executed ``.ipynb`` (the make target)."""
    return Path(out_dir or ROOT / "build" / "notebooks" / profile) / f"{name}.ipynb"


def params_path(name: str, profile: str, root: str | Path | None = None) -> Path:
    """The stamp of notebook ``name``'s entry in ``profiles.yaml`` for ``profile``
    (``build/notebooks/<profile>/.params/<name>.json``; a make prerequisite)."""
    return Path(root or ROOT / "build" / "notebooks") / profile / ".params" / f"{name}.json"


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


@contextlib.contextmanager
def _environ(values: Mapping[str, str]):
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


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
    import jupytext
    import nbformat
    import papermill as pm

    from mdlnb._io import atomic_write_text

    src = notebook_dir() / f"{name}.py"
    if not src.exists():
        raise ValueError(f"name: no notebook {name!r}; available: {available()}")
    params = merged_parameters(name, profile, parameters)
    nb_out = executed_path(name, profile, out_dir)
    nb_out.parent.mkdir(parents=True, exist_ok=True)
    nb_in = nb_out.with_name(f"{name}.input.ipynb")
    nb_run = nb_out.with_name(f"{name}.running.ipynb")
    nb_failed = nb_out.with_name(f"{name}.failed.ipynb")
    source = jupytext.read(src)
    # notebooks/*.py carry no header (notebooks/jupytext.toml): the kernel is Python's
    source.metadata.setdefault("kernelspec", {"name": "python3", "display_name": "Python 3",
                                              "language": "python"})
    jupytext.write(source, nb_in)
    started, t0 = time.time(), time.perf_counter()
    try:
        env = {RUNNER_ENV: "1", **({_progress.ENV: "0"} if batch else {})}
        with _environ(env), _ipc_kernels() as manager:
            pm.execute_notebook(str(nb_in), str(nb_run), parameters=params,
                                cwd=str(cwd or ROOT), kernel_name="python3",
                                progress_bar=progress, log_output=False,
                                kernel_manager_class=manager)
    except BaseException:
        if nb_run.exists():
            os.replace(nb_run, nb_failed)
        raise
    finally:
        nb_in.unlink(missing_ok=True)
    nb = nbformat.read(nb_run, as_version=4)
    nb.metadata["mdlnb"] = {"notebook": name, "profile": profile,
                            "parameters": json.loads(json.dumps(params, default=str)),
                            "started": _utc(started), "finished": _utc(time.time()),
                            "finished_epoch": time.time(),
                            "wall_s": round(time.perf_counter() - t0, 2)}
    atomic_write_text(nb_out, nbformat.writes(nb))
    nb_run.unlink(missing_ok=True)
    nb_failed.unlink(missing_ok=True)
    return nb_out


@contextlib.contextmanager
def _ipc_kernels():
    """A kernel manager class whose kernels talk over local (IPC) sockets in a
    temporary folder, removed afterwards: a kernel on TCP warns "Kernel is running
    over TCP without encryption" on every start, which batch runs printed once per
    notebook."""
    import shutil
    import tempfile

    from jupyter_client.manager import AsyncKernelManager

    folder = tempfile.mkdtemp(prefix="mdlnb-kernel-")

    class IPCKernelManager(AsyncKernelManager):
        def __init__(self, **kwargs: Any):
            super().__init__(**kwargs)
            self.transport = "ipc"
            self.ip = os.path.join(folder, "kernel")

    try:
        yield IPCKernelManager
    finally:
        shutil.rmtree(folder, ignore_errors=True)


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
    shown = ", ".join(f"{k}={v!r}" if k != "overrides" else f"overrides ({len(v)} fields)"
                      for k, v in applied.items() if k != "paper_dir")
    where = _shown(Path(applied.get("paper_dir", paper_dir or ".")))
    print(f"interactive run of {name}, profile {profile!r}"
          f"{': ' + shown if shown else ' (the parameters cell as it is)'}; writing to {where}")


def _utc(epoch: float) -> str:
    return datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).isoformat(
        timespec="seconds")


def library_files() -> list[Path]:
    """The library sources every executed notebook depends on (``mdlnb/**/*.py``)."""
    return sorted((ROOT / "mdlnb").rglob("*.py"))


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
    reasons = [f"{_shown(p)} is newer" for p in [notebook_dir() / f"{name}.py", *library_files()]
               if p.stat().st_mtime > when]
    recorded = nbformat.read(out, as_version=4).metadata.get("mdlnb", {}).get("parameters")
    now = json.loads(json.dumps(profile_parameters(name, profile), default=str))
    if recorded != now:
        reasons.append(f"parameters changed: {recorded} -> {now}")
    return reasons


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def to_html(ipynb: str | Path) -> Path:
    """Render an executed notebook to HTML next to it (``NAME.html``, nbconvert's
    ``lab`` template, written atomically), for readers without Jupyter; the page's
    title is the notebook's first heading (:func:`notebook_title`)."""
    import nbconvert
    import nbformat

    from mdlnb._io import atomic_write_text

    ipynb = Path(ipynb)
    if ipynb.suffix != ".ipynb" or not ipynb.is_file():
        raise ValueError(f"ipynb: not an .ipynb file: {str(ipynb)!r}")
    nb = nbformat.read(ipynb, as_version=4)
    resources = {"metadata": {"name": notebook_title(nb) or ipynb.stem}}
    body, _ = nbconvert.HTMLExporter().from_notebook_node(nb, resources=resources)
    return atomic_write_text(ipynb.with_suffix(".html"), body)


def notebook_title(nb: Any) -> str | None:
    """The first Markdown heading of notebook ``nb`` as plain text (``**``, ``*`` and
    backticks dropped): the HTML page's title. None if no Markdown cell has one."""
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        found = re.search(r"^#{1,6}\s+(.+?)\s*#*\s*$", cell.source, re.M)
        if found:
            return re.sub(r"[`*]", "", found.group(1)).strip()
    return None


SUMMARY_COLUMNS = ["notebook", "status", "wall [s]", "finished (UTC)", "html"]


def summary(names: Sequence[str], profile: str, *, out_dir: str | Path | None = None,
            since: float | None = None):
    """One row per notebook: ``status`` — ``ran`` (finished at or after the epoch
    ``since``), ``up to date`` (finished before), ``failed`` (a ``.failed.ipynb``
    newer than any success) or ``missing`` — the recorded wall time, when it
    finished, and its HTML rendering if there is one."""
    import nbformat
    import pandas as pd

    rows = []
    for name in names:
        out = executed_path(name, profile, out_dir)
        failed = out.with_name(f"{name}.failed.ipynb")
        row = dict(notebook=name, status="missing", **{"wall [s]": float("nan"),
                   "finished (UTC)": "", "html": ""})
        if out.exists():
            meta = nbformat.read(out, as_version=4).metadata
            mine, pm_meta = meta.get("mdlnb", {}), meta.get("papermill", {})
            end = mine.get("finished_epoch", out.stat().st_mtime)
            row.update({"wall [s]": mine.get("wall_s", pm_meta.get("duration", float("nan"))),
                        "finished (UTC)": mine.get("finished", _utc(end)),
                        "status": "ran" if since is not None and end >= since else "up to date"})
            html = out.with_suffix(".html")
            row["html"] = _shown(html) if html.exists() else ""
        if failed.exists() and (not out.exists() or failed.stat().st_mtime > out.stat().st_mtime):
            row["status"] = "failed"
        rows.append(row)
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


def format_summary(table: Any, profile: str) -> str:
    """Plain-text table of :func:`summary` with the total wall time of what ran."""
    import math

    ran = table[table["status"] == "ran"]
    cells = [[str(c) for c in SUMMARY_COLUMNS]] + [
        [r["notebook"], r["status"], "-" if math.isnan(r["wall [s]"]) else f"{r['wall [s]']:,.1f}",
         r["finished (UTC)"] or "-", r["html"] or "-"] for r in table.to_dict("records")]
    widths = [max(len(row[i]) for row in cells) for i in range(len(SUMMARY_COLUMNS))]
    lines = ["  ".join(c.rjust(w) if i == 2 else c.ljust(w)
                       for i, (c, w) in enumerate(zip(row, widths))).rstrip() for row in cells]
    return "\n".join([f"notebooks [{profile}]: {len(ran)} ran ({ran['wall [s]'].sum():,.1f} s "
                      f"of notebook time), {int((table['status'] == 'up to date').sum())} up "
                      f"to date", *lines])


def parse_parameters(items: Sequence[str]) -> dict[str, Any]:
    """``["seed=1", "size=400", "overrides.train_size=100"]`` → parameters: each value
    parsed as YAML (``1`` an int, ``0.5`` a float, ``true`` a bool, ``null`` None,
    ``[a, b]`` a list, anything else a string); ``overrides.FIELD=VALUE`` sets one field
    of a study notebook's ``overrides``."""
    import yaml

    out: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"parameter: expected KEY=VALUE, got {item!r}")
        try:
            value = yaml.safe_load(text) if text.strip() else ""
        except yaml.YAMLError as err:
            raise ValueError(f"parameter: {key}: {text!r} is not valid YAML ({err})") from None
        if isinstance(value, str) and re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+",
                                                   value.strip()):
            value = float(value)   # 1e-3: a float (YAML 1.1 wants 1.0e-3)
        if key.startswith("overrides."):
            field = key.split(".", 1)[1]
            if not field:
                raise ValueError(f"parameter: expected overrides.FIELD=VALUE, got {item!r}")
            out.setdefault("overrides", {})[field] = value
        else:
            out[key] = value
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m mdlnb.runner", description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*",
                    help="notebooks to run (default: all); with --html: executed .ipynb files")
    ap.add_argument("--profile", default="default", choices=PROFILES)
    ap.add_argument("-p", "--parameter", action="append", default=[], metavar="KEY=VALUE",
                    help="override one notebook parameter (VALUE parsed as YAML; "
                         "overrides.FIELD=VALUE for a study's config field); repeatable; "
                         "checked, with its type, before any notebook runs")
    ap.add_argument("--check", action="store_true",
                    help="run nothing: check every entry of notebooks/profiles.yaml (names, "
                         "types, study config fields) and exit (status 2 on an error)")
    ap.add_argument("--out-dir", default=None)
    ap.add_argument("--compare-to-git", metavar="REV", default=None,
                    help="end by listing committed paper/*.csv numbers (at REV) that moved")
    ap.add_argument("--summary", action="store_true",
                    help="run nothing: print the per-notebook table of the executed notebooks")
    ap.add_argument("--since", type=float, default=None, metavar="EPOCH",
                    help="with --summary: notebooks finished from then on count as 'ran'")
    ap.add_argument("--write-params", action="store_true",
                    help="refresh the profile stamps build/notebooks/<profile>/.params/*.json")
    ap.add_argument("--html", action="store_true",
                    help="render the given executed notebooks to HTML next to them")
    args = ap.parse_args(argv)
    if args.write_params:
        write_params()
        return 0
    if args.html:
        for path in args.names:
            to_html(path)
        return 0
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

        print(_paperdiff.report(_paperdiff.paper_diff(ROOT / "paper", rev=args.compare_to_git)),
              flush=True)
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except ValueError as err:   # a bad name, profile or parameter: one line, status 2
        print(f"error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
