"""The study's parameters: one frozen dataclass, the single source of its defaults.

The notebook ``notebooks/transferability_baselines.py`` holds no copy of
these values: its parameter cell is ``overrides = {}`` and
``notebooks/profiles.yaml`` lists, per profile, only the fields that change
(checked against :func:`dataclasses.fields` by :meth:`TransferabilityConfig.from_overrides`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from mdlnb.baselines import transfer
from mdlnb.board import readouts
from mdlnb.core._checks import check_int
from mdlnb.studies._base import StudyConfig
from mdlnb.studies.transferability._encoders import parse_encoder, zoo_of
from mdlnb.studies.transferability._finetune import FinetuneSpec
from mdlnb.studies.zoo import ZooConfig

TRUTHS = ("finetune", "probe", "best")
#: Kept for the studies that name a frozen-probe readout (mdlnb.studies.encoder_grid).
TRUTH_READOUTS = ("best", "linear", "mlp")
#: The ImageNet EfficientNet-Lite zoo: three checkpoints, one feature size (1,280-d), at
#: 32 px (the native size of most tasks' images; fine-tuning at 64 px costs 4× as much).
LITE_ZOO = ("lite0@32", "lite1@32", "lite2@32")
#: Nine target tasks in the three VTAB groups, every one with ≥ 1,800 images and a
#: spread of probe accuracy across the committed ViT-S encoders (paper/objectives_frame):
#: natural 3, specialized 2 (ihc_dab saturates at 0.99, lfw_faces has 200 images),
#: structured 4. Fashion-MNIST, the zoo's pretraining data, is left out.
TASKS = (
    "digits",
    "photo_patches",
    "textures",
    "ihc_hematoxylin",
    "sci_patches",
    "dsprites_location",
    "dsprites_shape",
    "clevr_count",
    "clevr_closest_colour",
)


def zoo_encoders() -> tuple[str, ...]:
    """The ViT-S checkpoint zoo (:class:`mdlnb.studies.zoo.ZooConfig`) as encoder strings."""
    return tuple(f"zoo:{m}" for m in ZooConfig().members())


@dataclasses.dataclass(frozen=True)
class TransferabilityConfig(StudyConfig):
    """Parameters of the transferability study (protocol: the package docstring).

    The defaults are the CPU run that ``make reproduce`` makes and that wrote
    ``paper/transferability_*``. The papers fix the protocol fields (``ratios``
    = N/K ∈ {2, 5, 10}, ``min_n`` = 20: PACTran Sec. 4.1.4); ``repeats`` comes from
    the power analysis of :mod:`._power`; the rest are compute budgets.

    Attributes:
      encoders: encoder strings for :func:`parse_encoder`; they fall into zoos of one
        architecture and feature size (:func:`zoo_of`), ranked separately.
      tasks: task names of :func:`mdlnb.data.names`.
      train_size, val_size, test_size: the ground truth's splits: ``train_size``
        training images (the metrics' subsamples come from them), ``val_size`` more
        from the training split for choosing the fine-tuning rate and the probe's β,
        and the test split together with the training split's remaining images,
        capped at ``test_size`` (all stratified).
      ratios: N/K settings; repeats: subsamples per setting; min_n: N ≥ min_n.
      metrics: names in :data:`mdlnb.baselines.transfer.METRICS` (None = all).
      nleep_components: Gaussian-mixture components of N-LEEP and the N-PT variants
        (``"paper"``: the PACTran code's max(min(C, 0.2N), 0.1N)).
      grid_metrics: add PT-Gauss-grid and LINEAR-grid, selected by τ vs
        LINEAR-VALID; ``linear_beta_factors``: LINEAR's β grid in units of N.
      label_free: add CL, TwoNN ID, CLID and RankMe.
      static: add the static baselines: parameter count, and the source accuracy
        (ImageNet top-1 published for Lite; Fashion-MNIST probe accuracy recorded
        with each ViT checkpoint).
      mdl: add the MDL-switching codelength; ``mdl_experts``, ``mdl_batch_size``,
        ``mdl_m``, ``mdl_standardize``: its protocol.
      source_data, source_size: the source task of the ViT zoo's source classifier
        (a logistic probe per checkpoint on this many images of its pretraining
        data's training split; LEEP, NCE, PT-Dir and PT-Gam need one).
      probe_beta_factors: the frozen probe's β grid in units of the training size
        (PACTran App. B.3's top-layer L-BFGS runs, weight decay (1/B)·{0.01 … 100}).
      ft_learning_rates, ft_steps, ft_batch_size: the fine-tuning grid and budget
        (:class:`~mdlnb.studies.transferability._finetune.FinetuneSpec`).
      truth: τ against ``"finetune"`` (default), ``"probe"`` or ``"best"`` (the one of
        the two with the lower validation loss, per checkpoint).
      resamples: two-stage bootstrap resamples of the intervals (:mod:`._bootstrap`).
      pretrain_data, pretrain_size, pretrain_batch_size: what encoders given as
        ``"<objective>:<arch>_<size>:<steps>"`` are pretrained on.
      seed: splits, subsamples, metrics, probes, fine-tuning order, bootstrap.
    """

    encoders: tuple[str, ...] = dataclasses.field(default_factory=lambda: zoo_encoders() + LITE_ZOO)
    tasks: tuple[str, ...] = TASKS
    train_size: int = 1000
    val_size: int = 300
    test_size: int = 2000
    ratios: tuple[int, ...] = (2, 5, 10)
    repeats: int = 3
    min_n: int = 20
    metrics: tuple[str, ...] | None = None
    nleep_components: str | int = "paper"
    grid_metrics: bool = True
    linear_beta_factors: tuple[float, ...] = (0.1, 1.0, 10.0)
    label_free: bool = True
    static: bool = True
    mdl: bool = True
    mdl_experts: str = "small"
    mdl_batch_size: int = 4
    mdl_m: float = 11.0
    mdl_standardize: str = "subsample"
    source_data: str = "fashion_mnist"
    source_size: int = 2000
    probe_beta_factors: tuple[float, ...] = (0.01, 0.1, 1.0, 10.0, 100.0)
    ft_learning_rates: tuple[float, ...] = (3e-4, 1e-3, 3e-3)
    ft_steps: int = 150
    ft_batch_size: int = 32
    truth: str = "finetune"
    resamples: int = 2000
    pretrain_data: str = "fashion_mnist"
    pretrain_size: int | None = 2000
    pretrain_batch_size: int = 64
    seed: int = 0

    def __post_init__(self) -> None:
        for name in (
            "encoders",
            "tasks",
            "ratios",
            "linear_beta_factors",
            "probe_beta_factors",
            "ft_learning_rates",
        ):
            value = tuple(getattr(self, name))
            if not value:
                raise ValueError(f"{name}: must not be empty")
            object.__setattr__(self, name, value)
        if len(set(self.encoders)) != len(self.encoders):
            raise ValueError(f"encoders: repeated entries in {self.encoders}")
        zoos = {}
        for e in self.encoders:
            zoos.setdefault(zoo_of(parse_encoder(e)), []).append(e)
        if max(len(v) for v in zoos.values()) < 2:
            raise ValueError("encoders: Kendall τ needs a zoo of at least 2 encoders")
        for r in self.ratios:
            check_int("ratios", r, minimum=1, what=f"integers >= 1 (got {self.ratios})")
        for name in (
            "repeats",
            "min_n",
            "mdl_batch_size",
            "pretrain_batch_size",
            "ft_steps",
            "ft_batch_size",
            "resamples",
            "source_size",
        ):
            check_int(name, getattr(self, name), minimum=1)
        for name in ("train_size", "val_size", "test_size"):
            check_int(name, getattr(self, name), minimum=2)
        check_int("pretrain_size", self.pretrain_size, minimum=2, allow_none=True)
        for name in ("linear_beta_factors", "probe_beta_factors", "ft_learning_rates"):
            if any(not np.isfinite(b) or b <= 0 for b in getattr(self, name)):
                raise ValueError(f"{name}: must be > 0, got {getattr(self, name)}")
        if not (isinstance(self.mdl_m, (int, float)) and self.mdl_m >= 1):
            raise ValueError(f"mdl_m: must be a number >= 1, got {self.mdl_m!r}")
        if not (isinstance(self.nleep_components, str) and self.nleep_components):
            check_int(
                "nleep_components",
                self.nleep_components,
                minimum=1,
                what="a rule name such as 'paper' or an integer >= 1",
            )
        if self.metrics is not None:
            object.__setattr__(self, "metrics", tuple(self.metrics))
            unknown = [m for m in self.metrics if m not in transfer.METRICS]
            if unknown:
                raise ValueError(f"metrics: unknown {unknown}; known: {sorted(transfer.METRICS)}")
        if self.mdl_standardize not in ("subsample", "online"):
            raise ValueError(
                f"mdl_standardize: must be 'subsample' or 'online', got {self.mdl_standardize!r}"
            )
        if self.truth not in TRUTHS:
            raise ValueError(f"truth: must be one of {TRUTHS}, got {self.truth!r}")

    def zoos(self) -> dict[str, tuple[str, ...]]:
        """``{zoo: encoders}``: the encoders grouped by architecture and feature size."""
        out: dict[str, list[str]] = {}
        for e in self.encoders:
            out.setdefault(zoo_of(parse_encoder(e)), []).append(e)
        return {k: tuple(v) for k, v in out.items()}

    def finetune_spec(self):
        """The fine-tuning protocol (:class:`~._finetune.FinetuneSpec`) of this config."""
        return FinetuneSpec(
            learning_rates=self.ft_learning_rates,
            steps=self.ft_steps,
            batch_size=self.ft_batch_size,
            seed=self.seed,
            chunk=_divisor(self.ft_steps, 25),
        )

    def mdl_protocol(self) -> dict[str, Any]:
        """The MDL score's protocol, one key per future ``mdlnb.Protocol`` field."""
        return {
            "experts": self.mdl_experts,
            "batch_size": int(self.mdl_batch_size),
            "strategy": "fixed_share",
            "m": float(self.mdl_m),
            "standardize": self.mdl_standardize,
            "seed": int(self.seed),
        }


def _divisor(n: int, most: int) -> int:
    """The largest divisor of ``n`` that is at most ``most``."""
    return max(d for d in range(1, min(n, most) + 1) if n % d == 0)


def readout_from_name(name: str) -> Any:
    """:func:`mdlnb.board.readouts.from_name` (``"linear"``, ``"mlp<L>"``, ``"mlp<L>x<W>"``)."""
    try:
        return readouts.from_name(name)
    except ValueError as e:
        raise ValueError(f"truth_readouts: {e}") from None
