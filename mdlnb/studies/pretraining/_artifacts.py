"""Trained encoders kept as committed artifacts: weights plus provenance, verified by checksum.

An artifact is two files under ``artifacts/encoders/`` of the repository
(``$MDLNB_ARTIFACTS/encoders`` when that is set):

* ``<objective>-<arch>_<size>-s<seed>.npz``: the encoder's parameters, one
  float32 array per leaf named by its path (``blocks/0/attn/qkv/w``), written
  with fixed zip timestamps and in sorted order, so the same parameters give
  the same bytes;
* ``<same>.json``: provenance: source commit, command, seed, chosen and
  trained steps, final loss, probe accuracy, RankMe, stop reason, parameter
  count, hyperparameters, the stopping rule, the data hash, the machine
  (CPU flags, JAX version), training seconds, and the SHA-256 of the ``.npz``;
* ``<same>.curve.csv``: the monitored curve (step, probe accuracy, probe
  log-loss, RankMe, loss, seconds).

:func:`verify` checks every artifact's SHA-256 against its provenance;
:func:`load_encoder` returns the :class:`mdlnb.encoders.Encoder` after the
same check.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import platform
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from mdlnb.encoders import _pretrain as P
from mdlnb.infra._io import atomic_write_bytes, atomic_write_text

_ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def artifact_dir() -> Path:
    """``$MDLNB_ARTIFACTS/encoders``, or ``artifacts/encoders`` beside the package."""
    root = os.environ.get("MDLNB_ARTIFACTS")
    return (
        Path(root) / "encoders"
        if root
        else Path(__file__).resolve().parents[3] / "artifacts" / "encoders"
    )


def unit_name(objective: str, arch: str, size: str, seed: int) -> str:
    return f"{objective}-{arch}_{size}-s{int(seed)}"


def _leaf_names(tree: Any) -> list[tuple[str, Any]]:
    import jax

    flat, _ = jax.tree_util.tree_flatten_with_path(tree)
    return [
        ("/".join(str(getattr(k, "key", getattr(k, "idx", k))) for k in path), leaf)
        for path, leaf in flat
    ]


def params_bytes(params: Any) -> bytes:
    """The ``.npz`` bytes of ``params``: deterministic for equal parameters."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        for name, leaf in sorted(_leaf_names(params)):
            arr = io.BytesIO()
            np.lib.format.write_array(
                arr, np.ascontiguousarray(np.asarray(leaf, np.float32)), allow_pickle=False
            )
            zf.writestr(zipfile.ZipInfo(f"{name}.npy", date_time=_ZIP_TIME), arr.getvalue())
    return buf.getvalue()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _machine() -> dict[str, str]:
    import jax

    flags = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                have = set(line.split(":", 1)[1].split())
                flags = " ".join(
                    f for f in ("avx2", "avx512f", "avx512_bf16", "amx_tile", "fma") if f in have
                )
                break
    except OSError:
        pass
    dev = jax.devices()[0]
    return {
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "jax": jax.__version__,
        "cpu_flags": flags,
        "cores": str(os.cpu_count()),
        "device": f"{dev.platform}: {dev.device_kind}",
    }


