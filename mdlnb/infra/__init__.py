"""Infrastructure every layer uses and none is about: disk and cache, progress, warnings.

- :mod:`._io` — the cache directory, content hashes, atomic writes, verified reads;
  :mod:`._disk` — what a write does when the disk is full or a writer was killed;
  :mod:`._cache` — what the cache holds and clearing it (behind :mod:`mdlnb.tools.cache`).
- :mod:`._checkpoint` — one checkpoint format for long runs (stage 1, pre-training).
- :mod:`._xla_cache` — JAX's persistent compilation cache under mdlnb's cache root.
- :mod:`._aligned` — 64-byte-aligned float32 buffers XLA's CPU client reads in place;
  :mod:`._mapguard` — a long process kept below the kernel's memory-mapping limit.
- :mod:`._progress` and :mod:`._stages` — progress bars where a person watches, one
  line in batch runs; :mod:`._warnings` — a result's warnings as one sentence, once.

Nothing here imports the rest of :mod:`mdlnb`; the modules are private (import them by
their full path inside the package), and ``from mdlnb import *`` leaves the package out.
"""
