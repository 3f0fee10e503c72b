"""EfficientNet-Lite throughput on CPU, and what input resolution costs in accuracy.

1. Images/s, batch 64, for lite0/1/2 at 64 px and at the native resolution,
   with depthwise convolutions as shifted slices vs ``feature_group_count``
   (both in the same process, so their ratio is meaningful on a shared machine).
2. Lite0 ImageNet predictions of two real photos (scikit-image ``chelsea``,
   ``coffee``) at 32-224 px: whether top-1 is right and its probability.
"""

from __future__ import annotations

import time

import numpy as np

from benchmarks._records import Headline

BATCH = 64
CATS = (281, 282, 283, 284, 285)
ESPRESSO = 967


def _throughput(variant: int, resolution: int, depthwise: str, reps: int) -> tuple[float, float]:
    import jax

    from mdlnb.encoders.efficientnet import efficientnet_lite

    enc = efficientnet_lite(variant, resolution=resolution, depthwise=depthwise)
    fn = jax.jit(enc.apply)
    x = np.random.default_rng(0).uniform(size=(BATCH, resolution, resolution, 3)).astype(np.float32)
    t0 = time.perf_counter()
    fn(enc.params, x).block_until_ready()
    compile_s = time.perf_counter() - t0
    best = np.inf
    for _ in range(reps):
        t0 = time.perf_counter()
        fn(enc.params, x).block_until_ready()
        best = min(best, time.perf_counter() - t0)
    return BATCH / best, compile_s


def _resolution_sweep(resolutions=(32, 64, 96, 128, 160, 224)) -> list[dict]:
    import jax
    import skimage.data

    from mdlnb.encoders.efficientnet import efficientnet_lite, efficientnet_lite_logits

    def square(img):
        h, w = img.shape[:2]
        s = min(h, w)
        return img[(h - s) // 2 : (h - s) // 2 + s, (w - s) // 2 : (w - s) // 2 + s] / 255.0

    photos = [square(skimage.data.chelsea()), square(skimage.data.coffee())]
    rows = []
    for r in resolutions:
        enc = efficientnet_lite(0, resolution=r)
        x = np.stack(
            [np.asarray(jax.image.resize(p, (r, r, 3), "bilinear", antialias=True)) for p in photos]
        ).astype(np.float32)
        logits = efficientnet_lite_logits(enc, x).astype(np.float64)
        prob = np.exp(logits - logits.max(1, keepdims=True))
        prob /= prob.sum(1, keepdims=True)
        rows.append(
            {
                "resolution": r,
                "cat_top1": bool(logits[0].argmax() in CATS),
                "p_cat": float(prob[0, list(CATS)].sum()),
                "espresso_top1": bool(logits[1].argmax() == ESPRESSO),
                "p_espresso": float(prob[1, ESPRESSO]),
            }
        )
    return rows


#: the headline figures of ``main()``'s result (benchmarks/_records.py)
HEADLINE = [
    Headline(
        "throughput.0.slices_img_s",
        "EfficientNet-Lite0 at 64 px, batch 64 (depthwise as shifted slices)",
        "images/s",
    ),
]


def main() -> dict:
    from mdlnb.encoders.efficientnet import VARIANTS

    results = {"batch": BATCH, "throughput": [], "resolution_sweep": []}
    print(
        f"{'model':<8}{'px':>5}{'slices img/s':>14}{'grouped img/s':>15}{'speed-up':>10}{'compile s':>11}"
    )
    for variant in (0, 1, 2):
        for res in (64, VARIANTS[variant][2]):
            reps = 3 if res <= 96 else 1
            fast, c_fast = _throughput(variant, res, "slices", reps)
            slow, _ = _throughput(variant, res, "grouped", reps)
            row = {
                "variant": variant,
                "resolution": res,
                "slices_img_s": round(fast, 1),
                "grouped_img_s": round(slow, 1),
                "speedup": round(fast / slow, 2),
                "compile_s": round(c_fast, 2),
            }
            results["throughput"].append(row)
            print(
                f"lite{variant:<4}{res:>5}{fast:>14.1f}{slow:>15.1f}{fast / slow:>10.2f}{c_fast:>11.2f}",
                flush=True,
            )
    print(
        "\nlite0 on two photos vs input resolution (top-1 right?, probability of the right class)"
    )
    for row in _resolution_sweep():
        results["resolution_sweep"].append(row)
        print(
            f"  {row['resolution']:>4} px  cat {row['cat_top1']!s:<5} p={row['p_cat']:.3f}   "
            f"espresso {row['espresso_top1']!s:<5} p={row['p_espresso']:.3f}",
            flush=True,
        )
    return results


if __name__ == "__main__":
    main()
