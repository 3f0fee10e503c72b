"""The study's parameters: one frozen dataclass, the single source of its defaults.

The notebook ``notebooks/transferability_baselines.py`` holds no copy of
these values: its parameter cell is ``overrides = {}`` and
``notebooks/profiles.yaml`` lists, per profile, only the fields that change
(checked against :func:`dataclasses.fields` by :meth:`TransferabilityConfig.from_overrides`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mdlnb._checks import check_int
from mdlnb.studies._base import StudyConfig
from mdlnb.studies.transferability._encoders import parse_encoder

TRUTH_READOUTS = ("best", "linear", "mlp")
_TRUTH_GRID = {"learning_rate": (1e-3, 3e-3), "weight_decay": (0.0, 1e-4), "ema": (1.0,)}


@dataclasses.dataclass(frozen=True)
class TransferabilityConfig(StudyConfig):
    """Parameters of the transferability study (protocol: the package docstring).

    The defaults are the CPU run that ``make reproduce`` makes and that wrote
    ``paper/transferability_*`` (~15 min on 2 cores). The papers fix the
    protocol fields (``ratios`` = N/K ∈ {2, 5, 10}, ``repeats`` = 5,
    ``min_n`` = 20: PACTran Sec. 4.1.4); the rest are compute budgets.

    Attributes:
      encoders: encoder strings for :func:`parse_encoder`.
      tasks: task names of :func:`mdlnb.data.names`.
      train_size, test_size: caps on the training/test split (stratified
        subsample; None = the whole split). Ground truth uses all of it.
      ratios: N/K settings; repeats: subsamples per setting; min_n: N ≥ min_n.
      metrics: names in :data:`mdlnb.transfer.METRICS` (None = all).
      nleep_components: number of Gaussian-mixture components of N-LEEP and the
        N-PT variants, passed to :func:`mdlnb.transfer.score_all`; ``"paper"``
        is the PACTran code's rule max(min(C, 0.2N), 0.1N).
      grid_metrics: add PT-Gauss-grid and LINEAR-grid, selected by τ vs
        LINEAR-VALID; ``linear_beta_factors``: LINEAR's β grid in units of N.
      label_free: add CL, TwoNN ID, CLID and RankMe.
      static: add the static baselines (Singh et al., ICLR 2026, "How NOT to
        benchmark your SITE metric"): rank by parameter count (``params``) and
        by published ImageNet top-1 where an encoder has one
        (``source_accuracy``); the same values on every subsample.
      mdl: add the MDL-switching codelength. Its protocol, field for field
        (these become one ``mdlnb.Protocol``): ``mdl_experts`` the board
        (a preset of :func:`mdlnb.experts.preset`), ``mdl_batch_size`` B
        (small: the first batch is coded uniformly), ``mdl_m`` the fixed-share
        m (α_t = (m−1)/t), ``mdl_standardize``: ``"subsample"`` (z-score with
        the subsample's N inputs) or ``"online"`` (prefix statistics).
      pretrain_data, pretrain_size: data the self-pretrained encoders train on;
        pretrain_batch_size: their batch size.
      truth_readouts: readouts of the ground-truth probe (``"linear"``,
        ``"mlp<layers>x<width>"``); truth_grid/steps/batch_size: its search.
      truth: which ground-truth row τ is computed against: ``"best"``,
        ``"linear"`` or ``"mlp"``.
      seed: subsampling, metrics, probes.
    """

    encoders: tuple[str, ...] = (
        "lite0@64",
        "lite1@64",
        "lite2@64",
        "random:resnet_XS",
        "supervised:resnet_XS:100",
        "simclr:vit_XS:100",
    )
    tasks: tuple[str, ...] = ("digits", "textures", "sci_patches")
    train_size: int | None = 600
    test_size: int | None = 300
    ratios: tuple[int, ...] = (2, 5, 10)
    repeats: int = 5
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
    pretrain_data: str = "fashion_mnist"
    pretrain_size: int | None = 2000
    pretrain_batch_size: int = 64
    truth_readouts: tuple[str, ...] = ("linear", "mlp1x64")
    truth_grid: Mapping[str, Sequence[float]] = dataclasses.field(
        default_factory=lambda: dict(_TRUTH_GRID)
    )
    truth_steps: int = 300
    truth_batch_size: int = 128
    truth: str = "best"
    seed: int = 0

    def __post_init__(self) -> None:
        from mdlnb import transfer

        for name in ("encoders", "tasks", "ratios", "linear_beta_factors"):
            value = tuple(getattr(self, name))
            if not value:
                raise ValueError(f"{name}: must not be empty")
            object.__setattr__(self, name, value)
        if len(set(self.encoders)) != len(self.encoders):
            raise ValueError(f"encoders: repeated entries in {self.encoders}")
        if len(self.encoders) < 2:
            raise ValueError("encoders: Kendall τ needs at least 2 encoders")
        for e in self.encoders:
            parse_encoder(e)
        for r in self.ratios:
            check_int("ratios", r, minimum=1, what=f"integers >= 1 (got {self.ratios})")
        for name in (
            "repeats",
            "min_n",
            "mdl_batch_size",
            "truth_steps",
            "truth_batch_size",
            "pretrain_batch_size",
        ):
            check_int(name, getattr(self, name), minimum=1)
        for name in ("train_size", "test_size", "pretrain_size"):
            check_int(name, getattr(self, name), minimum=2, allow_none=True)
        if any(not np.isfinite(b) or b <= 0 for b in self.linear_beta_factors):
            raise ValueError(f"linear_beta_factors: must be > 0, got {self.linear_beta_factors}")
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
        if self.truth not in TRUTH_READOUTS:
            raise ValueError(f"truth: must be one of {TRUTH_READOUTS}, got {self.truth!r}")
        object.__setattr__(self, "truth_readouts", tuple(self.truth_readouts))
        for r in self.truth_readouts:
            readout_from_name(r)
        object.__setattr__(
            self, "truth_grid", {k: tuple(v) for k, v in dict(self.truth_grid).items()}
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


def readout_from_name(name: str) -> Any:
    """:func:`mdlnb.readouts.from_name` (``"linear"``, ``"mlp<L>"``, ``"mlp<L>x<W>"``)."""
    from mdlnb import readouts

    try:
        return readouts.from_name(name)
    except ValueError as e:
        raise ValueError(f"truth_readouts: {e}") from None
