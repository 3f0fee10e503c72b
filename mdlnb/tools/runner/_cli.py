"""The runner's command line: its arguments, ``-p KEY=VALUE`` parsed into notebook
parameters, and :func:`main`, which runs the named notebooks and says where each
writes."""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mdlnb.tools.runner._paths import PROFILES, shown


def parser(description: str) -> argparse.ArgumentParser:
    """The command line of ``python -m mdlnb.tools.runner`` (:func:`mdlnb.tools.runner.main`)."""
    ap = argparse.ArgumentParser(prog="python -m mdlnb.tools.runner", description=description)
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
        "collect what the runs saved into one table (mdlnb.tools.runner._sweep)",
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


def _run_and_say(name: str, args: Any, overrides: Mapping[str, Any]) -> Path:
    """One notebook of :func:`main`, with where it writes said before and after."""
    from mdlnb.tools import runner

    nb, figures = runner.destinations(name, args.profile, paper=args.paper, out_dir=args.out_dir)
    figures = Path(
        runner.merged_parameters(name, args.profile, overrides, paper=args.paper).get(
            "paper_dir", figures
        )
    )
    note = " -- into the committed paper/ (--paper)" if figures == runner.ROOT / "paper" else ""
    print(f">> {name} [{args.profile}]: figures and tables to {shown(figures)}/{note}", flush=True)
    t0, started = time.perf_counter(), time.time()
    out = Path(
        runner.run(
            name,
            args.profile,
            out_dir=args.out_dir,
            progress=sys.stdout.isatty(),
            parameters=overrides or None,
            paper=args.paper,
        )
    )
    wrote = (
        sorted(
            p.name for p in figures.glob("*") if p.is_file() and p.stat().st_mtime >= started - 1
        )
        if figures.is_dir()
        else []
    )
    listed = ", ".join(wrote[:6]) + (f", … ({len(wrote)} files)" if len(wrote) > 6 else "")
    print(
        f"   done in {time.perf_counter() - t0:.1f} s\n"
        f"   notebook  {shown(out)}\n   html      {shown(out.with_suffix('.html'))}\n"
        f"   figures   {shown(figures)}/: {listed or 'nothing written'}",
        flush=True,
    )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m mdlnb.tools.runner``: run the named notebooks (see :mod:`mdlnb.tools.runner`), or
    one of the helpers (``--write-params``, ``--html``, ``--sweep``, ``--check``,
    ``--summary``); 0 on success, 2 when ``--check`` finds a bad entry.

    The runner's functions are looked up on :mod:`mdlnb.tools.runner` at call time."""
    from mdlnb.tools import runner

    args = parser((runner.__doc__ or "").splitlines()[0]).parse_args(argv)
    if args.write_params:
        runner.write_params()
        return 0
    if args.html:
        for path in args.names:
            runner.to_html(path)
        return 0
    if args.sweep:
        from mdlnb.tools.runner import _sweep

        return _sweep.main(args)
    if args.check:
        try:
            runner.check_profiles()
        except ValueError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
        print(f"notebooks/profiles.yaml: every entry checked ({len(runner.available())} notebooks)")
        return 0
    names = args.names or runner.available()
    overrides = parse_parameters(args.parameter)
    for name in names:  # every named notebook checked, with -p (types too), before any run
        runner.merged_parameters(name, args.profile, overrides, paper=args.paper)
    since = args.since
    first, _ = runner.destinations(names[0], args.profile, paper=args.paper, out_dir=args.out_dir)
    folder = first.parent
    if not args.summary:
        since = time.time()
        for name in names:
            _run_and_say(name, args, overrides)
    if args.summary or len(names) > 1:
        print(
            runner.format_summary(
                runner.summary(names, args.profile, out_dir=folder, since=since), args.profile
            ),
            flush=True,
        )
    if args.compare_to_git:
        from mdlnb.research import _paperdiff

        print(
            _paperdiff.report(
                _paperdiff.paper_diff(runner.ROOT / "paper", rev=args.compare_to_git),
                verdicts=_paperdiff.verdict_changes(runner.ROOT / "paper", rev=args.compare_to_git),
            ),
            flush=True,
        )
    return 0
