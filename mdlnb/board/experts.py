"""Experts: a readout architecture plus its online-training hyperparameters.

An expert is one forecaster on the board of readout-model switching: a
:class:`~mdlnb.board.readouts.Readout` trained online with AdamW and replay
(paper App. A.3, A.5). :func:`expert_grid` takes a cross product of
hyperparameters; :func:`preset` gives the paper's grids (Tables 6 and 9) and
CPU-sized ones.

The EMA step size follows the paper's "EMA step size (Polyak averaging)":
after every optimizer step the prediction parameters move as
``ema_params <- (1 - ema) * ema_params + ema * params`` (``optax.incremental_update``),
so ``ema = 1.0`` means no averaging and predictions use the raw parameters.

``calibrate=True`` adds forward calibration (Bornschein et al. 2022;
preqtorch's ``use_beta``): the expert codes with ``softmax(β_t · logits)``, an
inverse temperature β_t fitted to the examples it has already coded
(:mod:`mdlnb.prequential._calibration`). Training is unchanged.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from mdlnb.board import readouts as _readouts
from mdlnb.board.readouts import ReadoutLike
from mdlnb.core._checks import check_int

#: Names of the expert grids of :func:`preset`. The batch size, switching rate
#: and standardisation that go with a board are a protocol's
#: (:func:`mdlnb.protocol`: ``"paper-vtab"`` B = 32, ``"paper-imagenet"`` B = 512).
PRESETS = ("default", "deep", "small", "vtab", "imagenet")


def _fmt(v: float) -> str:
    """Compact number: ``3e-4``, ``1e-2``, ``0``, ``1``, ``0.5``."""
    v = float(v)
    if v == 0:
        return "0"
    if abs(v) < 0.1:
        return np.format_float_scientific(v, trim="-", exp_digits=1)
    return f"{v:g}"


@dataclasses.dataclass(frozen=True)
class Expert:
    """A readout and how it is trained online.

    Attributes:
      readout: the architecture: a :class:`~mdlnb.board.readouts.Readout`, or any
        :class:`~mdlnb.board.readouts.ReadoutLike` (e.g. an encoder + head trained
        end to end, :class:`mdlnb.baselines.finetune.FinetuneReadout`).
      learning_rate: AdamW step size (> 0).
      b1: AdamW first-moment decay β1 in [0, 1); β2 = 0.999, ε = 1e-8 fixed.
      weight_decay: decoupled weight decay (optax ``adamw``: the update adds
        ``learning_rate * weight_decay * params``), ≥ 0.
      ema: Polyak/EMA step size in (0, 1]; 1.0 = no averaging.
      label_smoothing: smoothing in [0, 1) of the *training* targets only;
        coded losses are always the plain log-loss.
      replay_streams: optimizer steps per incoming batch, each on B examples
        drawn uniformly from everything seen so far (≥ 0).
      calibrate: forward calibration (stage 1 only): code batch t with
        ``softmax(β_t · logits)``, β_t the inverse temperature that minimises
        the log-loss of the examples coded before batch t under the logits
        they were coded with (:mod:`mdlnb.prequential._calibration`); the
        training is the same as without. Off by default.
    """

    readout: ReadoutLike
    learning_rate: float
    b1: float = 0.9
    weight_decay: float = 0.0
    ema: float = 1.0
    label_smoothing: float = 0.0
    replay_streams: int = 10
    calibrate: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.readout, ReadoutLike):
            raise ValueError(f"readout: must be a Readout, got {type(self.readout).__name__}")
        for f in ("learning_rate", "b1", "weight_decay", "ema", "label_smoothing"):
            v = getattr(self, f)
            if (
                isinstance(v, bool)
                or not isinstance(v, (int, float, np.integer, np.floating))
                or not math.isfinite(float(v))
            ):
                raise ValueError(f"{f}: must be a finite number, got {v!r}")
            object.__setattr__(self, f, float(v))
        if not self.learning_rate > 0:
            raise ValueError(f"learning_rate: must be > 0, got {self.learning_rate}")
        if not 0 <= self.b1 < 1:
            raise ValueError(f"b1: must lie in [0, 1), got {self.b1}")
        if not self.weight_decay >= 0:
            raise ValueError(f"weight_decay: must be >= 0, got {self.weight_decay}")
        if not 0 < self.ema <= 1:
            raise ValueError(f"ema: must lie in (0, 1], got {self.ema}")
        if not 0 <= self.label_smoothing < 1:
            raise ValueError(f"label_smoothing: must lie in [0, 1), got {self.label_smoothing}")
        object.__setattr__(
            self, "replay_streams", check_int("replay_streams", self.replay_streams, minimum=0)
        )
        if not isinstance(self.calibrate, (bool, np.bool_)):
            raise ValueError(f"calibrate: must be True or False, got {self.calibrate!r}")
        object.__setattr__(self, "calibrate", bool(self.calibrate))

    @property
    def name(self) -> str:
        """E.g. ``mlp2-lr3e-4-wd1e-4-ema1e-2-r10``; ``-b1_0.5`` / ``-ls0.1`` appear when not
        default, ``-cal`` when calibrated."""
        parts = [self.readout.name, f"lr{_fmt(self.learning_rate)}"]
        if self.b1 != 0.9:
            parts.append(f"b1_{_fmt(self.b1)}")
        parts += [f"wd{_fmt(self.weight_decay)}", f"ema{_fmt(self.ema)}"]
        if self.label_smoothing:
            parts.append(f"ls{_fmt(self.label_smoothing)}")
        parts.append(f"r{self.replay_streams}")
        if self.calibrate:
            parts.append("cal")
        return "-".join(parts)

    def config(self) -> dict[str, Any]:
        """Flat, JSON-serialisable description (readout fields prefixed ``readout_``).
        ``calibrate`` appears only when True, so an uncalibrated expert's config (and
        the stage-1 cache key built from it) is what it was before the option."""
        d = {f"readout_{k}": v for k, v in self.readout.config().items()}
        d.update(
            learning_rate=self.learning_rate,
            b1=self.b1,
            weight_decay=self.weight_decay,
            ema=self.ema,
            label_smoothing=self.label_smoothing,
            replay_streams=self.replay_streams,
        )
        if self.calibrate:
            d["calibrate"] = True
        d["name"] = self.name
        return d

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Expert:
        """Inverse of :meth:`config`."""
        ro = _readouts.from_config(
            {k[len("readout_") :]: v for k, v in config.items() if k.startswith("readout_")}
        )
        return cls(
            ro,
            learning_rate=config["learning_rate"],
            b1=config["b1"],
            weight_decay=config["weight_decay"],
            ema=config["ema"],
            label_smoothing=config["label_smoothing"],
            replay_streams=int(config["replay_streams"]),
            calibrate=bool(config.get("calibrate", False)),
        )

    def replace(self, **changes: Any) -> Expert:
        return dataclasses.replace(self, **changes)


def _values(v: Any, name: str) -> list:
    vals = list(v) if isinstance(v, (list, tuple, np.ndarray, range)) else [v]
    if not vals:
        raise ValueError(f"{name}: must not be empty")
    return vals


def expert_grid(
    readouts: ReadoutLike | Iterable[ReadoutLike],
    learning_rate: Sequence[float] | float = (1e-3,),
    b1: Sequence[float] | float = (0.9,),
    weight_decay: Sequence[float] | float = (0.0,),
    ema: Sequence[float] | float = (1.0,),
    label_smoothing: Sequence[float] | float = (0.0,),
    replay_streams: Sequence[int] | int = (10,),
    calibrate: Sequence[bool] | bool = (False,),
) -> list[Expert]:
    """Cross product of readouts and hyperparameters, in a deterministic order.

    The order is the argument order with the last varying fastest: readout,
    learning_rate, b1, weight_decay, ema, label_smoothing, replay_streams,
    calibrate (``calibrate=[False, True]`` puts each expert next to its
    forward-calibrated twin).
    Scalars are taken as one-element lists. Each value is validated by
    :class:`Expert`; duplicate experts raise ``ValueError``.
    """
    ros = [readouts] if isinstance(readouts, ReadoutLike) else _values(readouts, "readouts")
    for r in ros:
        if not isinstance(r, ReadoutLike):
            raise ValueError(f"readouts: expected Readout objects, got {type(r).__name__}")
    axes = [
        _values(v, n)
        for v, n in (
            (learning_rate, "learning_rate"),
            (b1, "b1"),
            (weight_decay, "weight_decay"),
            (ema, "ema"),
            (label_smoothing, "label_smoothing"),
            (replay_streams, "replay_streams"),
            (calibrate, "calibrate"),
        )
    ]
    out = [
        Expert(ro, lr, b, wd, e, ls, r, cal)
        for ro, lr, b, wd, e, ls, r, cal in itertools.product(ros, *axes)
    ]
    names = [e.name for e in out]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise ValueError(f"readouts: the grid repeats an expert ({dup!r}); remove duplicate values")
    return out


def preset(name: str) -> list[Expert]:
    """Named expert grids.

    * ``"vtab"``: paper Table 6 (frozen encoders on VTAB): linear + MLP 1–7
      (width 256) × replay {3, 10, 30, 100} × lr {1e-4, 3e-4, 1e-3, 3e-3} ×
      β1 {0.5, 0.7, 0.9} × wd {0, 1e-6, 1e-4, 1e-2} × EMA {1e-4, 1e-2, 1} =
      4,608 experts (protocol ``"paper-vtab"``: B = 32, m = 11).
    * ``"imagenet"``: paper Table 9: linear + MLP 1–3 × replay {10, 30, 50} ×
      lr {3e-5, 1e-4, 3e-4, 1e-3} × β1 {0.5, 0.7} × wd {1e-2, 1} × EMA
      {1e-2, 1} = 384 experts (protocol ``"paper-imagenet"``: B = 512, m = 2).
    * ``"default"``: CPU-sized: linear + MLP 1–3 × lr {3e-4, 1e-3, 3e-3,
      1e-2, 3e-2} × EMA {1e-2, 1}, wd 1e-4, 10 replay streams = 40 experts.
      The learning rates were widened from {3e-4, 1e-3, 3e-3}, whose largest
      value won on digits in every run; on the tasks measured (docs/protocols.md,
      "Why five learning rates": raw pixels, EfficientNet-Lite0 and SimCLR features, 60
      runs) the best expert's learning rate lies inside this grid.
    * ``"deep"``: ``"default"`` with readouts up to 4 hidden layers: linear +
      MLP 1–4 × the same 5 learning rates × EMA {1e-2, 1} = 50 experts (the
      encoder studies' board: the paper's preference for deeper readouts on
      structured tasks needs depths past 3 to show).
    * ``"small"``: linear + MLP 1 (width 64) × lr {1e-3, 3e-3}, 5 replay
      streams = 4 experts, for tests and smoke runs.
    """
    lin, m = _readouts.linear(), _readouts.mlp
    if name == "vtab":
        return expert_grid(
            _readouts.board(7),
            learning_rate=[1e-4, 3e-4, 1e-3, 3e-3],
            b1=[0.5, 0.7, 0.9],
            weight_decay=[0.0, 1e-6, 1e-4, 1e-2],
            ema=[1e-4, 1e-2, 1.0],
            replay_streams=[3, 10, 30, 100],
        )
    if name == "imagenet":
        return expert_grid(
            _readouts.board(3),
            learning_rate=[3e-5, 1e-4, 3e-4, 1e-3],
            b1=[0.5, 0.7],
            weight_decay=[1e-2, 1.0],
            ema=[1e-2, 1.0],
            replay_streams=[10, 30, 50],
        )
    if name == "default":
        return expert_grid(
            [lin, m(1), m(2), m(3)],
            learning_rate=[3e-4, 1e-3, 3e-3, 1e-2, 3e-2],
            weight_decay=[1e-4],
            ema=[1e-2, 1.0],
            replay_streams=[10],
        )
    if name == "deep":
        return expert_grid(
            [lin, m(1), m(2), m(3), m(4)],
            learning_rate=[3e-4, 1e-3, 3e-3, 1e-2, 3e-2],
            weight_decay=[1e-4],
            ema=[1e-2, 1.0],
            replay_streams=[10],
        )
    if name == "small":
        return expert_grid([lin, m(1, 64)], learning_rate=[1e-3, 3e-3], replay_streams=[5])
    raise ValueError(f"name: unknown preset {name!r}; choose from {list(PRESETS)}")
