"""The loss-data study's parameters: one frozen dataclass, the only place defaults live.

The notebook ``loss_data`` has one parameter per field, of the same name and
default (``tests/test_studies_registry.py`` checks that they agree);
``notebooks/profiles.yaml`` changes them per profile and
:func:`mdlnb.tools.runner.check_profile` checks those changes against this class.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from mdlnb.core._checks import check_int
from mdlnb.studies._base import StudyConfig


@dataclasses.dataclass(frozen=True)
class LossDataConfig(StudyConfig):
    """Parameters of the loss-data study (SDL paper Fig. 2 and its table, at CPU scale).

    Attributes:
      train_size: the evaluation pool (Fashion-MNIST train split, stratified subsample).
      test_size: held-out examples that estimate the population loss (test split).
      representations: ``"pixels"`` or encoder strings of
        :func:`mdlnb.studies.transferability.parse_encoder`.
      pretrain_size: unlabelled training images a self-pretrained encoder trains on.
      num_sizes: log-uniform evaluation-set sizes from 10 to ``train_size``.
      seeds: permutations (+ initialisation + minibatches) per curve.
      probe_width, steps, batch_size, learning_rate: the MLP probe (2 hidden layers)
        and its Adam updates, the same at every n (App. C).
      early_stopping: fraction of each prefix held out to pick the checkpoint (0: off).
      evals: checkpoints (plus the initial parameters).
      eps_width, eps_steps: ε (Sec. 4.3): a larger probe on raw pixels, all of the pool.
      eps_scales: SDL / εSC at ε × these; figures use the last.
      refine_rounds: App. C.2's recursive grid-search rounds of εSC (0: none).
      seed: subsamples and the autoencoder.
    """

    train_size: int | None = 6000
    test_size: int | None = 2000
    representations: Sequence[str] = ("pixels", "lite0@64", "autoencoder:resnet_XS:300")
    pretrain_size: int | None = 5000
    num_sizes: int = 10
    seeds: int = 4
    probe_width: int = 128
    steps: int = 600
    batch_size: int = 64
    learning_rate: float = 1e-3
    early_stopping: float = 0.1
    evals: int = 10
    eps_width: int = 256
    eps_steps: int = 2000
    eps_scales: Sequence[float] = (1.0, 2.0, 3.0)
    refine_rounds: int = 1
    seed: int = 0

    def __post_init__(self):
        for name in ("representations", "eps_scales"):
            value = getattr(self, name)
            if isinstance(value, str) or not isinstance(value, Sequence) or not value:
                raise ValueError(f"{name}: expected a non-empty list, got {value!r}")
            object.__setattr__(self, name, tuple(value))
        for name in (
            "num_sizes",
            "seeds",
            "probe_width",
            "steps",
            "batch_size",
            "evals",
            "eps_width",
            "eps_steps",
        ):
            check_int(name, getattr(self, name), minimum=1)
        if not 0.0 <= self.early_stopping < 1.0:
            raise ValueError(f"early_stopping: must lie in [0, 1), got {self.early_stopping!r}")
