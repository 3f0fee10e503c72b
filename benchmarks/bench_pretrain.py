"""Per-encoder pretraining time of the default profile on this machine.

For every encoder of the objectives and scaling studies under the default
profile (:data:`DEFAULT`: 300 steps, batch 128; the plan this benchmark
times, which no notebook runs) this compiles the training step, times ``MDLNB_BENCH_PRETRAIN_STEPS`` steps after
compilation, and extrapolates to the profile's step count; the sum is the
CPU budget of ``make reproduce`` for encoders (target ≤ 20 min on 2 cores).
Both wall seconds and process CPU seconds are reported: on a shared machine
the wall time is inflated by other load, while CPU seconds / cores bounds
the wall time on an idle machine from below.
``MDLNB_BENCH_PRETRAIN_FULL=1`` trains every encoder for real instead.
"""

from __future__ import annotations

import importlib
import os
import time
from typing import NamedTuple

from benchmarks._records import Headline


class Profile(NamedTuple):
    """How long to train the encoders of the two studies: ``objectives_study`` and
    ``scaling_study`` list ``(objective, arch, size)``."""

    steps: int
    batch_size: int
    learning_rate: float
    objectives_study: tuple[tuple[str, str, str], ...]
    scaling_study: tuple[tuple[str, str, str], ...]


def _study(size: str) -> tuple[tuple[str, str, str], ...]:
    return tuple(
        (o, "resnet", size) for o in ("random", "supervised", "simclr", "byol", "autoencoder")
    ) + tuple((o, "vit", size) for o in ("random", "supervised", "simclr", "dino", "mae"))


#: ≤ 20 min on a 2-core CPU for both studies.
DEFAULT = Profile(
    steps=300,
    batch_size=128,
    learning_rate=2e-3,
    objectives_study=_study("S"),
    scaling_study=tuple(("mae", "vit", s) for s in ("S", "M", "L")),
)


#: the headline figures of ``main()``'s result (benchmarks/_records.py)
HEADLINE = [
    Headline(
        "total_seconds",
        "pretraining every encoder of the default profile (extrapolated from timed steps)",
        "min",
        "≤ 20 min",
        scale=1 / 60,
    ),
]


def main() -> dict:
    import jax

    import mdlnb.data
    from mdlnb.encoders import archs

    P = importlib.import_module("mdlnb.encoders._pretrain")
    prof = DEFAULT
    data = mdlnb.data.load("fashion_mnist", split="train")
    full = os.environ.get("MDLNB_BENCH_PRETRAIN_FULL") == "1"
    measure = int(os.environ.get("MDLNB_BENCH_PRETRAIN_STEPS", "10"))
    plan = dict.fromkeys(prof.objectives_study + prof.scaling_study)
    rows = {}
    for objective, arch, size in plan:
        name = f"{objective}/{arch}_{size}"
        cfg = archs.config(arch, size)
        n_params = archs.param_count(archs.init(jax.random.PRNGKey(0), cfg))
        if objective == "random":
            rows[name] = {
                "params": n_params,
                "seconds_per_step": 0.0,
                "seconds_at_default": 0.0,
                "cpu_seconds_at_default": 0.0,
            }
            continue
        kw = dict(batch_size=prof.batch_size, learning_rate=prof.learning_rate, cache=False)
        if full:
            t0, c0 = time.perf_counter(), time.process_time()
            e = P.pretrain(objective, arch, size, data, prof.steps, 0, **kw)
            total, total_cpu = time.perf_counter() - t0, time.process_time() - c0
            cpu_per_step = total_cpu / prof.steps
            per_step = e.meta["train_seconds"] / prof.steps
            total_cpu = cpu_per_step = float("nan")
            final = e.meta["final_loss"]
        else:
            t0, c0 = time.perf_counter(), time.process_time()
            P.pretrain(objective, arch, size, data, measure, 0, chunk_steps=measure, **kw)
            first, first_cpu = time.perf_counter() - t0, time.process_time() - c0
            t0, c0 = time.perf_counter(), time.process_time()
            P.pretrain(objective, arch, size, data, measure, 1, chunk_steps=measure, **kw)
            per_step = (time.perf_counter() - t0) / measure  # compiled (memoized) program
            cpu_per_step = (time.process_time() - c0) / measure
            total = max(first - per_step * measure, 0.0) + per_step * prof.steps
            total_cpu = max(first_cpu - cpu_per_step * measure, 0.0) + cpu_per_step * prof.steps
            final = None
        rows[name] = {
            "params": n_params,
            "seconds_per_step": round(per_step, 4),
            "cpu_seconds_per_step": round(cpu_per_step, 4),
            "seconds_at_default": round(total, 1),
            "cpu_seconds_at_default": round(total_cpu, 1),
            "final_loss": final,
        }
        print(
            f"{name:24s} {n_params:>9,d} params  {per_step * 1e3:8.1f} ms/step "
            f"({cpu_per_step * 1e3:8.1f} CPU ms)  ≈{total:7.1f} s wall, {total_cpu:7.1f} CPU s "
            f"at {prof.steps} steps (batch {prof.batch_size})",
            flush=True,
        )
    total = sum(r["seconds_at_default"] for r in rows.values())
    total_cpu = sum(r["cpu_seconds_at_default"] for r in rows.values())
    cores = os.cpu_count() or 1
    print(
        f"total ≈ {total / 60:.1f} min wall here, {total_cpu / 60:.1f} CPU min "
        f"(≥ {total_cpu / 60 / cores:.1f} min on {cores} idle cores) for {len(rows)} encoders "
        f"({'trained' if full else 'extrapolated'}; target ≤ 20 min)"
    )
    return {
        "profile": "default",
        "steps": prof.steps,
        "batch_size": prof.batch_size,
        "extrapolated": not full,
        "encoders": rows,
        "total_seconds": round(total, 1),
        "total_cpu_seconds": round(total_cpu, 1),
    }


if __name__ == "__main__":
    main()
