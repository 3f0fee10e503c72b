"""Run benchmarks: ``python -m benchmarks [name ...]`` (``make bench BENCH=switching``).

Each ``benchmarks/bench_<name>.py`` has ``main() -> dict`` that measures,
prints a short report and returns its numbers; they are collected into
``build/bench/<name>.json``.
"""

from __future__ import annotations

import importlib
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def names() -> list[str]:
    return sorted(p.stem[len("bench_") :] for p in HERE.glob("bench_*.py"))


def main(argv: list[str]) -> int:
    chosen = argv or names()
    unknown = sorted(set(chosen) - set(names()))
    if unknown:
        print(f"unknown benchmark(s) {unknown}; available: {names()}", file=sys.stderr)
        return 2
    out = HERE.parent / "build" / "bench"
    out.mkdir(parents=True, exist_ok=True)
    for name in chosen:
        print(f"== {name} ==", flush=True)
        t0 = time.perf_counter()
        result = importlib.import_module(f"benchmarks.bench_{name}").main()
        result = {"wall_s": round(time.perf_counter() - t0, 2), **(result or {})}
        (out / f"{name}.json").write_text(json.dumps(result, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
