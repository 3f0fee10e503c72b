"""Self-pretrained encoders: the objectives family of the paper (Sec. 4), in miniature.

``pretrain(objective, arch, size, data, steps, seed)`` trains a small ResNet or
ViT (``mdlnb.encoders.archs``) on a task of images (Fashion-MNIST's training
split in the studies) with one of

- ``"random"``: no training, the initialization (the same init every other
  objective starts from, for the same seed);
- ``"supervised"``: linear classification head, cross-entropy on the labels;
- ``"simclr"``: NT-Xent between two augmented views through a projector MLP;
- ``"byol"``: online network + predictor regress an EMA target network;
- ``"dino"``: self-distillation from an EMA teacher with centering/sharpening;
- ``"mae"`` (ViT only): reconstruct masked patches from the visible ones;
- ``"autoencoder"``: reconstruct the image from the pooled feature vector.

Every objective's training step is one jitted function; ``lax.scan`` runs it
over chunks of steps, a Python loop runs the chunks (progress bar,
checkpoint). Parameters are cached under ``cache_dir("encoders")`` keyed by all
inputs; a second call with the same arguments loads them. An interrupted run
resumes from its last checkpoint.

Projector/predictor heads normalize with batch statistics (BatchNorm in
training mode, no running averages): they are discarded after pretraining,
so the encoder's ``apply`` stays stateless.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from typing import Any, Callable, Iterable, Mapping

import jax
import jax.numpy as jnp
import numpy as np
import optax

from mdlnb import _checkpoint, _xla_cache
from mdlnb._checks import check_images, check_int
from mdlnb._io import cache_dir, content_hash
from mdlnb._task import Task
from mdlnb.encoders import archs, objectives
from mdlnb.encoders.augment import AugmentConfig, two_views
from mdlnb.encoders.base import Encoder, prepare_images

OBJECTIVES = ("random", "supervised", "simclr", "byol", "dino", "mae", "autoencoder")
_VIT_ONLY = ("mae",)
_FORMAT = "mdlnb-pretrain-v1"


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
    hidden_dim: int = 256          # projector / predictor / decoder hidden width
    proj_dim: int = 64             # SimCLR/BYOL projection, DINO bottleneck
    temperature: float = 0.2       # SimCLR
    ema_decay: float = 0.99        # BYOL target / DINO teacher
    dino_prototypes: int = 256
    dino_student_temp: float = 0.1
    dino_teacher_temp: float = 0.04
    dino_center_momentum: float = 0.9
    mask_ratio: float = 0.75       # MAE
    norm_pix: bool = False         # MAE: standardize each target patch
    decoder_dim: int = 64          # MAE decoder width (1 block)
    augment: AugmentConfig = AugmentConfig()

    def __post_init__(self) -> None:
        for name in ("batch_size", "hidden_dim", "proj_dim", "dino_prototypes", "decoder_dim"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name}: must be >= 1, got {getattr(self, name)}")
        for name in ("learning_rate", "temperature", "clip", "dino_student_temp",
                     "dino_teacher_temp"):
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
    return {"fc1": archs.dense_init(rng, d_in, d_hidden), "bn": archs.norm_init(d_hidden),
            "fc2": archs.dense_init(rng, d_hidden, d_out)}


def _mlp(p: dict, x: jax.Array) -> jax.Array:
    """Linear → BatchNorm (batch statistics) → ReLU → Linear."""
    h = archs.dense(p["fc1"], x)
    mu, var = h.mean(0), h.var(0)
    h = (h - mu) * jax.lax.rsqrt(var + 1e-5) * p["bn"]["scale"] + p["bn"]["bias"]
    return archs.dense(p["fc2"], jax.nn.relu(h))


def _head_init(key: jax.Array, objective: str, cfg: archs.ArchConfig, hp: Hyper,
               num_classes: int) -> dict:
    """The objective's trainable head (discarded after pretraining)."""
    d, rng = cfg.feature_dim, archs.host_rng(key)
    if objective == "supervised":
        return {"cls": archs.dense_init(rng, d, num_classes)}
    if objective == "simclr":
        return {"proj": _mlp_init(rng, d, hp.hidden_dim, hp.proj_dim)}
    if objective == "byol":
        return {"proj": _mlp_init(rng, d, hp.hidden_dim, hp.proj_dim),
                "pred": _mlp_init(rng, hp.proj_dim, hp.hidden_dim, hp.proj_dim)}
    if objective == "dino":
        return {"proj": _mlp_init(rng, d, hp.hidden_dim, hp.proj_dim),
                "last": archs.dense_init(rng, hp.proj_dim, hp.dino_prototypes, bias=False)}
    if objective == "autoencoder":
        return {"dec": _mlp_init(rng, d, hp.hidden_dim, archs.IMAGE_SIZE ** 2)}
    if objective == "mae":
        dd = hp.decoder_dim
        return {"embed": archs.dense_init(rng, cfg.dim, dd),
                "mask_token": np.zeros((dd,), np.float32),
                "pos": (0.02 * rng.standard_normal((cfg.num_patches, dd))).astype(np.float32),
                "block": archs.block_init(rng, dd, 2), "ln": archs.norm_init(dd),
                "pred": archs.dense_init(rng, dd, cfg.patch * cfg.patch)}
    raise ValueError(f"objective: must be one of {OBJECTIVES}, got {objective!r}")


