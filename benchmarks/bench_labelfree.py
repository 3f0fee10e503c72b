"""Every label-free metric on N = 10,000 × D = 1,280 float32 features.

Target: a few seconds each on a 2-core CPU. The features are a mixture of
100 clusters in a 64-D latent space, mapped linearly to 1,280-D, plus
isotropic noise (so k-means, TwoNN and the spectra are non-trivial). JAX
k-means is timed twice: the first call includes compilation.
"""

from __future__ import annotations

import time

import numpy as np

from benchmarks._records import Headline
from mdlnb.baselines import labelfree as lf

N, D, LATENT, CLUSTERS = 10_000, 1_280, 64, 100


def _features(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(CLUSTERS, LATENT)) * 3.0
    latent = centres[rng.integers(0, CLUSTERS, N)] + rng.normal(size=(N, LATENT))
    z = latent @ rng.normal(size=(LATENT, D)) / np.sqrt(LATENT) + 0.3 * rng.normal(size=(N, D))
    view = z + 0.2 * rng.normal(size=(N, D))
    return z.astype(np.float32), view.astype(np.float32)


def _timed(fn):
    t0, c0 = time.perf_counter(), time.process_time()
    value = fn()
    return value, time.perf_counter() - t0, time.process_time() - c0


def _sklearn_neighbours(z):
    from sklearn.neighbors import NearestNeighbors

    dist, _ = NearestNeighbors(n_neighbors=3, algorithm="brute").fit(z).kneighbors(z)
    return float(np.mean(dist[:, 2] / np.maximum(dist[:, 1], 1e-30)))


#: the headline figures of ``main()``'s result (benchmarks/_records.py)
HEADLINE = [
    Headline("kmeans_s", "k-means, 100 clusters, N = 10,000 × D = 1,280, warm", "s", "a few s"),
    Headline("twonn_id_s", "TwoNN intrinsic dimension, same features", "s", "a few s"),
]


def main() -> dict:
    z, view = _features()
    runs = {
        "twonn_ratios": lambda: float(np.mean(lf.twonn_ratios(z))),
        "sklearn_brute_3nn": lambda: _sklearn_neighbours(z),
        "twonn_id": lambda: lf.twonn_id(z),
        "twonn_id_cosine": lambda: lf.twonn_id(z, metric="cosine"),
        "kmeans_first_call": lambda: lf.kmeans(z, CLUSTERS, 0).inertia,
        "kmeans": lambda: lf.kmeans(z, CLUSTERS, 1).inertia,
        "cluster_learnability": lambda: lf.cluster_learnability(z, 0),
        "alignment": lambda: lf.alignment(z, view),
        "uniformity": lambda: lf.uniformity(z),
        "coding_rate_reduction": lambda: lf.coding_rate_reduction(z, key=0),
        "rankme": lambda: lf.rankme(z),
    }
    out: dict = {"N": N, "D": D}
    print(f"label-free metrics on N={N:,} x D={D:,} float32 (wall s, process CPU s)")
    for name, fn in runs.items():
        value, sec, cpu = _timed(fn)
        out[f"{name}_s"] = round(sec, 3)
        out[f"{name}_cpu_s"] = round(cpu, 3)
        out[f"{name}_value"] = float(value)
        print(f"  {name:24s} {sec:7.2f} s  cpu {cpu:7.2f} s   value {value:.4f}")
    out["neighbours_vs_sklearn_wall_ratio"] = round(
        out["twonn_ratios_s"] / out["sklearn_brute_3nn_s"], 3
    )
    print(
        f"  TwoNN neighbour search / sklearn brute 3-NN (wall): "
        f"{out['neighbours_vs_sklearn_wall_ratio']:.2f}"
    )
    return out


if __name__ == "__main__":
    main()
