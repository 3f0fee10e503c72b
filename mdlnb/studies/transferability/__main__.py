"""``python -m mdlnb.studies.transferability {finetune,verify}``: the fine-tuning ground truth.

* ``finetune [--zoos ZOO ...] [--tasks TASK ...] [--rebuild --into DIR]``: compute
  the default config's (zoo, task) ground-truth artifacts that are missing or stale
  (hours on a CPU; resumable), of every zoo or only ``--zoos`` (``vit_S``, ``lite``);
  ``--rebuild --into DIR``: all of them again into DIR, from nothing, for a byte
  comparison with ``verify --against DIR``.
* ``verify [--against DIR]``: check every committed artifact's SHA-256; with
  ``--against``, also that DIR's rebuilt artifacts have the same bytes.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from mdlnb.infra._io import cache_dir
from mdlnb.studies.transferability import _groundtruth
from mdlnb.studies.transferability._config import TransferabilityConfig
from mdlnb.studies.transferability._encoders import build_encoders, parse_encoder, zoo_of
from mdlnb.studies.transferability._features import load_splits


def build(config, *, directory: Path | None, rebuild: bool, command: str) -> list[dict]:
    """Compute (or find) every (zoo, task) artifact of ``config``; their provenance."""
    _, built = build_encoders(config, progress=True)
    splits = load_splits(
        config.tasks,
        train_size=config.train_size,
        val_size=config.val_size,
        test_size=config.test_size,
        seed=config.seed,
    )
    out = []
    for zoo, names in config.zoos().items():
        for task in config.tasks:
            d = Path(directory) if directory else _groundtruth.artifact_dir()
            if rebuild:  # from nothing: no resumable state of an earlier build
                for p in cache_dir("finetune").glob(f"{zoo}-{task}-*.ckpt.npz"):
                    p.unlink()
                (d / f"{zoo}-{task}.json").unlink(missing_ok=True)
            _, prov = _groundtruth.ground_truth(
                zoo,
                task,
                names,
                [built[n] for n in names],
                splits[task],
                config.finetune_spec(),
                directory=d,
                build=True,
                progress=True,
                command=command,
            )
            print(f"{prov['name']}: {prov['seconds']} s, sha256 {prov['sha256'][:12]}", flush=True)
            out.append(prov)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m mdlnb.studies.transferability", description=__doc__.split("\n\n")[0]
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("finetune", help="compute the ground-truth artifacts")
    f.add_argument("--tasks", nargs="+", default=None, help="a subset of the config's tasks")
    f.add_argument("--zoos", nargs="+", default=None, help="a subset of the zoos (vit_S, lite)")
    f.add_argument("--rebuild", action="store_true", help="compute even if an artifact exists")
    f.add_argument("--into", default=None, help="artifact directory (default: the committed one)")
    v = sub.add_parser("verify", help="check the committed artifacts' SHA-256")
    v.add_argument("--against", default=None, help="a directory of rebuilt artifacts")
    argv = sys.argv[1:] if argv is None else list(argv)
    args = ap.parse_args(argv)
    if args.cmd == "finetune":
        config = TransferabilityConfig()
        if args.tasks:
            config = dataclasses.replace(config, tasks=tuple(args.tasks))
        if args.zoos:
            config = dataclasses.replace(
                config,
                encoders=tuple(e for e in config.encoders if zoo_of(parse_encoder(e)) in args.zoos),
            )
        build(
            config,
            directory=args.into,
            rebuild=args.rebuild,
            command=" ".join(["python -m mdlnb.studies.transferability", *argv]),
        )
        return 0
    provs = _groundtruth.verify()
    print(f"{len(provs)} ground-truth artifacts verified in {_groundtruth.artifact_dir()}")
    if args.against:
        bad = [
            p["name"]
            for p in provs
            if (o := _groundtruth._provenance(Path(args.against) / f"{p['name']}.json")) is None
            or o["sha256"] != p["sha256"]
        ]
        if bad:
            print(
                f"rebuilt artifacts differ from (or lack) the committed ones: {bad}",
                file=sys.stderr,
            )
            return 1
        print(f"rebuilt artifacts in {args.against} match the committed bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
