"""One compiled training step of each pretraining objective (:mod:`mdlnb.encoders._pretrain`).

What a step is made of: the hyperparameters (:class:`Hyper`, part of the
cache key), the objective's trainable head (discarded after pretraining),
the loss of one batch (:mod:`mdlnb.encoders.objectives`; nats for the
cross-entropy family, squared error for the reconstructions), the auxiliary
EMA state (BYOL's target network, DINO's teacher and centre), AdamW behind
global-norm clipping with its schedule, and the jitted ``lax.scan`` over a
chunk of steps (:func:`_make_chunk`), memoized so that one configuration
compiles once. :mod:`mdlnb.encoders._pretrain` drives the chunks (cache,
checkpoints, progress) and :mod:`mdlnb.encoders._staged` trains to a plateau
with the same program.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import optax

from mdlnb.encoders import archs, objectives
from mdlnb.encoders.augment import AugmentConfig, two_views
from mdlnb.infra import _xla_cache

OBJECTIVES = ("random", "supervised", "simclr", "byol", "dino", "mae", "autoencoder")
_VIT_ONLY = ("mae",)


@dataclasses.dataclass(frozen=True)
class Hyper:
    """Training hyperparameters (part of the cache key).

    AdamW with linear warmup (``warmup`` fraction of steps) and cosine decay to
    1% of ``learning_rate``; global-norm gradient clipping at ``clip``.
    """

    batch_size: int = 128
    learning_rate: float = 1e-3
    weight_decay: float = 1e-4
    warmup: float = 0.05
    clip: float = 1.0
    hidden_dim: int = 256  # projector / predictor / decoder hidden width
    proj_dim: int = 64  # SimCLR/BYOL projection, DINO bottleneck
    temperature: float = 0.2  # SimCLR
    ema_decay: float = 0.99  # BYOL target / DINO teacher
    dino_prototypes: int = 256
    dino_student_temp: float = 0.1
    dino_teacher_temp: float = 0.04
    dino_center_momentum: float = 0.9
    mask_ratio: float = 0.75  # MAE
    norm_pix: bool = False  # MAE: standardize each target patch
    decoder_dim: int = 64  # MAE decoder width (1 block)
    augment: AugmentConfig = AugmentConfig()

    def __post_init__(self) -> None:
        for name in ("batch_size", "hidden_dim", "proj_dim", "dino_prototypes", "decoder_dim"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name}: must be >= 1, got {getattr(self, name)}")
        for name in (
            "learning_rate",
            "temperature",
            "clip",
            "dino_student_temp",
            "dino_teacher_temp",
        ):
            v = getattr(self, name)
            if not (np.isfinite(v) and v > 0):
                raise ValueError(f"{name}: must be > 0, got {v}")
        for name in ("warmup", "ema_decay", "dino_center_momentum"):
            if not 0 <= getattr(self, name) < 1:
                raise ValueError(f"{name}: must lie in [0, 1), got {getattr(self, name)}")
        if self.weight_decay < 0:
            raise ValueError(f"weight_decay: must be >= 0, got {self.weight_decay}")
        objectives.num_masked(16, self.mask_ratio)  # validates mask_ratio


# -- heads ----------------------------------------------------------------------


def _mlp_init(rng: np.random.Generator, d_in: int, d_hidden: int, d_out: int) -> dict:
    return {
        "fc1": archs.dense_init(rng, d_in, d_hidden),
        "bn": archs.norm_init(d_hidden),
        "fc2": archs.dense_init(rng, d_hidden, d_out),
    }


def _mlp(p: dict, x: jax.Array) -> jax.Array:
    """Linear → BatchNorm (batch statistics) → ReLU → Linear."""
    h = archs.dense(p["fc1"], x)
    mu, var = h.mean(0), h.var(0)
    h = (h - mu) * jax.lax.rsqrt(var + 1e-5) * p["bn"]["scale"] + p["bn"]["bias"]
    return archs.dense(p["fc2"], jax.nn.relu(h))


def _head_init(
    key: jax.Array, objective: str, cfg: archs.ArchConfig, hp: Hyper, num_classes: int
) -> dict:
    """The objective's trainable head (discarded after pretraining)."""
    d, rng = cfg.feature_dim, archs.host_rng(key)
    if objective == "supervised":
        return {"cls": archs.dense_init(rng, d, num_classes)}
    if objective == "simclr":
        return {"proj": _mlp_init(rng, d, hp.hidden_dim, hp.proj_dim)}
    if objective == "byol":
        return {
            "proj": _mlp_init(rng, d, hp.hidden_dim, hp.proj_dim),
            "pred": _mlp_init(rng, hp.proj_dim, hp.hidden_dim, hp.proj_dim),
        }
    if objective == "dino":
        return {
            "proj": _mlp_init(rng, d, hp.hidden_dim, hp.proj_dim),
            "last": archs.dense_init(rng, hp.proj_dim, hp.dino_prototypes, bias=False),
        }
    if objective == "autoencoder":
        return {"dec": _mlp_init(rng, d, hp.hidden_dim, archs.IMAGE_SIZE**2)}
    if objective == "mae":
        dd = hp.decoder_dim
        return {
            "embed": archs.dense_init(rng, cfg.dim, dd),
            "mask_token": np.zeros((dd,), np.float32),
            "pos": (0.02 * rng.standard_normal((cfg.num_patches, dd))).astype(np.float32),
            "block": archs.block_init(rng, dd, 2),
            "ln": archs.norm_init(dd),
            "pred": archs.dense_init(rng, dd, cfg.patch * cfg.patch),
        }
    raise ValueError(f"objective: must be one of {OBJECTIVES}, got {objective!r}")


