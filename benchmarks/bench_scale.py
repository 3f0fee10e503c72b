"""Stage-1 memory and slicing on the paper's ``vtab`` board (issue 13).

Default (minutes): XLA's memory analysis of the compiled chunk program for a
64-expert slice of ``vtab`` (1/8 of each architecture) on a 1,000-example
digits task: state, arguments, temporaries per expert, and the memory plan of
the whole board. ``python -m benchmarks.bench_scale rss K [N]`` measures the
peak RSS of one run with K experts (run it in a fresh process for each K);
``python -m benchmarks.bench_scale vtab [N]`` runs the full 4,608-expert
board in slices and reports the plan, the time of each slice and the peak
RSS (long on a CPU). ``python -m benchmarks.bench_scale slicing [K N S]``:
a K-expert slice of the board run in one pass and in S slices (wall times,
bit-identity). ``python -m benchmarks.bench_scale matmul_dtype [N]``:
stage 1 with bfloat16 matmuls against float32 (time, codelength).
"""

from __future__ import annotations

import json
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks._records import Headline

N = 1000


def _task(n=N):
    import mdlnb

    return mdlnb.data.load("digits").take(np.arange(n))


def vtab_slice(k: int):
    """The first ``k / 8`` experts of each of the 8 architectures of ``vtab``."""
    from mdlnb.board.experts import preset

    ex = preset("vtab")
    per = k // 8
    return [e for a in range(8) for e in ex[a * 576 : a * 576 + per]]


def _peak_rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def memory_analysis(k: int = 64, n: int = N) -> dict:
    """Bytes per expert of the compiled chunk program (XLA's own accounting)."""
    from mdlnb import prequential as pq
    from mdlnb.prequential import _groups, _inputs, _program

    task, board = _task(n), vtab_slice(k)
    d, c, b = task.features.shape[1], task.num_classes, 32
    groups = _groups._group(board, d, c)
    members, spec = _groups._members_spec(groups, board, 1, d, c, b, pq.CLIP_Z)
    state = tuple(_groups._init_group(ro, m, 0, d, c) for (ro, _), m in zip(groups, members))
    hypers = tuple(_groups._hypers(m) for m in members)
    state_b = sum(x.nbytes for x in jax.tree_util.tree_leaves(state))
    order = pq.stream_order(0, n)
    x, y = task.features[order].astype(np.float32), task.y[order].astype(np.int32)
    xs, _ = _inputs._chunk_inputs(
        x, y, 0, pq.DEFAULT_CHUNK_BATCHES, b, (np.zeros(d), np.zeros(d), 0.0), True
    )
    t0 = time.perf_counter()
    ma = (
        _program._run_chunk.lower(
            spec, state, hypers, jnp.asarray(x), jnp.asarray(y), jax.random.PRNGKey(0), xs
        )
        .compile()
        .memory_analysis()
    )
    out = {
        "experts": k,
        "groups": len(groups),
        "compile_s": round(time.perf_counter() - t0, 1),
        "state_mib_per_expert": state_b / k / 2**20,
        "argument_mib": ma.argument_size_in_bytes / 2**20,
        "temp_mib": ma.temp_size_in_bytes / 2**20,
        "alias_mib": ma.alias_size_in_bytes / 2**20,
        "peak_over_state": (ma.argument_size_in_bytes + ma.temp_size_in_bytes) / state_b,
    }
    print(
        f"vtab slice of {k} experts ({len(groups)} groups), N={n}: state "
        f"{out['state_mib_per_expert']:.2f} MiB/expert; XLA: arguments {out['argument_mib']:.0f} MiB, "
        f"temporaries {out['temp_mib']:.0f} MiB, output aliased {out['alias_mib']:.0f} MiB → "
        f"(arguments + temporaries) / state = {out['peak_over_state']:.2f} (target ≤ 1.5)"
    )
    return out


def rss(k: int, n: int = N) -> dict:
    from mdlnb import prequential as pq

    t0 = time.perf_counter()
    lm = pq.run(_task(n), vtab_slice(k), 32, 0, cache=False, memory_budget=None)
    out = {
        "experts": k,
        "n": n,
        "seconds": round(time.perf_counter() - t0, 1),
        "peak_rss_mib": _peak_rss_mib(),
        "total_nats": float(lm.losses.sum(dtype=np.float64)),
    }
    print(json.dumps(out))
    return out


def vtab(n: int = N, save: str | None = None) -> dict:
    """The whole ``vtab`` board (4,608 experts) under the ``paper-vtab`` protocol
    (B = 32, raw features) on an n-example task, sliced by the default memory
    plan. Cached and checkpointed (``$MDLNB_CACHE``): an interrupted run resumes
    at its last checkpoint. ``save``: write the assembled ``LossMatrix`` there
    (``bench_prune --replay=PATH`` replays pruning on it)."""
    import mdlnb
    from mdlnb import prequential as pq

    t0 = time.perf_counter()

    def progress(done, total, best):
        print(
            f"  {time.perf_counter() - t0:7.0f} s  {done}/{total}  best {best:.3f} nats/ex",
            flush=True,
        )

    lm = pq.run(_task(n), protocol=mdlnb.protocol("paper-vtab"), progress=progress)
    wall = time.perf_counter() - t0
    if save:
        lm.save(save)
    plan = lm.meta.get("memory_plan", {})
    out = {
        "n": n,
        "experts": lm.k,
        "wall_s": round(wall, 1),
        "slice_seconds": lm.meta.get("slice_seconds"),
        "plan": plan,
        "peak_rss_mib": _peak_rss_mib(),
        "devices": lm.meta.get("devices"),
        "best_expert_nats": lm.best_expert()[1],
    }
    sl = sum(out["slice_seconds"] or [wall])
    print(
        f"vtab, N={n}: {lm.k} experts in {wall:.0f} s (sum of slices {sl:.0f} s, "
        f"{wall / sl:.3f}x), peak RSS {out['peak_rss_mib']:.0f} MiB; {plan.get('line', 'one pass')}"
    )
    print(json.dumps(out, default=str))
    return out


