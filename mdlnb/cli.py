"""Command line: ``mdlnb <subcommand> ...``.

Each subcommand is a pair (``add_<name>(parser)``, ``run_<name>(args) -> int``)
registered in ``COMMANDS``; adding one is a new pair and one dict entry.

    mdlnb switch LOSSES.npz --strategy fixed-share --m 2 [--posterior out.csv]
    mdlnb evaluate FEATURES.npz|.parquet [--protocol default] [--experts ...] [--posterior out.csv]
    mdlnb compare A.npz B.npz ... [--labels y.npy] [--protocol default] [--seeds 0 1 2]
    mdlnb cache [--clear] [--kind KIND] [--older-than DATE]

``evaluate`` runs a protocol (:func:`mdlnb.protocol`: ``default``, ``small``,
``paper-vtab``, ``paper-imagenet``); ``--experts``, ``--batch-size``, ``--m``,
``--standardize``, ``--replay-streams`` and ``--seed`` override its fields.
Both ``--posterior`` options write one format (:data:`POSTERIOR_HELP`,
:func:`mdlnb.evaluation.posterior_frame`).
"""

from __future__ import annotations

import argparse
import io
import json
import re
import sys
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np

import mdlnb
from mdlnb import cache
from mdlnb._io import atomic_write_bytes
from mdlnb.report import save_figure

# Imported inside the functions that use them, so that importing this module does not load
# them: mdlnb.switching and mdlnb._protocol (JAX, pandas); mdlnb.evaluation and
# mdlnb._compare (JAX, optax, pandas); mdlnb.experts (JAX).

POSTERIOR_HELP = (
    "write the switching posterior to .csv or .parquet, one row per (t, expert): "
    "t = examples seen before the prediction (0 … N−1; t = 0 is the prior), "
    "expert = expert name (column index when the input has no names), "
    "readout = the expert's readout name (empty when unknown), "
    "probability = p(expert | first t examples). Same format for `mdlnb switch` and "
    "`mdlnb evaluate`; the readout posterior is its sum over rows of one (t, readout)")


def add_switch(p: argparse.ArgumentParser) -> None:
    from mdlnb.switching import names
    p.add_argument("losses", type=Path,
                   help="npz file with an (N, K) loss matrix in nats (a LossMatrix.save file, "
                        "or any npz; optional arrays `names` and `readouts`, K strings each)")
    p.add_argument("--key", default="losses", help="array name in the npz (default: losses)")
    p.add_argument("--strategy", default="fixed-share", choices=names())
    p.add_argument("--m", type=float, default=None,
                   help="fixed share: decreasing rate α_t = (m−1)/t (default: m = 2, "
                        "the default protocol's)")
    p.add_argument("--alpha", type=float, default=None, help="fixed share: constant rate α")
    p.add_argument("--stable", type=float, default=None, help="switch: P(a block is the last)")
    p.add_argument("--max-run", type=int, default=None, help="run-length: exact run-length states + 1")
    p.add_argument("--phases", type=int, default=None, help="run-length: doubling tail phases")
    p.add_argument("--posterior", type=Path, default=None, help=POSTERIOR_HELP)


