"""Task build times at default size, and vectorized rendering vs a per-image loop.

Numbers:
* ``build_s[name]``: seconds to build both splits of each registered task at
  its defaults, with the disk cache off and in-process file caches cleared
  (real datasets: decoding the files; procedural: sampling + rendering);
* ``cached_s[name]``: the same through ``load`` with the disk cache on, second
  call (procedural tasks only; a build under 2 s is not cached, so this can
  equal the build time);
* ``render_speedup_*``: one vectorized ``render`` call on 512 scenes over a
  Python loop calling it once per scene, same process.
Target: every task builds in < 5 s on a 2-core CPU; > 10× from vectorizing.
"""

from __future__ import annotations

import numpy as np

from benchmarks._records import Headline
from benchmarks._timing import best_of
from mdlnb import data
from mdlnb.data import clevr, dsprites, fashion_mnist, skimage_tasks, sklearn_tasks


def _clear() -> None:
    for f in (
        fashion_mnist._read_split,
        sklearn_tasks._digits,
        skimage_tasks.read_image,
        skimage_tasks._lfw,
        skimage_tasks._ihc_stain,
    ):
        f.cache_clear()


#: the headline figures of ``main()``'s result (benchmarks/_records.py)
HEADLINE = [
    Headline("max_build_s", "slowest task build at default size, disk cache off", "s", "< 5 s"),
    Headline(
        "render_speedup_dsprites",
        "dSprites: one vectorized render of 512 scenes over a per-scene loop",
        "×",
        "> 10×",
    ),
    Headline("render_speedup_clevr", "Clevr: the same", "×", "> 10×"),
]


def main() -> dict:
    import sklearn.datasets  # noqa: F401  (import time is not build time)

    build, cached = {}, {}
    for name in data.names():
        s = data.spec(name)
        opts = {"cache": False} if "cache" in s.options() else {}
        _clear()
        try:
            build[name] = round(best_of(lambda: s.build(seed=0, **opts), 1, warmup=False), 3)
        except FileNotFoundError as e:
            print(f"{name}: skipped ({e})")
            continue
        if "cache" in s.options():
            data.load(name)
            cached[name] = round(best_of(lambda: data.load(name), 1, warmup=False), 3)

    rng = np.random.default_rng(0)
    f = dsprites.sample_factors(rng, 512, 64)
    args = [f[k] for k in ("shape", "scale", "orientation", "x", "y")]
    vec = best_of(lambda: dsprites.render(*args, 64), 3, warmup=False)
    loop = best_of(
        lambda: [dsprites.render(*(a[i : i + 1] for a in args), 64) for i in range(512)],
        1,
        warmup=False,
    )
    scenes = clevr.sample_scenes(rng, 512, 64, 3, 10)
    grid = {k: v for k, v in scenes.items() if v.ndim == 2}
    cvec = best_of(lambda: clevr.render(grid, 64), 3, warmup=False)
    cloop = best_of(
        lambda: [clevr.render({k: v[i : i + 1] for k, v in grid.items()}, 64) for i in range(512)],
        1,
        warmup=False,
    )

    table = data.info().set_index("name")[["group", "n_train", "n_test", "classes", "image_shape"]]
    table["build_s"] = table.index.map(build)
    print(table.to_string())
    out = {
        "build_s": build,
        "cached_s": cached,
        "render_speedup_dsprites": round(loop / vec, 1),
        "render_speedup_clevr": round(cloop / cvec, 1),
        "max_build_s": max(build.values()),
    }
    print(
        f"render 512 scenes: dSprites {vec * 1e3:.0f} ms vectorized vs {loop * 1e3:.0f} ms looped "
        f"({out['render_speedup_dsprites']}×); Clevr {cvec * 1e3:.0f} ms vs {cloop * 1e3:.0f} ms "
        f"({out['render_speedup_clevr']}×)"
    )
    return out


if __name__ == "__main__":
    main()
