"""The switching study's parameters: one frozen dataclass, the only place defaults live.

The notebook ``switching_strategies`` has one parameter per field, of the same
name and default (``tests/test_studies_registry.py`` checks that they agree);
``notebooks/profiles.yaml`` changes them per profile and
:func:`mdlnb.tools.runner.check_profile` checks those changes against this class.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from mdlnb.board import experts, readouts
from mdlnb.core._checks import check_int
from mdlnb.studies._base import StudyConfig


@dataclasses.dataclass(frozen=True)
class SwitchingConfig(StudyConfig):
    """Parameters of the switching-strategy study (paper App. A.6, Fig. 5; App. A.1).

    The defaults are the CPU run of ``make reproduce``.

    Attributes:
      pairs: ``"<encoder>/<task>"`` strings; the encoder ``"pixels"`` is the raw
        input, any other an encoder of
        :func:`mdlnb.studies.transferability.parse_encoder` (``"lite0@32"``).
      size: a stratified subsample of each task (None: every example).
      max_hidden_layers, width: the board :func:`mdlnb.board.readouts.board` (linear +
        MLPs of 1..max_hidden_layers hidden layers of ``width`` units; the
        paper's VTAB board, Table 6, has 7 layers of 256).
      learning_rates, emas, replay_streams: the hyperparameter grid of
        :func:`mdlnb.board.experts.expert_grid` over that board.
      batch_size: B of stage 1 (the paper's 32 for frozen encoders, App. A.5.1).
      seeds: example orders; every number is spread over them.
      m: fixed share's rate α_t = (m − 1)/t (the paper's VTAB setting, 11).
      ms, alphas: fixed share's sensitivity to m and to a constant α.
      points: log-spaced sample sizes at which curves are stored.
    """

    pairs: Sequence[str] = (
        "pixels/digits",
        "lite0@32/digits",
        "pixels/fashion_mnist",
        "lite0@32/fashion_mnist",
        "pixels/textures",
        "lite0@32/textures",
    )
    size: int | None = 1000
    max_hidden_layers: int = 7
    width: int = 64
    learning_rates: Sequence[float] = (1e-3, 3e-3)
    emas: Sequence[float] = (1.0,)
    replay_streams: Sequence[int] = (3,)
    batch_size: int = 32
    seeds: Sequence[int] = (0, 1, 2)
    m: float = 11
    ms: Sequence[float] = (2, 5, 11, 31, 101)
    alphas: Sequence[float] = (1e-4, 1e-3, 1e-2, 1e-1)
    points: int = 200

    def __post_init__(self):
        for name in ("pairs", "learning_rates", "emas", "replay_streams", "seeds", "ms", "alphas"):
            value = getattr(self, name)
            if isinstance(value, str) or not isinstance(value, Sequence) or not value:
                raise ValueError(f"{name}: expected a non-empty list, got {value!r}")
            object.__setattr__(self, name, tuple(value))
        bad = [p for p in self.pairs if not isinstance(p, str) or p.count("/") != 1]
        if bad:
            raise ValueError(f"pairs: expected '<encoder>/<task>' strings, got {bad}")
        for name in ("max_hidden_layers", "width", "batch_size", "points"):
            check_int(name, getattr(self, name), minimum=1)
        check_int("size", self.size, minimum=2, allow_none=True)
        if not self.m > 1:
            raise ValueError(f"m: must be > 1, got {self.m!r}")

    def board(self) -> list:
        """The experts: :func:`mdlnb.board.readouts.board` under the hyperparameter grid."""
        return experts.expert_grid(
            readouts.board(self.max_hidden_layers, self.width),
            learning_rate=self.learning_rates,
            ema=self.emas,
            replay_streams=self.replay_streams,
        )
