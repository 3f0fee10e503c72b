"""Encoder study: the grid of (encoder × task) pairs behind the paper's main results.

Every pair is evaluated once (paper Sec. 4; App. A.3, A.4, A.7): MDL with
readout-model switching on the training split's features over several data
orders (codelength, best single expert, readout posterior, preferred readout,
switching frequency), and linear / best-MLP test accuracy under the App. A.4
validation search. The three notebooks slice the one tidy frame:

* ``objectives`` — Table 1a, Table 2, Fig. 6–7, App. A.7 (ranks, Friedman,
  Nemenyi CD, permutation variance);
* ``scaling`` — Table 1b, Fig. 8 (EfficientNet-Lite0/1/2, ViT S/M/L);
* ``readout_preference`` — Fig. 2, Fig. 9 (preferred readout, posteriors,
  switching frequency per task group).

    config = EncodersConfig.from_overrides({"tasks": ["digits", "textures"]})
    result = run(config)           # one unit of work per pair, cached, resumable
    result.average_ranks(result.select(size="S")); result.save("paper", parts={...})

Budget of the default grid (11 encoders × 5 tasks = 55 pairs, 3 orders;
target: the three notebooks ≤ 25 min on 2 CPU cores from a cold cache; the
second and third notebook read the cached grid). Measured on the shared
2-core machine under load ~15 (CPU seconds of the process; wall was 5–10×
higher there), then extrapolated — *not* a measured default run:

* stage 1 + 2, ``default`` board (24 experts), N = 500, 3 orders: 12.6–18.1 s
  for the first pair of a new (N, D, C) shape (XLA compile), 5.2 s after;
* the App. A.4 search (3 readouts × 4 settings × 300 steps): 12–13 s for a
  new shape, 3.4 s after;
* features: 1.2–1.7 s per (encoder, task) (800 images, small encoders);
* pretraining at batch 128, compile / per step: ResNet-S supervised
  29 s / 0.09 s, BYOL 73 s / 0.27 s (SimCLR: 65 s for compile + 20 steps);
  ViT-S supervised 8 s / 0.14 s, DINO 17 s / 0.45 s; ViT-M MAE 15 s /
  0.21 s, ViT-L MAE 20 s / 0.49 s.

Extrapolated: pretraining 8 encoders × 150 steps ≈ 540 s ≈ 9 min; pairs ≈ 20 new
(N, D, C) shapes × ~23 s + 35 × ~7 s ≈ 12 min; features and EfficientNet
compiles ≈ 2–3 min — ≈ 24–25 CPU minutes, less in wall time where XLA uses
both cores. If the lead's run is over budget: drop ``mae:vit_L:150`` or
lower the pretraining steps.

Modules: ``_config`` (EncodersConfig), ``_pair`` (one pair's measurements),
``_run`` (the driver), ``_tables`` and ``_plots`` (slices of the frame),
``_paper`` (published values), ``_result`` (EncodersResult).
"""

from mdlnb.studies.encoders._config import (OBJECTIVES_SUITE, SCALING_SUITE, EncodersConfig,
                                            describe_encoder)
from mdlnb.studies.encoders._pair import METRICS, compute_pair, log_bins, map_switches
from mdlnb.studies.encoders._result import EncodersResult
from mdlnb.studies.encoders._run import CACHE_VERSION, FRAME_COLUMNS, pair_key, run
from mdlnb.studies.encoders._tables import METHODS

#: The study's config class, under the name every study package uses (mdlnb.studies).
Config = EncodersConfig

__all__ = ["CACHE_VERSION", "Config", "EncodersConfig", "EncodersResult", "FRAME_COLUMNS",
           "METHODS", "METRICS", "OBJECTIVES_SUITE", "SCALING_SUITE", "compute_pair",
           "describe_encoder", "log_bins", "map_switches", "pair_key", "run"]
