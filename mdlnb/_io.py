"""Disk helpers: the cache directory, content hashes, atomic writes.

Everything long-running (loss matrices, features, encoder parameters,
checkpoints) goes through these, so an interrupted run never leaves a
half-written file and the same inputs always map to the same cache key.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Mapping

import numpy as np


def cache_dir(sub: str = "") -> Path:
    """Root of mdlnb's on-disk cache: ``$MDLNB_CACHE`` or ``~/.cache/mdlnb``."""
    root = Path(os.environ.get("MDLNB_CACHE", Path.home() / ".cache" / "mdlnb"))
    path = root / sub if sub else root
    path.mkdir(parents=True, exist_ok=True)
    return path


def _update(h: "hashlib._Hash", obj: Any) -> None:
    if isinstance(obj, np.ndarray) or hasattr(obj, "__array__") and not isinstance(obj, (str, bytes)):
        a = np.ascontiguousarray(np.asarray(obj))
        h.update(f"nd:{a.dtype.str}:{a.shape}:".encode())
        h.update(a.tobytes())
    elif isinstance(obj, Mapping):
        h.update(b"map:")
        for k in sorted(obj, key=str):
            h.update(str(k).encode() + b"=")
            _update(h, obj[k])
            h.update(b";")
    elif isinstance(obj, (list, tuple)):
        h.update(f"seq{len(obj)}:".encode())
        for v in obj:
            _update(h, v)
            h.update(b",")
    elif hasattr(obj, "__dataclass_fields__"):
        h.update(type(obj).__name__.encode())
        _update(h, {f: getattr(obj, f) for f in obj.__dataclass_fields__})
    else:
        h.update(json.dumps(obj, sort_keys=True, default=repr).encode())


def content_hash(*objs: Any, length: int = 16) -> str:
    """Stable hex digest of arrays, dataclasses, mappings and scalars."""
    h = hashlib.sha256()
    for o in objs:
        _update(h, o)
        h.update(b"|")
    return h.hexdigest()[:length]


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` via a temporary file and ``os.replace``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_savez(path: str | os.PathLike, **arrays: Any) -> Path:
    """``np.savez`` that never leaves a partial file behind."""
    import io

    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return atomic_write_bytes(path, buf.getvalue())


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    return atomic_write_bytes(path, text.encode())
