"""The GPU figures of issue 38 (many streams, one program), one part per process.

    python3 -m benchmarks.gpu_check PART     # env | evaluate | bits | long | grid

Run by ``benchmarks/gpu_check.sh`` on an H100/H200 (see there); each part prints one
``RESULT <part> <json>`` line and writes ``$OUT/gpu_<part>.json``:

* ``env``: jax version, devices, the default stream layout (``stacked`` on a GPU).
* ``evaluate``: ``mdlnb.evaluate`` on digits (default protocol), first call in a fresh
  process and warm (the issue: 15.4 s and 0.13 s on an H200 before).
* ``bits``: three digits streams (``deep`` board, D = 64) solo (:func:`mdlnb.prequential.run`)
  and stacked (:func:`mdlnb.prequential.run_streams`): whether the stacked losses are
  the solo ones bit for bit on this device, and the largest difference.
* ``long``: ``bench_stage1_limit`` (K = 64 MLPs, N = 10,000): mdlnb's stage 1 against
  the same-shape matmul limit (the issue: 25 % before; target ≥ 60 %).
* ``grid``: the encoder study on ``MDLNB_GPU_TASKS`` (default the four tasks of the
  H200 run in benchmarks/RESULTS.md, 2026-11-26: digits, fashion_mnist,
  dsprites_shape, clevr_count; 11 encoders × 4 tasks = 44 pairs × 3 orders) end to
  end from an empty cache, ``workers=1``: the study's seconds (features, pairs, MDL,
  accuracy), stage 1 of all pairs as one batch of stacked streams (its seconds,
  programs compiled, compile seconds), and the ratio to the quiet 2-core CPU's
  939 s for the same 44 pairs (RESULTS.md, 2026-11-26; target ≥ 30×; the H200 took
  358.6 s before).
"""

from __future__ import annotations

import json
import os
import sys
import time

from mdlnb.data import fashion_mnist

#: the 2-core CPU's wall seconds for these 44 pairs (benchmarks/RESULTS.md, 2026-11-26)
CPU_44_PAIRS_S = 939.0
H200_BEFORE_S = 358.6
TASKS = ("digits", "fashion_mnist", "dsprites_shape", "clevr_count")


def _emit(part: str, result: dict) -> None:
    line = json.dumps(result, default=str)
    print(f"RESULT {part} {line}", flush=True)
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, f"gpu_{part}.json"), "w") as f:
            f.write(line)


def env() -> dict:
    import jax

    from mdlnb import prequential

    return {
        "jax": jax.__version__,
        "devices": [str(d) for d in jax.devices()],
        "backend": jax.default_backend(),
        "layout": prequential.default_layout(),
        "block_bytes": prequential.block_bytes(),
    }


def evaluate() -> dict:
    t0 = time.perf_counter()
    import mdlnb
    from mdlnb import data

    task = data.load("digits")
    t1 = time.perf_counter()
    first = mdlnb.evaluate(task, cache=False)
    t2 = time.perf_counter()
    warm = mdlnb.evaluate(task, cache=False)
    t3 = time.perf_counter()
    return {
        "import_and_load_s": round(t1 - t0, 2),
        "first_s": round(t2 - t1, 2),
        "warm_s": round(t3 - t2, 3),
        "total_nats": first.total_nats,
        "same_on_second_call": first.total_nats == warm.total_nats,
        "devices": first.devices,
    }


def bits() -> dict:
    import numpy as np

    from mdlnb import data, prequential

    t = data.load("digits", size=int(os.environ.get("MDLNB_GPU_BITS_N", "1000")), seed=0)
    task = type(t)("digits-pixels", t.x.reshape(t.n, -1).astype(np.float32), t.y, t.num_classes)
    streams = [(task, s) for s in (0, 1, 2)]
    solo = [
        prequential.run(task, protocol="deep", seed=s, cache=False, progress=False)
        for _, s in streams
    ]
    t0 = time.perf_counter()
    stacked = prequential.run_streams(streams, protocol="deep", layout="stacked", cache=False)
    t1 = time.perf_counter()
    prequential.run_streams(streams, protocol="deep", layout="stacked", cache=False)
    t2 = time.perf_counter()
    for _, s in streams:
        prequential.run(task, protocol="deep", seed=s, cache=False, progress=False)
    t3 = time.perf_counter()
    diff = [float(np.abs(a.losses - b.losses).max()) for a, b in zip(solo, stacked)]
    rel = [
        abs(float(a.losses.sum(0).min()) - float(b.losses.sum(0).min()))
        / float(a.losses.sum(0).min())
        for a, b in zip(solo, stacked)
    ]
    return {
        "bit_identical": [bool(np.array_equal(a.losses, b.losses)) for a, b in zip(solo, stacked)],
        "max_abs_diff_nats": diff,
        "best_expert_rel_diff": rel,
        "width": stacked[0].meta.get("streams"),
        "stacked_first_s": round(t1 - t0, 2),
        "stacked_warm_s": round(t2 - t1, 3),
        "solo_warm_3_streams_s": round(t3 - t2, 3),
    }


