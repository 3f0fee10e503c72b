"""Stage-1 throughput: the vmapped board vs a matmul/bandwidth roofline and a Python loop.

Setting (brief): K = 64 experts on 10,000 × 64 features, C = 10, B = 32,
10 replay streams; boards (a) 64 × MLP 2×256, (b) linear + MLP 1–3 × 16
hyperparameter settings, (c) 64 × linear (where per-call overhead dominates
a Python loop). To keep the run to minutes, each board is timed on a
prefix of the stream (``PREFIX_BATCHES`` batches, after a warm-up run of the
same shapes so compilation is excluded) and extrapolated linearly to
10,000 examples: the cost per batch does not depend on the position in the
stream (replay samples B examples whatever the prefix length).

Numbers:
* training FLOP/s: useful FLOPs (forward + backward of every update of every
  expert, plus the coding forward pass) per second;
* ``vs_matmul``: that over a jitted batched matmul of the dominant layer
  shape (64 × (32×256)·(256×256)) in the same process;
* ``vs_roofline``: roofline time over measured time, the roofline of one
  update being max(FLOPs / matmul rate, state bytes / measured bandwidth),
  state bytes = 10 × 4 × P per expert (read params, Adam μ, ν, EMA, grads;
  write params, μ, ν, EMA, grads);
* ``vs_python_loop``: a Python loop over experts, each calling a jitted
  single-expert step (coding + its replay updates for one batch).
"""

from __future__ import annotations

import math
import time

import jax
import jax.numpy as jnp
import numpy as np

import mdlnb
from benchmarks._records import Headline
from benchmarks._timing import best_of
from mdlnb import prequential
from mdlnb.board import readouts
from mdlnb.board.experts import expert_grid

N, D, C, B, R, K = 10_000, 64, 10, 32, 10, 64
PREFIX_BATCHES = 24
LOOP_BATCHES = 3


def _task(n: int) -> mdlnb.Task:
    rng = np.random.default_rng(0)
    y = rng.integers(0, C, n)
    x = (rng.normal(size=(C, D))[y] + rng.normal(size=(n, D))).astype(np.float32)
    return mdlnb.Task("bench", x, y, C)


def _boards() -> dict[str, list]:
    lrs, wds, emas = [1e-4, 3e-4, 1e-3, 3e-3], [0.0, 1e-6, 1e-4, 1e-2], [1e-4, 1e-2, 0.1, 1.0]
    mlp = expert_grid(
        [readouts.mlp(2)], learning_rate=lrs, weight_decay=wds, ema=emas, replay_streams=R
    )
    mixed = expert_grid(
        readouts.board(3), learning_rate=lrs, weight_decay=wds, ema=[1.0], replay_streams=R
    )
    lin = expert_grid(
        [readouts.linear()], learning_rate=lrs, weight_decay=wds, ema=emas, replay_streams=R
    )
    assert len(mlp) == K and len(mixed) == K and len(lin) == K
    return {"mlp2x256": mlp, "mixed_linear_mlp1-3": mixed, "linear": lin}


def _update_flops(ro, b=B) -> int:
    sizes = ro.layer_sizes(D, C)
    fwd = sum(2 * b * i * o for i, o in sizes)
    wgrad = fwd
    xgrad = sum(2 * b * i * o for i, o in sizes[1:])  # no gradient w.r.t. the input features
    return fwd + wgrad + xgrad


def _matmul_rate() -> float:
    a = jax.random.normal(jax.random.PRNGKey(0), (K, B, 256))
    w = jax.random.normal(jax.random.PRNGKey(1), (K, 256, 256))
    f = jax.jit(lambda a, w: jnp.einsum("kbi,kij->kbj", a, w))
    reps = 50
    t = best_of(lambda: [f(a, w).block_until_ready() for _ in range(reps)])
    return reps * 2 * K * B * 256 * 256 / t


def _bandwidth() -> float:
    n = 8 * 2**20  # 32 MB per array, about the size of one state array of the MLP board
    x = jnp.ones((n,), jnp.float32)
    y = jnp.ones((n,), jnp.float32)
    f = jax.jit(lambda x, y: x * 0.999 + y)
    reps = 20
    t = best_of(lambda: [f(x, y).block_until_ready() for _ in range(reps)])
    return reps * 3 * 4 * n / t  # two reads, one write