def _dino_logits(head: dict, feats: jax.Array) -> jax.Array:
    return objectives.l2_normalize(_mlp(head["proj"], feats)) @ head["last"]["w"]


# -- losses of one batch ------------------------------------------------------------

def _batch_loss(objective: str, cfg: archs.ArchConfig, hp: Hyper, params: dict, aux: dict,
                x: jax.Array, y: jax.Array, key: jax.Array) -> tuple[jax.Array, dict]:
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
        loss = 0.5 * (objectives.dino_loss(s1, t2, aux["center"], hp.dino_student_temp,
                                           hp.dino_teacher_temp)
                      + objectives.dino_loss(s2, t1, aux["center"], hp.dino_student_temp,
                                             hp.dino_teacher_temp))
        return loss, {"teacher_logits": t_all}
    raise ValueError(f"objective: must be one of {OBJECTIVES}, got {objective!r}")


def _decoder_heads(hp: Hyper) -> int:
    return max(1, hp.decoder_dim // 32)


def _mae_decode(head: dict, tokens: jax.Array, keep: jax.Array, cfg: archs.ArchConfig,
                heads: int) -> jax.Array:
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
        return {"target": jax.tree_util.tree_map(jnp.copy, params),
                "center": jnp.zeros((hp.dino_prototypes,), jnp.float32)}
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
        sched = optax.warmup_cosine_decay_schedule(0.0, hp.learning_rate, max(warm, 1),
                                                   max(steps, warm + 1), hp.learning_rate * 0.01)
    elif schedule == "constant":
        sched = optax.join_schedules(
            [optax.linear_schedule(0.0, hp.learning_rate, max(warm, 1)),
             optax.constant_schedule(hp.learning_rate)], [max(warm, 1)])
    else:
        raise ValueError(f"schedule: must be one of {SCHEDULES}, got {schedule!r}")
    return optax.chain(optax.clip_by_global_norm(hp.clip),
                       optax.adamw(sched, weight_decay=hp.weight_decay))


@functools.lru_cache(maxsize=32)
def _make_chunk(objective: str, cfg: archs.ArchConfig, hp: Hyper, steps: int, length: int,
                unroll: bool = False, schedule: str = "cosine") -> Callable:
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
                params, aux, x, labels[idx], k_loss)
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


def _init_state(objective: str, cfg: archs.ArchConfig, hp: Hyper, steps: int, num_classes: int,
                seed: int) -> tuple:
    """``(params, opt_state, aux, key)`` at step 0."""
    k_enc, k_head, k_train = _keys(seed)
    params = {"encoder": archs.init(k_enc, cfg),
              "head": _head_init(k_head, objective, cfg, hp, num_classes)}

    return (*_build_state(objective, hp, steps)(params), k_train)


@functools.lru_cache(maxsize=32)
def _build_state(objective: str, hp: Hyper, steps: int) -> Callable:
    """Jitted ``params -> (params, opt_state, aux)``: one compiled program
    instead of one per ``zeros_like``."""
    _xla_cache.ensure()  # compiled programs are cached on disk
    return jax.jit(lambda p: (p, _optimizer(hp, steps).init(p), _aux_init(objective, p, hp)))


