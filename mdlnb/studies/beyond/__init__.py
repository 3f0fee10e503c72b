"""MDL beyond class labels and plain experts: real-valued targets, calibrated experts.

The logic behind ``notebooks/beyond_classification.py``: real-valued targets and calibrated experts.

**Regression.** A few representations of two regression tasks — ``diabetes``
(its 10 clinical features, their top-2 principal components, Gaussian noise of
the same width) and one dSprites factor (``dsprites_x_reg`` by default:
block-averaged pixels, EfficientNet-Lite features, noise) — each coded by
:func:`mdlnb.compare` (Gaussian readouts, stage 1 + switching) over the same
``S`` orders. The code is a *density* codelength, −Σ log p(y_t | …) in nats:
a codelength only up to the targets' quantisation (−log δ per example and
output, :mod:`mdlnb.core._targets`), so its numbers compare representations of the
same targets and nothing else. Beside it, LogME's regression evidence
(:func:`mdlnb.baselines.transfer.logme_regression`, nats/example, higher is better; on
z-scored features and centred targets) ranks the same representations by an
independent route (Bayesian linear regression's marginal likelihood).

**Calibration.** On the first ``calibration_size`` examples of a classification
task, as raw pixels and as EfficientNet-Lite features, the board of
``calibration_protocol`` is run without and with ``calibrate=True``
(:func:`mdlnb.protocol`; β_t fitted on the examples coded before batch t) per
order (:func:`mdlnb.evaluate`, one call per order and setting). Per
representation: the paired difference on − off of the switching code and of
the best single expert, mean with a 95 % t-interval over orders.

:class:`BeyondResult` turns both into tables (``tables()``), figures
(``figures()``), prose computed from them (``findings()``) and paper files
(``save()``). The papers make no claim about either, so there are none here.
"""

from __future__ import annotations

from mdlnb.studies.beyond._config import BeyondConfig
from mdlnb.studies.beyond._data import (
    calibration_tasks,
    logme,
    pooled_pixels,
    regression_representations,
    t_interval,
)
from mdlnb.studies.beyond._result import BeyondResult
from mdlnb.studies.beyond._run import run

Config = BeyondConfig

__all__ = [
    "BeyondConfig",
    "BeyondResult",
    "Config",
    "calibration_tasks",
    "logme",
    "pooled_pixels",
    "regression_representations",
    "run",
    "t_interval",
]