def _vmapped(task, board) -> float:
    kw = dict(batch_size=B, cache=False, progress=False, chunk_batches=PREFIX_BATCHES // 2)
    prequential.run(task, board, **kw)  # compile
    t0 = time.perf_counter()
    prequential.run(task, board, **kw)
    return (time.perf_counter() - t0) / PREFIX_BATCHES


def _python_loop(task, board) -> float:
    """Seconds per batch for a Python loop over experts, each a jitted single-expert step."""
    from mdlnb.prequential import CLIP_Z
    from mdlnb.prequential._groups import _hypers, _init_group
    from mdlnb.prequential._inputs import _chunk_inputs
    from mdlnb.prequential._program import _run_chunk, _Spec

    feats, labels = task.features, task.y.astype(np.int32)
    x_dev, y_dev = jnp.asarray(feats), jnp.asarray(labels)
    key = jax.random.PRNGKey(0)
    states = [
        (
            _Spec(
                readouts=(e.readout,),
                max_replay=(e.replay_streams,),
                masked=(False,),
                block=(1,),
                standardize=(True,),
                calibrate=(False,),
                num_classes=C,
                batch_size=B,
                clip=CLIP_Z,
            ),
            _init_group(e.readout, [e], 0, D, C),
            _hypers([e]),
        )
        for e in board
    ]
    running = (np.zeros(D), np.zeros(D), 0.0)
    inputs = []
    for i in range(LOOP_BATCHES + 1):
        xs, running = _chunk_inputs(feats, labels, i, 1, B, running, True)
        inputs.append(xs)

    def go(batches):
        for xs in batches:
            for j, (spec, st, hp) in enumerate(states):
                st, out = _run_chunk(spec, (st,), (hp,), x_dev, y_dev, key, xs)
                states[j] = (spec, st[0], hp)
        out.block_until_ready()

    go(inputs[1:2])  # compile every architecture
    t0 = time.perf_counter()
    go(inputs[1:])
    return (time.perf_counter() - t0) / LOOP_BATCHES


#: the headline figures of ``main()``'s result (benchmarks/_records.py)
HEADLINE = [
    Headline(
        "mlp2x256.vs_matmul",
        "stage 1, 64 × MLP 2×256, of a batched matmul of its dominant layer",
        "%",
        scale=100,
    ),
]


def main() -> dict:
    matmul = _matmul_rate()
    bw = _bandwidth()
    print(
        f"batched matmul 64×(32×256)·(256×256): {matmul / 1e9:.1f} GFLOP/s; "
        f"streaming bandwidth {bw / 1e9:.1f} GB/s"
    )
    task = _task(PREFIX_BATCHES * B)
    result = {
        "matmul_gflops": matmul / 1e9,
        "bandwidth_gbs": bw / 1e9,
        "prefix_batches": PREFIX_BATCHES,
    }
    for name, board in _boards().items():
        per_batch = _vmapped(task, board)
        flops = sum(
            e.replay_streams * _update_flops(e.readout) + B * e.readout.flops(D, C) for e in board
        )
        nbytes = sum(e.replay_streams * 10 * 4 * e.readout.num_params(D, C) for e in board)
        roof = max(flops / matmul, nbytes / bw)
        rate = flops / per_batch
        loop = _python_loop(task, board)
        nb = math.ceil(N / B)
        r = {
            "s_per_batch": per_batch,
            "extrapolated_s_10k": per_batch * nb,
            "train_gflops": rate / 1e9,
            "vs_matmul": rate / matmul,
            "roofline_s_per_batch": roof,
            "roof_flop_s": flops / matmul,
            "roof_bytes_s": nbytes / bw,
            "vs_roofline": roof / per_batch,
            "loop_s_per_batch": loop,
            "vs_python_loop": loop / per_batch,
            "examples_experts_per_s": B * K / per_batch,
        }
        print(
            f"[{name}] {per_batch * 1e3:.1f} ms/batch (10k examples ≈ {r['extrapolated_s_10k']:.0f} s), "
            f"{r['train_gflops']:.1f} GFLOP/s = {r['vs_matmul']:.0%} of matmul; roofline "
            f"max({flops / 1e9:.2f} GFLOP / {matmul / 1e9:.0f} GFLOP/s = {r['roof_flop_s'] * 1e3:.1f} ms, "
            f"{nbytes / 1e6:.0f} MB / {bw / 1e9:.1f} GB/s = {r['roof_bytes_s'] * 1e3:.1f} ms) → "
            f"{r['vs_roofline']:.0%} of roofline; Python loop {loop * 1e3:.0f} ms/batch → "
            f"{r['vs_python_loop']:.1f}× faster; {r['examples_experts_per_s']:.0f} example·experts/s"
        )
        result[name] = r
    return result


if __name__ == "__main__":
    main()
