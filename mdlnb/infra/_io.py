"""Disk helpers: the cache directory, content hashes, atomic writes, verified reads.

Everything long-running (loss matrices, features, encoder parameters,
checkpoints, study results) goes through these, so that

* a write never leaves a half file and never interleaves with another
  process's: the bytes go to a uniquely named temporary file in the target
  directory, are flushed and fsynced, get the usual permissions
  (``0o666 & ~umask``) and are renamed over the target (``os.replace`` is
  atomic on POSIX); the directory is fsynced after the rename;
* every cache entry carries a SHA-256 checksum of its content
  (:func:`atomic_savez` stores it as the array ``__sha256__``), verified on
  read by :func:`read_npz`; :func:`load_entry` turns a damaged entry
  (truncated, flipped bytes, no checksum) into a cache miss with a
  :class:`CacheWarning` naming the file, so the caller recomputes it;
* two processes that would compute the same expensive entry can take a lock
  per key (:func:`locked`, ``fcntl.flock``) and the second one reads what the
  first wrote (:func:`compute_once`);
* the same inputs always map to the same cache key (:func:`content_hash`);
* a cache that cannot be used never stops a run, and a failed write outside
  the cache names its file (:mod:`mdlnb.infra._disk`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import warnings
import zipfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from mdlnb.infra import _aligned
from mdlnb.infra._disk import (
    NO_WRITE,
    TMP_SUFFIX,
    in_cache,
    naming,
    owner,
    remove_stale_temporaries,
    skipped_write,
)
from mdlnb.infra._disk import CacheWarning as CacheWarning  # re-exported: the cache's public names
from mdlnb.infra._disk import cache_dir as cache_dir
from mdlnb.infra._disk import cache_root as cache_root
from mdlnb.infra._disk import cache_usable as cache_usable

try:  # POSIX advisory locks; elsewhere the lock is a no-op (atomic writes still hold)
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None

#: Name of the array holding an entry's checksum inside an ``.npz``.
CHECKSUM_KEY = "__sha256__"
LOCK_SUFFIX = ".lock"


class DamagedFile(ValueError):
    """A file that cannot be read back as written (truncated, altered, no checksum)."""


#: values of an on/off environment switch that mean off (any case, spaces ignored)
OFF_VALUES = frozenset({"0", "off", "false", "no"})


def switched_off(name: str) -> bool:
    """Whether the environment switch ``name`` (e.g. ``MDLNB_XLA_CACHE``) is set to
    one of :data:`OFF_VALUES`; unset or anything else is on."""
    return os.environ.get(name, "1").strip().lower() in OFF_VALUES


# ----------------------------------------------------------------------------- hashing


def _update(h: hashlib._Hash, obj: Any) -> None:
    if (
        isinstance(obj, np.ndarray)
        or hasattr(obj, "__array__")
        and not isinstance(obj, (str, bytes))
    ):
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


def arrays_checksum(arrays: Mapping[str, np.ndarray]) -> str:
    """SHA-256 (hex) of named arrays: each name, dtype, shape and C-order bytes,
    in sorted name order. What :func:`atomic_savez` stores and :func:`read_npz` checks."""
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.asarray(arrays[name], order="C")  # (ascontiguousarray would make 0-d arrays 1-d)
        h.update(f"{name}\0{a.dtype.str}\0{a.shape}\0".encode())
        h.update(a.reshape(-1).view(np.uint8) if a.dtype.kind != "O" else a.tobytes())
    return h.hexdigest()


# ----------------------------------------------------------------------------- writing


def _umask() -> int:
    """The process umask, read without changing it where /proc allows."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # pragma: no cover - non-Linux fallback
    os.umask(mask)
    return mask


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def _atomic_file(path: str | os.PathLike, durable: bool = True):
    """A binary file object whose content replaces ``path`` atomically on exit.

    A uniquely named temporary file in the same directory (so concurrent
    writers never share one) is written, fsynced, given mode
    ``0o666 & ~umask`` (what ``open(path, "w")`` would give), and renamed over
    ``path``; readers see the old file or the new one, never a part. On an
    exception the temporary file is removed and ``path`` is untouched.
    ``durable=False`` skips the fsyncs (still atomic for other processes; after
    a machine crash the file may be empty or partial, which its reader must
    detect: the compilation cache's checksummed entries, :mod:`mdlnb.infra._xla_cache`).
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if durable:  # what a writer of this file killed mid-write left (not the xla cache's)
            remove_stale_temporaries(path.parent, path.name)
        fd, tmp = tempfile.mkstemp(
            dir=path.parent, prefix=f".{path.name}.{owner()}.", suffix=TMP_SUFFIX
        )
    except OSError as e:
        if e.errno in NO_WRITE and in_cache(path):
            skipped_write(path, e)  # a cache entry: the caller writes into nothing
            with open(os.devnull, "wb") as sink:
                yield sink
            return
        named = naming(e, path)
        if named is e:
            raise
        raise named from e
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), 0o666 & ~_umask())
            yield f
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        Path(tmp).unlink(missing_ok=True)
        if e.errno not in NO_WRITE:
            raise
        if in_cache(path):
            skipped_write(path, e)  # a cache entry: the run goes on without it
            return
        named = naming(e, path)
        if named is e:
            raise
        raise named from e
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if durable:
        _fsync_dir(path.parent)


def atomic_write_bytes(path: str | os.PathLike, data: bytes, *, durable: bool = True) -> Path:
    """Write ``data`` to ``path`` atomically (:func:`_atomic_file`)."""
    with _atomic_file(path, durable) as f:
        f.write(data)
    return Path(path)


def atomic_savez(path: str | os.PathLike, **arrays: Any) -> Path:
    """``np.savez`` with a checksum (array ``__sha256__``), written atomically.

    Streamed into the temporary file, never built in memory first (a stage-1
    checkpoint of the ``vtab`` board is ~10 GB). Read it back with
    :func:`read_npz` (checked) or :func:`load_entry` (cache reads: damaged →
    ``None`` and a warning). ``np.load`` still reads it.
    """
    if CHECKSUM_KEY in arrays:
        raise ValueError(f"arrays: the name {CHECKSUM_KEY!r} is reserved for the checksum")
    arrays = {k: np.asarray(v) for k, v in arrays.items()}
    with _atomic_file(path) as f:
        np.savez(f, **arrays, **{CHECKSUM_KEY: np.array(arrays_checksum(arrays))})
    return Path(path)


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    return atomic_write_bytes(path, text.encode())


# ----------------------------------------------------------------------------- reading


def _read_members(path: Path) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` as :func:`numpy.load` reads it (no pickles),
    float32 arrays into 64-byte-aligned buffers (:func:`mdlnb.infra._aligned.read_npy`:
    XLA's CPU client then reads them in place)."""
    arrays = {}
    with zipfile.ZipFile(path) as zf:
        for name in zf.namelist():
            key = name[:-4] if name.endswith(".npy") else name
            with zf.open(name) as f:
                a = _aligned.read_npy(f)
                if a is not None and f.read(1):  # reading to the end also checks the CRC
                    raise ValueError(f"{name}: data beyond the array")
            if a is None:
                with zf.open(name) as f:
                    a = np.lib.format.read_array(f, allow_pickle=False)
            arrays[key] = a
    return arrays