# -- public API -------------------------------------------------------------------

def _check_args(objective: str, arch: str, size: str, steps: int, seed: int) -> archs.ArchConfig:
    if objective not in OBJECTIVES:
        raise ValueError(f"objective: must be one of {OBJECTIVES}, got {objective!r}")
    cfg = archs.config(arch, size)
    if objective in _VIT_ONLY and arch != "vit":
        raise ValueError(f"arch: objective {objective!r} needs arch='vit', got {arch!r}")
    check_int("steps", steps, minimum=0)
    if objective != "random" and steps < 1:
        raise ValueError(f"steps: objective {objective!r} needs steps >= 1, got {steps}")
    check_int("seed", seed, minimum=0)
    return cfg


def _images(data: Task) -> np.ndarray:
    """``data.x`` as uint8 (N, 28, 28, 1) when it already is, else float32 in [0, 1]."""
    if not isinstance(data, Task):
        raise ValueError(f"data: must be an mdlnb.Task of images, got {type(data).__name__}")
    x, _ = check_images(data.x, "data")
    if x.dtype == np.uint8 and x.shape[1:] == (28, 28, 1):
        return x
    return prepare_images(x, (archs.IMAGE_SIZE, archs.IMAGE_SIZE), 1)


def _encoder(objective: str, cfg: archs.ArchConfig, params: Any, meta: dict) -> Encoder:
    name = f"{objective}-{cfg.kind}_{cfg.size}-{meta['steps']}steps-seed{meta['seed']}"
    return Encoder(name=name, params=params, apply=functools.partial(archs.apply, cfg=cfg),
                   input_size=(archs.IMAGE_SIZE, archs.IMAGE_SIZE), channels=1,
                   feature_dim=cfg.feature_dim, meta=meta)


def _save(path, tree: Any, meta: dict, key: str) -> None:
    _checkpoint.save(path, tree, key=key, meta=meta)


def _load(path, template: Any) -> tuple[Any, dict] | None:
    """Leaves from ``path`` in the structure of ``template``; None if they do not fit.
    The file name holds the cache key (files written before the shared format
    carry no key field and still load)."""
    ck = _checkpoint.load(path, template, key=None)
    return None if ck is None else (ck.tree, ck.meta)


