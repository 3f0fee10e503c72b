"""The protocol: everything besides the data that decides a codelength.

A :class:`Protocol` names the board of readout experts, the batch size B,
the switching strategy (with fixed share's m), the input standardisation,
an optional replay-count override and the seed. :func:`mdlnb.evaluate`,
:func:`mdlnb.prequential.run` and ``mdlnb evaluate --protocol NAME`` take
one; a :class:`~mdlnb.prequential.LossMatrix` and a
:class:`~mdlnb.api.evaluation.Report` record the one they ran, and stage 1's
cache key holds its stage-1 part (:meth:`Protocol.stage1`). What a call runs —
its ``protocol`` argument (a name, a Protocol or a mapping of fields) with its
own keyword arguments applied — is resolved in one place,
:func:`mdlnb.board._arguments.resolve_protocol`.

Presets (:func:`protocol`, :data:`PRESETS`):

* ``"paper-vtab"`` — paper App. A.5.1 / Table 6 (frozen encoders on VTAB):
  the 4,608-expert board ``experts.preset("vtab")``, B = 32, fixed share
  α_t = 10/t (m = 11), no standardisation.
* ``"paper-imagenet"`` — App. A.5.2 / Table 9: the 384-expert board
  ``experts.preset("imagenet")``, B = 512, α_t = 1/t (m = 2), no
  standardisation.
* ``"default"`` — the package's quick, CPU-sized protocol: the 40-expert
  board ``experts.preset("default")``, B = 32, fixed share with
  :data:`~mdlnb.switching.strategies.DEFAULT_M`, online ``"prefix"``
  standardisation clipped to ±10 (chosen from measurements:
  docs/protocols.md).
* ``"deep"`` — ``"default"`` on the 50-expert board ``experts.preset("deep")``
  (readouts up to 4 hidden layers; the encoder studies).
* ``"small"`` — ``"default"`` on the 4-expert board (tests, smoke runs).

Standardisation ``"prefix"``: stage 1 z-scores each feature with the mean and
variance of the examples seen before (:mod:`mdlnb.prequential`,
:mod:`mdlnb.core._standardize`), clipped to ``±clip``; ``"none"``: the readouts see
the features as given, as in the paper.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mdlnb import switching
from mdlnb.board import experts as _experts
from mdlnb.board.readouts import MATMUL_DTYPES
from mdlnb.core._checks import check_int
from mdlnb.core._standardize import CLIP_Z
from mdlnb.switching import FixedShare
from mdlnb.switching.strategies import strategy_label

STANDARDIZE = ("none", "prefix")


def _strategy_dict(strategy: Any) -> dict[str, Any]:
    """``{"name": ..., field: value}`` of a switching strategy (fields that are set)."""
    name = next(n for n in switching.names() if type(switching.get_strategy(n)) is type(strategy))
    fields = {f.name: getattr(strategy, f.name) for f in dataclasses.fields(strategy)}
    return {
        "name": name,
        **{k: (list(v) if isinstance(v, tuple) else v) for k, v in fields.items() if v is not None},
    }


def _standardize_value(value: Any) -> str:
    if isinstance(value, bool):  # the old keyword: standardize=True/False
        return "prefix" if value else "none"
    if value not in STANDARDIZE:
        raise ValueError(f"standardize: must be one of {STANDARDIZE}, got {value!r}")
    return value


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name}: must be a number, got {value!r}")
    return float(value)


@dataclasses.dataclass(frozen=True)
class Prune:
    """Pruning option of a :class:`Protocol`: stop training the experts the switching
    posterior has given up on (how, and the trade-off: :mod:`mdlnb.prequential._prune`).

    Attributes:
      threshold: τ in [0, 1): posterior mass below which an expert counts as
        unused (0: never prune).
      window: W, examples the posterior must stay below τ before pruning.
      segment_batches: batches per stage-1 segment (pruning decisions are taken
        between segments, every ``segment_batches · B`` examples).
      keep_per_readout: the experts of each readout architecture with the
        largest posterior that are never pruned (0: only the overall best is
        kept). Protects slow-starting architectures (deep MLPs that win late)
        while their hyperparameter siblings are pruned.
    """

    threshold: float = 1e-3
    window: int = 512
    segment_batches: int = 8
    keep_per_readout: int = 0

    def __post_init__(self) -> None:
        t = _number(self.threshold, "threshold")
        if not (math.isfinite(t) and 0.0 <= t < 1.0):
            raise ValueError(f"threshold: must lie in [0, 1), got {self.threshold!r}")
        object.__setattr__(self, "threshold", t)
        object.__setattr__(self, "window", check_int("window", self.window, minimum=1))
        object.__setattr__(
            self, "segment_batches", check_int("segment_batches", self.segment_batches, minimum=1)
        )
        object.__setattr__(
            self,
            "keep_per_readout",
            check_int("keep_per_readout", self.keep_per_readout, minimum=0),
        )

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_value(cls, value: Any) -> Prune | None:
        """A Prune from a Prune, a mapping of its fields, or None."""
        if value is None or isinstance(value, Prune):
            return value
        if isinstance(value, Mapping):
            unknown = set(value) - {f.name for f in dataclasses.fields(cls)}
            if unknown:
                raise ValueError(f"prune: unknown fields {sorted(unknown)}")
            return cls(**value)
        raise ValueError(
            f"prune: expected an mdlnb.Prune, a dict or None, got {type(value).__name__}"
        )


@dataclasses.dataclass(frozen=True)
class Protocol:
    """Board, batch size, switching strategy, standardisation, replay override, seed
    (and, optionally, a calibration override).

    Attributes:
      name: the preset it came from (``"custom"`` when built by hand;
        ``"<preset> (modified)"`` after :meth:`replace` changed a field).
      board: an expert preset name (``mdlnb.board.experts.preset``) or a tuple of
        :class:`~mdlnb.board.experts.Expert`.
      batch_size: B, examples per incoming batch and per replay step.
      strategy: the stage-2 switching strategy (an object of
        :mod:`mdlnb.switching`, or its name).
      standardize: ``"prefix"`` (online z-scores from the examples seen so
        far, clipped to ``±clip``) or ``"none"`` (raw features, the paper's
        protocol); ``True``/``False`` are read as ``"prefix"``/``"none"``.
      clip: the ``"prefix"`` clip (``None``: no clip); ignored for ``"none"``.
      replay_streams: if set, overrides every expert's replay count.
      seed: example order, initialisations and replay samples.
      matmul_dtype: ``"float32"`` (default) or ``"bfloat16"``: the readouts'
        matmuls take bfloat16 operands with float32 accumulation
        (:func:`mdlnb.board.readouts.with_matmul_dtype`); parameters and optimiser
        state stay float32. Part of the stage-1 cache key when not float32.
      prune: ``None`` (default: every expert trains on the whole stream) or an
        :class:`mdlnb.Prune` (or a dict of its fields): stop training experts
        whose posterior under :attr:`strategy` stayed below a threshold for a
        window; the code is the strategy restricted to the survivors
        (:mod:`mdlnb.prequential._prune`).
      calibrate: if set, overrides every expert's ``calibrate`` (forward
        calibration, :mod:`mdlnb.prequential._calibration`); ``None`` keeps the
        board's. Recorded in :meth:`to_dict` only when set, and in the stage-1
        cache key through the experts' configs.
    """

    name: str = "custom"
    board: Any = "default"
    batch_size: int = 32
    strategy: Any = None
    standardize: Any = "prefix"
    clip: float | None = CLIP_Z
    replay_streams: int | None = None
    seed: int = 0
    matmul_dtype: str = "float32"
    prune: Any = None
    calibrate: bool | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"name: must be a non-empty string, got {self.name!r}")
        board = self.board
        if isinstance(board, str):
            if board not in _experts.PRESETS:
                raise ValueError(
                    f"board: unknown expert preset {board!r}; choose from "
                    f"{list(_experts.PRESETS)} or pass a list of Experts"
                )
        else:
            board = (board,) if isinstance(board, _experts.Expert) else tuple(board)
            if not board or not all(isinstance(e, _experts.Expert) for e in board):
                raise ValueError("board: must be a preset name or a non-empty list of Experts")
        object.__setattr__(self, "board", board)
        object.__setattr__(self, "batch_size", check_int("batch_size", self.batch_size, minimum=1))
        strategy = FixedShare() if self.strategy is None else self.strategy
        object.__setattr__(self, "strategy", switching.get_strategy(strategy))
        object.__setattr__(self, "standardize", _standardize_value(self.standardize))
        clip = self.clip if self.standardize == "prefix" else None
        if clip is not None:
            if isinstance(clip, bool) or not isinstance(clip, (int, float)) or not clip > 0:
                raise ValueError(f"clip: must be None or a number > 0, got {clip!r}")
            clip = float(clip)
        object.__setattr__(self, "clip", clip)
        if self.replay_streams is not None:
            object.__setattr__(
                self, "replay_streams", check_int("replay_streams", self.replay_streams, minimum=0)
            )
        object.__setattr__(
            self,
            "seed",
            check_int("seed", self.seed, minimum=0, maximum=2**32 - 1, what="an int in [0, 2**32)"),
        )
        if self.matmul_dtype not in MATMUL_DTYPES:
            raise ValueError(
                f"matmul_dtype: must be one of {MATMUL_DTYPES}, got {self.matmul_dtype!r}"
            )
        object.__setattr__(self, "prune", Prune.from_value(self.prune))
        if self.calibrate is not None:
            if type(self.calibrate).__name__ not in ("bool", "bool_"):
                raise ValueError(f"calibrate: must be None, True or False, got {self.calibrate!r}")
            object.__setattr__(self, "calibrate", bool(self.calibrate))

    # -- presets -------------------------------------------------------------
    @classmethod
    def preset(cls, name: str | Protocol) -> Protocol:
        """The named protocol (:data:`PRESETS`)."""
        if isinstance(name, Protocol):
            return name
        if name not in PRESETS:
            raise ValueError(f"protocol: unknown protocol {name!r}; choose from {names()}")
        return cls(name=name, **PRESETS[name])

    @property
    def m(self) -> float | None:
        """Fixed share's m (``None`` for other strategies or a constant rate)."""
        return getattr(self.strategy, "m", None)

    def replace(self, **changes: Any) -> Protocol:
        """A copy with ``changes``; the name gains `` (modified)`` when a field changed."""
        if (
            changes.get("standardize") in ("prefix", True)
            and "clip" not in changes
            and self.standardize == "none"
        ):
            changes = {**changes, "clip": CLIP_Z}  # "prefix" comes with its clip
        if "name" not in changes:
            new = dataclasses.replace(self, **changes)
            if (
                new.to_dict() != self.to_dict()
                and not self.name.endswith("(modified)")
                and self.name != "custom"
            ):
                new = dataclasses.replace(new, name=f"{self.name} (modified)")
            return new
        return dataclasses.replace(self, **changes)

    def resolve(self, **overrides: Any) -> Protocol:
        """:meth:`replace` with the overrides that are not ``None`` (keyword arguments of
        ``evaluate``/``prequential.run``/the CLI win over the protocol's fields)."""
        given = {k: v for k, v in overrides.items() if v is not None}
        return self.replace(**given) if given else self

    # -- what it means -------------------------------------------------------
    def experts(self) -> list[_experts.Expert]:
        """The board as a list of Experts, with :attr:`replay_streams` and
        :attr:`calibrate` applied."""
        board = _experts.preset(self.board) if isinstance(self.board, str) else list(self.board)
        if self.replay_streams is not None:
            board = [e.replace(replay_streams=self.replay_streams) for e in board]
        if self.calibrate is not None:
            board = [e.replace(calibrate=self.calibrate) for e in board]
        return board

    def stage1(self) -> dict[str, Any]:
        """The part stage 1 depends on (the loss matrix's cache key): resolved expert
        configs, B, seed, standardisation and clip, the matmul dtype when it is not
        float32 (so float32 keys are those of before the option existed). The
        strategy is not in it, unless the board is pruned (the pruning decisions
        follow its posterior)."""
        out = {
            "experts": [e.config() for e in self.experts()],
            "batch_size": self.batch_size,
            "seed": self.seed,
            "standardize": self.standardize,
            "clip": self.clip,
        }
        if self.matmul_dtype != "float32":
            out["matmul_dtype"] = self.matmul_dtype
        if self.prune is not None:
            out.update(prune=self.prune.to_dict(), strategy=_strategy_dict(self.strategy))
        return out

    @property
    def board_label(self) -> str:
        if isinstance(self.board, str):
            return f"{self.board!r}"
        return f"<{len(self.board)} experts>"

    def __repr__(self) -> str:
        std = self.standardize + (f" (clip ±{self.clip:g})" if self.clip is not None else "")
        parts = [
            repr(self.name),
            f"board={self.board_label}",
            f"batch_size={self.batch_size}",
            f"strategy={strategy_label(self.strategy)}",
            f"standardize={std!r}",
        ]
        if self.replay_streams is not None:
            parts.append(f"replay_streams={self.replay_streams}")
        parts.append(f"seed={self.seed}")
        if self.matmul_dtype != "float32":
            parts.append(f"matmul_dtype={self.matmul_dtype!r}")
        if self.prune is not None:
            parts.append(f"prune={self.prune!r}")
        if self.calibrate is not None:
            parts.append(f"calibrate={self.calibrate}")
        return f"Protocol({', '.join(parts)})"

    # -- recording -----------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable; a board of Experts is written as their configs."""
        board = self.board if isinstance(self.board, str) else [e.config() for e in self.board]
        return {
            "name": self.name,
            "board": board,
            "batch_size": self.batch_size,
            "strategy": _strategy_dict(self.strategy),
            "standardize": self.standardize,
            "clip": self.clip,
            "replay_streams": self.replay_streams,
            "seed": self.seed,
            "matmul_dtype": self.matmul_dtype,
            **({} if self.prune is None else {"prune": self.prune.to_dict()}),
            **({} if self.calibrate is None else {"calibrate": self.calibrate}),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, experts: Sequence[Any] | None = None) -> Protocol:
        """Inverse of :meth:`to_dict`. ``experts``: the board to attach when it was a list
        (needed for experts that cannot be rebuilt from their config)."""
        if not isinstance(d, Mapping):
            raise ValueError(f"d: expected a mapping, got {type(d).__name__}")
        board = d["board"]
        if not isinstance(board, str):
            board = (
                tuple(experts)
                if experts is not None
                else tuple(_experts.Expert.from_config(c) for c in board)
            )
        st = dict(d["strategy"])
        strategy = switching.get_strategy(st.pop("name"), **st)
        return cls(
            name=d["name"],
            board=board,
            batch_size=d["batch_size"],
            strategy=strategy,
            standardize=d["standardize"],
            clip=d["clip"],
            replay_streams=d.get("replay_streams"),
            seed=d["seed"],
            matmul_dtype=d.get("matmul_dtype", "float32"),
            prune=d.get("prune"),
            calibrate=d.get("calibrate"),
        )