def _commit() -> str:
    # A copy of the tree made elsewhere (a GPU machine's) names the commit it was made
    # from: its .git, if any, may lag behind its files.
    if os.environ.get("MDLNB_SOURCE_COMMIT"):
        return os.environ["MDLNB_SOURCE_COMMIT"]
    here = Path(__file__).resolve().parents[3]
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "mdlnb"],
            cwd=here,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def write(
    run: Any,
    *,
    directory: Path | None = None,
    command: str = "",
    source_commit: str | None = None,
    monitor: dict | None = None,
) -> dict:
    """Write the artifact of a :class:`mdlnb.encoders.StagedRun`; returns its provenance.
    ``source_commit``: the commit the training ran from (default: the checkout's HEAD
    now; a long run should pass the one read when it started); ``monitor``: what the
    curve's columns measure (:meth:`ProbeMonitor.describe`)."""
    import pandas as pd

    enc = run.encoder
    m = dict(enc.meta)
    d = Path(directory) if directory else artifact_dir()
    d.mkdir(parents=True, exist_ok=True)
    name = unit_name(m["objective"], m["arch"], m["size"], m["seed"])
    blob = params_bytes(enc.params)
    chosen = next(r for r in run.curve if r["step"] == run.chosen_step)
    prov = {
        "name": name,
        "objective": m["objective"],
        "arch": m["arch"],
        "size": m["size"],
        "seed": m["seed"],
        "chosen_step": run.chosen_step,
        "trained_steps": run.trained_steps,
        "stop_reason": run.reason,
        "final_loss": m.get("final_loss"),
        "probe_accuracy": chosen["probe_accuracy"],
        "probe_nll_nats": chosen.get("probe_nll_nats"),
        "rankme": chosen.get("rankme"),
        "param_count": m["param_count"],
        "feature_dim": m["feature_dim"],
        "arch_config": m["arch_config"],
        "hyper": m.get("hyper"),
        "schedule": m.get("schedule"),
        "plateau": m.get("plateau"),
        "data": m["data"],
        "data_hash": m.get("data_hash"),
        "train_seconds": m.get("train_seconds", 0.0),
        "source_commit": source_commit or _commit(),
        "command": command or " ".join(sys.argv),
        "machine": _machine(),
        **({"monitor": monitor} if monitor else {}),
        "sha256": sha256(blob),
    }
    atomic_write_bytes(d / f"{name}.npz", blob)
    pd.DataFrame(list(run.curve)).to_csv(d / f"{name}.curve.csv", index=False, float_format="%.6g")
    atomic_write_text(
        d / f"{name}.json", json.dumps(prov, indent=1, sort_keys=True, default=str) + "\n"
    )
    return prov


def provenance(name: str, *, directory: Path | None = None) -> dict | None:
    """The provenance of artifact ``name``, or None when it is not there."""
    p = (Path(directory) if directory else artifact_dir()) / f"{name}.json"
    return json.loads(p.read_text()) if p.exists() else None


def names(directory: Path | None = None) -> list[str]:
    d = Path(directory) if directory else artifact_dir()
    return sorted(p.name[:-5] for p in d.glob("*.json")) if d.exists() else []


class ChecksumError(ValueError):
    """An artifact's bytes do not match the SHA-256 of its provenance."""


def check(name: str, *, directory: Path | None = None) -> dict:
    """The provenance of ``name`` after checking its weights' SHA-256 (ChecksumError if not)."""
    d = Path(directory) if directory else artifact_dir()
    prov = provenance(name, directory=d)
    if prov is None:
        raise FileNotFoundError(
            f"name: no encoder artifact {name!r} in {d} "
            f"(train it: make pretrain, or mdlnb.studies.pretraining.run)"
        )
    got = sha256((d / f"{name}.npz").read_bytes())
    if got != prov["sha256"]:
        raise ChecksumError(
            f"{d / (name + '.npz')}: SHA-256 {got} differs from its provenance "
            f"{prov['sha256']} (damaged or replaced; retrain or restore it)"
        )
    return prov


def verify(directory: Path | None = None) -> list[dict]:
    """Check every artifact in ``directory``; the provenance of each (ChecksumError at the first bad)."""
    return [check(n, directory=directory) for n in names(directory)]


def load_encoder(
    objective: str, arch: str, size: str, seed: int = 0, *, directory: Path | None = None
):
    """The committed encoder (checked against its SHA-256) as an :class:`mdlnb.encoders.Encoder`."""
    import jax
    import jax.numpy as jnp

    name = unit_name(objective, arch, size, seed)
    prov = check(name, directory=directory)
    d = Path(directory) if directory else artifact_dir()
    cfg = P._check_args(objective, arch, size, 1, seed)
    template = P._init_encoder(cfg, int(seed))
    with np.load(d / f"{name}.npz", allow_pickle=False) as z:
        stored = {k: z[k] for k in z.files}
    leaves = []
    for leaf_name, leaf in _leaf_names(template):
        a = stored.get(leaf_name)
        if a is None or a.shape != np.shape(leaf):
            raise ChecksumError(f"{name}: leaf {leaf_name!r} missing or of another shape")
        leaves.append(jnp.asarray(a))
    params = jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(template), leaves)
    meta = {**prov, "steps": prov["chosen_step"], "artifact": name}
    return P._encoder(objective, cfg, params, meta)
