"""Transferability metrics: wall time per metric at N=10,000, D=1,280, C=10, and LogME at N=100, D=2,048.

Each metric is timed on its second call (the first compiles the JAX
PACTran solvers / warms caches; that first-call time is reported too).
Target: < 1 s each except PT-Gauss-grid and N-LEEP. Source probabilities
have Z = 1,000 classes (ImageNet-sized head).
"""

from __future__ import annotations

import time

import numpy as np

from benchmarks._records import Headline


def _timed(fn):
    t0 = time.perf_counter()
    fn()
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    value = fn()
    return value, first, time.perf_counter() - t0


#: the headline figures of ``main()``'s result (benchmarks/_records.py)
HEADLINE = [
    Headline("logme.warm_s", "LogME, N = 10,000, D = 1,280, C = 10, warm", "s", "< 1 s"),
    Headline("linear.warm_s", "LINEAR, same features, warm", "s", "< 1 s"),
]


def main() -> dict:
    from mdlnb.baselines import transfer as T

    rng = np.random.default_rng(0)
    n, d, c, z = 10_000, 1_280, 10, 1_000
    y = rng.integers(0, c, n)
    mu = rng.normal(size=(c, d)) * 0.15
    x = (mu[y] + rng.normal(size=(n, d))).astype(np.float32)
    lg = rng.normal(size=(n, z)).astype(np.float32)
    lg[np.arange(n), y * (z // c)] += 3.0
    sp = T.source_probs_from_logits(lg)
    cases = {
        "leep": lambda: T.leep(sp, y),
        "nce": lambda: T.nce(sp, y),
        "hscore": lambda: T.hscore(x, y),
        "regularized_hscore": lambda: T.regularized_hscore(x, y),
        "logme": lambda: T.logme(x, y),
        "pactran_dirichlet": lambda: T.pactran_dirichlet(sp, y),
        "pactran_gamma": lambda: T.pactran_gamma(sp, y),
        "pactran_gaussian": lambda: T.pactran_gaussian(x, y),
        "linear": lambda: T.linear(x, y),
        "linear_valid": lambda: T.linear_valid(x, y),
        "pactran_gaussian_grid": lambda: T.pactran_gaussian_grid(x, y),
        "nleep": lambda: T.nleep(x, y, components="classes"),  # "paper" would fit 0.1N = 1,000
    }
    out = {}
    print(f"{'metric':24s} {'value':>12s} {'first s':>9s} {'warm s':>9s}")
    for name, fn in cases.items():
        value, first, warm = _timed(fn)
        shown = value if np.isscalar(value) else min(value.values())
        print(f"{name:24s} {shown:12.5f} {first:9.2f} {warm:9.2f}", flush=True)
        out[name] = {"first_s": round(first, 3), "warm_s": round(warm, 3)}
    xs = rng.normal(size=(100, 2048))
    ys = rng.integers(0, 10, 100)
    xs[:, :10] += np.eye(10)[ys]
    res, first, warm = _timed(lambda: T.logme_result(xs, ys))
    print(
        f"{'logme N=100 D=2048':24s} {res.value:12.5f} {first:9.2f} {warm:9.4f}  "
        f"({res.iterations} iterations, converged={res.converged})"
    )
    out["logme_n100_d2048"] = {"warm_s": round(warm, 4), "iterations": res.iterations}
    return out


if __name__ == "__main__":
    main()
