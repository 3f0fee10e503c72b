"""JAX's persistent compilation cache under mdlnb's cache root (kind ``xla``).

Compiling stage 1's chunk program and stage 2's kernels takes most of a small
``evaluate`` on a CPU (on a 2-core CPU: 31 s cold, 7.4 s in a second process with
this cache filled, 3.6 s warm). :func:`ensure` points JAX's persistent
compilation cache at ``cache_dir("xla")`` (``$MDLNB_CACHE/xla``, default
``~/.cache/mdlnb/xla``) the first time mdlnb needs a compiled program (stage 1,
stage 2, pretraining and fine-tuning encoders, feature extraction, block-wise
MDL, the probes), so every process that shares the cache root — worker
processes, notebook kernels, the CLI, the test suite — compiles each program
once (one subdirectory per kind of host CPU, :func:`host_tag`). It is listed
by ``mdlnb cache`` / :func:`mdlnb.tools.cache.usage` and cleared by
``mdlnb.tools.cache.clear(kind="xla")`` like any other kind (an executable still
loaded in a running process stays valid; the next process recompiles).

Entries are keyed as JAX keys them (:mod:`jax._src.cache_key`: the program's
StableHLO, the compile options and XLA flags, the backend and its version, the
jax/jaxlib versions, the devices), so a change to any of these is a miss, not
a wrong executable.

What mdlnb changes, and when it leaves JAX alone:

* Nothing if ``MDLNB_XLA_CACHE`` is ``0``/``off``/``false``/``no`` (the switch
  to turn it off), if the user configured a cache of their own
  (``jax_compilation_cache_dir`` / ``JAX_COMPILATION_CACHE_DIR`` set before
  mdlnb's first program: theirs is used, with their thresholds), or if they
  disabled it (``jax_enable_compilation_cache=False``).
* Otherwise it sets ``jax_compilation_cache_dir`` and, where they are still at
  JAX's defaults, ``jax_persistent_cache_min_compile_time_secs = 0`` and
  ``jax_persistent_cache_min_entry_size_bytes = -1`` (JAX keeps only programs
  that took > 1 s to compile by default; on a CPU most of a cold start is
  many programs of 0.05–1 s each). These are process-wide settings: the
  user's own jitted programs in the same process are cached there too.

Safety. JAX 0.10's file cache (``jax._src.lru_cache.LRUCache``) writes an
entry with ``Path.write_bytes`` in place: a process reading the key while
another writes it sees a partial file, and a process killed mid-write leaves
a damaged entry that ``put`` never replaces (it returns when the file exists),
so every later process warns and recompiles it. mdlnb therefore installs its
own store (:class:`AtomicFileCache`, the same file names ``<key>-cache``):
each entry carries a SHA-256 of its content, is written to a unique temporary
file and renamed into place (``os.replace``: readers see the old entry or the
whole new one; concurrent writers of one key write the same program, the last
rename wins), and a damaged entry (truncated, altered, unreadable) is a miss
with a :class:`mdlnb.tools.cache.CacheWarning` naming the file: it is removed and
the program compiled and written again. An entry JAX cannot deserialize
(JAX warns and recompiles) is replaced by the fresh compilation. If JAX's
internals differ from what this module expects (another JAX version), JAX's
own store is used with the same directory and settings.

The cache is trusted like any compilation cache: an entry is code that runs
in the process. Do not point ``MDLNB_CACHE`` at a directory others can write.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import platform
import threading
import warnings
from pathlib import Path

from mdlnb.infra import _mapguard
from mdlnb.infra._io import (
    CacheWarning,
    atomic_write_bytes,
    cache_dir,
    cache_root,
    cache_usable,
    switched_off,
)

# Imported inside the functions that use them, so that importing this module does not load
# them: JAX.

#: the cache kind (subdirectory of the cache root) holding compiled programs
KIND = "xla"
#: environment switch: ``0``, ``off``, ``false`` or ``no`` turns the cache off
ENV_SWITCH = "MDLNB_XLA_CACHE"

_MAGIC = b"mdlnb-xla-1\n"
_DIGEST = 32
_SUFFIX = "-cache"  # JAX's LRUCache names its files "<key>-cache"

_lock = threading.Lock()
_state: dict = {"done": False, "path": None, "reason": "not yet needed"}

logger = logging.getLogger(__name__)


class _AtomicStore:
    """The store behind :class:`AtomicFileCache` (see there); a plain class, so that
    defining it imports nothing of JAX."""

    def __init__(self, path: str | os.PathLike):
        self._path = Path(path)
        self._path.mkdir(parents=True, exist_ok=True)
        self._served: set[str] = set()  # keys this process read back successfully

    def _file(self, key: str) -> Path:
        if not key:
            raise ValueError("key cannot be empty")
        return self._path / f"{key}{_SUFFIX}"

    @staticmethod
    def _pack(value: bytes) -> bytes:
        return _MAGIC + hashlib.sha256(value).digest() + value

    @staticmethod
    def _unpack(data: bytes) -> bytes | None:
        head = len(_MAGIC) + _DIGEST
        if len(data) < head or not data.startswith(_MAGIC):
            return None
        value = data[head:]
        return value if hashlib.sha256(value).digest() == data[len(_MAGIC) : head] else None

    def get(self, key: str) -> bytes | None:
        path = self._file(key)
        try:
            before = path.stat()
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        value = self._unpack(data)
        if value is None:
            warnings.warn(
                f"mdlnb cache: {path}: damaged compiled program (checksum mismatch or "
                "truncated); ignoring it, it will be recompiled",
                CacheWarning,
                stacklevel=2,
            )
            with contextlib.suppress(OSError):  # unless another process replaced it meanwhile
                now = path.stat()
                if (now.st_ino, now.st_mtime_ns) == (before.st_ino, before.st_mtime_ns):
                    path.unlink()
            return None
        self._served.add(key)
        return value

    def put(self, key: str, value: bytes) -> None:
        path = self._file(key)
        # JAX puts a key it got from us only when it could not load that entry
        # (it warned and recompiled): replace it. Otherwise a valid entry stays.
        if key not in self._served and path.exists():
            with contextlib.suppress(OSError):
                if self._unpack(path.read_bytes()) is not None:
                    return
        self._served.discard(key)
        # durable=False: an entry lost in a crash is only recompiled, and the checksum
        # catches one that reached the disk half written
        atomic_write_bytes(path, self._pack(value), durable=False)

    def clear(self) -> None:
        for p in self._path.glob(f"*{_SUFFIX}"):
            with contextlib.suppress(OSError):
                p.unlink()


_CLASS: list = []
_CLASS_LOCK = threading.Lock()  # not _lock: ensure() holds that one when it builds the class


def _atomic_file_cache() -> type:
    """:class:`AtomicFileCache`, built on first use: :class:`_AtomicStore` as a subclass
    of JAX's ``CacheInterface`` (which imports JAX; ``object`` under another JAX layout)."""
    with _CLASS_LOCK:
        if not _CLASS:
            try:
                from jax._src.compilation_cache_interface import CacheInterface
            except ImportError:  # pragma: no cover - another JAX layout
                CacheInterface = object
            _CLASS.append(
                type(
                    "AtomicFileCache",
                    (_AtomicStore, CacheInterface),
                    {
                        "__module__": __name__,
                        "__doc__": "A ``jax._src.compilation_cache_interface.CacheInterface`` over a directory: "
                        "checksummed entries, atomic writes, damaged entries recompiled (module "
                        "docstring).",
                    },
                )
            )
        return _CLASS[0]


