"""``python -m mdlnb.studies.zoo {build,verify}``: the checkpoint zoo.

* ``build [--only FAMILY ...] [--rebuild --into DIR]``: train the zoo checkpoints
  that have no artifact yet (``--rebuild --into DIR``: all of them again, into DIR,
  for a byte comparison with ``verify --against DIR``).
* ``verify [--against DIR]``: check every committed checkpoint's SHA-256 against its
  provenance and that every member of the zoo is there; with ``--against``, also
  that DIR's rebuilt checkpoints have the same bytes.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from mdlnb.studies import zoo
from mdlnb.studies.pretraining import provenance


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m mdlnb.studies.zoo", description=__doc__.split("\n\n")[0]
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="train the checkpoints that have no artifact yet")
    b.add_argument("--only", nargs="+", default=None, help="families such as simclr")
    b.add_argument("--rebuild", action="store_true", help="train even if an artifact exists")
    b.add_argument("--into", default=None, help="artifact directory (default: the committed one)")
    v = sub.add_parser("verify", help="check the committed checkpoints' SHA-256")
    v.add_argument("--against", default=None, help="a directory of rebuilt checkpoints")
    argv = sys.argv[1:] if argv is None else list(argv)
    args = ap.parse_args(argv)
    config = zoo.ZooConfig()
    if args.cmd == "build":
        if args.only:
            config = dataclasses.replace(config, families=tuple(args.only))
        zoo.build(
            config,
            directory=args.into,
            rebuild=args.rebuild,
            progress=True,
            command=" ".join(["python -m mdlnb.studies.zoo", *argv]),
        )
        return 0
    if not zoo.verify():  # no checkpoint in the zoo's folder (a tree without artifacts)
        print(f"0 zoo members verified (no checkpoints in {zoo.zoo_dir()})")
        return 0
    provs = [zoo.check(m) for m in config.members()]  # a partial zoo is an error
    print(
        f"{len(provs)} zoo members verified ({len(zoo.verify())} checkpoints in "
        f"{zoo.zoo_dir()}, the rest in the encoder artifacts)"
    )
    if args.against:
        bad = [
            p["name"]
            for p in zoo.verify()
            if (o := provenance(p["name"], directory=Path(args.against))) is None
            or o["sha256"] != p["sha256"]
        ]
        if bad:
            print(
                f"rebuilt checkpoints differ from (or lack) the committed ones: {bad}",
                file=sys.stderr,
            )
            return 1
        print(f"rebuilt checkpoints in {args.against} match the committed bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
