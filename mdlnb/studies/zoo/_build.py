"""Build the zoo: replay each family's pretraining run and keep its encoder at the zoo's steps.

:func:`build` trains every family of :class:`ZooConfig` from its seed with the
pretraining stage's program (:func:`mdlnb.encoders._pretrain._make_chunk`
under the ``"constant"`` schedule of the stage's ``max_steps``: the committed
run's warmup, learning rate, batches and augmentations) up to the largest step
still missing, writing the encoder at each of ``config.steps`` as an artifact
(:mod:`._artifacts`) as soon as it is reached. The training state is
checkpointed after every kept step and every ``checkpoint_seconds``, so an
interrupted build resumes bit for bit; a rebuild (``rebuild=True``) starts
from nothing, its state beside its artifacts, and on the same machine writes
the same bytes (``python -m mdlnb.studies.zoo verify --against DIR``).
"""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from mdlnb import data
from mdlnb.encoders import _pretrain as P
from mdlnb.infra import _checkpoint
from mdlnb.infra._io import cache_dir, content_hash
from mdlnb.studies.pretraining import _artifacts as _enc
from mdlnb.studies.pretraining import monitor as stage_monitor
from mdlnb.studies.zoo import _artifacts
from mdlnb.studies.zoo._config import ZooConfig

_FORMAT = "mdlnb-zoo-v1"


def _missing(config: ZooConfig, family: str, directory: Path, rebuild: bool) -> list[int]:
    if rebuild:
        return list(config.steps)
    return [
        s
        for s in config.steps
        if _artifacts.provenance(
            f"{family}@{s}",
            arch=config.arch,
            size=config.size,
            seed=config.seed,
            directory=directory,
        )
        is None
    ]


def _probe(monitor: Any, family: str, config: ZooConfig, params: Any, step: int) -> dict:
    """The stage's probe values of the encoder ``params`` (empty without a monitor)."""
    if monitor is None:
        return {}

    cfg = P._check_args(family, config.arch, config.size, 1, config.seed)
    enc = P._encoder(family, cfg, params, {"steps": step, "seed": config.seed})
    return {k: float(v) for k, v in monitor(step, enc).items()}


def _state_key(
    family: str, cfg: Any, config: ZooConfig, data_hash: str, hp: Any, max_steps: int
) -> str:
    """The resumable training state's key: every input that changes what it computes."""
    return content_hash(
        _FORMAT,
        family,
        cfg,
        config.seed,
        data_hash,
        dataclasses.asdict(hp),
        max_steps,
        config.chunk_steps,
    )


def _base_provenance(
    family: str,
    config: ZooConfig,
    cfg: Any,
    hp: Any,
    max_steps: int,
    data_name: str,
    data_hash: str,
) -> dict[str, Any]:
    """What every checkpoint of ``family`` records of its run, before the record of how
    it was made (source commit, command, machine) and its monitor."""
    return {
        "objective": family,
        "arch": config.arch,
        "size": config.size,
        "seed": config.seed,
        "feature_dim": cfg.feature_dim,
        "arch_config": dataclasses.asdict(cfg),
        "hyper": dataclasses.asdict(hp),
        "schedule": "constant",
        "schedule_max_steps": max_steps,
        "chunk_steps": config.chunk_steps,
        "data": data_name,
        "data_hash": data_hash,
    }


def _member_provenance(
    family: str,
    config: ZooConfig,
    base: dict,
    done: int,
    params: Any,
    losses: list,
    seconds: float,
) -> dict[str, Any]:
    """One checkpoint's provenance: its name, the run's, its step, size, the mean loss
    since the previous checkpoint and the training time so far."""
    import jax

    prev = max([0, *[s for s in config.steps if s < done]])
    n_prev = prev // config.chunk_steps
    return {
        "name": _artifacts.file_name(f"{family}@{done}", config.arch, config.size, config.seed),
        **base,
        "step": done,
        "param_count": int(sum(np.size(v) for v in jax.tree_util.tree_leaves(params))),
        "loss": float(np.mean(losses[n_prev:])),
        "train_seconds": round(seconds, 3),
    }