def __getattr__(name: str):
    if name == "AtomicFileCache":  # built on first access: importing this module loads no JAX
        return _atomic_file_cache()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def host_tag() -> str:
    """``<machine>-<12 hex>``: the host's architecture and a hash of its CPU's feature
    flags. JAX's key hashes the backend's name and version, not the host CPU's
    features, and XLA:CPU compiles for the features of the CPU it runs on; a cache
    root shared by different machines (a network home, a CI cache restored
    elsewhere) keeps one directory per kind of CPU, so an executable built for
    AVX-512 is never loaded where the instructions are missing."""
    flags = ""
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "Features", "isa")):
                    flags = line.split(":", 1)[-1].strip()
                    break
    flags = flags or platform.processor()
    return f"{platform.machine() or 'cpu'}-{hashlib.sha256(flags.encode()).hexdigest()[:12]}"


def _disabled_by_env() -> bool:
    return switched_off(ENV_SWITCH)


def ensure() -> Path | None:
    """Turn the persistent compilation cache on (once per process; cheap after).

    Called by mdlnb before its compiled programs are first needed. Returns the
    directory mdlnb's programs are cached in (``None``: off, see :func:`status`).
    Each call also keeps the process below the kernel's cap on memory mappings
    (:func:`mdlnb.infra._mapguard.relieve`: one count per 8 programs compiled).
    """
    _mapguard.relieve()
    if _state["done"]:
        return _state["path"]
    with _lock:
        if _state["done"]:
            return _state["path"]
        _state.update(_enable())
        _state["done"] = True
        return _state["path"]


def status() -> dict:
    """``{"path": Path | None, "reason": str}``: where compiled programs are cached and why."""
    return {"path": _state["path"], "reason": _state["reason"]}


def _enable() -> dict:
    import jax

    if _disabled_by_env():
        return {"path": None, "reason": f"off: {ENV_SWITCH}={os.environ[ENV_SWITCH]}"}
    if not jax.config.jax_enable_compilation_cache:
        return {"path": None, "reason": "off: jax_enable_compilation_cache is False"}
    own = jax.config.jax_compilation_cache_dir
    if own:
        return {"path": Path(own), "reason": "the user's jax_compilation_cache_dir (left as set)"}
    if not cache_usable():  # warned by cache_dir: the process runs without the disk cache
        return {"path": None, "reason": f"off: the cache root {cache_root()} cannot be written"}
    path = cache_dir(KIND) / host_tag()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:  # the cache root became unusable meanwhile: compile without it
        return {"path": None, "reason": f"off: {path}: {e.strerror or e}"}
    jax.config.update("jax_compilation_cache_dir", str(path))
    if jax.config.jax_persistent_cache_min_compile_time_secs == 1.0:  # JAX's default
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    if jax.config.jax_persistent_cache_min_entry_size_bytes == 0:  # JAX's default
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    reason = "mdlnb's cache (atomic, checksummed entries)"
    try:
        from jax._src import compilation_cache as cc

        with cc._cache_initialized_mutex:
            if cc._cache is None and not cc._cache_initialized:
                cc._cache = _atomic_file_cache()(path)
                cc._cache_initialized = True
            else:  # pragma: no cover - initialised by someone else meanwhile
                reason = "JAX's own file store (already initialised)"
    except (ImportError, AttributeError) as e:  # pragma: no cover - another JAX version
        logger.debug("mdlnb: JAX's file store is used (%s)", e)
        reason = "JAX's own file store (its internals differ from jax 0.10)"
    return {"path": path, "reason": reason}
