"""The study's parameters: one frozen dataclass, the single source of its defaults."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from mdlnb.core._checks import check_int
from mdlnb.encoders import efficientnet_lite
from mdlnb.studies._base import StudyConfig


@dataclasses.dataclass(frozen=True)
class BeyondConfig(StudyConfig):
    """Parameters of the study; the defaults are the CPU run of ``make reproduce``.

    Attributes:
      image_task: a dSprites regression task (:func:`mdlnb.data.names` with
        ``kind="regression"``); ``diabetes`` is always coded, whole.
      image_size: examples of ``image_task`` (a seeded subsample; None: all).
      pool: block-averaged pixels on a ``pool × pool`` grid (one representation).
      variant, resolution: the EfficientNet-Lite encoder (ImageNet weights) of
        both parts (input pixels; small is fast).
      layer: its layer whose mean-pooled features represent ``image_task``
        (:func:`mdlnb.encoders.layer_names`; ``"head"``: its own 1280 features).
        An intermediate stage by default: its width stays below N, where LogME's
        evidence is finite (with D ≥ N the features can fit the targets exactly).
      calibration_task: a classification task; its first ``calibration_size``
        examples (split ``all``; None: all) are coded.
      seeds: data orders, the same for every representation and setting (≥ 3).
      regression_protocol, calibration_protocol: protocol presets of the two parts
        (:func:`mdlnb.protocol`).
      points: log-spaced n of the codelength curves.
    """

    image_task: str = "dsprites_x_reg"
    image_size: int | None = 400
    pool: int = 8
    variant: int = 0
    resolution: int = 64
    layer: str = "stage5"
    calibration_task: str = "digits"
    calibration_size: int | None = 600
    seeds: Sequence[int] = (0, 1, 2)
    regression_protocol: str = "small"
    calibration_protocol: str = "default"
    points: int = 60

    def __post_init__(self):
        seeds = self.seeds
        if isinstance(seeds, str) or not isinstance(seeds, Sequence) or len(seeds) < 3:
            raise ValueError(f"seeds: expected a list of >= 3 orders, got {seeds!r}")
        object.__setattr__(self, "seeds", tuple(int(s) for s in seeds))
        object.__setattr__(self, "pool", check_int("pool", self.pool, minimum=1))
        for name in ("image_size", "calibration_size"):
            object.__setattr__(
                self, name, check_int(name, getattr(self, name), minimum=2, allow_none=True)
            )

    def encoder(self):
        """The EfficientNet-Lite encoder (real weights)."""
        return efficientnet_lite(self.variant, resolution=self.resolution)

    @property
    def encoder_label(self) -> str:
        return f"lite{self.variant}@{self.resolution}"
