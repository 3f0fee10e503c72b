"""The pretraining stage's parameters: one frozen dataclass, the only place defaults live."""

from __future__ import annotations

import dataclasses

from mdlnb import data
from mdlnb.board._protocol import protocol
from mdlnb.core._checks import check_int
from mdlnb.encoders._pretrain import Hyper, supports
from mdlnb.encoders._staged import Plateau
from mdlnb.studies._base import StudyConfig

#: The objectives suite: every objective of the paper's Table 1a family on one
#: architecture family (the ViT: MAE needs patch tokens), size S, plus the
#: untrained initialization they all start from.
OBJECTIVES_SUITE = tuple(
    f"{o}:vit_S" for o in ("random", "supervised", "simclr", "byol", "dino", "mae", "autoencoder")
)
#: The scaling suite (Table 1b: sizes of one family under one objective): the
#: ViT at M and L under supervised training and MAE (S is in the objectives suite).
SCALING_SUITE = tuple(f"{o}:vit_{s}" for o in ("supervised", "mae") for s in ("M", "L"))


def parse_unit(text: str) -> tuple[str, str, str]:
    """``"simclr:vit_S"`` → ``("simclr", "vit", "S")`` (ValueError naming ``suite``)."""
    try:
        objective, arch_size = text.split(":")
        arch, size = arch_size.split("_")
    except (AttributeError, ValueError):
        raise ValueError(
            f"suite: cannot parse {text!r}; expected '<objective>:<arch>_<size>', "
            f"e.g. 'simclr:vit_S'"
        ) from None
    if not supports(objective, arch):
        raise ValueError(f"suite: {text!r}: objective {objective!r} is not defined on {arch!r}")
    return objective, arch, size


@dataclasses.dataclass(frozen=True)
class PretrainingConfig(StudyConfig):
    """Parameters of the pretraining stage (``make encoders``).

    Attributes:
      suite: encoders to train, ``"<objective>:<arch>_<size>"``.
      data: the pretraining task (its training split, all of it).
      probe_train_size: labelled training images the linear probe is fitted on
        (a seeded, stratified subsample of the same training split).
      probe_test_size: images of the held-out (test) split the probe is scored
        on; None = all of them.
      eval_every, max_steps, patience, min_delta: the stopping rule
        (:class:`mdlnb.encoders.Plateau`; min_delta in probe-accuracy units).
      batch_size, learning_rate, warmup: AdamW at a constant rate after a
        linear warmup of ``warmup · max_steps`` steps.
      mdl_task, mdl_size, mdl_protocol: the downstream task whose labels the
        monitor codes at every evaluation (MDL with readout switching on its
        training split, ``mdl_size`` examples or all; ``None`` = no MDL column),
        under this protocol preset; its codelength along training is one of the
        scores compared with the probe (:meth:`PretrainingResult.tracking`).
      seed: initialization, batches, augmentations, masks, probe subsample,
        the MDL task's subsample and data order.
    """

    suite: tuple[str, ...] = OBJECTIVES_SUITE + SCALING_SUITE
    data: str = "fashion_mnist"
    probe_train_size: int = 10_000
    probe_test_size: int | None = None
    eval_every: int = 500
    max_steps: int = 20_000
    patience: int = 3
    min_delta: float = 0.005
    batch_size: int = 256
    learning_rate: float = 1e-3
    warmup: float = 0.05
    mdl_task: str | None = "digits"
    mdl_size: int | None = None
    mdl_protocol: str = "default"
    seed: int = 0

    def __post_init__(self) -> None:
        suite = tuple(self.suite)
        if not suite or len(set(suite)) != len(suite):
            raise ValueError(f"suite: must be non-empty without repeats, got {suite}")
        for u in suite:
            parse_unit(u)
        object.__setattr__(self, "suite", suite)
        for name in ("probe_train_size", "eval_every", "max_steps", "patience", "batch_size"):
            check_int(name, getattr(self, name), minimum=1)
        check_int("probe_test_size", self.probe_test_size, minimum=10, allow_none=True)
        if self.mdl_task is not None:
            if self.mdl_task not in data.names():
                raise ValueError(f"mdl_task: unknown task {self.mdl_task!r}; known: {data.names()}")
            if self.mdl_task == self.data:
                raise ValueError(
                    f"mdl_task: must be a downstream task, not the pretraining data "
                    f"{self.data!r} itself"
                )
            protocol(self.mdl_protocol)
        check_int("mdl_size", self.mdl_size, minimum=10, allow_none=True)
        self.plateau()
        self.hyper()

    def plateau(self):
        return Plateau(
            eval_every=self.eval_every,
            max_steps=self.max_steps,
            patience=self.patience,
            min_delta=self.min_delta,
            key="probe_accuracy",
        )

    def hyper(self):
        return Hyper(
            batch_size=self.batch_size, learning_rate=self.learning_rate, warmup=self.warmup
        )