def pretrain(objective: str, arch: str, size: str, data: Task, steps: int, seed: int = 0, *,
             batch_size: int | None = None, learning_rate: float | None = None,
             hyper: Hyper | None = None, progress: bool | Callable[[int, float], Any] | None = None,
             cache: bool = True, chunk_steps: int | None = None,
             checkpoint_seconds: float = 60.0) -> Encoder:
    """Train (or load) an encoder; returns an ``Encoder`` of pooled pre-projection features.

    Args:
      objective: one of ``OBJECTIVES``.
      arch: ``"resnet"`` or ``"vit"``; size: ``"XS"``, ``"S"``, ``"M"``, ``"L"``.
      data: a ``Task`` of images (uint8 or float in [0, 1]); labels are used by
        ``"supervised"`` only.
      steps: optimizer steps (ignored, recorded as 0, for ``"random"``).
      seed: one seed for initialization, batch sampling, augmentations, masks.
      batch_size, learning_rate: override those of ``hyper`` (default ``Hyper()``).
      progress: True for a tqdm bar, or a callable ``(steps_done, mean_chunk_loss)``.
      cache: load/save parameters under ``cache_dir("encoders")``; also
        checkpoint every ``checkpoint_seconds`` and resume an interrupted run.
      chunk_steps: steps per compiled ``lax.scan`` chunk; default 50 for the
        ViT (a rolled loop) and 10 for the ResNet (unrolled, see ``_make_chunk``).

    ``meta`` records objective, arch, size, steps, seed, final loss (mean over
    the last chunk; nats for supervised/simclr/dino, squared error otherwise),
    loss per chunk, encoder parameter count, head parameter count, training
    seconds, hyperparameters, data hash, and ``loaded_from_cache``.
    """
    cfg = _check_args(objective, arch, size, steps, seed)
    hp = hyper or Hyper()
    if not isinstance(hp, Hyper):
        raise ValueError(f"hyper: must be a Hyper, got {type(hp).__name__}")
    changes = {k: v for k, v in (("batch_size", batch_size), ("learning_rate", learning_rate))
               if v is not None}
    hp = dataclasses.replace(hp, **changes)
    unroll = cfg.kind == "resnet"
    chunk_steps = chunk_steps if chunk_steps is not None else (10 if unroll else 50)
    if int(chunk_steps) < 1:
        raise ValueError(f"chunk_steps: must be >= 1, got {chunk_steps}")
    images = _images(data)
    if objective != "random" and hp.batch_size > images.shape[0]:
        raise ValueError(f"batch_size: {hp.batch_size} exceeds the {images.shape[0]} images of data")
    steps = 0 if objective == "random" else int(steps)

    enc0 = _init_encoder(cfg, int(seed))
    meta = {"objective": objective, "arch": arch, "size": size, "steps": steps, "seed": int(seed),
            "param_count": archs.param_count(enc0), "feature_dim": cfg.feature_dim,
            "arch_config": dataclasses.asdict(cfg), "data": data.name,
            "loaded_from_cache": False}
    if objective == "random":
        return _encoder(objective, cfg, enc0, {**meta, "final_loss": None})

    hp_dict = dataclasses.asdict(hp)
    data_hash = content_hash(images, data.y, data.num_classes)
    ckey = content_hash(_FORMAT, objective, cfg, steps, int(seed), data_hash, hp_dict)
    path = cache_dir("encoders") / f"{objective}-{arch}_{size}-{steps}-s{seed}-{ckey}.npz"
    ckpt = path.with_suffix(".ckpt.npz")
    meta.update(hyper=hp_dict, data_hash=data_hash)
    if cache and path.exists():
        loaded = _load(path, enc0)
        if loaded is not None:
            params, saved = loaded
            return _encoder(objective, cfg, params, {**saved, "loaded_from_cache": True})

    state = _init_state(objective, cfg, hp, steps, data.num_classes, int(seed))
    meta["head_param_count"] = archs.param_count(state[0]["head"])
    done, losses, seconds = 0, [], 0.0
    if cache and ckpt.exists():
        loaded = _load(ckpt, (state, np.int64(0), np.float64(0.0)))
        if loaded is not None:
            (state, done, seconds), extra = loaded
            done, seconds, losses = int(done), float(seconds), list(extra["chunk_losses"])

    images_d, labels_d = jnp.asarray(images), jnp.asarray(data.y, jnp.int32)
    chunk = max(1, min(int(chunk_steps), steps))
    fns: dict[int, Callable] = {}
    bar = None
    if progress is True:
        from mdlnb import _progress

        bar = _progress.bar(total=steps, initial=done, desc=f"{objective} {arch}_{size}",
                            unit="step")
    t_last = time.perf_counter()
    while done < steps:
        n = min(chunk, steps - done)
        if n not in fns:
            fns[n] = _make_chunk(objective, cfg, hp, steps, n, unroll)
        t0 = time.perf_counter()
        state, chunk_losses = fns[n](state, images_d, labels_d)
        chunk_losses = np.asarray(chunk_losses, np.float64)
        seconds += time.perf_counter() - t0
        if not np.all(np.isfinite(chunk_losses)):
            raise FloatingPointError(f"{objective} {arch}_{size}: non-finite loss at step "
                                     f"{done + int(np.argmin(np.isfinite(chunk_losses)))}")
        done += n
        losses.append(float(chunk_losses.mean()))
        if cache and done < steps and time.perf_counter() - t_last >= checkpoint_seconds:
            _save(ckpt, (state, np.int64(done), np.float64(seconds)), {"chunk_losses": losses}, ckey)
            t_last = time.perf_counter()
        if bar is not None:
            bar.update(n)
            bar.set_postfix(loss=f"{losses[-1]:.4f}")
        elif callable(progress):
            progress(done, losses[-1])
    if bar is not None:
        bar.close()

    params = jax.tree_util.tree_map(np.asarray, state[0]["encoder"])
    meta.update(final_loss=losses[-1], chunk_losses=losses, train_seconds=round(seconds, 3),
                chunk_steps=chunk, unrolled=unroll)
    if cache:
        _save(path, params, meta, ckey)
        ckpt.unlink(missing_ok=True)
    return _encoder(objective, cfg, jax.tree_util.tree_map(jnp.asarray, params), meta)


