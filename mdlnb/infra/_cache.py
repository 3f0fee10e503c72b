"""Managing the on-disk cache: where it is, what it holds, clearing it.

The cache root is ``$MDLNB_CACHE`` (default ``~/.cache/mdlnb``); each kind of
entry lives in its own subdirectory (``losses``: stage-1 loss matrices,
``checkpoints``: interrupted stage-1 runs, ``features``: encoder features,
``encoders``: pretrained encoder parameters and their checkpoints, ``data``:
slow procedural datasets, ``xla``: compiled programs, JAX's persistent
compilation cache (:mod:`mdlnb.infra._xla_cache`); any other subdirectory is listed
as its own kind). Every entry carries a checksum (an ``.npz``'s, :mod:`mdlnb.infra._io`;
a compiled program's SHA-256 header), so deleting any of them is safe: it is
recomputed (recompiled) when next needed.

    usage()                                  # DataFrame: kind, files, bytes
    clear(kind="features", older_than="2026-01-01")   # -> list of removed paths

Files being written right now (hidden ``.*.tmp``) and held locks (``.*.lock``)
are neither listed nor removed.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import os
from pathlib import Path

from mdlnb.infra._io import LOCK_SUFFIX, TMP_SUFFIX, cache_root

# Imported inside the functions that use them, so that importing this module does not load
# them: pandas.

#: The kinds mdlnb itself writes (subdirectories of the cache root).
KINDS = ("losses", "checkpoints", "features", "encoders", "data", "xla")

DateLike = str | _dt.date | _dt.datetime | float


@dataclasses.dataclass(frozen=True)
class Entry:
    """One file in the cache."""

    path: Path
    kind: str
    bytes: int
    modified: _dt.datetime  # local time


def location() -> Path:
    """The cache root (``$MDLNB_CACHE`` or ``~/.cache/mdlnb``); it may not exist yet."""
    return cache_root()


def kinds() -> list[str]:
    """Known kinds plus any other subdirectory present, sorted."""
    root = cache_root()
    present = {p.name for p in root.iterdir() if p.is_dir()} if root.is_dir() else set()
    return sorted(set(KINDS) | present)


def _check_kind(kind: str | None) -> str | None:
    if kind is not None and kind not in kinds():
        raise ValueError(f"kind: unknown cache kind {kind!r}; one of {', '.join(kinds())}")
    return kind


def _as_datetime(when: DateLike) -> _dt.datetime:
    if isinstance(when, _dt.datetime):
        return when
    if isinstance(when, _dt.date):
        return _dt.datetime(when.year, when.month, when.day)
    if isinstance(when, (int, float)) and not isinstance(when, bool):
        return _dt.datetime.fromtimestamp(when)
    if isinstance(when, str):
        try:
            return _dt.datetime.fromisoformat(when.strip())
        except ValueError:
            pass
    raise ValueError(
        f"older_than: expected a date such as '2026-01-31' or '2026-01-31T12:00', got {when!r}"
    )


def _in_flight(name: str) -> bool:
    return name.startswith(".") and (name.endswith(TMP_SUFFIX) or name.endswith(LOCK_SUFFIX))


def entries(kind: str | None = None, *, older_than: DateLike | None = None) -> list[Entry]:
    """Cache files (of one ``kind``; modified before ``older_than``), sorted by path."""
    _check_kind(kind)
    cutoff = _as_datetime(older_than).timestamp() if older_than is not None else None
    root = cache_root()
    if not root.is_dir():
        return []
    out = []
    for dirpath, _, files in os.walk(root):
        rel = Path(dirpath).relative_to(root)
        k = rel.parts[0] if rel.parts else "(top level)"
        if kind is not None and k != kind:
            continue
        for name in files:
            if _in_flight(name):
                continue
            path = Path(dirpath) / name
            try:
                st = path.stat()
            except FileNotFoundError:  # removed meanwhile
                continue
            if cutoff is not None and st.st_mtime >= cutoff:
                continue
            out.append(Entry(path, k, st.st_size, _dt.datetime.fromtimestamp(st.st_mtime)))
    return sorted(out, key=lambda e: str(e.path))


def usage(kind: str | None = None, *, older_than: DateLike | None = None):
    """DataFrame with one row per kind: ``kind``, ``files``, ``bytes``, ``oldest``, ``newest``."""
    import pandas as pd

    rows = {}
    for e in entries(kind, older_than=older_than):
        r = rows.setdefault(
            e.kind,
            {"kind": e.kind, "files": 0, "bytes": 0, "oldest": e.modified, "newest": e.modified},
        )
        r["files"] += 1
        r["bytes"] += e.bytes
        r["oldest"], r["newest"] = min(r["oldest"], e.modified), max(r["newest"], e.modified)
    for k in [kind] if kind else KINDS:
        rows.setdefault(k, {"kind": k, "files": 0, "bytes": 0, "oldest": None, "newest": None})
    return pd.DataFrame(
        sorted(rows.values(), key=lambda r: r["kind"]),
        columns=["kind", "files", "bytes", "oldest", "newest"],
    )


def clear(kind: str | None = None, *, older_than: DateLike | None = None) -> list[Entry]:
    """Delete cache entries (all, one ``kind``, and/or those modified before
    ``older_than``); returns what was removed. Empty kind directories stay."""
    removed = []
    for e in entries(kind, older_than=older_than):
        try:
            e.path.unlink()
        except FileNotFoundError:
            continue
        removed.append(e)
    return removed


def human_bytes(n: int) -> str:
    """``1536`` → ``'1.5 KiB'``."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError  # pragma: no cover