def _presets() -> dict[str, dict[str, Any]]:
    return {
        "default": dict(
            board="default", batch_size=32, strategy=FixedShare(), standardize="prefix", clip=CLIP_Z
        ),
        "deep": dict(
            board="deep", batch_size=32, strategy=FixedShare(), standardize="prefix", clip=CLIP_Z
        ),
        "small": dict(
            board="small", batch_size=32, strategy=FixedShare(), standardize="prefix", clip=CLIP_Z
        ),
        "paper-vtab": dict(
            board="vtab", batch_size=32, strategy=FixedShare(m=11.0), standardize="none", clip=None
        ),
        "paper-imagenet": dict(
            board="imagenet",
            batch_size=512,
            strategy=FixedShare(m=2.0),
            standardize="none",
            clip=None,
        ),
    }


class _Presets(Mapping):
    """Read-only view of the preset fields (a fresh dict of them at each access)."""

    def __getitem__(self, key: str) -> dict[str, Any]:
        return dict(_presets()[key])

    def __iter__(self):
        return iter(("default", "deep", "small", "paper-vtab", "paper-imagenet"))

    def __len__(self) -> int:
        return 5


#: name → the fields of each named protocol.
PRESETS: Mapping[str, dict[str, Any]] = _Presets()


def names() -> list[str]:
    """Names of the preset protocols."""
    return list(PRESETS)


def protocol(name: str | Protocol = "default", **overrides: Any) -> Protocol:
    """The preset protocol ``name`` (a Protocol is returned as is), with ``overrides``
    (fields of :class:`Protocol`; ``None`` values are ignored)."""
    if not isinstance(name, (str, Protocol)):
        raise ValueError(
            f"protocol: expected a preset name or a Protocol, got {type(name).__name__}"
        )
    return Protocol.preset(name).resolve(**overrides)
