"""Which layer of an encoder codes the labels shortest, and from how many examples on?

The logic behind ``notebooks/layers.py``. For one encoder, some of its layers
(:func:`mdlnb.encoders.layers`) and a few tasks, :func:`run_encoder` calls
:func:`mdlnb.compare` once per task: every layer's pooled features coded by
MDL with readout switching under one protocol, over the same ``S`` data
orders (paired). :class:`LayersResult` turns the comparisons into

* ``table()``: per (task, layer) the codelength, mean and std over orders,
  the paired difference to the encoder's own features (its last layer) and
  to the best layer, the rank, how many orders rank it first, the preferred
  readout;
* ``along_n(points)``: per (task, layer, n) the cumulative codelength minus
  the reference layer's on the same stream, mean/std/min/max over orders —
  which layer is ahead after n examples;
* ``leaders()``: per task, the layer ahead (lowest mean cumulative codelength)
  at each n of the grid, and the n from which the final best layer stays ahead;
* ``findings()``: the prose of the notebook, computed from the above;
* ``plot()``: bits/example ± sd per layer, and the paired difference along n.

:class:`LayersConfig` holds the notebook's parameters and their defaults: an
ImageNet EfficientNet-Lite and, optionally, one self-pretrained ViT (a
committed artifact of :mod:`mdlnb.studies.pretraining`), on one task per
mini-VTAB group (natural, specialized, structured). ``run(config)``, as in every
study, runs both on the same tasks, orders and protocol and returns a
:class:`LayersStudy` (:func:`run_encoder` takes one encoder and tasks directly;
``run(encoder, tasks, ...)`` still does, and :func:`run_config` is ``run`` without a bar).

No paper states which layer of EfficientNet-Lite or of these small ViTs codes
these tasks best, so the notebook reports findings with their spread, not claims.
"""

from __future__ import annotations

from mdlnb.studies.layers._config import LayersConfig
from mdlnb.studies.layers._result import LayersResult
from mdlnb.studies.layers._run import LayersStudy, run, run_config, run_encoder

#: The study's config class, under the name every study package uses (mdlnb.studies).
Config = LayersConfig

__all__ = [
    "Config",
    "LayersConfig",
    "LayersResult",
    "LayersStudy",
    "run",
    "run_config",
    "run_encoder",
]
