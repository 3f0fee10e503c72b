"""Which committed ``paper/`` numbers moved? Numeric cells of ``paper/*.csv`` against git.

``make reproduce`` ends with this report (``python -m mdlnb.runner
--compare-to-git HEAD``). A cell *moved* when

    |new − old| > atol + rtol · |old|,   rtol = 1e-3 (0.1 %), atol = 1e-9,

so a same-machine rerun (bit-identical files) reports nothing and float
round-off from another CPU's vector kernels (~1e-7 relative) stays below it,
while any change a table shows at its printed precision is reported. Rows
are matched on the table's text columns (its keys) when they identify rows
uniquely, else by position; NaN equals NaN. Whether a move is beyond the
*statistical* noise of a study is a separate question, answered by the
spreads the study tables carry (e.g. ``TransferabilityResult.differences``).

    python -m mdlnb._paperdiff [--rev HEAD] [--rtol 1e-3] [--atol 1e-9] [paper_dir]
"""

from __future__ import annotations

import argparse
import io
import subprocess
from pathlib import Path
from typing import Any, Sequence

import numpy as np

# Imported inside the functions that use them, so that importing this module does not load
# them: pandas.

RTOL = 1e-3
ATOL = 1e-9
COLUMNS = ["file", "row", "column", "old", "new", "change"]


def compare_tables(new: Any, old: Any, *, rtol: float = RTOL, atol: float = ATOL) -> Any:
    """Numeric cells of ``new`` that moved from ``old`` (both DataFrames).

    Returns a DataFrame with ``row`` (the key values, or the position),
    ``column``, ``old``, ``new`` and ``change`` (new − old; NaN where one side
    is NaN or the row/column exists on one side only, with ``old``/``new`` NaN).
    """
    import pandas as pd

    if rtol < 0 or atol < 0:
        raise ValueError(f"rtol, atol: must be >= 0, got {rtol}, {atol}")
    keys = [c for c in new.columns if c in old.columns
            and not pd.api.types.is_numeric_dtype(new[c])
            and not pd.api.types.is_numeric_dtype(old[c])]
    unique = bool(keys) and not new.duplicated(keys).any() and not old.duplicated(keys).any()
    if unique:
        a = new.set_index(keys)
        b = old.set_index(keys)
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
                rows.append(dict(row=r, column=str(col),
                                 old=vb, new=va, change=va - vb))
    return pd.DataFrame(rows, columns=COLUMNS[1:])


def committed_text(path: str | Path, rev: str = "HEAD") -> str | None:
    """The text of ``path`` at git revision ``rev`` (None if it is not in that tree)."""
    path = Path(path).resolve()
    try:
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=path.parent,
                             capture_output=True, text=True, check=True).stdout.strip()
        rel = path.relative_to(Path(top).resolve()).as_posix()
        out = subprocess.run(["git", "show", f"{rev}:{rel}"], cwd=top, capture_output=True,
                             text=True)
    except (OSError, subprocess.CalledProcessError, ValueError):
        return None
    return out.stdout if out.returncode == 0 else None


def paper_diff(paper_dir: str | Path = "paper", *, rev: str = "HEAD", rtol: float = RTOL,
               atol: float = ATOL) -> Any:
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


def report(diff: Any, *, rtol: float = RTOL, atol: float = ATOL, top: int = 5) -> str:
    """Plain-text summary of :func:`paper_diff`: per file the number of moved cells and
    the ``top`` largest moves."""
    head = f"paper/ against git (moved: |new - old| > {atol:g} + {rtol:g}*|old|):"
    if diff.attrs.get("compared", 1) == 0:
        return head + " no committed paper/*.csv found (not a git checkout?); nothing compared."
    if diff.empty:
        return head + " no committed number moved."
    lines = [head]
    for name, g in diff.groupby("file", sort=True):
        lines.append(f"  {name}: {len(g)} cell(s) moved")
        g = g.assign(_a=g["change"].abs().fillna(np.inf)).sort_values("_a", ascending=False)
        for r in g.head(top).itertuples():
            lines.append(f"    {r.row} / {r.column}: {r.old:.6g} -> {r.new:.6g}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m mdlnb._paperdiff",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("paper_dir", nargs="?", default="paper")
    ap.add_argument("--rev", default="HEAD")
    ap.add_argument("--rtol", type=float, default=RTOL)
    ap.add_argument("--atol", type=float, default=ATOL)
    args = ap.parse_args(argv)
    diff = paper_diff(args.paper_dir, rev=args.rev, rtol=args.rtol, atol=args.atol)
    print(report(diff, rtol=args.rtol, atol=args.atol))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
