"""Encoders: real pretrained EfficientNet-Lite weights and self-pretrained objectives;
``layers`` splits one into an encoder per intermediate layer."""

from mdlnb.encoders._layers import POOLINGS, layer_names, layers
from mdlnb.encoders._pretrain import OBJECTIVES, pretrain
from mdlnb.encoders._staged import Plateau, StagedRun, train_until_plateau
from mdlnb.encoders.base import Encoder, adapt_images, features, prepare_images
from mdlnb.encoders.efficientnet import efficientnet_lite, efficientnet_lite_logits

__all__ = ["Encoder", "adapt_images", "features", "prepare_images"]
__all__ += ["efficientnet_lite", "efficientnet_lite_logits"]
__all__ += ["pretrain", "OBJECTIVES"]
__all__ += ["Plateau", "StagedRun", "train_until_plateau"]
__all__ += ["layers", "layer_names", "POOLINGS"]