def long() -> dict:
    os.environ.setdefault("MDLNB_BENCH_N", "10000")
    os.environ.setdefault("MDLNB_BENCH_REPS", "2")
    from benchmarks import bench_stage1_limit

    return bench_stage1_limit.main()


def grid() -> dict:
    from benchmarks.bench_streams import CompileLog
    from mdlnb.studies import encoder_grid
    from mdlnb.studies.encoder_grid import _run

    tasks = [t for t in os.environ.get("MDLNB_GPU_TASKS", ",".join(TASKS)).split(",") if t]
    config = encoder_grid.EncodersConfig.from_overrides({"tasks": tasks, "workers": 1})
    timing = {}
    batch = _run._stage1_batch

    def timed(*args, **kwargs):
        with CompileLog() as log:
            t0 = time.perf_counter()
            out = batch(*args, **kwargs)
            timing["stage1_batch_s"] = round(time.perf_counter() - t0, 2)
        timing["stage1_compiles"] = log.summary()
        timing["stage1_streams"] = sum(len(v) for v in out.values())
        print(f"stage 1 of the grid: {json.dumps(timing, default=str)}", flush=True)
        return out

    _run._stage1_batch = timed
    t0 = time.perf_counter()
    result = encoder_grid.run(config, progress=False)
    wall = time.perf_counter() - t0
    pairs = len(config.encoders) * len(tasks)
    out = {
        "tasks": tasks,
        "pairs": pairs,
        "wall_s": round(wall, 2),
        "seconds": result.seconds,
        **timing,
    }
    if sorted(tasks) == sorted(TASKS):
        pairs_s = result.seconds.get("pairs", wall)
        out.update(
            {
                "cpu_44_pairs_s": CPU_44_PAIRS_S,
                "h200_before_s": H200_BEFORE_S,
                "x_cpu_end_to_end": round(CPU_44_PAIRS_S / wall, 2),
                "x_cpu_pairs_only": round(CPU_44_PAIRS_S / pairs_s, 2),
            }
        )
    return out


TRAIN_CUT = 40_000  # training images kept by ``pack`` (the 64 MiB carry limit)
#: the four idx files, without ``.gz``, in the loader's order (train images, labels, test …)
FILES = tuple(n.removesuffix(".gz") for pair in fashion_mnist.FILES.values() for n in pair)


def pack(dest: str, src: str = str(fashion_mnist.ROOT), cut: int = TRAIN_CUT) -> None:
    """Write Debian's Fashion-MNIST to ``dest`` as xz, the training split cut to ``cut``."""
    import gzip
    import lzma

    os.makedirs(dest, exist_ok=True)
    for name in FILES:
        with gzip.open(os.path.join(src, name + ".gz"), "rb") as f:
            raw = f.read()
        if name.startswith("train"):
            header = 16 if "images" in name else 8
            per = 784 if "images" in name else 1
            kept = raw[header : header + int(cut) * per]
            raw = raw[:4] + int(cut).to_bytes(4, "big") + raw[8:header] + kept
        with lzma.open(os.path.join(dest, name + ".xz"), "wb", preset=9 | lzma.PRESET_EXTREME) as f:
            f.write(raw)


def unpack(src: str, dest: str) -> None:
    """Turn ``pack``'s xz files into the gzipped idx files the loader reads."""
    import gzip
    import lzma

    os.makedirs(dest, exist_ok=True)
    for name in FILES:
        with lzma.open(os.path.join(src, name + ".xz"), "rb") as f:
            raw = f.read()
        with gzip.open(os.path.join(dest, name + ".gz"), "wb", compresslevel=1) as f:
            f.write(raw)
    print(f"Fashion-MNIST unpacked to {dest}", flush=True)


PARTS = {"env": env, "evaluate": evaluate, "bits": bits, "long": long, "grid": grid}


if __name__ == "__main__":
    part = sys.argv[1] if len(sys.argv) > 1 else "env"
    if part in ("pack", "unpack"):
        {"pack": pack, "unpack": unpack}[part](*sys.argv[2:])
        raise SystemExit(0)
    if part not in PARTS:
        raise SystemExit(f"part: one of {sorted(PARTS)}, got {part!r}")
    _emit(part, PARTS[part]())
