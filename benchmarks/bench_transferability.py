"""Cost of one subsample of the transferability study, per score group.

The default profile scores 6 encoders × 3 tasks × 3 ratios × 5 repeats = 270
subsamples, so the per-subsample cost decides whether it fits its ~15 min
CPU budget. Times are steady state (second call; the first compiles) on
synthetic features of the EfficientNet shape (N = 50, D = 1280, K = 10,
Z = 1000 source classes) and of a small self-pretrained encoder (D = 32).
MDL gets a new seed per call so that its on-disk loss-matrix cache is not hit.
"""

from __future__ import annotations

import time

import numpy as np

from benchmarks._records import Headline


def _time(fn, repeat: int = 2) -> float:
    fn()  # compile / warm up
    t0 = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - t0) / repeat


#: the headline figures of ``main()``'s result (benchmarks/_records.py)
HEADLINE = [
    Headline(
        "effnet.seconds_per_subsample",
        "every transferability metric on one subsample, N = 50, D = 1,280",
        "s",
    ),
]


def main() -> dict:
    from mdlnb import transfer
    from mdlnb.studies import transferability as tr

    rng = np.random.default_rng(0)
    out = {}
    for label, n, d, z in (("effnet", 50, 1280, 1000), ("small", 50, 32, None)):
        k = 10
        y = np.arange(n) % k
        f = (rng.normal(size=(n, d)) + 2.0 * np.eye(k)[y] @ rng.normal(size=(k, d))).astype(
            np.float32
        )
        sp = None if z is None else rng.dirichlet(np.ones(z), size=n)
        row = {}
        for name in transfer.METRICS:
            if sp is None and "source_probs" in transfer.METRICS[name].needs:
                continue
            row[name] = _time(lambda: transfer.score_all(f, y, sp, num_classes=k, metrics=[name]))
        row["grid (PT-Gauss 12 + LINEAR 3)"] = _time(lambda: tr.grid_scores(f, y, k))
        row["label-free (CL, ID, RankMe)"] = _time(lambda: tr.label_free_scores(f))
        seeds = iter(range(1000))  # a new seed per call: no loss-matrix cache hit
        row["mdl (small, B=4)"] = _time(
            lambda: tr.mdl_score(f, y, k, batch_size=4, seed=next(seeds))
        )
        total = sum(row.values())
        print(f"{label}: N={n} D={d}: {total:.2f} s per subsample")
        for name, s in sorted(row.items(), key=lambda kv: -kv[1]):
            print(f"  {name:32s} {s * 1e3:8.1f} ms  {100 * s / total:5.1f} %")
        out[label] = {"seconds_per_subsample": total, **{f"{k_} [s]": v for k_, v in row.items()}}
    return out


if __name__ == "__main__":
    main()
