"""Cost of the transferability study's scoring, per score group, and the batched fits.

One scoring unit of the default profile is one zoo on one (task, N/K): 31
checkpoints × 3 subsamples. Its softmax fits (LINEAR at β = N, the LINEAR grid,
PT-Gauss fixed and grid, LINEAR-VALID's two folds × three β: 9 fits per
checkpoint and subsample) run as one JAX program
(:func:`mdlnb.baselines.transfer._batched.linear_metrics`); the scipy path they replace
fits them one at a time. ``batched fits`` times both on the same stack of real
features (the committed encoders' on digits; the target: the batched program
faster than the scipy fits it replaces, in CPU seconds so that a loaded machine
does not decide it); the per-group rows time everything else per (checkpoint,
subsample) on synthetic features of the two zoos' shapes: N = 50, D = 64
(ViT-S) and D = 1,280 (EfficientNet-Lite, with a 1,000-way source classifier),
K = 10. MDL gets a new seed per call so that its on-disk loss-matrix cache is
not hit.
"""

from __future__ import annotations

import time

import numpy as np

from benchmarks._records import Headline


def _cpu(fn, repeat: int = 2) -> float:
    """Process CPU seconds per call of ``fn`` after a warm-up call (compilation)."""
    fn()
    t0 = time.process_time()
    for _ in range(repeat):
        fn()
    return (time.process_time() - t0) / repeat


def _features(rng, n: int, d: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    y = np.arange(n) % k
    f = rng.normal(size=(n, d)) + 2.0 * np.eye(k)[y] @ rng.normal(size=(k, d)) / np.sqrt(d)
    return f.astype(np.float32), y


def _real_sets(label: str, sets: int, n: int = 50):
    """``sets`` stratified subsamples of N = ``n`` digits images in the features of the
    committed ViT-S encoders (random, supervised, SimCLR, MAE) or of EfficientNet-Lite0/1
    at 32 px: (features (S, N, D), labels (S, N))."""
    from mdlnb import data
    from mdlnb.data import stratified_indices
    from mdlnb.encoders import efficientnet_lite, features
    from mdlnb.studies import pretraining

    task = data.load("digits", split="train")
    encs = (
        [pretraining.load_encoder(o, "vit", "S") for o in ("random", "supervised", "simclr", "mae")]
        if label == "vit_S"
        else [efficientnet_lite(v, resolution=32) for v in (0, 1)]
    )
    feats = [features(e, task).x for e in encs]
    subs = [stratified_indices(task.y, n, s) for s in range(-(-sets // len(encs)))]
    pairs = [(f[idx], task.y[idx]) for f in feats for idx in subs][:sets]
    return np.stack([p[0] for p in pairs]), np.stack([p[1] for p in pairs])


def batched_fits(label: str = "vit_S", sets: int = 32) -> dict:
    """CPU seconds of a stack of real feature sets' softmax-fit metrics (LINEAR,
    LINEAR-VALID, PT-Gauss, both grids): batched in JAX (9 fits per set: the three
    full-data fits serve LINEAR, PT-Gauss and both grids, plus LINEAR-VALID's 6;
    warm-started along β) against the scipy metrics one at a time as the study called
    them (14 fits per set), both after a warm-up call (compilation)."""
    from mdlnb.baselines import transfer
    from mdlnb.baselines.transfer._batched import linear_metrics

    x, y = _real_sets(label, sets)
    k = 10

    def scipy_path():  # what the study computed per subsample before
        for f, yy in zip(x, y):
            transfer.pactran_gaussian(f, yy, num_classes=k)  # 1 fit (β = 10N)
            transfer.linear(f, yy, num_classes=k)  # 1 fit (β = N)
            transfer.pactran_gaussian_grid(f, yy, num_classes=k)  # 3 fits (β grid)
            transfer.linear_valid(f, yy, num_classes=k)  # 6 fits (2 folds × β)
            for bf in (0.1, 1.0, 10.0):  # 3 fits (LINEAR grid)
                transfer.linear(f, yy, num_classes=k, beta_factor=bf)

    batched = _cpu(lambda: linear_metrics(x, y, num_classes=k), repeat=1)
    scipy = _cpu(scipy_path, repeat=1)
    return {
        "zoo": label,
        "sets": len(x),
        "feature_dim": int(x.shape[2]),
        "batched [cpu s]": batched,
        "scipy [cpu s]": scipy,
        "speedup": scipy / batched,
    }


#: the headline figures of ``main()``'s result (benchmarks/_records.py)
HEADLINE = [
    Headline(
        "effnet.seconds_per_subsample",
        "every transferability metric on one subsample, N = 50, D = 1,280",
        "s",
    ),
]


def main() -> dict:
    from mdlnb.baselines import transfer
    from mdlnb.studies import transferability as tr
    from mdlnb.studies.transferability._unit import FIT_METRICS

    rng = np.random.default_rng(0)
    out = {f"batched fits ({z})": batched_fits(z, n) for z, n in (("vit_S", 32), ("lite", 8))}
    print(out)
    for label, n, d, z in (("lite", 50, 1280, 1000), ("vit_S", 50, 64, 10)):
        k = 10
        f, y = _features(rng, n, d, k)
        sp = rng.dirichlet(np.ones(z), size=n)
        row = {}
        for name in transfer.METRICS:
            if name in FIT_METRICS:
                continue
            row[name] = _cpu(lambda: transfer.score_all(f, y, sp, num_classes=k, metrics=[name]))
        row["label-free (CL, ID, RankMe)"] = _cpu(lambda: tr.label_free_scores(f))
        seeds = iter(range(1000))  # a new seed per call: no loss-matrix cache hit
        row["mdl (small, B=4)"] = _cpu(
            lambda: tr.mdl_score(f, y, k, batch_size=4, seed=next(seeds))
        )
        total = sum(row.values())
        print(f"{label}: N={n} D={d}: {total:.2f} CPU s per (checkpoint, subsample)")
        for name, s in sorted(row.items(), key=lambda kv: -kv[1]):
            print(f"  {name:32s} {s * 1e3:8.1f} ms  {100 * s / total:5.1f} %")
        out[label] = {
            "cpu_seconds_per_subsample": total,
            **{f"{k_} [s]": v for k_, v in row.items()},
        }
    return out


if __name__ == "__main__":
    main()
