"""Subprocess body of tests/test_xla_cache.py: one small ``mdlnb.evaluate``,
counting JAX's persistent-cache events and compilations.

    python tests/_compile_worker.py OUT.json [N D]

Writes ``{"requests", "hits", "misses", "total_nats", "seconds", "warm_seconds",
"cache"}``: ``requests`` programs looked up in the persistent cache, ``hits``
found there, ``misses`` compiled and written.
"""

import json
import sys
import time

import jax
import numpy as np

EVENTS = {
    "/jax/compilation_cache/compile_requests_use_cache": "requests",
    "/jax/compilation_cache/cache_hits": "hits",
    "/jax/compilation_cache/cache_misses": "misses",
}


def main(argv):
    counts = dict.fromkeys(EVENTS.values(), 0)

    def listener(event, **kwargs):
        if event in EVENTS:
            counts[EVENTS[event]] += 1

    jax.monitoring.register_event_listener(listener)
    import mdlnb
    from mdlnb.infra import _xla_cache

    n, d = (int(a) for a in argv[1:3]) if len(argv) > 2 else (200, 5)
    rng = np.random.default_rng(9)
    x = rng.normal(size=(n, d)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(int)
    task = mdlnb.Task.from_arrays(x, y, name="compile-worker")
    board = mdlnb.expert_grid(
        [mdlnb.board.readouts.linear(), mdlnb.board.readouts.mlp(1, 16)],
        learning_rate=[1e-3, 1e-2],
        replay_streams=[2],
    )
    t0 = time.perf_counter()
    report = mdlnb.evaluate(task, experts=board, cache=False)
    seconds = time.perf_counter() - t0
    first = dict(counts)
    t0 = time.perf_counter()
    mdlnb.evaluate(task, experts=board, cache=False)
    warm = time.perf_counter() - t0
    with open(argv[0], "w") as f:
        json.dump(
            {
                **first,
                "total_nats": report.total_nats,
                "seconds": seconds,
                "warm_seconds": warm,
                "cache": str(_xla_cache.status()["path"]),
                "reason": _xla_cache.status()["reason"],
            },
            f,
        )


if __name__ == "__main__":
    main(sys.argv[1:])
