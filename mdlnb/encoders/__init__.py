"""Encoders: real pretrained EfficientNet-Lite weights and self-pretrained objectives."""

from mdlnb.encoders.base import Encoder, features, prepare_images

__all__ = ["Encoder", "features", "prepare_images"]
