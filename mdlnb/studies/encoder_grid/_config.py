"""The encoder study's parameters: one frozen dataclass, the only place defaults live.

Field ``protocol`` is everything besides the data that decides a codelength
(board, batch size B, switching strategy and m, standardisation); it takes
what :func:`mdlnb.board._arguments.resolve_protocol` takes (a preset name such as
``"default"`` or ``"paper-vtab"``, or a mapping) and maps one to one onto the
coming ``mdlnb.Protocol``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from mdlnb import data
from mdlnb.board._arguments import resolve_protocol
from mdlnb.core._checks import check_int
from mdlnb.studies._base import StudyConfig
from mdlnb.studies.transferability import parse_encoder, readout_from_name

#: The objectives suite: paper Table 1a's objectives (supervised, SimCLR, BYOL, DINO,
#: MAE) plus the autoencoder and the untrained initialization, all on the ViT at
#: CPU size S, each the committed artifact of the pretraining stage (trained until
#: its linear probe stopped improving: ``artifacts/encoders``, ``make pretrain``).
OBJECTIVES_SUITE = tuple(
    f"{o}:vit_S:trained"
    for o in ("random", "supervised", "simclr", "byol", "dino", "mae", "autoencoder")
)
#: The scaling suite (Table 1b: sizes of one family under one objective): the ViT at
#: M and L under supervised training and MAE (S is in the objectives suite).
SCALING_SUITE = tuple(f"{o}:vit_{s}:trained" for o in ("supervised", "mae") for s in ("M", "L"))
#: The mini-VTAB tasks of the default grid: every embedded task with at least 1,000
#: training examples (all but lfw_faces, 160), 5 natural (fashion_mnist and
#: fashion_mnist_category are the pretraining domain), 3 specialized, 9 structured.
GRID_TASKS = (
    "digits",
    "fashion_mnist",
    "fashion_mnist_category",
    "photo_patches",
    "textures",
    "ihc_dab",
    "ihc_hematoxylin",
    "sci_patches",
    "clevr_closest_colour",
    "clevr_closest_shape",
    "clevr_closest_size",
    "clevr_count",
    "clevr_distance",
    "dsprites_location",
    "dsprites_orientation",
    "dsprites_scale",
    "dsprites_shape",
)
_PROBE_GRID = {"learning_rate": (1e-3, 3e-3), "weight_decay": (0.0, 1e-4), "ema": (1.0,)}


@dataclasses.dataclass(frozen=True)
class EncodersConfig(StudyConfig):
    """Parameters of the encoder study (one grid of encoders × tasks).

    The defaults are the CPU run of ``make reproduce``: the 11 trained ViT
    encoders × the 17 tasks of :data:`GRID_TASKS` × 3 orders at N = 1,000 on the
    ``deep`` board (the power analysis that sized it and its measured cost:
    :mod:`._power`).

    Attributes:
      encoders: encoder strings of
        :func:`mdlnb.studies.transferability.parse_encoder` (``"lite0@64"``,
        ``"byol:resnet_S:300"``).
      tasks: task names of :func:`mdlnb.data.names`; their group (natural /
        specialized / structured) comes from the registry.
      train_size, test_size: caps (stratified subsamples) on the training split
        (the MDL stream and the probe's train/validation data) and on the test
        split (probe accuracy only). None = the whole split.
      protocol: stage 1 + 2 protocol (see the module docstring).
      seeds: data orders of the MDL stream (≥ 1; ≥ 3 for the permutation
        variance of App. A.7); the same orders for every encoder.
      probe_readouts: readouts of the App. A.4 accuracy protocol
        (``"linear"``, ``"mlp<L>x<W>"``); probe_grid/steps/batch_size: its search.
      posterior_bins: log-spaced bins along t for the stored posterior and
        cumulative codelength (the exact per-t arrays are not kept).
      pretrain_data, pretrain_size, pretrain_batch_size: what the
        self-pretrained encoders train on.
      workers: parallel processes over (encoder, task) pairs (1 = in process;
        the default 2 keeps both cores of the CPU run busy: a pair's small
        programs use about one core). Not part of a pair's cache key: the
        results are the same for any number of workers.
      seed: task subsampling, probes, pretraining data.
    """

    encoders: tuple[str, ...] = OBJECTIVES_SUITE + SCALING_SUITE
    tasks: tuple[str, ...] = GRID_TASKS
    train_size: int | None = 1000
    test_size: int | None = 1000
    protocol: Any = "deep"
    seeds: tuple[int, ...] = (0, 1, 2)
    probe_readouts: tuple[str, ...] = ("linear", "mlp1x256", "mlp2x256")
    probe_grid: Mapping[str, Sequence[float]] = dataclasses.field(
        default_factory=lambda: dict(_PROBE_GRID)
    )
    probe_steps: int = 200
    probe_batch_size: int = 256
    posterior_bins: int = 24
    pretrain_data: str = "fashion_mnist"
    pretrain_size: int | None = 5000
    pretrain_batch_size: int = 128
    workers: int = 2
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("encoders", "tasks", "seeds", "probe_readouts"):
            value = tuple(getattr(self, name))
            if not value:
                raise ValueError(f"{name}: must not be empty")
            if len(set(value)) != len(value):
                raise ValueError(f"{name}: repeated entries in {value}")
            object.__setattr__(self, name, value)
        for e in self.encoders:
            parse_encoder(e)
        known = data.names()
        bad = [t for t in self.tasks if t not in known]
        if bad:
            raise ValueError(f"tasks: unknown {bad}; known: {known}")
        for r in self.probe_readouts:
            readout_from_name(r)
        resolve_protocol(self.protocol)
        if isinstance(self.protocol, Mapping):
            object.__setattr__(self, "protocol", dict(self.protocol))
        for name in (
            "probe_steps",
            "probe_batch_size",
            "posterior_bins",
            "pretrain_batch_size",
            "workers",
        ):
            check_int(name, getattr(self, name), minimum=1)
        for name in ("train_size", "test_size", "pretrain_size"):
            check_int(name, getattr(self, name), minimum=10, allow_none=True)
        for s in self.seeds:
            check_int("seeds", s, minimum=0, what=f"integers >= 0 (got {self.seeds})")
        object.__setattr__(self, "probe_grid", dict(self.probe_grid))


def describe_encoder(text: str) -> dict[str, str]:
    """``architecture``, ``objective``, ``size`` of an encoder string: for
    ``"lite1@64"`` ("efficientnet-lite", "supervised-imagenet", "lite1"), for
    ``"byol:resnet_S:300"`` ("resnet", "byol", "S")."""
    spec = parse_encoder(text)
    if spec.family == "efficientnet":
        return {
            "architecture": "efficientnet-lite",
            "objective": "supervised-imagenet",
            "size": f"lite{spec.variant}",
        }
    return {"architecture": spec.arch, "objective": spec.family, "size": spec.size}
