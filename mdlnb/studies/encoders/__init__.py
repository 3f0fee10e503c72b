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
