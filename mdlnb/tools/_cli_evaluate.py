"""``mdlnb evaluate`` and ``mdlnb compare``: the MDL of labels given one
representation's features (:func:`mdlnb.evaluate`), and the ranking of several
on one task (:func:`mdlnb.compare`), read from user files (:mod:`mdlnb.core._userfiles`)
with the options of :mod:`mdlnb.tools._cli_options`.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

import mdlnb
from mdlnb.api.output import save_figure
from mdlnb.core._userfiles import read_features, read_labels
from mdlnb.infra._warnings import ResultWarning
from mdlnb.tools._cli_options import (
    FEATURES_HELP,
    POSTERIOR_HELP,
    PYTHON_ONLY,
    add_data,
    add_protocol,
    check_output,
    check_table_path,
    protocol_and_strategy,
    write_table,
)

# mdlnb.api.evaluation and mdlnb.api._compare (JAX, optax, pandas) are imported inside the
# functions that use them, so that importing mdlnb.tools.cli does not load them.


def _read_task(args: argparse.Namespace, path: Path, name: str):
    """A Task of the features in ``path`` and the labels (``--labels``, else the file's)."""
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


def _run_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keywords ``evaluate`` and ``compare`` share, from the parsed flags."""
    proto, strategy, m = protocol_and_strategy(args)
    return dict(
        experts=args.experts,
        strategy=strategy,
        m=m,
        protocol=proto,
        batch_size=args.batch_size,
        standardize=args.standardize,
        replay_streams=args.replay_streams,
        progress=False if args.quiet else None,
        cache=not args.no_cache,
    )


def run_evaluate(args: argparse.Namespace) -> int:
    check_table_path(args.posterior)
    task = _read_task(args, args.features, args.name or args.features.stem)
    with _printed_below():
        rep = mdlnb.evaluate(task, seed=args.seed, **_run_options(args))
    print(f"protocol        {rep.protocol!r}")
    print(rep)
    if args.posterior is not None:
        frame = rep.posterior
        write_table(frame, args.posterior)
        print(
            f"posterior       {args.posterior} ({len(frame)} rows: t, expert, readout, probability)"
        )
    return 0


@contextlib.contextmanager
def _printed_below() -> Iterator[None]:
    """Inside: a report's own warnings are not shown as Python warnings, since the
    command prints the report (or the table) with them underneath — each once."""
    import warnings

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
    from mdlnb.api._compare import compare  # heavy: keeps JAX out of import mdlnb.tools.cli

    check_output(args.table, "table", (".csv", ".parquet"))
    check_output(args.figure, "figure", (".png",))
    names = args.names or [p.stem for p in args.features]
    if len(names) != len(args.features) or len(set(names)) != len(names):
        raise ValueError(f"names: need {len(args.features)} distinct names, got {names}")
    feats, task = _read_compare(args, names)
    quiet = False if args.quiet else None
    with _printed_below():
        cmp = compare(feats, task, seeds=args.seeds, **_run_options(args))
    print(cmp)
    if args.check_standardize:
        with _printed_below():
            check = cmp.check_standardize(progress=quiet)
        print(f"check           {check}")
    if args.table is not None:
        write_table(cmp.table(), args.table)
        print(f"table           {args.table}")
    if args.figure is not None:
        save_figure(cmp.plot(), args.figure.stem, args.figure.parent)
        print(f"figure          {args.figure}")
    return 0
