"""The on-disk cache (``$MDLNB_CACHE``, default ``~/.cache/mdlnb``): where it is,
its size per kind, clearing it. Also on the command line: ``mdlnb cache``.

    mdlnb.cache.location()                       # Path
    mdlnb.cache.usage()                          # DataFrame: kind, files, bytes, oldest, newest
    mdlnb.cache.clear(kind="losses", older_than="2026-01-01")   # removed entries

Entries are checksummed ``.npz`` files; a damaged one is recomputed with a
``CacheWarning`` naming it, and deleting any entry is always safe.
"""

from mdlnb._cache import KINDS, Entry, clear, entries, human_bytes, kinds, location, usage
from mdlnb._io import CacheWarning, DamagedFile

__all__ = ["KINDS", "CacheWarning", "DamagedFile", "Entry", "clear", "entries", "human_bytes",
           "kinds", "location", "usage"]
