"""Run the experiment notebooks: jupytext ``.py`` → papermill → executed ``.ipynb``.

Each notebook's first tagged ``parameters`` cell holds the *default* profile
(CPU, minutes). ``notebooks/profiles.yaml`` holds the overrides of the other
profiles: ``smoke`` (CI, seconds) and ``full`` (GPU/TPU, real benchmarks)::

    python -m mdlnb.runner --profile smoke quickstart parity_toy

Executed notebooks go to ``build/notebooks/<profile>/``; what a notebook
saves goes to its ``paper_dir`` parameter: ``paper/`` for the default and
full profiles, ``build/paper-smoke/`` for smoke runs.

Profiles are checked before anything runs: a key that is not a parameter of
the notebook is an error, and for a notebook whose parameter cell names a
``study`` (:mod:`mdlnb.studies`) every field of its ``overrides`` must be a
field of that study's ``Config`` (built once to validate the values).
``--compare-to-git REV`` ends the run by listing the numbers of the
committed ``paper/*.csv`` (at ``REV``) that moved beyond the tolerance of
:mod:`mdlnb._paperdiff`.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

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


def run(name: str, profile: str = "default", *, out_dir: str | Path | None = None,
        parameters: Mapping[str, Any] | None = None, cwd: str | Path | None = None,
        progress: bool = False) -> Path:
    """Execute one notebook; return the path of the executed ``.ipynb``."""
    import jupytext
    import papermill as pm

    src = notebook_dir() / f"{name}.py"
    if not src.exists():
        raise ValueError(f"name: no notebook {name!r}; available: {available()}")
    params = {**profile_parameters(name, profile), **dict(parameters or {})}
    if parameters:  # checked before papermill starts a kernel: fail at once, naming the field
        check_profile(name, profile, params, source="parameters")
    out_dir = Path(out_dir or ROOT / "build" / "notebooks" / profile)
    out_dir.mkdir(parents=True, exist_ok=True)
    nb_in = out_dir / f"{name}.input.ipynb"
    nb_out = out_dir / f"{name}.ipynb"
    jupytext.write(jupytext.read(src), nb_in)
    pm.execute_notebook(str(nb_in), str(nb_out), parameters=params, cwd=str(cwd or ROOT),
                        kernel_name="python3", progress_bar=progress, log_output=False)
    nb_in.unlink(missing_ok=True)
    return nb_out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m mdlnb.runner", description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="notebooks to run (default: all)")
    ap.add_argument("--profile", default="default", choices=PROFILES)
    ap.add_argument("--out-dir", default=None)
    ap.add_argument("--compare-to-git", metavar="REV", default=None,
                    help="end by listing committed paper/*.csv numbers (at REV) that moved")
    args = ap.parse_args(argv)
    names = args.names or available()
    for name in names:
        profile_parameters(name, args.profile)   # every profile checked before any run
    for name in names:
        t0 = time.perf_counter()
        print(f">> {name} [{args.profile}] ...", flush=True)
        out = run(name, args.profile, out_dir=args.out_dir, progress=sys.stdout.isatty())
        print(f"   done in {time.perf_counter() - t0:.1f} s -> {out}", flush=True)
    if args.compare_to_git:
        from mdlnb import _paperdiff

        print(_paperdiff.report(_paperdiff.paper_diff(ROOT / "paper", rev=args.compare_to_git)),
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
