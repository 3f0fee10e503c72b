"""The runner's command line: its arguments, and ``-p KEY=VALUE`` parsed into
notebook parameters."""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from typing import Any

from mdlnb.runner._paths import PROFILES


def parser(description: str) -> argparse.ArgumentParser:
    """The command line of ``python -m mdlnb.runner`` (:func:`mdlnb.runner.main`)."""
    ap = argparse.ArgumentParser(prog="python -m mdlnb.runner", description=description)
    ap.add_argument(
        "names",
        nargs="*",
        help="notebooks to run (default: all); with --html: executed .ipynb files",
    )
    ap.add_argument("--profile", default="default", choices=PROFILES)
    ap.add_argument(
        "-p",
        "--parameter",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one notebook parameter (VALUE parsed as YAML; "
        "overrides.FIELD=VALUE for a study's config field); repeatable; "
        "checked, with its type, before any notebook runs",
    )
    ap.add_argument(
        "--check",
        action="store_true",
        help="run nothing: check every entry of notebooks/profiles.yaml (names, "
        "types, study config fields) and exit (status 2 on an error)",
    )
    ap.add_argument(
        "--paper",
        action="store_true",
        help="write what the notebooks save into the committed paper/ (what "
        "`make reproduce` does; default: build/runs/<profile>/paper/, smoke "
        "runs build/paper-smoke/)",
    )
    ap.add_argument("--out-dir", default=None, help="where the executed notebooks go")
    ap.add_argument(
        "--compare-to-git",
        metavar="REV",
        default=None,
        help="end by listing committed paper/*.csv numbers (at REV) that moved",
    )
    ap.add_argument(
        "--summary",
        action="store_true",
        help="run nothing: print the per-notebook table of the executed notebooks",
    )
    ap.add_argument(
        "--since",
        type=float,
        default=None,
        metavar="EPOCH",
        help="with --summary: notebooks finished from then on count as 'ran'",
    )
    ap.add_argument(
        "--write-params",
        action="store_true",
        help="refresh the profile stamps build/notebooks/<profile>/.params/*.json",
    )
    ap.add_argument(
        "--sweep",
        action="append",
        default=[],
        metavar="KEY=V1,V2,...",
        help="run the notebook once per value (repeatable: every combination) and "
        "collect what the runs saved into one table (mdlnb.runner._sweep)",
    )
    ap.add_argument(
        "--html",
        action="store_true",
        help="render the given executed notebooks to HTML next to them",
    )
    return ap


def parse_parameters(items: Sequence[str]) -> dict[str, Any]:
    """``["seed=1", "size=400", "overrides.train_size=100"]`` → parameters: each value
    parsed as YAML (``1`` an int, ``0.5`` a float, ``true`` a bool, ``null`` None,
    ``[a, b]`` a list, anything else a string); ``overrides.FIELD=VALUE`` sets one field
    of a study notebook's ``overrides``."""
    import yaml  # here, not at the top: --help starts without it

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
        if isinstance(value, str) and re.fullmatch(
            r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+", value.strip()
        ):
            value = float(value)  # 1e-3: a float (YAML 1.1 wants 1.0e-3)
        if key.startswith("overrides."):
            field = key.split(".", 1)[1]
            if not field:
                raise ValueError(f"parameter: expected overrides.FIELD=VALUE, got {item!r}")
            out.setdefault("overrides", {})[field] = value
        else:
            out[key] = value
    return out
