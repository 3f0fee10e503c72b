"""Command line: ``mdlnb <subcommand> ...``.

Each subcommand is a pair (``add_<name>(parser)``, ``run_<name>(args) -> int``)
registered in ``COMMANDS``; adding one is a new pair and one dict entry.

    mdlnb switch LOSSES.npz --strategy fixed-share --m 2 [--posterior out.csv]
    mdlnb evaluate FEATURES [--labels Y] [--kind regression] [--protocol default] [--posterior out.csv]
    mdlnb compare A B ... [--labels Y] [--kind regression] [--protocol default] [--seeds 0 1 2]
    mdlnb cache [--clear] [--kind KIND] [--older-than DATE]

``FEATURES``, ``A``, ``B`` and ``Y`` are ``.npy``, ``.npz``, ``.parquet`` or
``.csv`` files (:mod:`mdlnb._userfiles`). ``evaluate`` and ``compare`` take the
same options as :func:`mdlnb.evaluate` and :func:`mdlnb.compare`: a protocol
(:func:`mdlnb.protocol`: ``default``, ``small``, ``deep``, ``paper-vtab``,
``paper-imagenet``) whose fields ``--experts``, ``--strategy`` (with ``--m``,
``--alpha``, ...), ``--batch-size``, ``--standardize``, ``--replay-streams``,
``--calibrate``, ``--matmul-dtype`` and ``--seed`` override; ``--kind
regression`` codes real-valued targets; what only Python offers is listed at
the end of ``--help`` (:data:`PYTHON_ONLY`). A report's warnings are printed
once, under it. Both ``--posterior`` options write one format
(:data:`POSTERIOR_HELP`, :func:`mdlnb.evaluation.posterior_frame`).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np

import mdlnb
from mdlnb import cache
from mdlnb._cli_options import (
    FEATURES_HELP,
    PYTHON_ONLY,
    add_data,
    add_protocol,
    protocol_and_strategy,
    strategy_options,
)
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
    "`mdlnb evaluate`; the readout posterior is its sum over rows of one (t, readout)"
)


def add_switch(p: argparse.ArgumentParser) -> None:
    from mdlnb.switching import names

    p.add_argument(
        "losses",
        type=Path,
        help="npz file with an (N, K) loss matrix in nats (a LossMatrix.save file, "
        "or any npz; optional arrays `names` and `readouts`, K strings each)",
    )
    p.add_argument("--key", default="losses", help="array name in the npz (default: losses)")
    p.add_argument("--strategy", default="fixed-share", choices=names())
    p.add_argument(
        "--m",
        type=float,
        default=None,
        help="fixed share: decreasing rate α_t = (m−1)/t (default: m = 2, the default protocol's)",
    )
    p.add_argument("--alpha", type=float, default=None, help="fixed share: constant rate α")
    p.add_argument("--stable", type=float, default=None, help="switch: P(a block is the last)")
    p.add_argument(
        "--max-run", type=int, default=None, help="run-length: exact run-length states + 1"
    )
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


def _check_output(path: Path | None, arg: str, suffixes: Sequence[str]) -> None:
    """Before any work: ``path`` has one of ``suffixes`` and can be written (its first
    existing ancestor is a writable folder), else a ValueError naming ``arg``."""
    if path is None:
        return
    if path.suffix not in suffixes:
        raise ValueError(f"{arg}: expected a {' or '.join(suffixes)} path, got {path}")
    folder = path.absolute().parent
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"{arg}: cannot write {path} ({folder} is not a writable folder)")


def _check_table_path(path: Path | None) -> None:
    _check_output(path, "posterior", (".csv", ".parquet"))


def _write_table(frame, path: Path) -> None:
    """Write a DataFrame as .csv or .parquet, atomically."""
    buf = io.BytesIO()
    if path.suffix == ".csv":
        frame.to_csv(buf, index=False)
    else:
        frame.to_parquet(buf, index=False)
    atomic_write_bytes(path, buf.getvalue())


def run_switch(args: argparse.Namespace) -> int:
    from mdlnb import switching

    _check_table_path(args.posterior)
    strategy = switching.get_strategy(args.strategy, **strategy_options(args))
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
    print(
        f"per example     {result.nats_per_example:.6f} nats = {result.bits_per_example:.6f} bits"
    )
    if args.posterior is not None:
        from mdlnb.evaluation import posterior_frame

        frame = posterior_frame(result.posterior, names, readouts)
        _write_table(frame, args.posterior)
        print(
            f"posterior       {args.posterior} ({len(frame)} rows: t, expert, readout, probability)"
        )
    return 0


def _read_task(args: argparse.Namespace, path: Path, name: str):
    """A Task of the features in ``path`` and the labels (``--labels``, else the file's)."""
    from mdlnb._userfiles import read_features, read_labels

    got = read_features(path, x_key=args.x_key, y_key=args.y_key)
    y = read_labels(args.labels, y_key=args.y_key) if args.labels is not None else got.y
    if y is None:
        raise ValueError(
            f"labels: {str(path)!r} holds no labels {args.y_key!r}; pass "
            "--labels FILE (or --y-key NAME)"
        )
    return _task(got.x, y, name, args, stored=got)


def _task(x: np.ndarray, y: np.ndarray, name: str, args: argparse.Namespace, *, stored=None):
    """``mdlnb.Task.from_arrays`` with the command line's kind and C; its warnings about
    labels that look like a real-valued target name ``--kind regression``."""
    import warnings

    kind = args.kind or (stored.kind if stored is not None else None) or "classification"
    c = (
        args.num_classes
        if args.num_classes is not None
        else (stored.num_classes if stored is not None and kind == "classification" else None)
    )
    if len(x) != len(y):
        raise ValueError(f"labels: {len(y)} labels for {len(x)} examples of features")
    hint = " On the command line: --kind regression."
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            task = mdlnb.Task.from_arrays(x, y, name=name, num_classes=c, kind=kind)
        except ValueError as e:
            raise ValueError(f"{e}{hint if 'regression' in str(e) else ''}") from None
    for w in caught:
        text = str(w.message)
        warnings.warn(
            text + (hint if "kind='regression'" in text else ""), w.category, stacklevel=2
        )
    return task


def add_evaluate(p: argparse.ArgumentParser) -> None:
    p.add_argument("features", type=Path, help=FEATURES_HELP)
    add_data(p)
    p.add_argument(
        "--name",
        default=None,
        help="the representation's name in the report (default: the file stem)",
    )
    add_protocol(p)
    p.add_argument(
        "--seed",
        type=int,
        default=None,
        help="the data order, initialisations and replay draws (default: the protocol's)",
    )
    p.add_argument("--posterior", type=Path, default=None, help=POSTERIOR_HELP)
    p.epilog = PYTHON_ONLY


def run_evaluate(args: argparse.Namespace) -> int:
    _check_table_path(args.posterior)
    task = _read_task(args, args.features, args.name or args.features.stem)
    proto, strategy, m = protocol_and_strategy(args)
    with _printed_below():
        rep = mdlnb.evaluate(
            task,
            experts=args.experts,
            strategy=strategy,
            m=m,
            protocol=proto,
            batch_size=args.batch_size,
            seed=args.seed,
            standardize=args.standardize,
            replay_streams=args.replay_streams,
            progress=False if args.quiet else None,
            cache=not args.no_cache,
        )
    print(f"protocol        {rep.protocol!r}")
    print(rep)
    if args.posterior is not None:
        frame = rep.posterior
        _write_table(frame, args.posterior)
        print(
            f"posterior       {args.posterior} ({len(frame)} rows: t, expert, readout, probability)"
        )
    return 0


@contextlib.contextmanager
def _printed_below() -> Iterator[None]:
    """Inside: a report's own warnings are not shown as Python warnings, since the
    command prints the report (or the table) with them underneath — each once."""
    import warnings

    from mdlnb._warnings import ResultWarning

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=ResultWarning)
        warnings.filterwarnings("ignore", message=r"compare: ", category=UserWarning)
        yield


