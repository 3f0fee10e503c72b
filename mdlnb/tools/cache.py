"""The on-disk cache (``$MDLNB_CACHE``, default ``~/.cache/mdlnb``): where it is,
its size per kind, clearing it. Also on the command line: ``mdlnb cache``.

    mdlnb.tools.cache.location()                       # Path
    mdlnb.tools.cache.usage()                          # DataFrame: kind, files, bytes, oldest, newest
    mdlnb.tools.cache.clear(kind="losses", older_than="2026-01-01")   # removed entries

Entries are checksummed ``.npz`` files, and compiled programs (kind ``xla``:
JAX's persistent compilation cache, shared by every process that uses the
same cache root; ``MDLNB_XLA_CACHE=0`` turns it off, see
:mod:`mdlnb.infra._xla_cache`); a damaged one is recomputed with a ``CacheWarning``
naming it, and deleting any entry is always safe.

    mdlnb.tools.cache.clear(kind="xla")                # compiled programs only
    mdlnb.tools.cache.compilation_cache()              # {"path": ..., "reason": ...}
"""

from mdlnb.infra._cache import KINDS, Entry, clear, entries, human_bytes, kinds, location, usage
from mdlnb.infra._io import CacheWarning, DamagedFile
from mdlnb.infra._xla_cache import status as compilation_cache

__all__ = [
    "KINDS",
    "CacheWarning",
    "DamagedFile",
    "Entry",
    "clear",
    "compilation_cache",
    "entries",
    "human_bytes",
    "kinds",
    "location",
    "usage",
]
