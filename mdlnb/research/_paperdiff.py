"""Which committed ``paper/`` numbers moved? Numeric cells of ``paper/*.csv`` against git.

``make reproduce`` ends with this report (``python -m mdlnb.tools.runner
--compare-to-git HEAD``). A cell *moved* when

    |new − old| > atol + rtol · |old|,   rtol = 1e-3 (0.1 %), atol = 1e-9,

so a same-machine rerun (bit-identical files) reports nothing and float
round-off from another CPU's vector kernels (~1e-7 relative) stays below it,
while any change a table shows at its printed precision is reported. Rows
are matched on the table's text columns (its keys) when they identify rows
uniquely, else by position; NaN equals NaN.

Round-off is not the only noise: training a network is chaotic, so on another
CPU kind (other vector kernels, another summation order) a trained encoder or
probe ends elsewhere, as with another seed. So each moved cell also gets the
table's own spread as a tolerance (:func:`spread_tolerance`), and is *beyond
the spread* when it moved by more than two standard errors of the difference
of two independent draws: 2·sd·√(2/n) for a mean of n runs with its sd beside
it (``mean``/``std``/``count``, ``tau``/``tau_std``/``repeats``, ``seed
mean``/``seed std``), 2·√2·sd for a single run of a table with a ``seed``
column (sd over the seeds of the same row keys). A cell without a spread is
deterministic and is beyond it as soon as it moved. :func:`verdict_changes`
compares the claims' two-part verdicts, which must not move at all.

    python -m mdlnb.research._paperdiff [--rev HEAD] [--rtol 1e-3] [--atol 1e-9] [paper_dir]
"""

from __future__ import annotations

import argparse
import io
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

# Imported inside the functions that use them, so that importing this module does not load
# them: pandas.

RTOL = 1e-3
ATOL = 1e-9
COLUMNS = ["file", "row", "column", "old", "new", "change", "tolerance", "beyond spread"]
#: (value column, its sd column, the count column or None) read off a table's own spread.
SPREAD_COLUMNS = (
    ("mean", "std", "count"),
    ("tau", "tau_std", "repeats"),
    ("seed mean", "seed std", None),
    ("value", "seed std", None),
    ("mean [nats]", "sd [nats]", "orders"),
)
#: Columns that index single runs: a table with one has one row per run.
RUN_COLUMNS = ("seed", "repeat", "order")
#: Text columns that display a number (and so move with it): never row keys.
DISPLAY_COLUMNS = ("shown", "status", "exceeded")


def spread_tolerance(old: Any) -> Any:
    """Per cell of ``old`` (same index and columns), how far a rerun may move it within
    the run's own spread (module docstring); NaN where the table gives no spread."""
    import pandas as pd

    tol = pd.DataFrame(np.nan, index=old.index, columns=old.columns)
    for value, sd, count in SPREAD_COLUMNS:
        if value in old.columns and sd in old.columns:
            n = old[count].astype(float) if count in old.columns else 1.0
            tol[value] = 2.0 * old[sd].astype(float) * np.sqrt(2.0 / n)
            # an sd estimated from n draws has a standard error of about sd/√(2(n − 1))
            m = old[count].astype(float) if count in old.columns else 2.0
            tol[sd] = 2.0 * old[sd].astype(float) * np.sqrt(2.0 / (2.0 * (m - 1.0)))
    run = [c for c in RUN_COLUMNS if c in old.columns]
    if run:
        keys = [
            c
            for c in old.columns
            if c not in run
            and c not in DISPLAY_COLUMNS
            and not pd.api.types.is_numeric_dtype(old[c])
        ]
        numeric = [c for c in old.columns if c not in run and pd.api.types.is_numeric_dtype(old[c])]
        if numeric:
            sd = (
                old.groupby(keys, sort=False)[numeric].transform("std")
                if keys
                else old[numeric].std().to_frame().T.reindex(old.index, method="ffill")
            )
            for c in numeric:
                tol[c] = tol[c].fillna(2.0 * np.sqrt(2.0) * sd[c])
    return tol


def compare_tables(new: Any, old: Any, *, rtol: float = RTOL, atol: float = ATOL) -> Any:
    """Numeric cells of ``new`` that moved from ``old`` (both DataFrames).

    Returns a DataFrame with ``row`` (the key values, or the position),
    ``column``, ``old``, ``new`` and ``change`` (new − old; NaN where one side
    is NaN or the row/column exists on one side only, with ``old``/``new`` NaN).
    """
    import pandas as pd

    if rtol < 0 or atol < 0:
        raise ValueError(f"rtol, atol: must be >= 0, got {rtol}, {atol}")
    keys = [
        c
        for c in new.columns
        if c in old.columns
        and c not in DISPLAY_COLUMNS
        and not pd.api.types.is_numeric_dtype(new[c])
        and not pd.api.types.is_numeric_dtype(old[c])
    ]
    unique = bool(keys) and not new.duplicated(keys).any() and not old.duplicated(keys).any()
    tol = spread_tolerance(old.reset_index(drop=True))
    if unique:
        a = new.set_index(keys)
        b = old.set_index(keys)
        tol.index = b.index
    else:
        a, b = new.reset_index(drop=True), old.reset_index(drop=True)
    rows = []
    index = list(dict.fromkeys([*a.index, *b.index]))
    for col in dict.fromkeys([*a.columns, *b.columns]):
        na = col in a and pd.api.types.is_numeric_dtype(a[col])
        nb = col in b and pd.api.types.is_numeric_dtype(b[col])
        if not (na or nb):
            continue
        for r in index:
            va = float(a.at[r, col]) if na and r in a.index else np.nan
            vb = float(b.at[r, col]) if nb and r in b.index else np.nan
            if np.isnan(va) and np.isnan(vb):
                continue
            if np.isnan(va) or np.isnan(vb) or abs(va - vb) > atol + rtol * abs(vb):
                t = float(tol.at[r, col]) if r in tol.index and col in tol.columns else np.nan
                rows.append(
                    dict(
                        row=r,
                        column=str(col),
                        old=vb,
                        new=va,
                        change=va - vb,
                        tolerance=t,
                        **{"beyond spread": not abs(va - vb) <= t},
                    )
                )
    return pd.DataFrame(rows, columns=COLUMNS[1:])


