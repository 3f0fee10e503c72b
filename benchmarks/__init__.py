"""Performance benchmarks (``make bench``); targets live here, never in unit tests."""
