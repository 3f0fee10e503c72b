"""Loss-data curve throughput: SDL paper App. C.1's job on this machine.

Job: raw Fashion-MNIST pixels (784-d, the 60,000-image training split as the
pool, 2,000 test images), MLP 2×512 probe, Adam 1e-4, batch 64, 20
log-uniform sizes × 8 seeds = 160 probes, the same number of updates at every
size, all in one vmapped compiled call (:func:`mdlnb.baselines.curves.loss_data_curve`).

The per-update cost is isolated from compilation and the held-out evaluation
by timing the same call at two step counts (each after a warm-up call of the
same shapes) and differencing: ``s_per_update = (t(S2) − t(S1)) / (S2 − S1)``.

Numbers:
* ``train_gflops``: useful FLOPs of one update of all 160 probes (forward,
  weight gradients, input gradients of the hidden layers) per second;
* ``vs_matmul``: that over a jitted batched matmul of the dominant layer shape
  (160 × (64×784)·(784×512)) in the same process (target ≥ 50 %);
* ``s_per_1000_updates``: wall time of 1,000 updates of the whole job, the
  unit in which the paper's "about one minute on one GPU for 20 sizes × 1
  seed" can be compared.
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp

from benchmarks._records import Headline
from benchmarks._timing import best_of
from mdlnb import data
from mdlnb.baselines import curves
from mdlnb.board import readouts

SIZES, SEEDS, B, WIDTH, D, C = 20, 8, 64, 512, 784, 10
STEPS = (10, 40)


def _update_flops(ro, b: int = B) -> int:
    sizes = ro.layer_sizes(D, C)
    fwd = sum(2 * b * i * o for i, o in sizes)
    return fwd + fwd + sum(2 * b * i * o for i, o in sizes[1:])


def _matmul_rate(p: int) -> float:
    a = jax.random.normal(jax.random.PRNGKey(0), (p, B, D))
    w = jax.random.normal(jax.random.PRNGKey(1), (p, D, WIDTH))
    f = jax.jit(lambda a, w: jnp.einsum("pbi,pij->pbj", a, w))
    reps = 10
    t = best_of(lambda: [f(a, w).block_until_ready() for _ in range(reps)])
    return reps * 2 * p * B * D * WIDTH / t


#: the headline figures of ``main()``'s result (benchmarks/_records.py)
HEADLINE = [
    Headline(
        "vs_matmul",
        "loss-data curve job (160 MLP probes), of a batched matmul of its dominant layer",
        "%",
        "≥ 50 %",
        scale=100,
    ),
]


def main() -> dict:
    pool = data.load("fashion_mnist", split="train")
    test = data.load("fashion_mnist", split="test", size=2000, seed=0)
    ro = readouts.mlp(2, WIDTH)
    grid = curves.log_grid(pool.n, SIZES)
    p = len(grid) * SEEDS
    kw = dict(test=test, sizes=grid, seeds=SEEDS, batch_size=B, learning_rate=1e-4)
    times = {}
    for s in STEPS:
        curves.loss_data_curve(pool, ro, steps=s, **kw)  # compile
        t0 = time.perf_counter()
        curves.loss_data_curve(pool, ro, steps=s, **kw)
        times[s] = time.perf_counter() - t0
    per_update = (times[STEPS[1]] - times[STEPS[0]]) / (STEPS[1] - STEPS[0])
    flops = p * _update_flops(ro)
    rate = flops / per_update
    matmul = _matmul_rate(p)
    r = {
        "probes": p,
        "sizes": len(grid),
        "seeds": SEEDS,
        "batch": B,
        "width": WIDTH,
        "s_per_update": per_update,
        "s_per_1000_updates": 1000 * per_update,
        "train_gflops": rate / 1e9,
        "matmul_gflops": matmul / 1e9,
        "vs_matmul": rate / matmul,
        "call_s": {str(k): v for k, v in times.items()},
        "device": str(jax.devices()[0]),
    }
    print(
        f"{p} probes (MLP 2x{WIDTH}, B={B}) on {jax.devices()[0]}: "
        f"{per_update * 1e3:.1f} ms/update of all probes → 1,000 updates ≈ "
        f"{r['s_per_1000_updates']:.0f} s; {r['train_gflops']:.1f} GFLOP/s = "
        f"{r['vs_matmul']:.0%} of the same-shape batched matmul ({r['matmul_gflops']:.1f} GFLOP/s)"
    )
    return r


if __name__ == "__main__":
    main()
