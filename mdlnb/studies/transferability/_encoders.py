"""Encoders of the study: parse ``"lite0@64"`` / ``"simclr:resnet_S:300"``, build them,
their source-classifier probabilities, and a provenance table."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from mdlnb import data, encoders
from mdlnb.baselines.transfer import source_probs_from_head
from mdlnb.core._task import Task
from mdlnb.encoders import OBJECTIVES, pretrain
from mdlnb.studies import pretraining, zoo
from mdlnb.studies.zoo import ZooConfig, parse_member


@dataclasses.dataclass(frozen=True)
class EncoderSpec:
    """How to build one encoder.

    ``family == "efficientnet"``: ImageNet EfficientNet-Lite``variant`` at
    ``resolution`` px (has a source classifier). Otherwise ``family`` is a
    pretraining objective of :mod:`mdlnb.encoders.pretrain` and ``arch``,
    ``size``, ``steps``, ``seed`` are its arguments; ``trained``: the committed
    artifact of the pretraining stage (:mod:`mdlnb.studies.pretraining`,
    trained until its probe stopped improving) instead of ``steps`` steps.
    """

    family: str
    variant: int = 0
    resolution: int = 64
    arch: str = "resnet"
    size: str = "S"
    steps: int = 0
    seed: int = 0
    trained: bool = False
    member: str | None = None

    @property
    def has_source_classifier(self) -> bool:
        return self.family == "efficientnet"


def parse_encoder(text: str) -> EncoderSpec:
    """Parse ``"lite0@64"`` (EfficientNet-Lite0 at 64 px), ``"zoo:simclr@500"`` (a
    checkpoint of the zoo, :mod:`mdlnb.studies.zoo`) or
    ``"objective:arch_size[:steps[:seed]]"`` (e.g. ``"simclr:resnet_S:300"``,
    ``"random:resnet_S"``), where ``steps`` may be ``trained``: the committed
    encoder of the pretraining stage (``"simclr:vit_S:trained"``)."""
    if not isinstance(text, str) or not text:
        raise ValueError(f"encoders: expected a non-empty string, got {text!r}")
    if text.startswith("zoo:"):
        member = text[4:]
        try:
            family, _ = parse_member(member)
        except ValueError:
            raise ValueError(
                f"encoders: cannot parse {text!r}; expected 'zoo:<family>@<step>', "
                f"'zoo:<family>@final' or 'zoo:random'"
            ) from None
        z = ZooConfig()
        return EncoderSpec(family, arch=z.arch, size=z.size, seed=z.seed, member=member)
    if text.startswith("lite"):
        head, _, res = text.partition("@")
        try:
            variant = int(head[4:])
            resolution = int(res) if res else {0: 224, 1: 240, 2: 260}[variant]
        except (ValueError, KeyError):
            raise ValueError(f"encoders: cannot parse {text!r}; expected e.g. 'lite0@64'") from None
        return EncoderSpec("efficientnet", variant=variant, resolution=resolution)
    parts = text.split(":")
    if len(parts) < 2 or parts[0] not in OBJECTIVES or "_" not in parts[1]:
        raise ValueError(
            f"encoders: cannot parse {text!r}; expected 'lite<v>@<px>' or "
            f"'<objective>:<arch>_<size>[:steps[:seed]]' with objective in "
            f"{OBJECTIVES}"
        )
    arch, size = parts[1].split("_", 1)
    trained = len(parts) > 2 and parts[2] == "trained"
    try:
        steps = int(parts[2]) if len(parts) > 2 and not trained else 0
        seed = int(parts[3]) if len(parts) > 3 else 0
    except ValueError:
        raise ValueError(
            f"encoders: steps must be an integer or 'trained', and seed an integer, in {text!r}"
        ) from None
    return EncoderSpec(parts[0], arch=arch, size=size, steps=steps, seed=seed, trained=trained)


def build_encoder(
    spec: EncoderSpec,
    pretrain_data: Task | None = None,
    *,
    batch_size: int = 64,
    progress: bool = False,
) -> Any:
    """The :class:`mdlnb.encoders.Encoder` of ``spec`` (self-pretrained ones are
    trained on ``pretrain_data``, or loaded from the encoder cache)."""
    if spec.family == "efficientnet":
        return encoders.efficientnet_lite(spec.variant, resolution=spec.resolution)

    if spec.member is not None:
        return zoo.load_member(spec.member, arch=spec.arch, size=spec.size, seed=spec.seed)
    if spec.trained:
        return pretraining.load_encoder(spec.family, spec.arch, spec.size, spec.seed)
    if pretrain_data is None:
        raise ValueError(f"pretrain_data: needed to build the {spec.family!r} encoder")
    return pretrain(
        spec.family,
        spec.arch,
        spec.size,
        pretrain_data,
        spec.steps,
        spec.seed,
        batch_size=min(int(batch_size), pretrain_data.n),
        progress=progress,
    )


def build_encoders(config: Any, *, progress: bool = False) -> tuple[dict, dict]:
    """``(specs, built)``: the parsed spec and the Encoder of every name in
    ``config.encoders``, self-pretrained ones on one shared pretraining set
    (``config.pretrain_data``, ``pretrain_size``, ``seed``; batch
    ``pretrain_batch_size``). Any study config with those fields will do."""
    specs = {e: parse_encoder(e) for e in config.encoders}
    pre = None
    if any(
        not s.has_source_classifier and not s.trained and s.member is None for s in specs.values()
    ):
        pre = data.load(
            config.pretrain_data, split="train", size=config.pretrain_size, seed=config.seed
        )
    built = {
        k: build_encoder(s, pre, batch_size=config.pretrain_batch_size, progress=progress)
        for k, s in specs.items()
    }
    return specs, built


def zoo_of(spec: EncoderSpec) -> str:
    """The zoo an encoder belongs to: one architecture and one feature size
    (``"lite"``: EfficientNet-Lite, 1,280-d; else ``"<arch>_<size>"``, e.g. ``"vit_S"``).
    Encoders of different zoos are never ranked together (PACTran Table 7)."""
    return "lite" if spec.family == "efficientnet" else f"{spec.arch}_{spec.size}"


def source_probs(encoder: Any, features: np.ndarray) -> np.ndarray | None:
    """ImageNet class probabilities (N, 1000) from penultimate features, or None
    for an encoder without a source classifier."""
    head = encoder.params.get("classifier") if isinstance(encoder.params, Mapping) else None
    if head is None:
        return None
    return source_probs_from_head(features, np.asarray(head["w"]), np.asarray(head["b"]))


def encoder_table(specs: Mapping[str, EncoderSpec], built: Mapping[str, Any]):
    """One row per encoder: name, family, source classifier, feature dim, provenance."""
    import pandas as pd

    rows = []
    for key, spec in specs.items():
        enc = built[key]
        m = dict(enc.meta)
        rows.append(
            {
                "encoder": key,
                "zoo": zoo_of(spec),
                "name": enc.name,
                "family": spec.family,
                "source_classifier": spec.has_source_classifier,
                "feature_dim": int(enc.feature_dim),
                "input": f"{enc.input_size[0]}x{enc.input_size[1]}x{enc.channels}",
                "pretrain_steps": m.get("steps", 0 if spec.has_source_classifier else None),
                "final_loss": m.get("final_loss", m.get("loss")),
                "source_accuracy": m.get("probe_accuracy"),
                "sha256": m.get("sha256"),
            }
        )
    return pd.DataFrame(rows)