def read_npz(path: str | os.PathLike, *, require_checksum: bool = True) -> dict[str, np.ndarray]:
    """All arrays of an ``.npz`` (no pickles), checksum verified.

    Raises ``FileNotFoundError`` when ``path`` does not exist and
    :class:`DamagedFile` (a ``ValueError`` naming the file) when it cannot be
    parsed, its checksum does not match its content, or it has no checksum
    and ``require_checksum`` (files not written by :func:`atomic_savez`, e.g.
    a user's own ``.npz``, are read with ``require_checksum=False``).
    """
    path = Path(path)
    try:
        arrays = _read_members(path)
    except FileNotFoundError:
        raise
    except Exception as e:  # any parse failure of a damaged file: BadZipFile, zlib, EOF, header…
        raise DamagedFile(f"{path}: unreadable ({type(e).__name__}: {e})") from None
    stored = arrays.pop(CHECKSUM_KEY, None)
    if stored is None:
        if require_checksum:
            raise DamagedFile(f"{path}: has no checksum (not written by this version of mdlnb)")
    elif stored.shape != () or str(stored) != arrays_checksum(arrays):
        raise DamagedFile(f"{path}: checksum mismatch (content altered after it was written)")
    return arrays


def load_entry(path: str | os.PathLike) -> dict[str, np.ndarray] | None:
    """A cache entry's arrays, or ``None`` when it is absent or damaged.

    A damaged entry is removed (unless another process replaced it in the
    meantime) with a :class:`CacheWarning` naming the file, so the caller
    recomputes and rewrites it: never trust, never crash.
    """
    path = Path(path)
    try:
        before = path.stat()
        return read_npz(path)
    except FileNotFoundError:
        return None
    except DamagedFile as e:
        warnings.warn(
            f"mdlnb cache: {e}; ignoring it, it will be recomputed", CacheWarning, stacklevel=2
        )
        with contextlib.suppress(OSError):
            now = path.stat()
            if (now.st_ino, now.st_mtime_ns) == (before.st_ino, before.st_mtime_ns):
                path.unlink()
        return None


# ----------------------------------------------------------------------------- locking


@contextlib.contextmanager
def locked(path: str | os.PathLike) -> Iterator[None]:
    """Hold an exclusive lock on the cache key ``path`` (blocks until free).

    ``fcntl.flock`` on the hidden file ``.NAME.lock`` next to ``path``; the
    lock file is removed on release (safely: a waiter that wakes on a removed
    lock file retries on the new one). Advisory: it serialises mdlnb
    processes computing the same entry, not other programs. Not re-entrant.
    """
    path = Path(path)
    if fcntl is None:  # pragma: no cover
        yield
        return
    lock_path = path.with_name(f".{path.name}{LOCK_SUFFIX}")
    while True:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o666 & ~_umask())
        except OSError as e:
            if e.errno not in NO_WRITE:
                raise
            skipped_write(lock_path, e)  # no room or no right for a lock file: unlocked
            yield
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            st = os.fstat(fd)
            cur = os.stat(lock_path)
            if (cur.st_ino, cur.st_dev) == (st.st_ino, st.st_dev):
                break
        except FileNotFoundError:
            pass
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # the file we locked was removed by the previous holder: retry
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            lock_path.unlink()
        os.close(fd)  # releases the flock


def compute_once(
    path: str | os.PathLike, make: Callable[[], Mapping[str, Any]]
) -> dict[str, np.ndarray]:
    """The entry at ``path``, computing and writing it with ``make()`` if needed.

    Across processes sharing the cache, ``make`` runs once per key: the first
    process takes the key's lock and computes; the others wait for the lock
    and then read the finished entry. A damaged entry is recomputed
    (:func:`load_entry`). ``make`` returns a mapping of arrays.
    """
    hit = load_entry(path)
    if hit is not None:
        return hit
    with locked(path):
        hit = load_entry(path)  # written by another process while we waited
        if hit is not None:
            return hit
        arrays = {k: np.asarray(v) for k, v in make().items()}
        atomic_savez(path, **arrays)
        return arrays
