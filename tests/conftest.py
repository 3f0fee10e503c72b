"""Test-wide settings: a private cache directory, a shared compilation cache and a
headless plot backend."""

import os
from pathlib import Path

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")


def _shared_xla_cache(old_root: str | None) -> Path:
    """Where the session's compiled programs live: ``$MDLNB_TEST_XLA_CACHE``, else the
    ``xla`` kind of the cache root the session was started with (``$MDLNB_CACHE`` or
    ``~/.cache/mdlnb``)."""
    own = os.environ.get("MDLNB_TEST_XLA_CACHE")
    if own:
        return Path(own)
    return Path(old_root or Path.home() / ".cache" / "mdlnb") / "xla"


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory):
    """Point ``MDLNB_CACHE`` at a fresh directory so tests never read stale results,
    with its ``xla`` kind (compiled programs) a link to the shared compilation cache.

    Results (loss matrices, features, encoders) depend on mdlnb's code, so a
    session starts without them. A compiled program is keyed by its own
    StableHLO, compile options, XLA flags and jax/jaxlib/backend versions
    (:mod:`mdlnb._xla_cache`): an entry from an older checkout can only be
    a hit for the very same program, so sessions (and xdist workers, and the
    subprocesses and notebook kernels a test starts, which inherit
    ``MDLNB_CACHE``) share one and compile each program once. CI starts with
    an empty one; ``MDLNB_TEST_XLA_CACHE=/some/empty/dir`` isolates a session,
    ``MDLNB_XLA_CACHE=0`` turns it off. Tests of the cache itself use their
    own roots.
    """
    old = os.environ.get("MDLNB_CACHE")
    root = tmp_path_factory.mktemp("mdlnb-cache")
    shared = _shared_xla_cache(old)
    try:
        shared.mkdir(parents=True, exist_ok=True)
        (root / "xla").symlink_to(shared.resolve(), target_is_directory=True)
    except OSError:  # not writable (a read-only home): this session compiles into its own root
        pass
    os.environ["MDLNB_CACHE"] = str(root)
    from mdlnb import _xla_cache

    _xla_cache.ensure()  # now, so a test that moves MDLNB_CACHE does not move it
    import jax

    # The suite's own processes write only programs that took >= 1 s to compile (JAX's
    # default threshold; mdlnb's own is 0, every program). A worker segfault has struck
    # in executable.serialize() as a program was written to the cache, with no other
    # Python thread running JAX work (benchmarks/RESULTS.md); the cause is not found, so
    # the suite serialises the few programs whose caching saves time, not every one.
    # The subprocesses and notebook kernels tests start keep mdlnb's setting.
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)
    yield
    if old is None:
        os.environ.pop("MDLNB_CACHE", None)
    else:
        os.environ["MDLNB_CACHE"] = old
