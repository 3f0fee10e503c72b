"""Where the runner reads and writes: the repository root, the executed notebooks,
the profile stamps, and the library files a notebook depends on."""

from __future__ import annotations

import datetime
from pathlib import Path

PROFILES = ("smoke", "default", "full")
ROOT = Path(__file__).resolve().parents[3]  # mdlnb/tools/runner/_paths.py -> the repository
RUNNER_ENV = "MDLNB_RUNNER"  # "1" in the kernels this runner starts
LAB_DIR = ROOT / "build" / "lab"  # where interactive runs write (paper_dir = LAB_DIR / "paper")


def executed_path(name: str, profile: str, out_dir: str | Path | None = None) -> Path:
    """Where :func:`run` writes notebook ``name``'s executed ``.ipynb`` (the make target)."""
    return Path(out_dir or ROOT / "build" / "notebooks" / profile) / f"{name}.ipynb"


def params_path(name: str, profile: str, root: str | Path | None = None) -> Path:
    """The stamp of notebook ``name``'s entry in ``profiles.yaml`` for ``profile``
    (``build/notebooks/<profile>/.params/<name>.json``; a make prerequisite)."""
    return Path(root or ROOT / "build" / "notebooks") / profile / ".params" / f"{name}.json"


def library_files() -> list[Path]:
    """The library sources every executed notebook depends on (``mdlnb/**/*.py``)."""
    return sorted((ROOT / "mdlnb").rglob("*.py"))


def shown(path: Path) -> str:
    """``path`` relative to the repository root when it lies inside it."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def utc(epoch: float) -> str:
    """The epoch ``epoch`` as an ISO 8601 UTC time, to the second."""
    return datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).isoformat(
        timespec="seconds"
    )
