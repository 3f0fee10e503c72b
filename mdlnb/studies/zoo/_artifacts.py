"""The zoo's checkpoints as committed artifacts: weights, provenance, SHA-256.

A checkpoint ``<family>@<step>`` is two files under ``artifacts/zoo/`` of the
repository (``$MDLNB_ARTIFACTS/zoo`` when that is set), in the format of the
pretraining stage's encoders (:mod:`mdlnb.studies.pretraining._artifacts`):

* ``<objective>-<arch>_<size>-s<seed>-step<N>.npz``: the encoder's parameters,
  one float32 array per leaf, fixed zip timestamps, sorted (same parameters,
  same bytes);
* ``<same>.json``: provenance: source commit, command, seed, step, the mean
  training loss since the previous checkpoint, the linear-probe accuracy on
  the pretraining data's held-out split, hyperparameters and schedule, the
  data hash, the machine, training seconds, and the SHA-256 of the ``.npz``.

``random`` and ``<family>@final`` are the pretraining stage's committed
encoders (``artifacts/encoders``), checked there.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from mdlnb.encoders import _pretrain as P
from mdlnb.infra._io import atomic_write_bytes, atomic_write_text
from mdlnb.studies import pretraining
from mdlnb.studies.pretraining import _artifacts as _enc


def zoo_dir() -> Path:
    """``$MDLNB_ARTIFACTS/zoo``, or ``artifacts/zoo`` beside the package."""
    root = os.environ.get("MDLNB_ARTIFACTS")
    return Path(root) / "zoo" if root else Path(__file__).resolve().parents[3] / "artifacts" / "zoo"


def parse_member(member: str) -> tuple[str, str]:
    """``"simclr@500"`` → ``("simclr", "500")``; ``"random"`` → ``("random", "final")``."""
    if member == "random":
        return "random", "final"
    family, sep, step = str(member).partition("@")
    if not sep or not family or not (step == "final" or step.isdigit()):
        raise ValueError(
            f"member: expected 'random', '<family>@<step>' or '<family>@final', got {member!r}"
        )
    return family, step


def file_name(member: str, arch: str = "vit", size: str = "S", seed: int = 0) -> str:
    """The artifact name of ``member``: a zoo checkpoint's, or the committed encoder's."""
    family, step = parse_member(member)
    base = _enc.unit_name(family, arch, size, seed)
    return base if step == "final" else f"{base}-step{int(step)}"


def _directory(member: str, directory: Path | None) -> Path:
    return (
        _enc.artifact_dir()
        if parse_member(member)[1] == "final"
        else (Path(directory) if directory else zoo_dir())
    )


def check(
    member: str, *, arch: str = "vit", size: str = "S", seed: int = 0, directory: Path | None = None
) -> dict:
    """The provenance of ``member`` after checking its weights' SHA-256
    (:class:`~mdlnb.studies.pretraining.ChecksumError` if they differ,
    FileNotFoundError if it is not there)."""
    return _enc.check(file_name(member, arch, size, seed), directory=_directory(member, directory))


def verify(directory: Path | None = None) -> list[dict]:
    """Check every zoo checkpoint in ``directory`` (default :func:`zoo_dir`)."""
    return _enc.verify(Path(directory) if directory else zoo_dir())


def load_member(
    member: str, *, arch: str = "vit", size: str = "S", seed: int = 0, directory: Path | None = None
):
    """The :class:`mdlnb.encoders.Encoder` of ``member`` (checked against its SHA-256)."""
    import jax
    import jax.numpy as jnp

    family, step = parse_member(member)
    if step == "final":
        return pretraining.load_encoder(family, arch, size, seed)
    prov = check(member, arch=arch, size=size, seed=seed, directory=directory)
    cfg = P._check_args(family, arch, size, 1, seed)
    template = P._init_encoder(cfg, int(seed))
    path = _directory(member, directory) / f"{prov['name']}.npz"
    with np.load(path, allow_pickle=False) as z:
        stored = {k[:-4] if k.endswith(".npy") else k: z[k] for k in z.files}
    leaves = []
    for leaf_name, leaf in _enc._leaf_names(template):
        a = stored.get(leaf_name)
        if a is None or a.shape != np.shape(leaf):
            raise _enc.ChecksumError(
                f"{prov['name']}: leaf {leaf_name!r} missing or of another shape"
            )
        leaves.append(jnp.asarray(a))
    params = jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(template), leaves)
    meta = {**prov, "steps": int(step), "artifact": prov["name"]}
    return P._encoder(family, cfg, params, meta)


def write(params: Any, prov: dict, *, directory: Path | None = None) -> dict:
    """Write checkpoint ``prov["name"]``'s weights and provenance (with their SHA-256)."""
    import json

    d = Path(directory) if directory else zoo_dir()
    d.mkdir(parents=True, exist_ok=True)
    blob = _enc.params_bytes(params)
    prov = {**prov, "sha256": _enc.sha256(blob)}
    atomic_write_bytes(d / f"{prov['name']}.npz", blob)
    atomic_write_text(
        d / f"{prov['name']}.json", json.dumps(prov, indent=1, sort_keys=True, default=str) + "\n"
    )
    return prov


def provenance(
    member: str, *, arch: str = "vit", size: str = "S", seed: int = 0, directory: Path | None = None
) -> dict | None:
    """The provenance of ``member`` (not checked), or None when it is not there."""
    return _enc.provenance(
        file_name(member, arch, size, seed), directory=_directory(member, directory)
    )
