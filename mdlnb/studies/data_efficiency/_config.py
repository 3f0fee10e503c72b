"""The data-efficiency study's parameters: one frozen dataclass, the only place defaults live.

The notebook ``data_efficiency`` has one parameter per field, of the same name
and default (``tests/test_studies_registry.py`` checks that they agree);
``notebooks/profiles.yaml`` changes them per profile and
:func:`mdlnb.tools.runner.check_profile` checks those changes against this class.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from mdlnb.core._checks import check_int
from mdlnb.studies._base import StudyConfig

#: The two domains of the study, in the order of the figure's panels.
DOMAINS = ("in-domain", "out-of-domain")


@dataclasses.dataclass(frozen=True)
class DataEfficiencyConfig(StudyConfig):
    """Parameters of the data-efficiency study (paper Sec. 4, Fig. 3; App. A.9, Fig. 10).

    The defaults are the CPU run of ``make reproduce``: ViT-XS encoders pretrained on
    Fashion-MNIST training images with two objectives (labels, SimCLR); in domain,
    Fashion-MNIST's test split; out of domain, ``sci_patches`` and ``textures`` —
    3 tasks × 2 encoders, so the claims can take the task as their unit.

    Attributes:
      objectives, arch, arch_size: the encoders (:func:`mdlnb.encoders.pretrain`),
        one per objective.
      pretrain_task, pretrain_size, pretrain_steps: what they pretrain on (train
        split, stratified subsample) and for how many steps (batch 64, lr 3e-3, seed 0).
      in_domain: a task whose *test* split is the pretraining distribution, unseen.
      out_of_domain: tasks far from it (their train splits).
      task_size: examples per stream (stratified subsample; None: all).
      mlp_layers, mlp_width: the deep MLP readouts on the frozen features.
      learning_rates: the fine-tuned and from-scratch encoders' grid.
      probe_learning_rates: the frozen readouts' grid.
      replay_streams, batch_size: stage 1's replay and B, the same for every method.
      seeds: example orders; curves show their spread, and claim e2 takes a
        Student-t interval over them (with 2 orders its one degree of freedom,
        t = 12.7, leaves any effect undecided).
      early: the "early" sample size of claim e1.
      points: log-spaced sample sizes at which curves are stored.
    """

    objectives: Sequence[str] = ("supervised", "simclr")
    arch: str = "vit"
    arch_size: str = "XS"
    pretrain_task: str = "fashion_mnist"
    pretrain_size: int | None = 4000
    pretrain_steps: int = 300
    in_domain: str = "fashion_mnist"
    out_of_domain: Sequence[str] = ("sci_patches", "textures")
    task_size: int | None = 2000
    mlp_layers: Sequence[int] = (1, 2, 3)
    mlp_width: int = 64
    learning_rates: Sequence[float] = (1e-4, 1e-3)
    probe_learning_rates: Sequence[float] = (1e-3, 3e-3)
    replay_streams: int = 3
    batch_size: int = 32
    seeds: Sequence[int] = (0, 1, 2, 3, 4)
    early: int = 128
    points: int = 200

    def __post_init__(self):
        for name in (
            "objectives",
            "out_of_domain",
            "mlp_layers",
            "learning_rates",
            "probe_learning_rates",
            "seeds",
        ):
            value = getattr(self, name)
            if isinstance(value, str) or not isinstance(value, Sequence) or not value:
                raise ValueError(f"{name}: expected a non-empty list, got {value!r}")
            object.__setattr__(self, name, tuple(value))
        for name in (
            "pretrain_steps",
            "mlp_width",
            "replay_streams",
            "batch_size",
            "early",
            "points",
        ):
            check_int(name, getattr(self, name), minimum=1)
        for name in ("pretrain_size", "task_size"):
            check_int(name, getattr(self, name), minimum=2, allow_none=True)
