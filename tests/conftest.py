"""Test-wide settings: a private cache directory and a headless plot backend."""

import os

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory):
    """Point ``MDLNB_CACHE`` at a fresh directory so tests never read stale results."""
    old = os.environ.get("MDLNB_CACHE")
    os.environ["MDLNB_CACHE"] = str(tmp_path_factory.mktemp("mdlnb-cache"))
    yield
    if old is None:
        os.environ.pop("MDLNB_CACHE", None)
    else:
        os.environ["MDLNB_CACHE"] = old
