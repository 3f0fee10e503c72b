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

Budget and size of the default grid: :mod:`._power` (the power analysis that
chose 11 trained ViT encoders × 17 tasks × 3 orders at N = 1,000 on the
``deep`` board, the measured time of every run of it, and what the budget
cost).

The ``full`` profile (17 encoders at M size and the EfficientNets × the 9
tasks at full size × 3 orders × the ``paper-vtab`` board of 4,608 experts)
is meant for a GPU; no GPU was available to run it, so its cost
is a projection, not a measurement: stage 1 is 1.0·10¹⁸ FLOPs (6·N·Σ_k
replay_k·params_k + 2·N·Σ_k params_k over the board, feature dims 64–128 and
1,280) — about 6 h at a sustained 50 TFLOP/s on one H100, half a year at the
~70 GFLOP/s measured on the 2-core CPU; the board's state at D = 1,280 is
32 GiB (one slice on an 80 GB GPU, :func:`mdlnb.prequential.run` plans the
slices). ``benchmarks/RESULTS.md`` has the method.

Modules: ``_config`` (EncodersConfig), ``_pair`` (one pair's measurements),
``_run`` (the driver), ``_tables`` and ``_plots`` (slices of the frame),
``_paper`` (published values), ``_result`` (EncodersResult).
"""

from mdlnb.studies.encoder_grid._config import (
    OBJECTIVES_SUITE,
    SCALING_SUITE,
    EncodersConfig,
    describe_encoder,
)
from mdlnb.studies.encoder_grid._pair import METRICS, compute_pair, map_switches, stream_bins
from mdlnb.studies.encoder_grid._result import EncodersResult
from mdlnb.studies.encoder_grid._run import CACHE_VERSION, FRAME_COLUMNS, pair_key, run
from mdlnb.studies.encoder_grid._tables import METHODS

#: The study's config class, under the name every study package uses (mdlnb.studies).
Config = EncodersConfig

__all__ = [
    "CACHE_VERSION",
    "Config",
    "EncodersConfig",
    "EncodersResult",
    "FRAME_COLUMNS",
    "METHODS",
    "METRICS",
    "OBJECTIVES_SUITE",
    "SCALING_SUITE",
    "compute_pair",
    "describe_encoder",
    "map_switches",
    "pair_key",
    "run",
    "stream_bins",
]
