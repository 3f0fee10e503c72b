"""Pretraining losses: pure functions of network outputs (all in nats, batch means).

- ``cross_entropy``: supervised classification.
- ``nt_xent``: SimCLR's normalized-temperature cross-entropy (Chen et al., 2020).
- ``byol_loss``: BYOL's normalized regression, ``2 − 2·cos`` (Grill et al., 2020).
- ``dino_loss``: DINO's self-distillation cross-entropy with teacher centering
  and sharpening (Caron et al., 2021); ``update_center`` its EMA centre.
- ``random_masking`` / ``masked_mse``: MAE's per-example random patch masking
  and reconstruction error on masked patches only (He et al., 2021).
- ``mse``: plain reconstruction error (autoencoder).

Only the losses of the cross-entropy family are in nats; the regression losses
are squared errors in the units of their targets (intensity², cosine units).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def cross_entropy(logits: jax.Array, labels: jax.Array) -> jax.Array:
    """Mean ``−log softmax(logits)[label]`` (nats)."""
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.take_along_axis(logp, labels[:, None].astype(jnp.int32), axis=-1).mean()


def l2_normalize(x: jax.Array, eps: float = 1e-8) -> jax.Array:
    return x * jax.lax.rsqrt(jnp.maximum(jnp.sum(x * x, axis=-1, keepdims=True), eps * eps))


def nt_xent(z1: jax.Array, z2: jax.Array, temperature: float = 0.2) -> jax.Array:
    """SimCLR loss (nats) for projections of two views ``z1, z2`` (N, d).

    Rows are L2-normalized; for each of the 2N views the positive is the other
    view of the same example and the 2N − 2 other views are negatives:
    ``ℓ_i = −s_{i,p(i)}/τ + log Σ_{j≠i} exp(s_{ij}/τ)``, averaged over all 2N.
    """
    n = z1.shape[0]
    z = l2_normalize(jnp.concatenate([z1, z2], axis=0))
    sim = (z @ z.T) / temperature
    sim = jnp.where(jnp.eye(2 * n, dtype=bool), -jnp.inf, sim)
    pos = jnp.concatenate([jnp.arange(n, 2 * n), jnp.arange(n)])
    pos_logit = sim[jnp.arange(2 * n), pos]
    return (jax.nn.logsumexp(sim, axis=1) - pos_logit).mean()


def byol_loss(prediction: jax.Array, target: jax.Array) -> jax.Array:
    """Mean ``‖p/‖p‖ − z/‖z‖‖² = 2 − 2·cos(p, z)``; no gradient flows into ``target``."""
    p = l2_normalize(prediction)
    z = l2_normalize(jax.lax.stop_gradient(target))
    return (2.0 - 2.0 * jnp.sum(p * z, axis=-1)).mean()


def dino_loss(
    student_logits: jax.Array,
    teacher_logits: jax.Array,
    center: jax.Array,
    student_temp: float = 0.1,
    teacher_temp: float = 0.04,
) -> jax.Array:
    """Mean cross-entropy (nats) ``H(softmax((t − c)/τ_t), softmax(s/τ_s))``;
    the teacher side is a constant (stop-gradient)."""
    t = jax.nn.softmax(jax.lax.stop_gradient((teacher_logits - center) / teacher_temp), axis=-1)
    return -jnp.sum(t * jax.nn.log_softmax(student_logits / student_temp, axis=-1), axis=-1).mean()


def update_center(center: jax.Array, teacher_logits: jax.Array, momentum: float = 0.9) -> jax.Array:
    """DINO's centre: EMA of the batch-mean teacher logits."""
    return momentum * center + (1.0 - momentum) * teacher_logits.mean(0)


def num_masked(num_patches: int, mask_ratio: float) -> int:
    """Patches masked per example: ``round(mask_ratio · T)``, at least 1 left visible."""
    if not 0.0 < mask_ratio < 1.0:
        raise ValueError(f"mask_ratio: must lie in (0, 1), got {mask_ratio}")
    return min(int(round(mask_ratio * num_patches)), num_patches - 1)


def random_masking(
    key: jax.Array, batch: int, num_patches: int, mask_ratio: float
) -> tuple[jax.Array, jax.Array]:
    """Per-example uniformly random masks with exactly ``num_masked`` patches hidden.

    Returns ``keep`` (B, T − M) int32 indices of the visible patches (ascending)
    and ``mask`` (B, T) float32, 1 where a patch is masked.
    """
    m = num_masked(num_patches, mask_ratio)
    noise = jax.random.uniform(key, (batch, num_patches))
    order = jnp.argsort(noise, axis=1)
    keep = jnp.sort(order[:, m:], axis=1).astype(jnp.int32)
    mask = jnp.ones((batch, num_patches), jnp.float32)
    mask = mask.at[jnp.arange(batch)[:, None], keep].set(0.0)
    return keep, mask


def masked_mse(prediction: jax.Array, target: jax.Array, mask: jax.Array) -> jax.Array:
    """Mean over masked patches of the per-patch mean squared error.

    ``prediction, target`` (B, T, P) patch pixels; ``mask`` (B, T), 1 = masked.
    Visible patches contribute nothing.
    """
    per_patch = jnp.square(prediction - target).mean(-1)
    return jnp.sum(per_patch * mask) / jnp.maximum(jnp.sum(mask), 1.0)


def normalize_patches(patches: jax.Array, eps: float = 1e-6) -> jax.Array:
    """Per-patch standardization of MAE targets (``norm_pix_loss``)."""
    mu = patches.mean(-1, keepdims=True)
    var = patches.var(-1, keepdims=True)
    return (patches - mu) * jax.lax.rsqrt(var + eps)


def mse(prediction: jax.Array, target: jax.Array) -> jax.Array:
    """Mean squared error over all elements."""
    return jnp.square(prediction - target).mean()
