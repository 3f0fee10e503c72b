"""What :mod:`mdlnb.tools.cli`'s subcommands share. The options of ``evaluate`` and
``compare``: how to read the data (:mod:`mdlnb.core._userfiles`), what the target is
(``--kind``), and the protocol with the fields that override it — the keyword
arguments of :func:`mdlnb.evaluate` and :func:`mdlnb.compare`, and the few that only
Python offers (:data:`PYTHON_ONLY`). And the files they write: output paths checked
before any work (:func:`check_output`), tables written atomically
(:func:`write_table`), one posterior format (:data:`POSTERIOR_HELP`)."""

from __future__ import annotations

import argparse
import io
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import mdlnb
from mdlnb.infra._io import atomic_write_bytes

# mdlnb.board._protocol, mdlnb.board.experts and mdlnb.switching (JAX) are imported inside the functions
# that use them: importing mdlnb.tools.cli loads no JAX (tests/test_xla_cache.py).


def strategy_options(args: argparse.Namespace) -> dict:
    """The strategy options given (``--m``, ``--alpha``, ``--stable``, ``--max-run``,
    ``--phases``), each checked to apply to ``args.strategy``."""
    given = {
        "m": args.m,
        "alpha": args.alpha,
        "stable": args.stable,
        "max_run": args.max_run,
        "phases": args.phases,
    }
    allowed = {
        "fixed-share": {"m", "alpha"},
        "switch": {"stable"},
        "run-length": {"max_run", "phases"},
    }
    opts = {k: v for k, v in given.items() if v is not None}
    extra = set(opts) - allowed.get(args.strategy, set())
    if extra:
        flags = ", ".join("--" + e.replace("_", "-") for e in sorted(extra))
        raise ValueError(f"strategy: option(s) {flags} do not apply to {args.strategy!r}")
    return opts


FEATURES_HELP = (
    "features (N, D): .npy (the array), .npz (array --x-key; also labels --y-key, "
    "kind, num_classes when present), .parquet or .csv (column --y-key is the "
    "labels, the other numeric columns the features; a parquet list column "
    "--x-key is used as is)"
)
KIND_HELP = (
    "classification (default; integer labels in [0, C)) or regression (real "
    "targets (N,) or (N, P), coded by Gaussian readouts as densities: "
    "mdlnb.Task.from_arrays(..., kind='regression')); an .npz that records its "
    "kind (Task.to_npz) needs no flag"
)
PYTHON_ONLY = (
    "Python only (mdlnb.evaluate / mdlnb.compare), and why: a board of your own Expert "
    "objects (mdlnb.expert_grid(...); a grid has one list per hyperparameter, so the "
    "command line takes the named boards); the protocol fields clip and prune "
    "(mdlnb.Protocol(...): structured options of large-board runs); Encoder objects as "
    "compare's representations (features computed from images: run the encoder, save its "
    "features, and pass the file here); evaluate's seeds (several data orders in one "
    "batch, a tuple of Reports: here one --seed per call, or compare --seeds)."
)


def add_data(p: argparse.ArgumentParser) -> None:
    """The options that say how to read the data and what the target is."""
    p.add_argument(
        "--labels",
        type=Path,
        default=None,
        help="labels (N,) or regression targets (N,)/(N, P) in their own file: "
        ".npy, .npz (array --y-key, or its only array), .parquet/.csv "
        "(column --y-key, or its only column); default: the labels inside "
        "the features file",
    )
    p.add_argument("--x-key", default="x", help="feature array/column name (default: x)")
    p.add_argument("--y-key", default="y", help="label array/column name (default: y)")
    p.add_argument("--kind", default=None, choices=("classification", "regression"), help=KIND_HELP)
    p.add_argument(
        "--num-classes",
        type=int,
        default=None,
        help="C for classification (default: max(y) + 1, with a warning when a "
        "class in [0, C) never occurs, e.g. labels 1..10)",
    )