class _Arrays(dict):
    """An ``.npz`` file's arrays, read at once, with ``np.load``'s NpzFile interface
    (``files``, a context manager)."""

    @property
    def files(self) -> list[str]:
        return list(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> bool:
        return False


def _load_npz(path: Path, arg: str) -> _Arrays:
    """Every array of the ``.npz`` at ``path``, or a ValueError naming ``arg``: a missing,
    empty, truncated or non-zip file, a plain ``.npy``, an object (pickled) array."""
    import zipfile

    try:
        z = np.load(path, allow_pickle=False)
        if not hasattr(z, "files"):
            raise ValueError("an .npy array, not an .npz archive of named arrays")
        with z:
            return _Arrays({k: z[k] for k in z.files})
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
        raise ValueError(f"{arg}: cannot read {path} ({e})") from None


def _expert_labels(data, k: int) -> tuple[list[str], list[str] | None]:
    """Expert names and readout names stored in a losses npz, as far as known:
    a ``LossMatrix.save`` file (``experts`` configs), or ``names``/``readouts``
    arrays; library expert names (``mlp2-lr1e-3-…``) give their readout."""
    names, readouts = [str(i) for i in range(k)], None
    if "experts" in data.files:
        configs = json.loads(str(data["experts"]))
        names = [str(c["name"]) for c in configs]
        readouts = [str(c.get("readout_name", "")) for c in configs]
    elif "names" in data.files:
        names = [str(n) for n in data["names"]]
    if "readouts" in data.files:
        readouts = [str(r) for r in data["readouts"]]
    if readouts is None:
        lib = [re.match(r"^(linear|mlp\d+(?:x\d+)?)-lr", n) for n in names]
        if all(lib):
            readouts = [m.group(1) for m in lib]
    if len(names) != k or (readouts is not None and len(readouts) != k):
        raise ValueError(f"losses: names/readouts in the file do not match K = {k} columns")
    return names, readouts


def _check_table_path(path: Optional[Path]) -> None:
    if path is not None and path.suffix not in (".csv", ".parquet"):
        raise ValueError(f"posterior: expected a .csv or .parquet path, got {path}")


def _write_table(frame, path: Path) -> None:
    """Write a DataFrame as .csv or .parquet, atomically."""
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
    data = _load_npz(args.losses, "losses")
    with data:
        if args.key not in data.files:
            raise ValueError(f"key: {args.key!r} not in {args.losses} (has {data.files})")
        losses = data[args.key]
        if losses.ndim != 2:
            raise ValueError(f"losses: expected an (N, K) matrix, got shape {losses.shape}")
        names, readouts = _expert_labels(data, losses.shape[1])
    result = switching.codelength(losses, strategy, posterior=args.posterior is not None)
    n, k = losses.shape
    print(f"strategy        {strategy!r}")
    print(f"examples N      {n}")
    print(f"experts K       {k}")
    print(f"codelength      {result.total_nats:.6f} nats = {result.total_bits:.6f} bits")
    print(f"per example     {result.nats_per_example:.6f} nats = {result.bits_per_example:.6f} bits")
    if args.posterior is not None:
        from mdlnb.evaluation import posterior_frame

        frame = posterior_frame(result.posterior, names, readouts)
        _write_table(frame, args.posterior)
        print(f"posterior       {args.posterior} ({len(frame)} rows: t, expert, readout, "
              "probability)")
    return 0


def add_evaluate(p: argparse.ArgumentParser) -> None:
    from mdlnb._protocol import STANDARDIZE
    from mdlnb._protocol import names as protocols
    from mdlnb.experts import PRESETS
    from mdlnb.switching import names
    p.add_argument("features", type=Path, help="npz or parquet with features `x` (N, D) and labels `y` (N,)")
    p.add_argument("--x-key", default="x", help="feature array/column name (default: x)")
    p.add_argument("--y-key", default="y", help="label array/column name (default: y)")
    p.add_argument("--num-classes", type=int, default=None,
                   help="C (default: max(y) + 1, with a warning when a class in [0, C) "
                        "never occurs, e.g. labels 1..10)")
    p.add_argument("--protocol", default="default", choices=protocols(),
                   help="board, batch size, strategy, standardisation and seed (default: "
                        "default); the flags below override its fields")
    p.add_argument("--experts", default=None, choices=list(PRESETS),
                   help="board of readout experts (default: the protocol's)")
    p.add_argument("--strategy", default=None, choices=names(),
                   help="switching strategy (default: the protocol's, fixed share)")
    p.add_argument("--m", type=float, default=None,
                   help="fixed share: m − 1 expected switches (default: the protocol's)")
    p.add_argument("--batch-size", type=int, default=None, help="B (default: the protocol's)")
    p.add_argument("--standardize", default=None, choices=list(STANDARDIZE),
                   help="online input standardisation (default: the protocol's)")
    p.add_argument("--replay-streams", type=int, default=None,
                   help="override every expert's replay count")
    p.add_argument("--seed", type=int, default=None, help="default: the protocol's")
    p.add_argument("--no-cache", action="store_true", help="recompute even if cached")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--posterior", type=Path, default=None, help=POSTERIOR_HELP)


def run_evaluate(args: argparse.Namespace) -> int:
    _check_table_path(args.posterior)
    if args.features.suffix == ".parquet":
        task = mdlnb.Task.from_parquet(args.features, x_key=args.x_key, y_key=args.y_key,
                                       num_classes=args.num_classes)
    else:
        task = mdlnb.Task.from_npz(args.features, x_key=args.x_key, y_key=args.y_key,
                                   num_classes=args.num_classes)
    rep = mdlnb.evaluate(task, experts=args.experts, strategy=args.strategy, m=args.m,
                         protocol=args.protocol, batch_size=args.batch_size, seed=args.seed,
                         standardize=args.standardize, replay_streams=args.replay_streams,
                         progress=False if args.quiet else None, cache=not args.no_cache)
    print(f"protocol        {rep.protocol!r}")
    print(rep)
    if args.posterior is not None:
        frame = rep.posterior
        _write_table(frame, args.posterior)
        print(f"posterior       {args.posterior} ({len(frame)} rows: t, expert, readout, "
              "probability)")
    return 0


def add_compare(p: argparse.ArgumentParser) -> None:
    from mdlnb._protocol import names as protocols
    p.add_argument("features", type=Path, nargs="+",
                   help="one npz per encoder with features `x` (N, D) (and labels `y`)")
    p.add_argument("--labels", type=Path, default=None,
                   help="labels (N,) as .npy (default: `y` of the first npz; all must agree)")
    p.add_argument("--names", nargs="+", default=None, help="encoder names (default: file stems)")
    p.add_argument("--x-key", default="x", help="feature array name (default: x)")
    p.add_argument("--num-classes", type=int, default=None, help="C (default: max(y) + 1)")
    p.add_argument("--protocol", default="default", choices=protocols(),
                   help="board, batch size, switching rate, standardisation (default: "
                        "default); --batch-size and --m override its fields")
    p.add_argument("--batch-size", type=int, default=None, help="B (default: the protocol's)")
    p.add_argument("--m", type=float, default=None,
                   help="fixed share: m − 1 expected switches (default: the protocol's)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2],
                   help="one data order per seed, the same for every encoder (>= 3)")
    p.add_argument("--no-cache", action="store_true", help="recompute even if cached")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--table", type=Path, default=None, help="write the table to .csv or .parquet")
    p.add_argument("--figure", type=Path, default=None, help="write the figure to .png")
    p.add_argument("--check-standardize", action="store_true",
                   help="also rerun the top two encoders under the other input standardisation "
                        "(none <-> prefix) and say whether their order held")


def run_compare(args: argparse.Namespace) -> int:
    from mdlnb._compare import compare

    if args.table is not None and args.table.suffix not in (".csv", ".parquet"):
        raise ValueError(f"table: expected a .csv or .parquet path, got {args.table}")
    if args.figure is not None and args.figure.suffix != ".png":
        raise ValueError(f"figure: expected a .png path, got {args.figure}")
    names = args.names or [p.stem for p in args.features]
    if len(names) != len(args.features) or len(set(names)) != len(names):
        raise ValueError(f"names: need {len(args.features)} distinct names, got {names}")
    feats, labels = {}, None
    for name, path in zip(names, args.features):
        z = _load_npz(path, "features")
        with z:
            if args.x_key not in z.files:
                raise ValueError(f"x_key: {args.x_key!r} not in {path} (has {z.files})")
            feats[name] = z[args.x_key]
            if args.labels is None and "y" in z.files:
                if labels is not None and not np.array_equal(labels, z["y"]):
                    raise ValueError(f"features: the labels `y` of {path} differ from the "
                                     "first file's")
                labels = z["y"] if labels is None else labels
    if args.labels is not None:
        try:
            labels = np.load(args.labels, allow_pickle=False)
        except (OSError, ValueError, EOFError) as e:
            raise ValueError(f"labels: cannot read {args.labels} ({e})") from None
    if labels is None:
        raise ValueError("labels: none given and no `y` in the feature files")
    cmp = compare(feats, labels, m=args.m, protocol=args.protocol, batch_size=args.batch_size,
                  seeds=args.seeds, num_classes=args.num_classes,
                  progress=False if args.quiet else None, cache=not args.no_cache)
    print(cmp)
    if args.check_standardize:
        print(f"check           {cmp.check_standardize(progress=False if args.quiet else None)}")
    if args.table is not None:
        _write_table(cmp.table(), args.table)
        print(f"table           {args.table}")
    if args.figure is not None:
        save_figure(cmp.plot(), args.figure.stem, args.figure.parent)
        print(f"figure          {args.figure}")
    return 0


def add_cache(p: argparse.ArgumentParser) -> None:
    p.add_argument("--clear", action="store_true",
                   help="delete the selected entries (default: all); they are recomputed when needed")
    p.add_argument("--kind", default=None,
                   help="only this kind (losses, checkpoints, features, encoders, data)")
    p.add_argument("--older-than", default=None, metavar="DATE",
                   help="only entries last written before DATE (ISO, e.g. 2026-01-31)")


def run_cache(args: argparse.Namespace) -> int:
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
    print("  (xla: compiled programs, JAX's persistent compilation cache; "
          "MDLNB_XLA_CACHE=0 turns it off)")
    return 0


Command = tuple[Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int], str]

COMMANDS: dict[str, Command] = {
    "switch": (add_switch, run_switch, "codelength of a loss matrix under a switching strategy"),
    "evaluate": (add_evaluate, run_evaluate,
                 "MDL of labels given features: online readouts + switching"),
    "compare": (add_compare, run_compare,
                "rank encoders' features on one task by MDL, paired over >= 3 data orders"),
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
