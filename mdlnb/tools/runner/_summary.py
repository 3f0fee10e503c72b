"""What the runner reports about executed notebooks: the per-notebook summary table,
and their HTML renderings."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mdlnb.infra._io import atomic_write_text
from mdlnb.tools.runner._paths import executed_path, shown, utc

# nbformat, nbconvert and pandas are imported inside the functions that use
# them, so the runner's light commands (--help, --check, --write-params) start without them.


def to_html(ipynb: str | Path) -> Path:
    """Render an executed notebook to HTML next to it (``NAME.html``, nbconvert's
    ``lab`` template, written atomically), for readers without Jupyter; the page's
    title is the notebook's first heading (:func:`notebook_title`)."""
    import nbconvert
    import nbformat

    ipynb = Path(ipynb)
    if ipynb.suffix != ".ipynb" or not ipynb.is_file():
        raise ValueError(f"ipynb: not an .ipynb file: {str(ipynb)!r}")
    nb = nbformat.read(ipynb, as_version=4)
    resources = {"metadata": {"name": notebook_title(nb) or ipynb.stem}}
    body, _ = nbconvert.HTMLExporter().from_notebook_node(nb, resources=resources)
    return atomic_write_text(ipynb.with_suffix(".html"), body)


def notebook_title(nb: Any) -> str | None:
    """The first Markdown heading of notebook ``nb`` as plain text (``**``, ``*`` and
    backticks dropped): the HTML page's title. None if no Markdown cell has one."""
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        found = re.search(r"^#{1,6}\s+(.+?)\s*#*\s*$", cell.source, re.M)
        if found:
            return re.sub(r"[`*]", "", found.group(1)).strip()
    return None


SUMMARY_COLUMNS = ["notebook", "status", "wall [s]", "finished (UTC)", "html"]


def summary(
    names: Sequence[str],
    profile: str,
    *,
    out_dir: str | Path | None = None,
    since: float | None = None,
):
    """One row per notebook: ``status`` — ``ran`` (finished at or after the epoch
    ``since``), ``up to date`` (finished before), ``failed`` (a ``.failed.ipynb``
    newer than any success) or ``missing`` — the recorded wall time, when it
    finished, and its HTML rendering if there is one."""
    import nbformat
    import pandas as pd

    rows = []
    for name in names:
        out = executed_path(name, profile, out_dir)
        failed = out.with_name(f"{name}.failed.ipynb")
        row = dict(
            notebook=name,
            status="missing",
            **{"wall [s]": float("nan"), "finished (UTC)": "", "html": ""},
        )
        if out.exists():
            meta = nbformat.read(out, as_version=4).metadata
            mine, pm_meta = meta.get("mdlnb", {}), meta.get("papermill", {})
            end = mine.get("finished_epoch", out.stat().st_mtime)
            row.update(
                {
                    "wall [s]": mine.get("wall_s", pm_meta.get("duration", float("nan"))),
                    "finished (UTC)": mine.get("finished", utc(end)),
                    "status": "ran" if since is not None and end >= since else "up to date",
                }
            )
            html = out.with_suffix(".html")
            row["html"] = shown(html) if html.exists() else ""
        if failed.exists() and (not out.exists() or failed.stat().st_mtime > out.stat().st_mtime):
            row["status"] = "failed"
        rows.append(row)
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


def format_summary(table: Any, profile: str) -> str:
    """Plain-text table of :func:`summary` with the total wall time of what ran."""
    ran = table[table["status"] == "ran"]
    cells = [[str(c) for c in SUMMARY_COLUMNS]] + [
        [
            r["notebook"],
            r["status"],
            "-" if math.isnan(r["wall [s]"]) else f"{r['wall [s]']:,.1f}",
            r["finished (UTC)"] or "-",
            r["html"] or "-",
        ]
        for r in table.to_dict("records")
    ]
    widths = [max(len(row[i]) for row in cells) for i in range(len(SUMMARY_COLUMNS))]
    lines = [
        "  ".join(
            c.rjust(w) if i == 2 else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))
        ).rstrip()
        for row in cells
    ]
    return "\n".join(
        [
            f"notebooks [{profile}]: {len(ran)} ran ({ran['wall [s]'].sum():,.1f} s "
            f"of notebook time), {int((table['status'] == 'up to date').sum())} up "
            f"to date",
            *lines,
        ]
    )