def slicing_overhead(k: int = 128, n: int = 256, slices: int = 3) -> dict:
    """Wall time of a board run in ``slices`` slices against the same board in
    one pass (both compiled from scratch, no cache), and against the sum of
    its slices' own times: what slicing costs where one pass also fits."""
    from mdlnb import prequential as pq
    from mdlnb.prequential import _memory

    task, board = _task(n), vtab_slice(k)
    d, c = task.features.shape[1], task.num_classes
    one = _memory.plan(board, n, d, c, budget_bytes=1 << 50)
    total = sum(one.expert_bytes)
    budget = next(
        b
        for b in range(one.fixed_bytes + total // slices, one.fixed_bytes + total, 1 << 20)
        if len(_memory.plan(board, n, d, c, budget_bytes=b).slices) <= slices
    )
    t0 = time.perf_counter()
    lm1 = pq.run(task, board, 32, 0, cache=False, memory_budget=None)
    wall1 = time.perf_counter() - t0
    t0 = time.perf_counter()
    lms = pq.run(task, board, 32, 0, cache=False, memory_budget=budget)
    walls = time.perf_counter() - t0
    sl = lms.meta.get("slice_seconds") or [walls]
    out = {
        "experts": k,
        "n": n,
        "slices": len(sl),
        "one_pass_s": round(wall1, 1),
        "sliced_s": round(walls, 1),
        "slice_seconds": sl,
        "sliced_over_one_pass": walls / wall1,
        "sliced_over_sum": walls / sum(sl),
        "bit_identical": bool(np.array_equal(lm1.losses, lms.losses)),
    }
    print(
        f"{k} experts, N={n}: one pass {wall1:.1f} s; {len(sl)} slices {walls:.1f} s "
        f"({walls / wall1:.3f}x one pass; sum of slices {sum(sl):.1f} s, {walls / sum(sl):.3f}x); "
        f"bit-identical {out['bit_identical']}"
    )
    return out


def matmul_dtype(n: int = N, repeats: int = 2) -> dict:
    """Stage 1 with ``Protocol(matmul_dtype="bfloat16")`` against float32 on the
    same board and task: wall time (after a compiling run, interleaved, min of
    ``repeats``) and the codelength change. Board: the 64-expert ``vtab`` slice."""
    import mdlnb
    from mdlnb import prequential, switching

    task = _task(n)
    p32 = mdlnb.Protocol(board=vtab_slice(64), batch_size=32, standardize="none")
    p16 = p32.replace(matmul_dtype="bfloat16")
    best, lms = {}, {}
    for r in range(repeats + 1):
        for p in (p32, p16):
            t0 = time.perf_counter()
            lm = prequential.run(task, protocol=p, cache=False)
            dt = time.perf_counter() - t0
            if r:  # the first round compiles
                best[p.matmul_dtype] = min(best.get(p.matmul_dtype, dt), dt)
            lms[p.matmul_dtype] = lm
    a, b = (
        switching.codelength(lms[d].losses, p32.strategy).total_nats
        for d in ("float32", "bfloat16")
    )
    out = {
        "bf16_seconds": best["bfloat16"],
        "f32_seconds": best["float32"],
        "bf16_over_f32": best["bfloat16"] / best["float32"],
        "codelength_f32": a,
        "codelength_bf16": b,
        "codelength_rel_change": (b - a) / a,
    }
    print(
        f"matmul_dtype, 64-expert vtab slice on digits N={n}: float32 {best['float32']:.1f} s, "
        f"bfloat16 {best['bfloat16']:.1f} s ({out['bf16_over_f32']:.2f}x); codelength "
        f"{a:.2f} -> {b:.2f} nats ({out['codelength_rel_change']:+.2e} relative)"
    )
    return out


#: the headline figures of ``main()``'s result (benchmarks/_records.py)
HEADLINE = [
    Headline(
        "peak_over_state",
        "stage-1 chunk program's (arguments + temporaries) / state, 64-expert `vtab` slice",
        "×",
        "≤ 1.5",
    ),
]


def main() -> dict:
    from mdlnb.board.experts import preset
    from mdlnb.prequential import _memory

    out = memory_analysis()
    board = preset("vtab")
    plan = _memory.plan(board, N, 64, 10)
    out["vtab_plan"] = plan.describe()
    print(f"vtab on digits (N={N}, D=64) with the default budget: {plan.describe()}")
    return out


if __name__ == "__main__":
    args = sys.argv[1:]
    if args and args[0] == "rss":
        rss(int(args[1]), int(args[2]) if len(args) > 2 else N)
    elif args and args[0] == "vtab":
        vtab(int(args[1]) if len(args) > 1 else N, args[2] if len(args) > 2 else None)
    elif args and args[0] == "slicing":
        slicing_overhead(*(int(a) for a in args[1:4]))
    elif args and args[0] == "matmul_dtype":
        matmul_dtype(int(args[1]) if len(args) > 1 else N)
    else:
        main()