def add_compare(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "features",
        type=Path,
        nargs="+",
        help="one file per representation, the same examples in the same order: " + FEATURES_HELP,
    )
    add_data(p)
    p.add_argument(
        "--names", nargs="+", default=None, help="representation names (default: the file stems)"
    )
    add_protocol(p)
    p.add_argument(
        "--seeds",
        type=int,
        nargs="+",
        default=[0, 1, 2],
        help="one data order per seed, the same for every encoder (>= 3)",
    )
    p.add_argument("--table", type=Path, default=None, help="write the table to .csv or .parquet")
    p.add_argument("--figure", type=Path, default=None, help="write the figure to .png")
    p.add_argument(
        "--check-standardize",
        action="store_true",
        help="also rerun the top two encoders under the other input standardisation "
        "(none <-> prefix) and say whether their order held",
    )
    p.epilog = PYTHON_ONLY


def _read_compare(args: argparse.Namespace, names: list[str]):
    """``({name: features}, labels Task)`` for :func:`mdlnb.compare`."""
    from mdlnb._userfiles import read_features, read_labels

    feats, labels, stored = {}, None, None
    for name, path in zip(names, args.features):
        got = read_features(path, x_key=args.x_key, y_key=args.y_key)
        feats[name] = got.x
        if args.labels is None and got.y is not None:
            if labels is not None and not np.array_equal(labels, got.y):
                raise ValueError(
                    f"features: the labels {args.y_key!r} of {str(path)!r} "
                    "differ from the first file's"
                )
            if labels is None:
                labels, stored = got.y, got
    if args.labels is not None:
        labels = read_labels(args.labels, y_key=args.y_key)
    if labels is None:
        raise ValueError(
            "labels: none given and no labels in the feature files; pass --labels FILE"
        )
    sizes = {k: len(v) for k, v in feats.items()}
    bad = {k: n for k, n in sizes.items() if n != len(labels)}
    if bad:
        raise ValueError(
            f"features: {bad} examples, but {len(labels)} labels; every file "
            "must hold the same examples in the same order"
        )
    name = args.labels.stem if args.labels is not None else "labels"
    first = np.asarray(next(iter(feats.values())))
    return feats, _task(first.reshape(len(first), -1), labels, name, args, stored=stored)