def _dino_logits(head: dict, feats: jax.Array) -> jax.Array:
    return objectives.l2_normalize(_mlp(head["proj"], feats)) @ head["last"]["w"]


# -- losses of one batch ------------------------------------------------------------


def _batch_loss(
    objective: str,
    cfg: archs.ArchConfig,
    hp: Hyper,
    params: dict,
    aux: dict,
    x: jax.Array,
    y: jax.Array,
    key: jax.Array,
) -> tuple[jax.Array, dict]:
    """Loss of one batch (``x`` float32 (B, 28, 28, 1) in [0, 1]) and the
    outputs the auxiliary-state update needs."""
    enc = functools.partial(archs.apply, cfg=cfg)
    head = params["head"]
    if objective == "supervised":
        return objectives.cross_entropy(archs.dense(head["cls"], enc(params["encoder"], x)), y), {}
    if objective == "autoencoder":
        recon = jax.nn.sigmoid(_mlp(head["dec"], enc(params["encoder"], x)))
        return objectives.mse(recon, x.reshape(x.shape[0], -1)), {}
    if objective == "mae":
        keep, mask = objectives.random_masking(key, x.shape[0], cfg.num_patches, hp.mask_ratio)
        tokens = archs.vit_tokens(params["encoder"], x, cfg, keep)
        pred = _mae_decode(head, tokens, keep, cfg, _decoder_heads(hp))
        target = archs.patchify(x, cfg.patch)
        if hp.norm_pix:
            target = objectives.normalize_patches(target)
        return objectives.masked_mse(pred, target, mask), {}
    v1, v2 = two_views(key, x, hp.augment)
    both = jnp.concatenate([v1, v2])
    h = enc(params["encoder"], both)
    if objective == "simclr":
        z = _mlp(head["proj"], h)
        return objectives.nt_xent(*jnp.split(z, 2), temperature=hp.temperature), {}
    target = aux["target"]
    h_t = jax.lax.stop_gradient(enc(target["encoder"], both))
    if objective == "byol":
        p1, p2 = jnp.split(_mlp(head["pred"], _mlp(head["proj"], h)), 2)
        z1, z2 = jnp.split(jax.lax.stop_gradient(_mlp(target["head"]["proj"], h_t)), 2)
        return objectives.byol_loss(p1, z2) + objectives.byol_loss(p2, z1), {}
    if objective == "dino":
        s1, s2 = jnp.split(_dino_logits(head, h), 2)
        t_all = jax.lax.stop_gradient(_dino_logits(target["head"], h_t))
        t1, t2 = jnp.split(t_all, 2)
        loss = 0.5 * (
            objectives.dino_loss(s1, t2, aux["center"], hp.dino_student_temp, hp.dino_teacher_temp)
            + objectives.dino_loss(
                s2, t1, aux["center"], hp.dino_student_temp, hp.dino_teacher_temp
            )
        )
        return loss, {"teacher_logits": t_all}
    raise ValueError(f"objective: must be one of {OBJECTIVES}, got {objective!r}")


