"""The study's parameters: one frozen dataclass, the single source of its defaults."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from mdlnb import data
from mdlnb.encoders import efficientnet_lite
from mdlnb.studies._base import StudyConfig
from mdlnb.studies.transferability._encoders import build_encoder, parse_encoder


@dataclasses.dataclass(frozen=True)
class LayersConfig(StudyConfig):
    """Parameters of the layers study; the defaults are the CPU run of ``make reproduce``.

    Attributes:
      variant, resolution: EfficientNet-Lite variant (0, 1, 2) and input pixels
        (native 224; small is fast).
      task_names: tasks (:func:`mdlnb.data.names`), one per mini-VTAB group
        (natural, specialized, structured).
      size: examples per task (stratified subsample; None: all).
      which: layers, input to output (:func:`mdlnb.encoders.layer_names`).
      pooling: ``"mean"`` or ``"max"`` over positions.
      seeds: data orders, the same for every layer (paired; ≥ 3).
      protocol: board, B, switching (a preset name of :func:`mdlnb.compare`).
      points: log-spaced n of the curves.
      vit: a second encoder, a committed self-pretrained ViT as the
        transferability study spells it (``"<objective>:vit_<size>:trained"``,
        :func:`mdlnb.studies.transferability.parse_encoder`; its artifact in
        ``artifacts/encoders``), compared on the same tasks, orders and protocol;
        None: none.
      vit_which: its layers, input to output (``embed``, ``block0`` …).
    """

    variant: int = 0
    resolution: int = 64
    task_names: Sequence[str] = ("digits", "sci_patches", "dsprites_location")
    size: int | None = 800
    which: Sequence[str] = ("stage2", "stage4", "stage6", "head")
    pooling: str = "mean"
    seeds: Sequence[int] = (0, 1, 2)
    protocol: Any = "small"
    points: int = 60
    vit: str | None = "supervised:vit_S:trained"
    vit_which: Sequence[str] = ("embed", "block0", "block1")

    def __post_init__(self):
        for name in ("task_names", "which", "seeds", "vit_which"):
            value = getattr(self, name)
            if isinstance(value, str) or not isinstance(value, Sequence) or not value:
                raise ValueError(f"{name}: expected a non-empty list, got {value!r}")
            object.__setattr__(self, name, tuple(value))
        if self.pooling not in ("mean", "max"):
            raise ValueError(f"pooling: expected 'mean' or 'max', got {self.pooling!r}")
        if self.vit is not None:
            spec = self.vit_spec()
            if spec.arch != "vit" or not spec.trained:
                raise ValueError(
                    f"vit: expected a committed ViT '<objective>:vit_<size>:trained', "
                    f"got {self.vit!r}"
                )

    def vit_spec(self):
        """The parsed ``vit`` (:class:`mdlnb.studies.transferability.EncoderSpec`)."""
        if not isinstance(self.vit, str):
            raise ValueError(f"vit: expected a string or None, got {self.vit!r}")
        try:
            return parse_encoder(self.vit)
        except ValueError as e:
            raise ValueError(f"vit: {e}") from None

    def vit_encoder(self):
        """The committed ViT (checked against its SHA-256), or None when ``vit`` is None."""
        if self.vit is None:
            return None

        return build_encoder(self.vit_spec())

    def encoder(self):
        """The EfficientNet-Lite encoder (real weights)."""
        return efficientnet_lite(self.variant, resolution=self.resolution)

    def tasks(self) -> list:
        """The tasks, each a stratified subsample of ``size`` examples (seed 0)."""
        return [data.load(name, size=self.size, seed=0) for name in self.task_names]
