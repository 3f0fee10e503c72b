"""The compilation cache: a new process's first ``evaluate`` on a shape another
process compiled, against a cold process and against the warm (second) call.

    python -m benchmarks compile_cache                 # (make bench BENCH=compile_cache)
    python benchmarks/bench_compile_cache.py one N D   # one process: first and warm seconds (JSON)

Each figure is one fresh process (``subprocess``) running the default
protocol on an N × D Gaussian task (labels: sign of x0 + x1; the task of the
sharding report), stage-1 cache off so stage 1 always runs. Cold processes
get an empty cache root each; "cached" processes share one root that a first
process filled; runs alternate cold, cached, cached-other-N (a task of
another N in the same row bucket: only the small N-dependent programs
compile). Medians of ``REPEATS``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._records import Headline

REPEATS = 3
N, D, OTHER_N = 1500, 12, 1450  # 1450 and 1500: the same row bucket (1,536)


def one(n: int, d: int) -> dict:
    """In this process: the first ``evaluate`` and a second (warm) one, with JAX's
    persistent-cache events counted."""
    t_start = time.perf_counter()
    import jax
    import numpy as np

    counts = {"requests": 0, "hits": 0, "misses": 0}
    names = {
        "/jax/compilation_cache/compile_requests_use_cache": "requests",
        "/jax/compilation_cache/cache_hits": "hits",
        "/jax/compilation_cache/cache_misses": "misses",
    }
    jax.monitoring.register_event_listener(
        lambda event, **kw: (
            event in names and counts.__setitem__(names[event], counts[names[event]] + 1)
        )
    )
    import mdlnb

    rng = np.random.default_rng(9)
    x = rng.normal(size=(n, d))
    task = mdlnb.Task.from_arrays(x, (x[:, 0] + x[:, 1] > 0).astype(int), name="gauss")
    t_import = time.perf_counter() - t_start
    t0 = time.perf_counter()
    first = mdlnb.evaluate(task, cache=False)
    t_first = time.perf_counter() - t0
    events = dict(counts)
    t0 = time.perf_counter()
    mdlnb.evaluate(task, cache=False)
    t_warm = time.perf_counter() - t0
    return {
        "n": n,
        "d": d,
        "import_s": round(t_import, 2),
        "first_s": round(t_first, 2),
        "warm_s": round(t_warm, 2),
        "total_nats": first.total_nats,
        **events,
    }


def _process(root: Path, n: int, d: int) -> dict:
    env = {**os.environ, "MDLNB_CACHE": str(root), "PYTHONPATH": str(Path(__file__).parents[1])}
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, __file__, "one", str(n), str(d)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res["process_s"] = round(time.perf_counter() - t0, 2)
    return res


#: the headline figures of ``main()``'s result (benchmarks/_records.py)
HEADLINE = [
    Headline(
        "summary.cached.first_over_warm",
        "a new process's first `evaluate` over the warm call, cache filled by another process",
        "×",
    ),
    Headline("summary.cold.first_over_warm", "the same from an empty cache", "×"),
]


def main() -> dict:
    rows = {"cold": [], "cached": [], "cached_other_n": []}
    with tempfile.TemporaryDirectory() as tmp:
        shared = Path(tmp) / "shared"
        _process(shared, N, D)  # fills the shared compilation cache
        for i in range(REPEATS):
            rows["cold"].append(_process(Path(tmp) / f"cold{i}", N, D))
            rows["cached"].append(_process(shared, N, D))
            rows["cached_other_n"].append(_process(shared, OTHER_N, D))
    summary = {}
    for kind, rs in rows.items():
        med = {
            k: statistics.median(r[k] for r in rs)
            for k in ("first_s", "warm_s", "process_s", "misses", "hits", "requests")
        }
        med["first_over_warm"] = round(med["first_s"] / med["warm_s"], 2)
        summary[kind] = med
        print(
            f"{kind:>15}: first {med['first_s']:6.2f} s, warm {med['warm_s']:5.2f} s "
            f"({med['first_over_warm']:.2f}x), process {med['process_s']:6.2f} s, "
            f"compiled {med['misses']:.0f} of {med['requests']:.0f} programs"
        )
    return {"summary": summary, "runs": rows}


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "one":
        print(json.dumps(one(int(sys.argv[2]), int(sys.argv[3]))))
    else:
        main()
