"""Run the experiment notebooks: jupytext ``.py`` → papermill → executed ``.ipynb``.

Each notebook's first tagged ``parameters`` cell holds the *default* profile
(CPU, minutes). ``notebooks/profiles.yaml`` holds the overrides of the other
profiles: ``smoke`` (CI, seconds) and ``full`` (GPU/TPU, real benchmarks)::

    python -m mdlnb.runner --profile smoke quickstart parity_toy

Executed notebooks go to ``build/notebooks/<profile>/``; what a notebook
saves goes to its ``paper_dir`` parameter: ``paper/`` for the default and
full profiles, ``build/paper-smoke/`` for smoke runs.
"""

from __future__ import annotations

import argparse
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


def profile_parameters(name: str, profile: str) -> dict[str, Any]:
    """Papermill parameters for notebook ``name`` under ``profile``."""
    import yaml

    if profile not in PROFILES:
        raise ValueError(f"profile: must be one of {PROFILES}, got {profile!r}")
    path = notebook_dir() / "profiles.yaml"
    table = yaml.safe_load(path.read_text()) if path.exists() else {}
    params = dict((table or {}).get(name, {}).get(profile, {}) or {})
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
    out_dir = Path(out_dir or ROOT / "build" / "notebooks" / profile)
    out_dir.mkdir(parents=True, exist_ok=True)
    nb_in = out_dir / f"{name}.input.ipynb"
    nb_out = out_dir / f"{name}.ipynb"
    jupytext.write(jupytext.read(src), nb_in)
    params = {**profile_parameters(name, profile), **dict(parameters or {})}
    pm.execute_notebook(str(nb_in), str(nb_out), parameters=params, cwd=str(cwd or ROOT),
                        kernel_name="python3", progress_bar=progress, log_output=False)
    nb_in.unlink(missing_ok=True)
    return nb_out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m mdlnb.runner", description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="notebooks to run (default: all)")
    ap.add_argument("--profile", default="default", choices=PROFILES)
    ap.add_argument("--out-dir", default=None)
    args = ap.parse_args(argv)
    names = args.names or available()
    for name in names:
        t0 = time.perf_counter()
        print(f">> {name} [{args.profile}] ...", flush=True)
        out = run(name, args.profile, out_dir=args.out_dir, progress=sys.stdout.isatty())
        print(f"   done in {time.perf_counter() - t0:.1f} s -> {out}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