def run_compare(args: argparse.Namespace) -> int:
    from mdlnb._compare import compare

    _check_output(args.table, "table", (".csv", ".parquet"))
    _check_output(args.figure, "figure", (".png",))
    names = args.names or [p.stem for p in args.features]
    if len(names) != len(args.features) or len(set(names)) != len(names):
        raise ValueError(f"names: need {len(args.features)} distinct names, got {names}")
    feats, task = _read_compare(args, names)
    proto, strategy, m = protocol_and_strategy(args)
    quiet = False if args.quiet else None
    with _printed_below():
        cmp = compare(
            feats,
            task,
            experts=args.experts,
            strategy=strategy,
            m=m,
            protocol=proto,
            batch_size=args.batch_size,
            standardize=args.standardize,
            replay_streams=args.replay_streams,
            seeds=args.seeds,
            progress=quiet,
            cache=not args.no_cache,
        )
    print(cmp)
    if args.check_standardize:
        with _printed_below():
            check = cmp.check_standardize(progress=quiet)
        print(f"check           {check}")
    if args.table is not None:
        _write_table(cmp.table(), args.table)
        print(f"table           {args.table}")
    if args.figure is not None:
        save_figure(cmp.plot(), args.figure.stem, args.figure.parent)
        print(f"figure          {args.figure}")
    return 0


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
