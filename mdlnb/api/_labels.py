"""Readers' names for what the figures show: encoder codes, architecture and objective
families, sizes, tasks and (encoder, task) pairs, in words readers know
(re-exported by :mod:`mdlnb.api.plots`)."""

from __future__ import annotations

import re

_OBJECTIVES = {
    "supervised": "supervised",
    "simclr": "SimCLR",
    "byol": "BYOL",
    "dino": "DINO",
    "mae": "MAE",
    "autoencoder": "autoencoder",
    "random": "untrained",
}
_TASKS = {
    "fashion_mnist": "Fashion-MNIST",
    "lfw_faces": "LFW faces",
    "clevr_count": "Clevr count",
    "clevr_distance": "Clevr distance",
    "dsprites_location": "dSprites location",
    "dsprites_orientation": "dSprites orientation",
    "sci_patches": "scientific patches",
    "clevr_closest_colour": "Clevr closest colour",
    "dsprites_scale": "dSprites scale",
    "dsprites_shape": "dSprites shape",
    "ihc_dab": "IHC DAB",
    "ihc_hematoxylin": "IHC hematoxylin",
    "clevr_closest_shape": "Clevr closest shape",
    "clevr_closest_size": "Clevr closest size",
    "fashion_mnist_category": "Fashion-MNIST category",
}


def encoder_label(name: str) -> str:
    """A reader's name for an encoder code: ``"lite0@32"`` → ``"EfficientNet-Lite0
    (32 px)"``, ``"simclr:resnet_M:20000"`` → ``"ResNet-M, SimCLR (20,000 steps)"``,
    ``"random:vit_XS"`` → ``"ViT-XS, untrained"``, ``"pixels"`` → ``"raw pixels"``;
    anything else unchanged."""
    if name == "pixels":
        return "raw pixels"
    lite = re.fullmatch(r"lite(\d)(?:@(\d+))?", name)
    if lite:
        return f"EfficientNet-Lite{lite.group(1)}" + (
            f" ({lite.group(2)} px)" if lite.group(2) else ""
        )
    parts = name.split(":")
    arch = re.fullmatch(r"(resnet|vit)_(\w+)", parts[1]) if len(parts) >= 2 else None
    if parts[0] in _OBJECTIVES and arch:
        label = (
            f"{'ResNet' if arch.group(1) == 'resnet' else 'ViT'}-{arch.group(2)}, "
            f"{_OBJECTIVES[parts[0]]}"
        )
        if len(parts) == 3 and parts[2].isdigit():
            label += f" ({int(parts[2]):,} steps)"
        return label
    return name


_ARCHS = {"efficientnet-lite": "EfficientNet-Lite", "resnet": "ResNet", "vit": "ViT"}


def family_label(architecture: str, objective: str) -> str:
    """A reader's name for an encoder family, as :func:`encoder_label` writes its
    members: ``("vit", "mae")`` → ``"ViT, MAE"``, ``("efficientnet-lite",
    "supervised-imagenet")`` → ``"EfficientNet-Lite, supervised (ImageNet)"``."""
    obj = (
        "supervised (ImageNet)"
        if objective == "supervised-imagenet"
        else _OBJECTIVES.get(objective, objective)
    )
    return f"{_ARCHS.get(architecture, architecture)}, {obj}"


def size_label(architecture: str, size: str) -> str:
    """A member's short name within its family: ``("vit", "S")`` → ``"ViT-S"``,
    ``("efficientnet-lite", "lite1")`` → ``"Lite1"``."""
    if architecture == "efficientnet-lite":
        return size.replace("lite", "Lite")
    return f"{_ARCHS.get(architecture, architecture)}-{size}"


def task_label(name: str) -> str:
    """A reader's name for a task: ``"fashion_mnist"`` → ``"Fashion-MNIST"``, underscores
    to spaces otherwise."""
    return _TASKS.get(name, name.replace("_", " "))


def pair_label(pair: str) -> str:
    """``"lite0@32/digits"`` → ``"EfficientNet-Lite0 (32 px) on digits"``."""
    enc, sep, task = pair.partition("/")
    return f"{encoder_label(enc)} on {task_label(task)}" if sep else encoder_label(pair)
