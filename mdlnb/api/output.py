"""Tidy tables and figures on disk: what notebooks save to ``paper/``.

Tables are written as CSV (full precision, for machines) and Markdown
(rounded, for people) side by side; figures as PNG. Every write is atomic
(temporary file + ``os.replace``), so an interrupted notebook never leaves a
half-written artifact behind, and deterministic: the same table or figure
gives the same bytes (PNGs carry no software/version metadata), so a rerun
that reproduces the numbers reproduces the files bit for bit. Put units in
column names (``"total [nats]"``).
"""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any

import numpy as np

from mdlnb.core._checks import check_int
from mdlnb.infra._io import atomic_write_bytes, atomic_write_text

# Imported inside the functions that use them, so that importing this module does not load
# them: pandas.


def _check_name(name: str) -> str:
    if not isinstance(name, str) or not name or "/" in name or "\\" in name or name.startswith("."):
        raise ValueError(
            f"name: must be a plain file stem like 'quickstart_codelengths', got {name!r}"
        )
    return name


def _cell(v: Any, digits: int) -> str:
    if isinstance(v, (float, np.floating)):
        if math.isnan(v):
            return ""
        if v != 0 and (abs(v) >= 10**6 or abs(v) < 10 ** -(digits - 1)):
            return f"{v:.{digits}g}"
        return f"{v:,.{digits}f}".rstrip("0").rstrip(".") if digits else f"{v:,.0f}"
    return str(v).replace("|", "\\|").replace("\n", " ")


def to_markdown(df: Any, *, digits: int = 4, index: bool = False) -> str:
    """A GitHub-flavoured Markdown table; floats rounded to ``digits`` decimals.

    Numeric columns are right-aligned. NaN renders as an empty cell.
    """
    import pandas as pd

    if not isinstance(df, pd.DataFrame):
        raise ValueError(f"df: expected a pandas DataFrame, got {type(df).__name__}")
    digits = check_int("digits", digits, minimum=0)
    frame = df.reset_index() if index else df
    cols = [str(c) for c in frame.columns]
    numeric = [
        pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c])
        for c in frame.columns
    ]
    rows = [[_cell(v, digits) for v in rec] for rec in frame.itertuples(index=False, name=None)]
    head = "| " + " | ".join(c.replace("|", "\\|") for c in cols) + " |"
    rule = "|" + "|".join("---:" if num else "---" for num in numeric) + "|"
    body = ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join([head, rule, *body]) + "\n"


class Shown(str):
    """Markdown text that a notebook renders as Markdown (``_repr_markdown_``) and a
    terminal prints as itself."""

    def _repr_markdown_(self) -> str:
        return str(self)


def show(df: Any, *, digits: int = 3, rows: int | None = 12, index: bool = False) -> Shown:
    """``df`` for a reader: :func:`to_markdown` with ``digits`` decimals and at most
    ``rows`` rows (the rest counted in a last line; ``None``: all). Presentation only:
    what :func:`save_table` writes keeps every digit and row."""
    import pandas as pd

    if not isinstance(df, pd.DataFrame):
        raise ValueError(f"df: expected a pandas DataFrame, got {type(df).__name__}")
    rows = check_int("rows", rows, minimum=1, allow_none=True)
    head = df if rows is None or len(df) <= rows else df.head(rows)
    text = to_markdown(head, digits=digits, index=index)
    if len(head) < len(df):
        text += f"\n… and {len(df) - len(head)} more rows ({len(df)} in all).\n"
    return Shown(text)


def save_table(
    df: Any, name: str, paper_dir: str | Path = "paper", *, digits: int = 4, index: bool = False
) -> tuple[Path, Path]:
    """Write ``df`` to ``paper_dir/name.csv`` and ``paper_dir/name.md`` atomically.

    Returns the two paths (csv, md)."""
    import pandas as pd

    if not isinstance(df, pd.DataFrame):
        raise ValueError(f"df: expected a pandas DataFrame, got {type(df).__name__}")
    name = _check_name(name)
    out = Path(paper_dir)
    csv = atomic_write_text(out / f"{name}.csv", df.to_csv(index=index))
    md = atomic_write_text(out / f"{name}.md", to_markdown(df, digits=digits, index=index))
    return csv, md


#: PNG text chunks written with every figure: none (matplotlib would add its version as
#: "Software", which changes the bytes across installs without changing the figure).
PNG_METADATA = {"Software": None}


def save_figure(fig: Any, name: str, paper_dir: str | Path = "paper", *, dpi: int = 150) -> Path:
    """Write a matplotlib Figure (or the figure of an Axes) to ``paper_dir/name.png``
    atomically, with no metadata (:data:`PNG_METADATA`): same figure, same bytes."""
    name = _check_name(name)
    fig = getattr(fig, "figure", fig)  # an Axes → its Figure
    if not hasattr(fig, "savefig"):
        raise ValueError(f"fig: expected a matplotlib Figure or Axes, got {type(fig).__name__}")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight", metadata=PNG_METADATA)
    return atomic_write_bytes(Path(paper_dir) / f"{name}.png", buf.getvalue())