def add_protocol(p: argparse.ArgumentParser) -> None:
    """The protocol and the fields of it both commands override."""
    # heavy: keeps JAX out of import mdlnb.tools.cli
    from mdlnb.board._protocol import STANDARDIZE
    from mdlnb.board._protocol import names as protocols
    from mdlnb.board.experts import PRESETS
    from mdlnb.switching import names

    p.add_argument(
        "--protocol",
        default="default",
        choices=protocols(),
        help="board, batch size, strategy, standardisation and seed (default: "
        "default); the flags below override its fields",
    )
    p.add_argument(
        "--experts",
        default=None,
        choices=list(PRESETS),
        help="board of readout experts (default: the protocol's)",
    )
    p.add_argument(
        "--strategy",
        default=None,
        choices=names(),
        help="switching strategy (default: the protocol's, fixed share)",
    )
    p.add_argument(
        "--m",
        type=float,
        default=None,
        help="fixed share: m − 1 expected switches, α_t = (m−1)/t (default: the protocol's)",
    )
    p.add_argument("--alpha", type=float, default=None, help="fixed share: constant rate α")
    p.add_argument("--stable", type=float, default=None, help="switch: P(a block is the last)")
    p.add_argument(
        "--max-run", type=int, default=None, help="run-length: exact run-length states + 1"
    )
    p.add_argument("--phases", type=int, default=None, help="run-length: doubling tail phases")
    p.add_argument("--batch-size", type=int, default=None, help="B (default: the protocol's)")
    p.add_argument(
        "--standardize",
        default=None,
        choices=list(STANDARDIZE),
        help="online input standardisation (default: the protocol's)",
    )
    p.add_argument(
        "--replay-streams", type=int, default=None, help="override every expert's replay count"
    )
    p.add_argument(
        "--calibrate",
        action="store_true",
        help="forward-calibrate every expert (Protocol.calibrate; the names gain -cal)",
    )
    p.add_argument(
        "--matmul-dtype",
        default=None,
        choices=("float32", "bfloat16"),
        help="the readouts' matmul precision (default: the protocol's, float32)",
    )
    p.add_argument("--no-cache", action="store_true", help="recompute even if cached")
    p.add_argument("--quiet", action="store_true", help="no progress bar, no per-run lines")


def protocol_and_strategy(args: argparse.Namespace) -> tuple[Any, Any, float | None]:
    """(protocol, strategy, m) for mdlnb.evaluate/compare from the shared flags: a
    strategy object when a strategy option beyond --m is given, else its name."""
    proto = mdlnb.protocol(
        args.protocol, calibrate=True if args.calibrate else None, matmul_dtype=args.matmul_dtype
    )
    extra = {k: getattr(args, k) for k in ("alpha", "stable", "max_run", "phases")}
    if all(v is None for v in extra.values()):
        if args.m is not None and args.strategy not in (None, "fixed-share"):
            raise ValueError(f"strategy: option(s) --m do not apply to {args.strategy!r}")
        return proto, args.strategy, args.m
    from mdlnb import switching  # heavy: keeps JAX out of import mdlnb.tools.cli

    named = argparse.Namespace(**vars(args))
    named.strategy = args.strategy or "fixed-share"
    return proto, switching.get_strategy(named.strategy, **strategy_options(named)), None


# ---------------------------------------------------------------- what they write

POSTERIOR_HELP = (
    "write the switching posterior to .csv or .parquet, one row per (t, expert): "
    "t = examples seen before the prediction (0 … N−1; t = 0 is the prior), "
    "expert = expert name (column index when the input has no names), "
    "readout = the expert's readout name (empty when unknown), "
    "probability = p(expert | first t examples). Same format for `mdlnb switch` and "
    "`mdlnb evaluate`; the readout posterior is its sum over rows of one (t, readout)"
)


def check_output(path: Path | None, arg: str, suffixes: Sequence[str]) -> None:
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


def check_table_path(path: Path | None) -> None:
    check_output(path, "posterior", (".csv", ".parquet"))


def write_table(frame, path: Path) -> None:
    """Write a DataFrame as .csv or .parquet, atomically."""
    buf = io.BytesIO()
    if path.suffix == ".csv":
        frame.to_csv(buf, index=False)
    else:
        frame.to_parquet(buf, index=False)
    atomic_write_bytes(path, buf.getvalue())
