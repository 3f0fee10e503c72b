"""Many streams, one program (issue 38): compilation counted, layouts timed, host work measured.

    python -m benchmarks streams          # (make bench BENCH=streams)

1. **Compilation counted, not guessed.** A slice of the encoder grid
   (``MDLNB_BENCH_ENCODERS`` × ``MDLNB_BENCH_TASKS``, by default ``grid_limit``'s: the
   supervised ViT at S, M, L × digits, clevr_count; the ``deep`` board, N = 1,000)
   runs stage 1 (:func:`mdlnb.prequential.run_streams`, this machine's default
   layout) and stage 2 of every stream in this process, under a fresh
   ``MDLNB_CACHE`` whose compilation cache is empty (features linked in), first
   with orders 0–2, then with three more (3–5). JAX's own compile records (the
   ``jax._src.dispatch`` logger's "Finished XLA compilation of …") give every
   program compiled, by name, and its seconds: the chunk programs
   (``_run_chunk``, ``_run_stacked``) are counted against the slice's shape
   buckets (D, C, N), the rest (initialisation, order, stage 2, …) beside them.
   The second pass shows what more streams cost: no chunk program.
2. **Layouts on this machine.** One bucket (the slice's first), ``MDLNB_BENCH_STREAMS``
   (default 4) streams, each layout compiled first, then timed (wall and this
   process's CPU seconds): ``sequential`` (the CPU default, bit-identical to solo
   runs, checked) against ``stacked`` (one vmapped program; max difference to
   the solo losses).
3. **Host work of the chunk loop.** One stream of that bucket with one batch per
   compiled call (``chunk_batches=1``, the most host work a run can have) and with
   the default chunking: the seconds inside the compiled program (timed to
   completion) against the whole :func:`mdlnb.prequential.run` call; the
   difference is the host's work (set-up, chunk inputs, transfers, assembling the
   matrix) per call.
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
import time
from collections import Counter
from pathlib import Path

from benchmarks._records import Headline
from benchmarks.bench_grid_limit import ENCODERS, TASKS, _env_tuple, _link_shared

CHUNK_PROGRAMS = ("_run_chunk", "_run_stacked")
_DONE = re.compile(r"Finished XLA compilation of (?:jit\()?([^) ]+)\)? in ([0-9.e+-]+) sec")


class CompileLog(logging.Handler):
    """Every XLA compilation JAX records in this process: ``(name, seconds)``."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records: list[tuple[str, float]] = []

    def emit(self, record):
        m = _DONE.search(record.getMessage())
        if m:
            self.records.append((m.group(1), float(m.group(2))))

    def __enter__(self):
        self.logger = logging.getLogger("jax._src.dispatch")
        self.level = self.logger.level
        self.logger.setLevel(logging.DEBUG)
        self.logger.addHandler(self)
        return self

    def __exit__(self, *exc):
        self.logger.removeHandler(self)
        self.logger.setLevel(self.level)

    def summary(self) -> dict:
        chunk = [(n, s) for n, s in self.records if n in CHUNK_PROGRAMS]
        rest = [(n, s) for n, s in self.records if n not in CHUNK_PROGRAMS]
        return {
            "programs": len(self.records),
            "seconds": round(sum(s for _, s in self.records), 2),
            "chunk_programs": len(chunk),
            "chunk_seconds": round(sum(s for _, s in chunk), 2),
            "other_programs": len(rest),
            "other_seconds": round(sum(s for _, s in rest), 2),
            "by_name": {
                name: [count, round(sum(s for n, s in self.records if n == name), 2)]
                for name, count in Counter(n for n, _ in self.records).most_common(12)
            },
        }


def _slice():
    from mdlnb.board._arguments import resolve_protocol
    from mdlnb.studies.encoder_grid import EncodersConfig
    from mdlnb.studies.transferability._features import prepare

    config = EncodersConfig.from_overrides(
        {
            "encoders": list(_env_tuple("MDLNB_BENCH_ENCODERS", ENCODERS)),
            "tasks": list(_env_tuple("MDLNB_BENCH_TASKS", TASKS)),
        }
    )
    inputs = prepare(config, progress=False, feature_progress=False)
    return config, resolve_protocol(config.protocol), [fs.train for fs in inputs.features]


def _pass(trains, plan, seeds) -> dict:
    """Stage 1 of every (task, seed) as one batch, stage 2 of each; compile records."""
    from mdlnb import prequential
    from mdlnb.api._report import Report

    streams = [(t, s) for t in trains for s in seeds]
    with CompileLog() as log:
        t0, c0 = time.perf_counter(), time.process_time()
        lms = prequential.run_streams(streams, protocol=plan, cache=False, progress=False)
        for lm in lms:
            Report.from_losses(lm, plan.strategy, warn=False)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {
        "streams": len(streams),
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        **log.summary(),
    }


