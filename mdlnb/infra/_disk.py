"""What a write does when the disk says no, and what a killed writer left behind.

* A cache root that cannot be created or written (``$MDLNB_CACHE`` on a
  read-only disk, below a regular file, in a folder without write permission)
  never stops a run: :func:`cache_dir` gives one :class:`CacheWarning` naming
  it and why, and the process goes on without the on-disk cache (its folders
  then lie in a private temporary root, removed at exit).
* A cache write that fails for want of room or rights (a full disk, a quota, a
  file size limit, a cache made read-only meanwhile) leaves no file behind,
  warns once per folder (:func:`skipped_write`) and the run goes on without
  that entry; a failed write outside the cache (a study's tables and figures)
  is an ``OSError`` naming the file (:func:`naming`).
* A temporary file of :func:`mdlnb.infra._io.atomic_write_bytes` and friends is named
  after its writer (:func:`owner`: host and process), so one whose writer died
  mid-write (SIGKILL, a lost machine) is told from one being written now and
  removed (:func:`remove_stale_temporaries`: when the file is written again,
  and when a cache folder is first used in a process).
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import os
import re
import shutil
import socket
import tempfile
import threading
import warnings
from pathlib import Path

TMP_SUFFIX = ".tmp"


class CacheWarning(UserWarning):
    """A cache entry was damaged and is ignored (it will be recomputed), or the cache
    cannot be written (the run goes on without storing it)."""


#: errors of a write that mean "no room or no right to write here", not a bug
NO_WRITE = frozenset(
    {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES, errno.EPERM}
)

_fallback: dict[str, Path] = {}  # unusable cache root -> this process's private stand-in
_warned: set[tuple[str, str]] = set()
_checked: set[str] = set()  # cache folders this process created and swept
_state_lock = threading.Lock()


def cache_dir(sub: str = "") -> Path:
    """A folder of mdlnb's on-disk cache: ``$MDLNB_CACHE/sub`` (default root
    ``~/.cache/mdlnb``), created if needed.

    If it cannot be created or written (read-only disk, a regular file in
    the way, no permission), a :class:`CacheWarning` names it and why, once
    per process, and the folder of a private temporary root is returned
    instead (removed at exit): the run goes on without the on-disk cache."""
    root = cache_root()
    stand_in = _fallback.get(str(root))
    if stand_in is not None:
        path = stand_in / sub if sub else stand_in
        path.mkdir(parents=True, exist_ok=True)
        return path
    path = root / sub if sub else root
    if str(path) in _checked:
        with contextlib.suppress(OSError):  # removed meanwhile (cache.clear, a test): again
            path.mkdir(parents=True, exist_ok=True)
            return path
    try:
        path.mkdir(parents=True, exist_ok=True)
        if not path.is_dir():  # pragma: no cover - a race with another process
            raise NotADirectoryError(errno.ENOTDIR, "not a directory", str(path))
        fd, probe = tempfile.mkstemp(dir=path, prefix=f".probe.{owner()}.", suffix=TMP_SUFFIX)
        os.close(fd)  # writable: the probe's errno says why not (read-only disk, no permission)
        os.unlink(probe)
    except OSError as e:
        stand_in = _without_cache(root, path, e)
        path = stand_in / sub if sub else stand_in
        path.mkdir(parents=True, exist_ok=True)
        return path
    remove_stale_temporaries(path)  # left by a process killed while writing here
    _checked.add(str(path))
    return path


def _without_cache(root: Path, path: Path, err: OSError) -> Path:
    """The private stand-in for the unusable cache ``root`` (warned once)."""
    with _state_lock:
        stand_in = _fallback.get(str(root))
        if stand_in is None:
            stand_in = Path(tempfile.mkdtemp(prefix="mdlnb-cache-"))
            atexit.register(shutil.rmtree, stand_in, True)
            _fallback[str(root)] = stand_in
            reason = err.strerror or type(err).__name__
            warnings.warn(
                f"mdlnb cache: {path}: cannot be used ({reason}); running without the on-disk "
                f"cache, nothing is stored or reused (set MDLNB_CACHE to a writable folder to "
                f"keep results)",
                CacheWarning,
                stacklevel=4,
            )
    return stand_in


def cache_usable() -> bool:
    """Whether this process stores results in the cache root (False after
    :func:`cache_dir` found it unusable and switched to a private stand-in)."""
    cache_dir()
    return str(cache_root()) not in _fallback


def cache_root() -> Path:
    """``$MDLNB_CACHE`` or ``~/.cache/mdlnb`` (not created)."""
    return Path(os.environ.get("MDLNB_CACHE", Path.home() / ".cache" / "mdlnb"))


def in_cache(path: Path) -> bool:
    """Whether ``path`` lies under the cache root (or its private stand-in)."""
    try:
        target = path.parent.resolve()
    except OSError:  # pragma: no cover
        return False
    roots = [cache_root(), *_fallback.values()]
    for root in roots:
        with contextlib.suppress(OSError):
            if target.is_relative_to(Path(root).resolve()):
                return True
    return False


def owner() -> str:
    """``<host>_<pid>``: who writes a temporary file (part of its name), so that a
    temporary file whose writer died (killed mid-write) can be told from one being
    written right now by a live process of this host."""
    host = re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname()) or "host"
    return f"{host}_{os.getpid()}"


_TMP_NAME = re.compile(
    r"\.(?P<host>[A-Za-z0-9-]+)_(?P<pid>\d+)\.[^.]+" + re.escape(TMP_SUFFIX) + "$"
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it exists, owned by someone else
        return True
    return True


def remove_stale_temporaries(folder: str | os.PathLike, name: str | None = None) -> list[Path]:
    """Remove the hidden temporary files of :func:`_atomic_file` in ``folder`` (only
    those of target ``name``, if given) whose writer, a process of this host, is dead:
    what a process killed mid-write (SIGKILL, a lost machine) left behind. A file being
    written by a live process, or by another host sharing the folder, is kept. Returns
    the removed paths."""
    host = owner().rsplit("_", 1)[0]
    prefix = f".{name}." if name is not None else "."
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        if not (entry.name.startswith(prefix) and entry.name.endswith(TMP_SUFFIX)):
            continue
        m = _TMP_NAME.search(entry.name)
        if m is None or m["host"] != host or _alive(int(m["pid"])):
            continue
        with contextlib.suppress(OSError):
            os.unlink(entry.path)
            removed.append(Path(entry.path))
    return removed


def naming(err: OSError, path: Path) -> OSError:
    """``err`` as an OSError of the same errno (and subclass) naming ``path``: a failed
    write of a full disk says which file it could not write."""
    if err.filename:
        return err
    return OSError(err.errno, f"{err.strerror or err}; cannot write", str(path))


def skipped_write(path: Path, err: OSError) -> None:
    """A cache entry that could not be written: warned once per folder and reason."""
    key = (str(path.parent), err.strerror or str(err.errno))
    with _state_lock:
        if key in _warned:
            return
        _warned.add(key)
    warnings.warn(
        f"mdlnb cache: {path}: not stored ({err.strerror or err}); the run goes on "
        f"without caching it (free space or fix the permissions of {path.parent} "
        "to keep cache entries)",
        CacheWarning,
        stacklevel=4,
    )