def build_family(
    family: str,
    config: ZooConfig,
    *,
    directory: Path | None = None,
    rebuild: bool = False,
    monitor: Any = None,
    command: str = "",
    source_commit: str = "",
    checkpoint_seconds: float = 120.0,
    progress: bool = False,
) -> list[dict]:
    """Train ``family`` to the last of its missing ``config.steps`` and write the
    checkpoints reached; returns the provenance of those written."""
    import jax
    import jax.numpy as jnp

    d = Path(directory) if directory else _artifacts.zoo_dir()
    todo = _missing(config, family, d, rebuild)
    if not todo:
        return []
    pc = config.pretraining()
    hp, plateau = pc.hyper(), pc.plateau()
    cfg = P._check_args(family, config.arch, config.size, plateau.max_steps, config.seed)
    pre = data.load(pc.data, split="train", seed=config.seed)
    images = P._images(pre)
    data_hash = content_hash(images, pre.y, pre.num_classes)
    key = _state_key(family, cfg, config, data_hash, hp, plateau.max_steps)
    state_path = (d / ".state" if rebuild else cache_dir("zoo")) / f"zoo-{family}-{key}.ckpt.npz"
    state_path.parent.mkdir(parents=True, exist_ok=True)
    state = P._init_state(family, cfg, hp, plateau.max_steps, pre.num_classes, config.seed)
    ck = _checkpoint.load(state_path, (state, np.int64(0), np.float64(0.0)), key=key)
    done, seconds, losses = 0, 0.0, []
    if ck is not None and int(ck.tree[1]) <= todo[0]:  # else a missing step lies behind it
        (state, done, seconds), losses = ck.tree, list(ck.meta["losses"])
        done, seconds = int(done), float(seconds)
    fn = P._make_chunk(family, cfg, hp, plateau.max_steps, config.chunk_steps, False, "constant")
    x, y = jnp.asarray(images), jnp.asarray(pre.y, jnp.int32)
    base = _base_provenance(family, config, cfg, hp, plateau.max_steps, pc.data, data_hash)
    base.update(source_commit=source_commit, command=command, machine=_enc._machine())
    if monitor is not None:
        base["monitor"] = monitor.describe()
    written, t_save, last = [], time.perf_counter(), 0
    while done < todo[-1]:
        t0 = time.perf_counter()
        state, chunk_losses = fn(state, x, y)
        chunk_losses = np.asarray(chunk_losses, np.float64)
        seconds += time.perf_counter() - t0
        if not np.all(np.isfinite(chunk_losses)):
            raise FloatingPointError(f"{family}: non-finite loss after step {done}")
        done += config.chunk_steps
        losses.append(float(chunk_losses.mean()))
        if done in todo:
            params = jax.tree_util.tree_map(np.asarray, state[0]["encoder"])
            prov = _member_provenance(family, config, base, done, params, losses, seconds)
            prov.update(_probe(monitor, family, config, params, done))
            written.append(_artifacts.write(params, prov, directory=d))
            if progress:
                acc = prov.get("probe_accuracy", float("nan"))
                print(
                    f"  {prov['name']}: loss {prov['loss']:.4g}, probe accuracy {acc:.4f}, "
                    f"{seconds:.0f} s trained, sha256 {written[-1]['sha256'][:12]}",
                    flush=True,
                )
        if done in todo or time.perf_counter() - t_save >= checkpoint_seconds:
            _checkpoint.save(
                state_path,
                (state, np.int64(done), np.float64(seconds)),
                key=key,
                meta={"losses": losses},
            )
            t_save = time.perf_counter()
        if progress and time.perf_counter() - last >= 60:
            print(f"{family}: step {done} of {todo[-1]}, {seconds:.0f} s", flush=True)
            last = time.perf_counter()
    return written


def build(
    config: ZooConfig | None = None,
    *,
    directory: str | Path | None = None,
    rebuild: bool = False,
    progress: bool = False,
    command: str | None = None,
) -> list[dict]:
    """Build the zoo checkpoints of ``config`` that have no artifact yet (``rebuild``:
    all of them again, into ``directory``); returns the provenance of every
    checkpoint of the zoo, checked against its SHA-256."""
    config = ZooConfig.checked(config)
    d = Path(directory) if directory else _artifacts.zoo_dir()
    command = command or " ".join(sys.argv)
    commit = _enc._commit()
    mon = None
    if config.probe:
        mon = dataclasses.replace(
            stage_monitor(dataclasses.replace(config.pretraining(), mdl_task=None)),
            label_free=False,
        )
    for family in config.families:
        if progress:
            print(
                f"zoo: {family} {config.arch}_{config.size} at steps {list(config.steps)} "
                f"(artifacts: {d})",
                flush=True,
            )
        build_family(
            family,
            config,
            directory=d,
            rebuild=rebuild,
            monitor=mon,
            command=command,
            source_commit=commit,
            progress=progress,
        )
    return [
        _artifacts.check(m, arch=config.arch, size=config.size, seed=config.seed, directory=d)
        for m in config.members()
    ]