def committed_text(path: str | Path, rev: str = "HEAD") -> str | None:
    """The text of ``path`` at git revision ``rev`` (None if it is not in that tree)."""
    path = Path(path).resolve()
    try:
        top = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"],
            cwd=path.parent,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        rel = path.relative_to(Path(top).resolve()).as_posix()
        out = subprocess.run(
            ["git", "show", f"{rev}:{rel}"], cwd=top, capture_output=True, text=True
        )
    except (OSError, subprocess.CalledProcessError, ValueError):
        return None
    return out.stdout if out.returncode == 0 else None


def paper_diff(
    paper_dir: str | Path = "paper", *, rev: str = "HEAD", rtol: float = RTOL, atol: float = ATOL
) -> Any:
    """Moved numeric cells (:func:`compare_tables`) of every ``paper_dir/*.csv`` against
    its version at ``rev``, with a ``file`` column; files new since ``rev`` are skipped.
    ``attrs["compared"]`` counts the files that had a version at ``rev``."""
    import pandas as pd

    frames, compared = [], 0
    for p in sorted(Path(paper_dir).glob("*.csv")):
        old = committed_text(p, rev)
        if old is None:
            continue
        compared += 1
        d = compare_tables(pd.read_csv(p), pd.read_csv(io.StringIO(old)), rtol=rtol, atol=atol)
        if not d.empty:
            frames.append(d.assign(file=p.name)[COLUMNS])
    out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)
    out.attrs["compared"] = compared
    return out


def verdict_changes(paper_dir: str | Path = "paper", *, rev: str = "HEAD") -> Any:
    """Claims whose two-part verdict (``direction``, ``size``) differs from ``rev``'s, per
    ``paper_dir/claims/*.csv``: columns ``file``, ``id``, ``old``, ``new`` (claims on one
    side only included, the other side "absent")."""
    import pandas as pd

    rows = []
    for p in sorted((Path(paper_dir) / "claims").glob("*.csv")):
        text = committed_text(p, rev)
        if text is None:
            continue
        new, old = (
            pd.read_csv(f, dtype=str, keep_default_na=False) for f in (p, io.StringIO(text))
        )
        if not {"direction", "size"} <= set(old.columns):
            continue  # a verdict file of another format: not comparable
        part = {i: f"{d}, {z}" for i, d, z in new[["id", "direction", "size"]].values}
        before = {i: f"{d}, {z}" for i, d, z in old[["id", "direction", "size"]].values}
        for i in sorted(set(part) | set(before)):
            if part.get(i) != before.get(i):
                rows.append(
                    dict(file=p.name, id=i, old=before.get(i, "absent"), new=part.get(i, "absent"))
                )
    return pd.DataFrame(rows, columns=["file", "id", "old", "new"])


def report(
    diff: Any, *, rtol: float = RTOL, atol: float = ATOL, top: int = 5, verdicts: Any = None
) -> str:
    """Plain-text summary of :func:`paper_diff`: per file the number of moved cells, how
    many moved beyond the run's own spread, and the ``top`` largest of those; then the
    claims whose verdict changed (``verdicts``: :func:`verdict_changes`), if given."""
    head = f"paper/ against git (moved: |new - old| > {atol:g} + {rtol:g}*|old|):"
    if diff.attrs.get("compared", 1) == 0:
        lines = [head + " no committed paper/*.csv found; no table compared."]
    else:
        lines = [head + (" no committed number moved." if diff.empty else "")]
    for name, g in diff.groupby("file", sort=True):
        beyond = g[g["beyond spread"].astype(bool)]
        lines.append(
            f"  {name}: {len(g)} cell(s) moved, {len(beyond)} beyond the run's "
            "spread (or deterministic)"
        )
        g = beyond.assign(_a=beyond["change"].abs().fillna(np.inf)).sort_values(
            "_a", ascending=False
        )
        for r in g.head(top).itertuples():
            lines.append(f"    {r.row} / {r.column}: {r.old:.6g} -> {r.new:.6g}")
    if verdicts is not None:
        lines.append(
            "claims' verdicts: "
            + ("none changed." if verdicts.empty else f"{len(verdicts)} changed")
        )
        lines += [f"  {r.id} ({r.file}): {r.old} -> {r.new}" for r in verdicts.itertuples()]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m mdlnb.research._paperdiff", description=__doc__.splitlines()[0]
    )
    ap.add_argument("paper_dir", nargs="?", default="paper")
    ap.add_argument("--rev", default="HEAD")
    ap.add_argument("--rtol", type=float, default=RTOL)
    ap.add_argument("--atol", type=float, default=ATOL)
    args = ap.parse_args(argv)
    diff = paper_diff(args.paper_dir, rev=args.rev, rtol=args.rtol, atol=args.atol)
    print(
        report(
            diff,
            rtol=args.rtol,
            atol=args.atol,
            verdicts=verdict_changes(args.paper_dir, rev=args.rev),
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
