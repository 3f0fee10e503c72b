"""Command line: ``mdlnb <subcommand> ...``.

Each subcommand is a pair (``add_<name>(parser)``, ``run_<name>(args) -> int``)
registered in ``COMMANDS``; adding one is a new pair and one dict entry. The pairs
live by family: ``switch`` in :mod:`mdlnb.tools._cli_switch`, ``evaluate`` and
``compare`` in :mod:`mdlnb.tools._cli_evaluate`, ``cache`` in :mod:`mdlnb.tools._cli_cache`;
what they share (options, output files) in :mod:`mdlnb.tools._cli_options`.

    mdlnb switch LOSSES.npz --strategy fixed-share --m 2 [--posterior out.csv]
    mdlnb evaluate FEATURES [--labels Y] [--kind regression] [--protocol default] [--posterior out.csv]
    mdlnb compare A B ... [--labels Y] [--kind regression] [--protocol default] [--seeds 0 1 2]
    mdlnb cache [--clear] [--kind KIND] [--older-than DATE]

``FEATURES``, ``A``, ``B`` and ``Y`` are ``.npy``, ``.npz``, ``.parquet`` or
``.csv`` files (:mod:`mdlnb.core._userfiles`). ``evaluate`` and ``compare`` take the
same options as :func:`mdlnb.evaluate` and :func:`mdlnb.compare`: a protocol
(:func:`mdlnb.protocol`: ``default``, ``small``, ``deep``, ``paper-vtab``,
``paper-imagenet``) whose fields ``--experts``, ``--strategy`` (with ``--m``,
``--alpha``, ...), ``--batch-size``, ``--standardize``, ``--replay-streams``,
``--calibrate``, ``--matmul-dtype`` and ``--seed`` override; ``--kind
regression`` codes real-valued targets; what only Python offers is listed at
the end of ``--help`` (:data:`PYTHON_ONLY`). A report's warnings are printed
once, under it. Both ``--posterior`` options write one format
(:data:`POSTERIOR_HELP`, :func:`mdlnb.api.evaluation.posterior_frame`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

# the subcommands, one module per family; their names stay importable from here
from mdlnb.tools._cli_cache import add_cache, run_cache
from mdlnb.tools._cli_evaluate import add_compare, add_evaluate, run_compare, run_evaluate
from mdlnb.tools._cli_options import POSTERIOR_HELP  # noqa: F401
from mdlnb.tools._cli_switch import add_switch, run_switch

Command = tuple[Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int], str]

COMMANDS: dict[str, Command] = {
    "switch": (add_switch, run_switch, "codelength of a loss matrix under a switching strategy"),
    "evaluate": (
        add_evaluate,
        run_evaluate,
        "MDL of labels given features: online readouts + switching",
    ),
    "compare": (
        add_compare,
        run_compare,
        "rank encoders' features on one task by MDL, paired over >= 3 data orders",
    ),
    "cache": (add_cache, run_cache, "the on-disk cache: location, size per kind, --clear"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mdlnb", description="MDL evaluation with readout-model switching"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (add, run, help_) in COMMANDS.items():
        p = sub.add_parser(name, help=help_, description=help_)
        add(p)
        p.set_defaults(_run=run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status (2 for bad input, with the message on stderr)."""
    import warnings

    parser = build_parser()
    args = parser.parse_args(argv)

    def one_line(message, category, filename, lineno, file=None, line=None) -> None:
        print(f"mdlnb {args.command}: warning: {message}", file=file or sys.stderr, flush=True)

    with warnings.catch_warnings():  # warnings as one line each, no source path
        warnings.showwarning = one_line
        try:
            return args._run(args)
        except (ValueError, OSError) as e:  # bad input, an unwritable output path
            print(f"mdlnb {args.command}: error: {e}", file=sys.stderr)
            return 2


if __name__ == "__main__":
    raise SystemExit(main())
