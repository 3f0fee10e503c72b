"""Command line: ``mdlnb <subcommand> ...``.

Each subcommand is a pair (``add_<name>(parser)``, ``run_<name>(args) -> int``)
registered in ``COMMANDS``; adding one is a new pair and one dict entry.

    mdlnb switch LOSSES.npz --strategy fixed-share --m 2 [--posterior out.csv]
    mdlnb evaluate FEATURES.npz|.parquet [--experts default] [--posterior out.csv]
    mdlnb cache [--clear] [--kind KIND] [--older-than DATE]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np


def add_switch(p: argparse.ArgumentParser) -> None:
    from mdlnb.switching import names
    p.add_argument("losses", type=Path, help="npz file with an (N, K) loss matrix in nats")
    p.add_argument("--key", default="losses", help="array name in the npz (default: losses)")
    p.add_argument("--strategy", default="fixed-share", choices=names())
    p.add_argument("--m", type=float, default=None, help="fixed share: decreasing rate α_t = (m−1)/t")
    p.add_argument("--alpha", type=float, default=None, help="fixed share: constant rate α")
    p.add_argument("--stable", type=float, default=None, help="switch: P(a block is the last)")
    p.add_argument("--max-run", type=int, default=None, help="run-length: exact run-length states + 1")
    p.add_argument("--phases", type=int, default=None, help="run-length: doubling tail phases")
    p.add_argument("--posterior", type=Path, default=None,
                   help="write the tidy posterior p(ξ_t | D_<t) to .csv or .parquet")


def _check_table_path(path: Optional[Path]) -> None:
    if path is not None and path.suffix not in (".csv", ".parquet"):
        raise ValueError(f"posterior: expected a .csv or .parquet path, got {path}")


def _write_table(frame, path: Path) -> None:
    """Write a DataFrame as .csv or .parquet, atomically."""
    import io

    from mdlnb._io import atomic_write_bytes

    buf = io.BytesIO()
    if path.suffix == ".csv":
        frame.to_csv(buf, index=False)
    else:
        frame.to_parquet(buf, index=False)
    atomic_write_bytes(path, buf.getvalue())


def _strategy_options(args: argparse.Namespace) -> dict:
    given = {"m": args.m, "alpha": args.alpha, "stable": args.stable, "max_run": args.max_run,
             "phases": args.phases}
    allowed = {"fixed-share": {"m", "alpha"}, "switch": {"stable"}, "run-length": {"max_run", "phases"}}
    opts = {k: v for k, v in given.items() if v is not None}
    extra = set(opts) - allowed.get(args.strategy, set())
    if extra:
        flags = ", ".join("--" + e.replace("_", "-") for e in sorted(extra))
        raise ValueError(f"strategy: option(s) {flags} do not apply to {args.strategy!r}")
    return opts


def run_switch(args: argparse.Namespace) -> int:
    from mdlnb import switching
    _check_table_path(args.posterior)
    strategy = switching.get_strategy(args.strategy, **_strategy_options(args))
    try:
        data = np.load(args.losses, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise ValueError(f"losses: cannot read {args.losses} ({e})") from None
    with data:
        if args.key not in data.files:
            raise ValueError(f"key: {args.key!r} not in {args.losses} (has {data.files})")
        losses = data[args.key]
        names = [str(n) for n in data["names"]] if "names" in data.files else None
    result = switching.codelength(losses, strategy, posterior=args.posterior is not None)
    n, k = losses.shape
    print(f"strategy        {strategy!r}")
    print(f"examples N      {n}")
    print(f"experts K       {k}")
    print(f"codelength      {result.total_nats:.6f} nats = {result.total_bits:.6f} bits")
    print(f"per example     {result.nats_per_example:.6f} nats = {result.bits_per_example:.6f} bits")
    if args.posterior is not None:
        frame = result.to_frame(names)
        _write_table(frame, args.posterior)
        print(f"posterior       {args.posterior} ({len(frame)} rows: t, expert, probability)")
    return 0


def add_evaluate(p: argparse.ArgumentParser) -> None:
    from mdlnb.experts import PRESET_BATCH_SIZE
    from mdlnb.switching import names
    p.add_argument("features", type=Path, help="npz or parquet with features `x` (N, D) and labels `y` (N,)")
    p.add_argument("--x-key", default="x", help="feature array/column name (default: x)")
    p.add_argument("--y-key", default="y", help="label array/column name (default: y)")
    p.add_argument("--num-classes", type=int, default=None, help="C (default: max(y) + 1)")
    p.add_argument("--experts", default="default", choices=sorted(PRESET_BATCH_SIZE),
                   help="board of readout experts (default: default)")
    p.add_argument("--strategy", default="fixed-share", choices=names())
    p.add_argument("--m", type=float, default=None,
                   help="fixed share: m − 1 expected switches (default: the paper's m = 11)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-cache", action="store_true", help="recompute even if cached")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--posterior", type=Path, default=None,
                   help="write the tidy readout posterior to .csv or .parquet")


def run_evaluate(args: argparse.Namespace) -> int:
    import mdlnb
    from mdlnb.experts import preset

    _check_table_path(args.posterior)
    if args.features.suffix == ".parquet":
        task = mdlnb.Task.from_parquet(args.features, x_key=args.x_key, y_key=args.y_key,
                                       num_classes=args.num_classes)
    else:
        task = mdlnb.Task.from_npz(args.features, x_key=args.x_key, y_key=args.y_key,
                                   num_classes=args.num_classes)
    # fixed share with m=None is evaluate's default (the paper's m = 11)
    strategy = None if args.strategy == "fixed-share" else args.strategy
    rep = mdlnb.evaluate(task, preset(args.experts), strategy,
                         batch_size=args.batch_size, seed=args.seed, m=args.m,
                         progress=False if args.quiet else None, cache=not args.no_cache)
    print(rep)
    if args.posterior is not None:
        frame = rep.readout_posterior()
        _write_table(frame, args.posterior)
        print(f"posterior       {args.posterior} ({len(frame)} rows)")
    return 0


def add_cache(p: argparse.ArgumentParser) -> None:
    p.add_argument("--clear", action="store_true",
                   help="delete the selected entries (default: all); they are recomputed when needed")
    p.add_argument("--kind", default=None,
                   help="only this kind (losses, checkpoints, features, encoders, data)")
    p.add_argument("--older-than", default=None, metavar="DATE",
                   help="only entries last written before DATE (ISO, e.g. 2026-01-31)")


def run_cache(args: argparse.Namespace) -> int:
    from mdlnb import cache

    if args.clear:
        removed = cache.clear(args.kind, older_than=args.older_than)
        freed = sum(e.bytes for e in removed)
        print(f"removed {len(removed)} entries ({cache.human_bytes(freed)}) from {cache.location()}")
        return 0
    table = cache.usage(args.kind, older_than=args.older_than)
    print(f"cache: {cache.location()}  (set $MDLNB_CACHE to move it)")
    for row in table.itertuples():
        print(f"  {row.kind:<12} {row.files:>6} files {cache.human_bytes(row.bytes):>11}")
    print(f"  {'total':<12} {table.files.sum():>6} files {cache.human_bytes(table.bytes.sum()):>11}")
    return 0


Command = tuple[Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int], str]

COMMANDS: dict[str, Command] = {
    "switch": (add_switch, run_switch, "codelength of a loss matrix under a switching strategy"),
    "evaluate": (add_evaluate, run_evaluate,
                 "MDL of labels given features: online readouts + switching"),
    "cache": (add_cache, run_cache, "the on-disk cache: location, size per kind, --clear"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mdlnb", description="MDL evaluation with readout-model switching")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (add, run, help_) in COMMANDS.items():
        p = sub.add_parser(name, help=help_, description=help_)
        add(p)
        p.set_defaults(_run=run)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point; returns the exit status (2 for bad input, with the message on stderr)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args._run(args)
    except ValueError as e:
        print(f"mdlnb {args.command}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