def _layouts(train, plan, count: int) -> dict:
    """Part 2: ``count`` streams of one bucket under each layout, compiled first."""
    import numpy as np

    from mdlnb import prequential

    streams = [(train, 10 + s) for s in range(count)]
    solo = [
        prequential.run(train, protocol=plan, seed=s, cache=False, progress=False).losses
        for _, s in streams
    ]
    out = {"streams": count, "layout_default": prequential.default_layout()}
    for layout in ("sequential", "stacked"):
        prequential.run_streams(streams, protocol=plan, layout=layout, cache=False)  # compile
        t0, c0 = time.perf_counter(), time.process_time()
        lms = prequential.run_streams(streams, protocol=plan, layout=layout, cache=False)
        out[layout] = {
            "wall_s": round(time.perf_counter() - t0, 2),
            "cpu_s": round(time.process_time() - c0, 2),
            "bit_identical_to_solo": all(np.array_equal(lm.losses, a) for lm, a in zip(lms, solo)),
            "max_abs_diff_nats": float(
                max(np.abs(lm.losses - a).max() for lm, a in zip(lms, solo))
            ),
        }
    out["stacked_over_sequential_wall"] = round(
        out["stacked"]["wall_s"] / out["sequential"]["wall_s"], 3
    )
    return out


def _host_work(train, plan) -> dict:
    """Part 3: seconds in the compiled chunk program against the whole run."""
    import jax

    from mdlnb import prequential
    from mdlnb.prequential import _program

    inside = []
    orig = _program._run_chunk

    def timed(*args, **kwargs):
        t0 = time.perf_counter()
        out = jax.block_until_ready(orig(*args, **kwargs))
        inside.append(time.perf_counter() - t0)
        return out

    out = {}
    for chunk in (1, "auto"):
        prequential.run(
            train, protocol=plan, seed=20, cache=False, progress=False, chunk_batches=chunk
        )  # compile this chunking
        inside.clear()
        _program._run_chunk = timed
        try:
            t0 = time.perf_counter()
            prequential.run(
                train, protocol=plan, seed=21, cache=False, progress=False, chunk_batches=chunk
            )
            total = time.perf_counter() - t0
        finally:
            _program._run_chunk = orig
        out[f"chunk_{chunk}"] = {
            "calls": len(inside),
            "run_s": round(total, 3),
            "program_s": round(sum(inside), 3),
            "host_s_per_call": round((total - sum(inside)) / max(len(inside), 1), 4),
        }
    return out


#: the headline figures of ``main()``'s result (benchmarks/_records.py)
HEADLINE = [
    Headline(
        "first.chunk_programs",
        "chunk programs compiled for the grid slice (orders 0–2), empty compilation cache",
        "programs",
        "a small constant per shape bucket",
    ),
    Headline(
        "more_streams.chunk_programs",
        "chunk programs compiled for three more orders",
        "programs",
        "0",
    ),
]


def main() -> dict:
    from mdlnb.studies.pretraining._artifacts import _machine

    out = {**_machine(), "load_1min": os.getloadavg()[0]}
    print(
        f"{out['platform']}; {out['cores']} cores; flags {out['cpu_flags']}; "
        f"load {out['load_1min']:.1f}"
    )
    with tempfile.TemporaryDirectory(prefix="mdlnb-streams-bench-") as tmp:
        _link_shared(Path(tmp))
        old = os.environ.get("MDLNB_CACHE")
        os.environ["MDLNB_CACHE"] = tmp  # the compilation cache starts empty
        try:
            config, plan, trains = _slice()
            buckets = sorted({(t.x.shape[1], t.num_classes, t.n) for t in trains})
            out["buckets"] = [f"{d}x{c}x{n}" for d, c, n in buckets]
            out["first"] = _pass(trains, plan, (0, 1, 2))
            out["more_streams"] = _pass(trains, plan, (3, 4, 5))
            out["layouts"] = _layouts(
                trains[0], plan, int(os.environ.get("MDLNB_BENCH_STREAMS", "4"))
            )
            out["host_work"] = _host_work(trains[0], plan)
        finally:
            if old is None:
                os.environ.pop("MDLNB_CACHE", None)
            else:
                os.environ["MDLNB_CACHE"] = old
    f, m = out["first"], out["more_streams"]
    print(f"{len(buckets)} shape buckets {out['buckets']}")
    print(
        f"orders 0-2: {f['streams']} streams, {f['wall_s']} s; compiled {f['programs']} programs "
        f"in {f['seconds']} s: {f['chunk_programs']} chunk programs ({f['chunk_seconds']} s), "
        f"{f['other_programs']} others ({f['other_seconds']} s); {f['by_name']}"
    )
    print(
        f"orders 3-5: {m['streams']} more streams, {m['wall_s']} s; compiled {m['programs']} "
        f"programs, {m['chunk_programs']} of them chunk programs"
    )
    print(f"layouts: {out['layouts']}")
    print(f"host work: {out['host_work']}")
    return out


if __name__ == "__main__":
    main()
