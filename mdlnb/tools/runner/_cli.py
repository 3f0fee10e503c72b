"""The runner's command line: its arguments, ``-p KEY=VALUE`` parsed into notebook
parameters, and :func:`main`, which runs the named notebooks and says where each
writes."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mdlnb.tools.runner import _notebooks, _summary, _sweep
from mdlnb.tools.runner._params import parse_parameters
from mdlnb.tools.runner._paths import PROFILES, shown

#: the command line's description, the first line of :mod:`mdlnb.tools.runner`'s docstring
DESCRIPTION = "Run the experiment notebooks: jupytext ``.py`` → papermill → executed ``.ipynb``."


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


def _run_and_say(name: str, args: Any, overrides: Mapping[str, Any]) -> Path:
    """One notebook of :func:`main`, with where it writes said before and after."""
    nb, figures = _notebooks.destinations(
        name, args.profile, paper=args.paper, out_dir=args.out_dir
    )
    figures = Path(
        _notebooks.merged_parameters(name, args.profile, overrides, paper=args.paper).get(
            "paper_dir", figures
        )
    )
    note = " -- into the committed paper/ (--paper)" if figures == _notebooks.ROOT / "paper" else ""
    print(f">> {name} [{args.profile}]: figures and tables to {shown(figures)}/{note}", flush=True)
    t0, started = time.perf_counter(), time.time()
    out = Path(
        _notebooks.run(
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

    The runner's functions are looked up on :mod:`._notebooks` at call time."""
    args = parser(DESCRIPTION).parse_args(argv)
    if args.write_params:
        _notebooks.write_params()
        return 0
    if args.html:
        for path in args.names:
            _summary.to_html(path)
        return 0
    if args.sweep:
        return _sweep.main(args)
    if args.check:
        try:
            _notebooks.check_profiles()
        except ValueError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
        print(
            f"notebooks/profiles.yaml: every entry checked ({len(_notebooks.available())} notebooks)"
        )
        return 0
    names = args.names or _notebooks.available()
    overrides = parse_parameters(args.parameter)
    for name in names:  # every named notebook checked, with -p (types too), before any run
        _notebooks.merged_parameters(name, args.profile, overrides, paper=args.paper)
    since = args.since
    first, _ = _notebooks.destinations(
        names[0], args.profile, paper=args.paper, out_dir=args.out_dir
    )
    folder = first.parent
    if not args.summary:
        since = time.time()
        for name in names:
            _run_and_say(name, args, overrides)
    if args.summary or len(names) > 1:
        print(
            _summary.format_summary(
                _summary.summary(names, args.profile, out_dir=folder, since=since), args.profile
            ),
            flush=True,
        )
    if args.compare_to_git:
        from mdlnb.research import (
            _paperdiff,  # heavy: mdlnb.research (pandas), for --compare-to-git only
        )

        print(
            _paperdiff.report(
                _paperdiff.paper_diff(_notebooks.ROOT / "paper", rev=args.compare_to_git),
                verdicts=_paperdiff.verdict_changes(
                    _notebooks.ROOT / "paper", rev=args.compare_to_git
                ),
            ),
            flush=True,
        )
    return 0
