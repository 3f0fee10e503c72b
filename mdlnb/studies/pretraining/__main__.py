"""``python -m mdlnb.studies.pretraining {train,verify,paper}``: the pretraining stage.

* ``train [--only UNIT ...] [--retrain --into DIR]``: train the suite's encoders
  that have no artifact yet (``--retrain --into DIR``: all of them again, into
  DIR, for a byte comparison with ``verify --against DIR``).
* ``verify [--against DIR]``: check every committed artifact's SHA-256 against
  its provenance; with ``--against``, also that DIR's retrained weights have
  the same bytes.
* ``paper [DIR]``: write the probe curves and the encoder table into DIR (paper/).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mdlnb.studies import pretraining


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m mdlnb.studies.pretraining", description=__doc__.split("\n\n")[0]
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train", help="train the encoders that have no artifact yet")
    t.add_argument("--only", nargs="+", default=None, help="units such as simclr:vit_S")
    t.add_argument("--retrain", action="store_true", help="train even if an artifact exists")
    t.add_argument("--into", default=None, help="artifact directory (default: the committed one)")
    v = sub.add_parser("verify", help="check the committed artifacts' SHA-256")
    v.add_argument("--against", default=None, help="a directory of retrained artifacts")
    p = sub.add_parser("paper", help="write the probe curves and encoder table")
    p.add_argument("paper_dir", nargs="?", default="paper")
    argv = sys.argv[1:] if argv is None else list(argv)
    args = ap.parse_args(argv)
    if args.cmd == "train":
        # a line per evaluation, also when stdout is a log file (make pretrain > log)
        pretraining.run(
            only=args.only,
            retrain=args.retrain,
            directory=args.into,
            progress=True,
            command=" ".join(["python -m mdlnb.studies.pretraining", *argv]),
        )
        return 0
    if args.cmd == "verify":
        provs = pretraining.verify()
        print(f"{len(provs)} encoder artifacts verified in {pretraining.artifact_dir()}")
        if args.against:
            bad = []
            for prov in provs:
                other = pretraining.provenance(prov["name"], directory=Path(args.against))
                if other is not None and other["sha256"] != prov["sha256"]:
                    bad.append(prov["name"])
            if bad:
                print(f"retrained weights differ from the committed ones: {bad}", file=sys.stderr)
                return 1
            print(f"retrained weights in {args.against} match the committed bytes")
        return 0
    pretraining.result().save(args.paper_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
