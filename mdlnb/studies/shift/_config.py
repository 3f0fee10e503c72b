"""The shift study's parameters: one frozen dataclass, the only place defaults live.

The notebook ``shift`` has one parameter per field, of the same name and default
(``tests/test_studies_registry.py`` checks that they agree);
``notebooks/profiles.yaml`` changes them per profile and
:func:`mdlnb.tools.runner.check_profile` checks those changes against this class.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from mdlnb import data
from mdlnb.board._arguments import resolve_protocol
from mdlnb.core._checks import check_int
from mdlnb.studies._base import StudyConfig
from mdlnb.studies.encoder_grid._config import OBJECTIVES_SUITE
from mdlnb.studies.shift._split import parse_shift
from mdlnb.studies.transferability import parse_encoder

#: Task and nuisance factor of the default run: the shape of a dSprites sprite shifted
#: in its scale, its column (location) shifted in its row, a Clevr scene's object count
#: shifted in the nearest object's depth (near scenes in one split, far in the other).
DEFAULT_TASKS = ("dsprites_shape:scale", "dsprites_location:y", "clevr_count:z")


@dataclasses.dataclass(frozen=True)
class ShiftConfig(StudyConfig):
    """Parameters of the train/test-shift study (Li et al. 2023, App. A.2, A.7, Table 11).

    The defaults are the CPU run of ``make reproduce``.

    Attributes:
      tasks: ``"<task>:<factor>"``: a procedural task (:func:`mdlnb.data.names`) and the
        nuisance factor its train and test splits are shifted in (a key of the task's
        ``meta["factors"]``; a per-object factor is read off the nearest object).
      encoders: encoder strings of :func:`mdlnb.studies.transferability.parse_encoder`;
        default the objectives suite (the seven committed ViT-S encoders).
      size: N, the examples of each split (the draw holds 2N).
      shift: σ, the share of the train split taken from below the factor's median
        (1: the splits are the two halves; 0.5: no shift).
      seeds: draws; draw ``s`` of a task is the procedural draw of generator seed
        :func:`._split.data_seed` (independent across tasks and seeds) and is coded in
        stage 1's order ``s``.
      protocol: stage 1 + 2 protocol (:func:`mdlnb.board._arguments.resolve_protocol`).
      points: stream positions at which the cumulative codelength is stored.
      resamples: bootstrap resamples of the Kendall τ interval (claim r2).
    """

    tasks: Sequence[str] = DEFAULT_TASKS
    encoders: Sequence[str] = OBJECTIVES_SUITE
    size: int = 1000
    shift: float = 1.0
    seeds: Sequence[int] = (0, 1, 2)
    protocol: Any = "default"
    points: int = 40
    resamples: int = 2000

    def __post_init__(self) -> None:
        for name in ("tasks", "encoders", "seeds"):
            value = getattr(self, name)
            if isinstance(value, str) or not isinstance(value, Sequence) or not value:
                raise ValueError(f"{name}: expected a non-empty list, got {value!r}")
            if len(set(value)) != len(value):
                raise ValueError(f"{name}: repeated entries in {list(value)}")
            object.__setattr__(self, name, tuple(value))
        known = data.names()
        for t in self.tasks:
            task, _ = parse_shift(t)
            if task not in known:
                raise ValueError(f"tasks: unknown task {task!r}; known: {known}")
        for e in self.encoders:
            parse_encoder(e)
        if len(self.encoders) < 2:
            raise ValueError(f"encoders: a ranking needs at least 2, got {list(self.encoders)}")
        for s in self.seeds:
            check_int("seeds", s, minimum=0, what=f"integers >= 0 (got {list(self.seeds)})")
        check_int("size", self.size, minimum=10)
        check_int("points", self.points, minimum=2)
        check_int("resamples", self.resamples, minimum=1)
        if (
            isinstance(self.shift, bool)
            or not isinstance(self.shift, (int, float))
            or not 0.5 <= float(self.shift) <= 1.0
        ):
            raise ValueError(f"shift: a share in [0.5, 1], got {self.shift!r}")
        object.__setattr__(self, "shift", float(self.shift))
        resolve_protocol(self.protocol)