def _decoder_heads(hp: Hyper) -> int:
    return max(1, hp.decoder_dim // 32)


def _mae_decode(
    head: dict, tokens: jax.Array, keep: jax.Array, cfg: archs.ArchConfig, heads: int
) -> jax.Array:
    """Visible-token encodings (B, T', dim) → predicted pixels of all patches (B, T, p·p)."""
    b = tokens.shape[0]
    vis = archs.dense(head["embed"], tokens)
    full = jnp.broadcast_to(head["mask_token"], (b, cfg.num_patches, vis.shape[-1]))
    full = full.at[jnp.arange(b)[:, None], keep].set(vis) + head["pos"]
    full = archs.block_apply(head["block"], full, heads)
    return archs.dense(head["pred"], archs.layer_norm(head["ln"], full))


# -- the compiled training program ------------------------------------------------


def _aux_init(objective: str, params: dict, hp: Hyper) -> dict:
    if objective == "byol":
        return {"target": jax.tree_util.tree_map(jnp.copy, params)}
    if objective == "dino":
        return {
            "target": jax.tree_util.tree_map(jnp.copy, params),
            "center": jnp.zeros((hp.dino_prototypes,), jnp.float32),
        }
    return {}


def _aux_update(objective: str, aux: dict, params: dict, out: dict, hp: Hyper) -> dict:
    if objective not in ("byol", "dino"):
        return aux
    target = optax.incremental_update(params, aux["target"], step_size=1.0 - hp.ema_decay)
    if objective == "byol":
        return {"target": target}
    center = objectives.update_center(aux["center"], out["teacher_logits"], hp.dino_center_momentum)
    return {"target": target, "center": center}


SCHEDULES = ("cosine", "constant")


def _optimizer(hp: Hyper, steps: int, schedule: str = "cosine") -> optax.GradientTransformation:
    """AdamW behind global-norm clipping. ``"cosine"``: linear warmup over
    ``hp.warmup · steps`` steps, cosine decay to 1 % at ``steps``; ``"constant"``
    (training of unknown length, stopped by a monitor): linear warmup over
    ``hp.warmup · steps`` steps, then ``hp.learning_rate`` for good. Both are
    schedules, so the optimizer state has one structure."""
    warm = int(round(hp.warmup * steps))
    if schedule == "cosine":
        sched = optax.warmup_cosine_decay_schedule(
            0.0, hp.learning_rate, max(warm, 1), max(steps, warm + 1), hp.learning_rate * 0.01
        )
    elif schedule == "constant":
        sched = optax.join_schedules(
            [
                optax.linear_schedule(0.0, hp.learning_rate, max(warm, 1)),
                optax.constant_schedule(hp.learning_rate),
            ],
            [max(warm, 1)],
        )
    else:
        raise ValueError(f"schedule: must be one of {SCHEDULES}, got {schedule!r}")
    return optax.chain(
        optax.clip_by_global_norm(hp.clip), optax.adamw(sched, weight_decay=hp.weight_decay)
    )


@functools.lru_cache(maxsize=32)
def _make_chunk(
    objective: str,
    cfg: archs.ArchConfig,
    hp: Hyper,
    steps: int,
    length: int,
    unroll: bool = False,
    schedule: str = "cosine",
) -> Callable:
    """Jitted ``(state, images, labels) -> (state, losses (length,))``: ``length``
    optimizer steps under ``lax.scan``, each on a batch drawn without
    replacement. Memoized, so repeated runs of one configuration compile once.

    ``unroll``: unroll the scan. XLA:CPU runs the ResNet's convolution
    backward pass ~13× slower inside a while loop than in straight-line code
    (measured: 626 vs 48 CPU ms per step for resnet S, batch 128), so the
    ResNet uses short unrolled chunks. ``schedule``: see :func:`_optimizer`."""
    _xla_cache.ensure()  # compiled programs are cached on disk
    opt = _optimizer(hp, steps, schedule)
    loss_fn = functools.partial(_batch_loss, objective, cfg, hp)

    @jax.jit
    def chunk(state, images, labels):
        def step(state, _):
            params, opt_state, aux, key = state
            key, k_idx, k_loss = jax.random.split(key, 3)
            idx = jax.random.choice(k_idx, images.shape[0], (hp.batch_size,), replace=False)
            x = images[idx].astype(jnp.float32)
            x = x / 255.0 if images.dtype == jnp.uint8 else x
            (loss, out), grads = jax.value_and_grad(loss_fn, has_aux=True)(
                params, aux, x, labels[idx], k_loss
            )
            updates, opt_state = opt.update(grads, opt_state, params)
            params = optax.apply_updates(params, updates)
            aux = _aux_update(objective, aux, params, out, hp)
            return (params, opt_state, aux, key), loss

        return jax.lax.scan(step, state, None, length=length, unroll=unroll)

    return chunk


def _keys(seed: int) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(encoder init, head init, training) keys; the encoder init is shared by all
    objectives, so ``"random"`` is exactly every objective's starting point."""
    return tuple(jax.random.split(jax.random.PRNGKey(seed), 3))


def _init_encoder(cfg: archs.ArchConfig, seed: int) -> dict:
    return jax.tree_util.tree_map(jnp.asarray, archs.init(_keys(seed)[0], cfg))


def _init_state(
    objective: str, cfg: archs.ArchConfig, hp: Hyper, steps: int, num_classes: int, seed: int
) -> tuple:
    """``(params, opt_state, aux, key)`` at step 0."""
    k_enc, k_head, k_train = _keys(seed)
    params = {
        "encoder": archs.init(k_enc, cfg),
        "head": _head_init(k_head, objective, cfg, hp, num_classes),
    }

    return (*_build_state(objective, hp, steps)(params), k_train)


@functools.lru_cache(maxsize=32)
def _build_state(objective: str, hp: Hyper, steps: int) -> Callable:
    """Jitted ``params -> (params, opt_state, aux)``: one compiled program
    instead of one per ``zeros_like``."""
    _xla_cache.ensure()  # compiled programs are cached on disk
    return jax.jit(lambda p: (p, _optimizer(hp, steps).init(p), _aux_init(objective, p, hp)))
