"""The checkpoint zoo's parameters: one frozen dataclass, the only place its defaults live."""

from __future__ import annotations

import dataclasses

from mdlnb.core._checks import check_int
from mdlnb.encoders._pretrain import supports
from mdlnb.studies._base import StudyConfig
from mdlnb.studies.pretraining import PretrainingConfig

#: The pretraining objectives whose runs the zoo samples (the ViT-S objectives suite of
#: :mod:`mdlnb.studies.pretraining` less ``random``, which has no run to sample).
FAMILIES = ("supervised", "mae", "autoencoder", "simclr", "dino", "byol")


@dataclasses.dataclass(frozen=True)
class ZooConfig(StudyConfig):
    """Which checkpoints make the zoo (``make encoders`` verifies them).

    The zoo is one architecture and one feature size (ViT-S, 64-d pooled features):
    the untrained initialization, every family's committed final encoder
    (``artifacts/encoders``, chosen by the pretraining stage's plateau rule), and
    checkpoints taken at ``steps`` along each family's own pretraining run. Those
    runs are the committed ones' prefixes: the same seed, data, batch size,
    learning rate and warmup schedule (:class:`mdlnb.studies.pretraining.PretrainingConfig`'s
    defaults, whose ``max_steps`` sets the warmup horizon), so a checkpoint at step
    500 is the encoder the stage's curve evaluated at step 500 (bit for bit where
    the committed encoder was trained on this kind of CPU).

    The steps: the committed runs chose their encoders at 3,500–7,000 steps (probe
    accuracy 0.81–0.88 on Fashion-MNIST's held-out split, against 0.65 untrained);
    at 100–500 steps, inside the warmup (1,000 steps), their probes reach
    0.65–0.76 (``pretraining_probe_curves``), so the zoo spans the whole range
    with 4 checkpoints per family: 31 members. Replaying 500 steps of the six
    runs costs ≈ 2,500 CPU-seconds of training on this 2-core VM (0.5 s per step
    for supervised and MAE, 0.9 for the autoencoder, 1.4–1.6 for the
    two-view objectives, measured under load), against ≈ 5,000 for 1,000 steps.

    Attributes:
      families: pretraining objectives (:data:`FAMILIES`) sampled along training.
      steps: optimizer steps at which each family's checkpoint is kept (multiples
        of ``chunk_steps``, increasing).
      arch, size: the one architecture (a ViT: MAE needs patch tokens).
      seed: the pretraining seed (the committed encoders' seed, 0).
      chunk_steps: steps per compiled ``lax.scan`` chunk (the stage's 50).
      probe: record each checkpoint's linear-probe accuracy on the pretraining
        data's held-out split (the stage's monitor, without its MDL column).
    """

    families: tuple[str, ...] = FAMILIES
    steps: tuple[int, ...] = (100, 200, 300, 500)
    arch: str = "vit"
    size: str = "S"
    seed: int = 0
    chunk_steps: int = 50
    probe: bool = True

    def __post_init__(self) -> None:
        fams = tuple(self.families)
        if not fams or len(set(fams)) != len(fams):
            raise ValueError(f"families: must be non-empty without repeats, got {fams}")
        for f in fams:
            if f == "random" or not supports(f, self.arch):
                raise ValueError(
                    f"families: {f!r} is not a trained objective on {self.arch!r} "
                    f"(known: {FAMILIES})"
                )
        object.__setattr__(self, "families", fams)
        check_int("chunk_steps", self.chunk_steps, minimum=1)
        check_int("seed", self.seed, minimum=0)
        steps = tuple(int(s) for s in self.steps)
        if not steps or list(steps) != sorted(set(steps)):
            raise ValueError(f"steps: must be increasing without repeats, got {self.steps}")
        for s in steps:
            check_int("steps", s, minimum=1)
            if s % self.chunk_steps:
                raise ValueError(
                    f"steps: {s} is not a multiple of chunk_steps ({self.chunk_steps})"
                )
        if steps[-1] > self.pretraining().max_steps:
            raise ValueError(f"steps: {steps[-1]} exceeds the schedule's max_steps")
        object.__setattr__(self, "steps", steps)

    def pretraining(self):
        """The pretraining stage's config whose runs the zoo samples (its defaults)."""
        return PretrainingConfig(seed=self.seed)

    def members(self) -> tuple[str, ...]:
        """The zoo's checkpoint names: ``random``, ``<family>@<step>`` for every family
        and step, ``<family>@final`` (the committed encoder) for every family."""
        return (
            "random",
            *(f"{f}@{s}" for f in self.families for s in self.steps),
            *(f"{f}@final" for f in self.families),
        )
