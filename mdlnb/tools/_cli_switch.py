"""``mdlnb switch``: the codelength of a stored loss matrix under a switching
strategy (:func:`mdlnb.switching.codelength`), and its posterior written as a table.

The losses come from an ``.npz`` file (a ``LossMatrix.save`` file, or any npz with
an (N, K) array); the experts' names and readouts, as far as the file tells them,
label the posterior's rows.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np

from mdlnb.tools._cli_options import POSTERIOR_HELP, check_table_path, strategy_options, write_table

# mdlnb.switching and mdlnb.api.evaluation (JAX, pandas) are imported inside the functions
# that use them, so that importing mdlnb.tools.cli does not load them.


def add_switch(p: argparse.ArgumentParser) -> None:
    from mdlnb.switching import names  # heavy: keeps JAX out of import mdlnb.tools.cli

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


def run_switch(args: argparse.Namespace) -> int:
    from mdlnb import switching  # heavy: keeps JAX out of import mdlnb.tools.cli

    check_table_path(args.posterior)
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
        from mdlnb.api.evaluation import posterior_frame  # heavy: JAX, as above

        frame = posterior_frame(result.posterior, names, readouts)
        write_table(frame, args.posterior)
        print(
            f"posterior       {args.posterior} ({len(frame)} rows: t, expert, readout, probability)"
        )
    return 0
