"""``mdlnb cache``: the on-disk cache (:mod:`mdlnb.tools.cache`): its location, its size
per kind, and ``--clear`` of selected entries."""

from __future__ import annotations

import argparse

from mdlnb.tools import cache


def add_cache(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--clear",
        action="store_true",
        help="delete the selected entries (default: all); they are recomputed when needed",
    )
    p.add_argument(
        "--kind",
        default=None,
        help="only this kind (losses, checkpoints, features, encoders, data)",
    )
    p.add_argument(
        "--older-than",
        default=None,
        metavar="DATE",
        help="only entries last written before DATE (ISO, e.g. 2026-01-31)",
    )


def run_cache(args: argparse.Namespace) -> int:
    if args.clear:
        removed = cache.clear(args.kind, older_than=args.older_than)
        freed = sum(e.bytes for e in removed)
        print(
            f"removed {len(removed)} entries ({cache.human_bytes(freed)}) from {cache.location()}"
        )
        return 0
    table = cache.usage(args.kind, older_than=args.older_than)
    print(f"cache: {cache.location()}  (set $MDLNB_CACHE to move it)")
    for row in table.itertuples():
        print(f"  {row.kind:<12} {row.files:>6} files {cache.human_bytes(row.bytes):>11}")
    print(
        f"  {'total':<12} {table.files.sum():>6} files {cache.human_bytes(table.bytes.sum()):>11}"
    )
    print(
        "  (xla: compiled programs, JAX's persistent compilation cache; "
        "MDLNB_XLA_CACHE=0 turns it off)"
    )
    return 0
