"""Run benchmarks: ``python -m benchmarks [name ...]`` (``make bench BENCH=switching``).

Each ``benchmarks/bench_<name>.py`` has ``main() -> dict`` that measures,
prints a short report and returns its numbers; they are collected into
``build/bench/<name>.json``. A benchmark's ``HEADLINE`` figures go into its
committed record, ``benchmarks/records/<name>.json`` (with this machine and
the date), and the results table at the top of ``benchmarks/RESULTS.md`` is
rewritten from all records (:mod:`benchmarks._records`).
"""

from __future__ import annotations

import datetime
import importlib
import json
import sys
import time
from pathlib import Path

from benchmarks import _records

HERE = Path(__file__).resolve().parent
RECORDS = HERE / "records"
RESULTS = HERE / "RESULTS.md"


def names() -> list[str]:
    return sorted(p.stem[len("bench_") :] for p in HERE.glob("bench_*.py"))


def record(name: str, result: dict, headlines: list[_records.Headline]) -> dict:
    """The record of one run of benchmark ``name`` on this machine, today (UTC)."""
    date = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    figs = _records.figures(result, headlines, _records.detect_machine(), date)
    return _records.make_record(name, f"make bench BENCH={name}", figs)


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
        module = importlib.import_module(f"benchmarks.bench_{name}")
        t0 = time.perf_counter()
        result = module.main()
        result = {"wall_s": round(time.perf_counter() - t0, 2), **(result or {})}
        (out / f"{name}.json").write_text(json.dumps(result, indent=2, default=str))
        headlines = getattr(module, "HEADLINE", [])
        if headlines:
            _records.save_run(RECORDS, RESULTS, record(name, result, headlines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
