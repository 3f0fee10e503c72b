"""Image augmentations for contrastive/distillation pretraining, vectorized in JAX.

Every function takes an explicit PRNG key and a batch of float32 images
``(B, H, W, C)`` in ``[0, 1]`` and returns a batch of the same shape, still in
``[0, 1]``; each image gets its own random draw. The same key gives the same
output.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp


@dataclasses.dataclass(frozen=True)
class AugmentConfig:
    """Parameters of the SimCLR/BYOL view distribution on small grey images.

    crop_scale: range of the crop area as a fraction of the image area.
    crop_ratio: range of the crop aspect ratio (width / height), sampled log-uniformly.
    flip_prob: probability of a horizontal flip.
    max_shift: largest translation in pixels (integer, zero fill).
    brightness, contrast: jitter strengths (factors drawn from ``[1-s, 1+s]``).
    jitter_prob: probability that brightness/contrast jitter is applied.
    noise_std: standard deviation of additive Gaussian noise (intensity units).
    """

    crop_scale: tuple[float, float] = (0.35, 1.0)
    crop_ratio: tuple[float, float] = (3 / 4, 4 / 3)
    flip_prob: float = 0.5
    max_shift: int = 2
    brightness: float = 0.4
    contrast: float = 0.4
    jitter_prob: float = 0.8
    noise_std: float = 0.03

    def __post_init__(self) -> None:
        lo, hi = self.crop_scale
        if not 0 < lo <= hi <= 1:
            raise ValueError(f"crop_scale: need 0 < lo <= hi <= 1, got {self.crop_scale}")
        lo, hi = self.crop_ratio
        if not 0 < lo <= hi:
            raise ValueError(f"crop_ratio: need 0 < lo <= hi, got {self.crop_ratio}")
        for name in ("flip_prob", "jitter_prob"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name}: must lie in [0, 1], got {getattr(self, name)}")
        for name in ("max_shift", "brightness", "contrast", "noise_std"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name}: must be >= 0, got {getattr(self, name)}")


def _bilinear(image: jax.Array, rows: jax.Array, cols: jax.Array) -> jax.Array:
    """Sample ``image`` (H, W, C) at fractional pixel coordinates (edge-clamped)."""
    h, w = image.shape[:2]
    r0 = jnp.clip(jnp.floor(rows), 0, h - 1)
    c0 = jnp.clip(jnp.floor(cols), 0, w - 1)
    r1 = jnp.clip(r0 + 1, 0, h - 1)
    c1 = jnp.clip(c0 + 1, 0, w - 1)
    fr = jnp.clip(rows - r0, 0.0, 1.0)[..., None]
    fc = jnp.clip(cols - c0, 0.0, 1.0)[..., None]
    r0, r1, c0, c1 = (a.astype(jnp.int32) for a in (r0, r1, c0, c1))
    top = image[r0, c0] * (1 - fc) + image[r0, c1] * fc
    bot = image[r1, c0] * (1 - fc) + image[r1, c1] * fc
    return top * (1 - fr) + bot * fr


def random_resized_crop(
    key: jax.Array,
    images: jax.Array,
    scale: tuple[float, float] = (0.35, 1.0),
    ratio: tuple[float, float] = (3 / 4, 4 / 3),
) -> jax.Array:
    """Crop a random box (area fraction in ``scale``, aspect in ``ratio``) and
    resize it back to full size with bilinear interpolation.

    The box is clipped to the image; ``scale=(1, 1), ratio=(1, 1)`` on a square
    image is the identity.
    """
    b, h, w, _ = images.shape
    k_area, k_ratio, k_r, k_c = jax.random.split(key, 4)
    area = jax.random.uniform(k_area, (b,), minval=scale[0], maxval=scale[1]) * h * w
    log_r = jax.random.uniform(k_ratio, (b,), minval=jnp.log(ratio[0]), maxval=jnp.log(ratio[1]))
    aspect = jnp.exp(log_r)
    ch = jnp.clip(jnp.sqrt(area / aspect), 1.0, h)  # crop height, pixels
    cw = jnp.clip(jnp.sqrt(area * aspect), 1.0, w)
    top = jax.random.uniform(k_r, (b,)) * (h - ch)
    left = jax.random.uniform(k_c, (b,)) * (w - cw)
    # output pixel centre i ↦ input coordinate top + (i + ½)·ch/h − ½
    i = jnp.arange(h, dtype=jnp.float32) + 0.5
    j = jnp.arange(w, dtype=jnp.float32) + 0.5
    rows = top[:, None] + i[None] * (ch / h)[:, None] - 0.5
    cols = left[:, None] + j[None] * (cw / w)[:, None] - 0.5

    def one(img, r, c):
        return _bilinear(img, r[:, None] * jnp.ones((1, w)), c[None, :] * jnp.ones((h, 1)))

    return jax.vmap(one)(images, rows, cols)


def horizontal_flip(key: jax.Array, images: jax.Array, prob: float = 0.5) -> jax.Array:
    """Mirror each image left-right with probability ``prob``."""
    flip = jax.random.bernoulli(key, prob, (images.shape[0], 1, 1, 1))
    return jnp.where(flip, images[:, :, ::-1], images)


def translate(key: jax.Array, images: jax.Array, max_shift: int = 2) -> jax.Array:
    """Shift each image by integer ``(dy, dx)`` uniform in ``[-max_shift, max_shift]``,
    filling with zeros (the background of Fashion-MNIST)."""
    if max_shift == 0:
        return images
    b, h, w, c = images.shape
    s = int(max_shift)
    shifts = jax.random.randint(key, (b, 2), -s, s + 1)
    padded = jnp.pad(images, ((0, 0), (s, s), (s, s), (0, 0)))

    def one(img, d):
        return jax.lax.dynamic_slice(img, (s - d[0], s - d[1], 0), (h, w, c))

    return jax.vmap(one)(padded, shifts)


def color_jitter(
    key: jax.Array,
    images: jax.Array,
    brightness: float = 0.4,
    contrast: float = 0.4,
    prob: float = 0.8,
) -> jax.Array:
    """With probability ``prob``: multiply by a brightness factor in
    ``[1-brightness, 1+brightness]``, then scale deviations from the image mean
    by a contrast factor in ``[1-contrast, 1+contrast]``; clip to [0, 1]."""
    b = images.shape[0]
    k_on, k_b, k_c = jax.random.split(key, 3)
    on = jax.random.bernoulli(k_on, prob, (b, 1, 1, 1))
    fb = jax.random.uniform(k_b, (b, 1, 1, 1), minval=1 - brightness, maxval=1 + brightness)
    fc = jax.random.uniform(k_c, (b, 1, 1, 1), minval=1 - contrast, maxval=1 + contrast)
    x = jnp.clip(images * fb, 0.0, 1.0)
    mean = x.mean((1, 2, 3), keepdims=True)
    x = jnp.clip((x - mean) * fc + mean, 0.0, 1.0)
    return jnp.where(on, x, images)


def gaussian_noise(key: jax.Array, images: jax.Array, std: float = 0.03) -> jax.Array:
    """Add N(0, std²) noise per pixel; clip to [0, 1]."""
    return jnp.clip(images + std * jax.random.normal(key, images.shape, images.dtype), 0.0, 1.0)


def augment(key: jax.Array, images: jax.Array, cfg: AugmentConfig = AugmentConfig()) -> jax.Array:
    """One random view: crop-resize, flip, translate, brightness/contrast jitter, noise."""
    k = jax.random.split(key, 5)
    x = random_resized_crop(k[0], images, cfg.crop_scale, cfg.crop_ratio)
    x = horizontal_flip(k[1], x, cfg.flip_prob)
    x = translate(k[2], x, cfg.max_shift)
    x = color_jitter(k[3], x, cfg.brightness, cfg.contrast, cfg.jitter_prob)
    return gaussian_noise(k[4], x, cfg.noise_std)


def two_views(
    key: jax.Array, images: jax.Array, cfg: AugmentConfig = AugmentConfig()
) -> tuple[jax.Array, jax.Array]:
    """Two independent views of the same batch."""
    k1, k2 = jax.random.split(key)
    return augment(k1, images, cfg), augment(k2, images, cfg)