# -- suites and profiles --------------------------------------------------------------

def supports(objective: str, arch: str) -> bool:
    """Whether ``objective`` is defined for ``arch`` (MAE needs patch tokens: ViT only)."""
    return objective in OBJECTIVES and arch in archs.ARCHS and (
        objective not in _VIT_ONLY or arch == "vit")


def pretrain_suite(objectives: Iterable[str], archs: Iterable[str], sizes: Iterable[str],
                   steps: int | Mapping[str, int], seed: int, data: Task,
                   progress: bool | Callable[[int, float], Any] | None = None,
                   **kwargs: Any) -> dict[tuple[str, str, str], Encoder]:
    """Every supported ``(objective, arch, size)`` combination, keyed by that triple.

    ``steps`` is one count or a mapping objective → count; unsupported
    combinations (MAE on a ResNet) are skipped. Each encoder is cached on its
    own, so an interrupted suite resumes where it stopped. ``kwargs`` go to
    ``pretrain``.
    """
    out: dict[tuple[str, str, str], Encoder] = {}
    for arch in archs:  # noqa: F402 (shadows the module inside this function only)
        for size in sizes:
            for objective in objectives:
                if not supports(objective, arch):
                    if objective not in OBJECTIVES:
                        raise ValueError(f"objectives: unknown {objective!r}; one of {OBJECTIVES}")
                    continue
                n = steps[objective] if isinstance(steps, Mapping) else steps
                out[(objective, arch, size)] = pretrain(objective, arch, size, data, n, seed,
                                                        progress=progress, **kwargs)
    return out


@dataclasses.dataclass(frozen=True)
class Profile:
    """How long to train the encoders of the two studies.

    ``objectives_study`` and ``scaling_study`` list ``(objective, arch, size)``.
    """

    name: str
    steps: int
    batch_size: int
    learning_rate: float
    objectives_study: tuple[tuple[str, str, str], ...]
    scaling_study: tuple[tuple[str, str, str], ...]


def _study(size: str) -> tuple[tuple[str, str, str], ...]:
    return tuple((o, "resnet", size) for o in ("random", "supervised", "simclr", "byol",
                                               "autoencoder")) + tuple(
        (o, "vit", size) for o in ("random", "supervised", "simclr", "dino", "mae"))


PROFILES: dict[str, Profile] = {
    # seconds: notebooks' CI runs
    "smoke": Profile("smoke", steps=10, batch_size=32, learning_rate=3e-3,
                     objectives_study=_study("XS"),
                     scaling_study=tuple(("mae", "vit", s) for s in ("XS", "S"))),
    # ≤ 20 min on a 2-core CPU for both studies (benchmarks/bench_pretrain.py)
    "default": Profile("default", steps=300, batch_size=128, learning_rate=2e-3,
                       objectives_study=_study("S"),
                       scaling_study=tuple(("mae", "vit", s) for s in ("S", "M", "L"))),
    # an accelerator: longer training, larger batches (contrastive losses like them)
    "full": Profile("full", steps=10_000, batch_size=512, learning_rate=1e-3,
                    objectives_study=_study("M"),
                    scaling_study=tuple(("mae", "vit", s) for s in ("S", "M", "L"))
                    + tuple(("byol", "resnet", s) for s in ("S", "M", "L"))),
}


def pretrain_study(study: str, data: Task, *, profile: str = "default", seed: int = 0,
                   progress: bool | Callable[[int, float], Any] | None = None,
                   **kwargs: Any) -> dict[tuple[str, str, str], Encoder]:
    """The encoders of ``study`` in {"objectives", "scaling"} under ``PROFILES[profile]``."""
    if profile not in PROFILES:
        raise ValueError(f"profile: must be one of {sorted(PROFILES)}, got {profile!r}")
    if study not in ("objectives", "scaling"):
        raise ValueError(f"study: must be 'objectives' or 'scaling', got {study!r}")
    prof = PROFILES[profile]
    kwargs = {"batch_size": prof.batch_size, "learning_rate": prof.learning_rate, **kwargs}
    plan = prof.objectives_study if study == "objectives" else prof.scaling_study
    return {(o, a, s): pretrain(o, a, s, data, prof.steps, seed, progress=progress, **kwargs)
            for o, a, s in plan}
