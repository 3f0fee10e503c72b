"""Run the experiment notebooks: jupytext ``.py`` → papermill → executed ``.ipynb``.

Each notebook's first tagged ``parameters`` cell holds the *default* profile
(CPU, minutes). ``notebooks/profiles.yaml`` holds the overrides of the other
profiles: ``smoke`` (CI, seconds) and ``full`` (GPU/TPU, real benchmarks)::

    python -m mdlnb.runner --profile smoke quickstart parity_toy

Executed notebooks go to ``build/notebooks/<profile>/NAME.ipynb`` (written
only when the run succeeded; ``metadata["mdlnb"]`` records parameters and
wall time), in batch mode: no per-step progress bars in the stored output
(:mod:`mdlnb._progress`). What a notebook saves goes to its ``paper_dir``
parameter: ``paper/`` for the default and full profiles,
``build/paper-smoke/`` for smoke runs.

Profiles are checked before anything runs: a key that is not a parameter of
the notebook is an error, and for a notebook whose parameter cell names a
``study`` (:mod:`mdlnb.studies`) every field of its ``overrides`` must be a
field of that study's ``Config`` (built once to validate the values).
``--compare-to-git REV`` ends the run by listing the numbers of the
committed ``paper/*.csv`` (at ``REV``) that moved beyond the tolerance of
:mod:`mdlnb._paperdiff`.

The Makefile drives it one notebook per target (``make reproduce``,
``make smoke``); the helpers it calls::

    python -m mdlnb.runner --write-params          # profile stamps, rewritten only on change
    python -m mdlnb.runner --html build/notebooks/default/quickstart.ipynb
    python -m mdlnb.runner --summary --since EPOCH --compare-to-git HEAD
"""

from __future__ import annotations

import argparse
import ast
import contextlib
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


def _overrides_study(name: str) -> str | None:
    """The study whose ``Config.from_overrides(overrides)`` notebook ``name`` calls
    (``from mdlnb.studies import <study> as <alias>`` … ``<alias>.<Cls>.from_overrides(
    overrides)``), or None: lets :func:`check_profile` validate ``overrides`` of a
    notebook that declares no ``study`` parameter."""
    text = (notebook_dir() / f"{name}.py").read_text()
    aliases = dict((a or s, s) for s, a in re.findall(
        r"^from mdlnb\.studies import (\w+)(?: as (\w+))?", text, flags=re.M))
    call = re.search(r"\b(\w+)\.\w+\.from_overrides\(overrides\)", text)
    return aliases.get(call.group(1)) if call else None


def _profile_table() -> dict[str, Any]:
    import yaml

    path = notebook_dir() / "profiles.yaml"
    table = yaml.safe_load(path.read_text()) if path.exists() else {}
    return dict(table or {})


def check_profile(name: str, profile: str, params: Mapping[str, Any], *,
                  source: str = "profiles.yaml") -> None:
    """ValueError if ``params`` sets a name the notebook has no parameter for, or (for a
    study notebook) an ``overrides`` field its study's ``Config`` lacks or rejects.
    The message starts with ``source`` (where the parameters came from), then names
    the notebook, the profile and the offending parameter or field."""
    declared = notebook_parameters(name)
    unknown = sorted(set(params) - set(declared))
    if unknown:
        raise ValueError(f"{source}: {name}.{profile} sets {unknown}, which are not "
                         f"parameters of notebooks/{name}.py; it has {sorted(declared)}")
    study = params.get("study", declared.get("study")) or _overrides_study(name)
    if study is not None:
        from mdlnb import studies

        overrides = params.get("overrides", declared.get("overrides")) or {}
        try:
            studies.config_class(study).from_overrides(overrides)
        except (TypeError, ValueError) as err:
            raise ValueError(f"{source}: {name}.{profile}: {err}") from None


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


def run(name: str, profile: str = "default", *, out_dir: str | Path | None = None,
        parameters: Mapping[str, Any] | None = None, cwd: str | Path | None = None,
        progress: bool = False, batch: bool = True) -> Path:
    """Execute one notebook; return the path of the executed ``.ipynb``.

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
    params = {**profile_parameters(name, profile), **dict(parameters or {})}
    if parameters:  # checked before papermill starts a kernel: fail at once, naming the field
        check_profile(name, profile, params, source="parameters")
    nb_out = executed_path(name, profile, out_dir)
    nb_out.parent.mkdir(parents=True, exist_ok=True)
    nb_in = nb_out.with_name(f"{name}.input.ipynb")
    nb_run = nb_out.with_name(f"{name}.running.ipynb")
    nb_failed = nb_out.with_name(f"{name}.failed.ipynb")
    jupytext.write(jupytext.read(src), nb_in)
    started, t0 = time.time(), time.perf_counter()
    try:
        with _environ({_progress.ENV: "0"} if batch else {}):
            pm.execute_notebook(str(nb_in), str(nb_run), parameters=params,
                                cwd=str(cwd or ROOT), kernel_name="python3",
                                progress_bar=progress, log_output=False)
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
    ``lab`` template, written atomically), for readers without Jupyter."""
    import nbconvert
    import nbformat

    from mdlnb._io import atomic_write_text

    ipynb = Path(ipynb)
    if ipynb.suffix != ".ipynb" or not ipynb.is_file():
        raise ValueError(f"ipynb: not an .ipynb file: {str(ipynb)!r}")
    body, _ = nbconvert.HTMLExporter().from_notebook_node(nbformat.read(ipynb, as_version=4))
    return atomic_write_text(ipynb.with_suffix(".html"), body)


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


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m mdlnb.runner", description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*",
                    help="notebooks to run (default: all); with --html: executed .ipynb files")
    ap.add_argument("--profile", default="default", choices=PROFILES)
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
    names = args.names or available()
    for name in names:
        profile_parameters(name, args.profile)   # every profile checked before any run
    since = args.since
    if not args.summary:
        since = time.time()
        for name in names:
            t0 = time.perf_counter()
            print(f">> {name} [{args.profile}] ...", flush=True)
            out = run(name, args.profile, out_dir=args.out_dir, progress=sys.stdout.isatty())
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
    raise SystemExit(main())
