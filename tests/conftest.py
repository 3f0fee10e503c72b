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
    (:mod:`mdlnb.infra._xla_cache`): an entry from an older checkout can only be
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
    from mdlnb.infra import _xla_cache

    _xla_cache.ensure()  # now, so a test that moves MDLNB_CACHE does not move it
    yield
    if old is None:
        os.environ.pop("MDLNB_CACHE", None)
    else:
        os.environ["MDLNB_CACHE"] = old


# -------------------------------------------------------------- memory mappings per worker
# A worker compiles thousands of programs, and on a CPU each holds memory mappings of
# its own; at vm.max_map_count (65,530) the next compilation killed the worker with a
# segmentation fault (mdlnb/infra/_mapguard.py, benchmarks/RESULTS.md). mdlnb's entry points
# keep a process below half the cap; a check after each test covers tests that jit
# directly, and the summary prints each worker's peak.

_MAPS = pytest.StashKey[dict]()


def pytest_runtest_teardown(item):
    from mdlnb.infra import _mapguard

    _mapguard.relieve()


def pytest_sessionfinish(session):
    from mdlnb.infra import _mapguard

    out = getattr(session.config, "workeroutput", None)
    if out is not None:  # an xdist worker: its numbers travel to the controller
        out["mapguard"] = _mapguard.stats()
    elif _MAPS not in session.config.stash:  # no workers: this process ran the tests
        session.config.stash[_MAPS] = {"main": _mapguard.stats()}


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    stats = getattr(node, "workeroutput", {}).get("mapguard")
    if stats:
        node.config.stash.setdefault(_MAPS, {})[node.gateway.id] = stats


def pytest_terminal_summary(terminalreporter, config):
    seen = config.stash.get(_MAPS, {})
    cap = next(iter(seen.values()))["limit"] if seen else None
    if cap:
        parts = [
            f"{w} peak {s['peak']:,}, programs dropped {s['relieved']}x" for w, s in seen.items()
        ]
        terminalreporter.write_line(
            f"memory mappings (vm.max_map_count {cap:,}): " + "; ".join(parts)
        )
