"""The fine-tuning ground truth as committed artifacts, one per (zoo, task).

Fine-tuning every checkpoint of a zoo at every rate of the grid on every task
(:mod:`._finetune`) takes hours on a 2-core CPU, so like the encoders it is an
expensive, deterministic step whose small outputs are committed:
``artifacts/finetune/<zoo>-<task>.npz`` (``$MDLNB_ARTIFACTS/finetune``) holds the
per-checkpoint arrays (validation loss and accuracy per rate, the chosen rate,
test accuracy, per-example test correctness of the chosen model), written with
fixed zip timestamps in sorted order so the same numbers give the same bytes;
``<same>.json`` its provenance: the key (a hash of every input: each
checkpoint's parameters, the three splits' images and labels, the protocol),
the checkpoints in order, the protocol, split sizes, seconds, source commit,
command, machine, and the SHA-256 of the ``.npz``.

:func:`ground_truth` returns the artifact whose key matches the study's inputs
(checked against its SHA-256), else computes it — resumable, the training
state checkpointed under ``cache_dir("finetune")`` — and keeps it in that
cache (or, building, in the artifact directory). ``python -m
mdlnb.studies.transferability finetune`` builds the default config's
artifacts; ``verify`` checks them (``make encoders``); ``finetune --rebuild
--into DIR`` then ``verify --against DIR`` recomputes them from nothing and
compares the bytes.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import sys
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mdlnb.encoders.base import prepare_images
from mdlnb.infra._io import (
    atomic_savez,
    atomic_write_bytes,
    atomic_write_text,
    cache_dir,
    content_hash,
    read_npz,
)
from mdlnb.studies.pretraining import ChecksumError
from mdlnb.studies.pretraining._artifacts import _commit, _machine
from mdlnb.studies.transferability._finetune import finetune

FORMAT = "mdlnb-finetune-v1"
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)
ARRAYS = ("val_loss", "val_accuracy", "test_accuracy", "chosen", "test_correct", "train_loss")


def artifact_dir() -> Path:
    """``$MDLNB_ARTIFACTS/finetune``, or ``artifacts/finetune`` beside the package."""
    root = os.environ.get("MDLNB_ARTIFACTS")
    return (
        Path(root) / "finetune"
        if root
        else Path(__file__).resolve().parents[3] / "artifacts" / "finetune"
    )


def arrays_bytes(arrays: Mapping[str, np.ndarray]) -> bytes:
    """Deterministic ``.npz`` bytes of ``arrays`` (dtypes kept, sorted, fixed timestamps)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        for name in sorted(arrays):
            a = io.BytesIO()
            np.lib.format.write_array(a, np.ascontiguousarray(arrays[name]), allow_pickle=False)
            zf.writestr(zipfile.ZipInfo(f"{name}.npy", date_time=_ZIP_TIME), a.getvalue())
    return buf.getvalue()


def unit_key(encoders: Sequence[Any], splits: Any, spec: Any) -> str:
    """A hash of everything one (zoo, task) ground truth depends on."""
    import dataclasses

    return content_hash(
        FORMAT,
        [e.fingerprint() for e in encoders],
        [(s.x, s.y) for s in splits],
        dataclasses.asdict(spec),
    )


def _prepare(splits: Any, encoder: Any) -> list[tuple[np.ndarray, np.ndarray]]:
    return [
        (prepare_images(s.x, encoder.input_size, encoder.channels), np.asarray(s.y)) for s in splits
    ]


def _groups(encoders: Sequence[Any]) -> list[list[int]]:
    """Indices of the encoders that share one parameter structure and shapes (one program
    each: EfficientNet-Lite1 and -Lite2 share a structure but not their widths)."""
    import jax

    groups: dict[Any, list[int]] = {}
    for i, e in enumerate(encoders):
        leaves, tree = jax.tree_util.tree_flatten(e.params)
        groups.setdefault((tree, tuple(np.shape(v) for v in leaves)), []).append(i)
    return list(groups.values())


def compute(
    encoders: Sequence[Any], splits: Any, spec: Any, *, key: str, label: str, progress: bool = False
) -> tuple[dict[str, np.ndarray], float]:
    """The arrays of one (zoo, task) ground truth and the seconds they took."""
    num_classes = int(splits[0].num_classes)
    parts, seconds, finished = {}, 0.0, []
    for g in _groups(encoders):
        base = cache_dir("finetune") / f"{label}-{key}-{g[0]}"
        done = base.with_suffix(".done.npz")  # a finished group survives a later failure
        if done.exists():
            arrays = read_npz(done)
            seconds += float(arrays.pop("seconds"))
        else:
            tr, va, te = _prepare(splits, encoders[g[0]])
            if progress:
                print(
                    f"fine-tuning {label}: {len(g)} checkpoints x {len(spec.learning_rates)} rates",
                    flush=True,
                )
            state = base.with_suffix(".ckpt.npz")
            run = finetune(
                [encoders[i] for i in g],
                tr,
                va,
                te,
                num_classes=num_classes,
                spec=spec,
                state_path=state,
                state_key=key,
                progress=progress,
            )
            arrays = {k: np.asarray(getattr(run, k)) for k in ARRAYS}
            atomic_savez(done, seconds=np.float64(run.seconds), **arrays)
            seconds += run.seconds
            state.unlink(missing_ok=True)
        finished.append(done)
        for j, i in enumerate(g):
            parts[i] = {k: np.asarray(arrays[k])[j] for k in ARRAYS}
    for done in finished:
        done.unlink(missing_ok=True)
    out = {k: np.stack([parts[i][k] for i in range(len(encoders))]) for k in ARRAYS}
    out["chosen"] = out["chosen"].astype(np.int64)
    out["test_correct"] = out["test_correct"].astype(bool)
    for k in ("val_loss", "val_accuracy", "test_accuracy", "train_loss"):
        out[k] = out[k].astype(np.float64)
    return out, seconds


def _read(path: Path, prov: dict) -> dict[str, np.ndarray]:
    blob = path.read_bytes()
    got = hashlib.sha256(blob).hexdigest()
    if got != prov["sha256"]:
        raise ChecksumError(
            f"{path}: SHA-256 {got} differs from its provenance {prov['sha256']} "
            f"(damaged or replaced; rebuild it)"
        )
    with np.load(io.BytesIO(blob), allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def ground_truth(
    zoo: str,
    task: str,
    names: Sequence[str],
    encoders: Sequence[Any],
    splits: Any,
    spec: Any,
    *,
    directory: Path | None = None,
    build: bool = False,
    progress: bool = False,
    command: str = "",
) -> tuple[dict[str, np.ndarray], dict]:
    """``(arrays, provenance)`` of the (zoo, task) ground truth: the committed artifact
    when its key matches, else computed (``build``: written into ``directory``, default
    :func:`artifact_dir`; otherwise kept in ``cache_dir("finetune")``)."""
    key = unit_key(encoders, splits, spec)
    name = f"{zoo}-{task}"
    art = (Path(directory) if directory else artifact_dir(), name)
    cached = (cache_dir("finetune"), f"{name}-{key}")  # the cache keeps every config's
    for d, stem in [art] if build else [art, cached]:
        prov = _provenance(d / f"{stem}.json")
        if prov is not None and prov.get("key") == key:
            return _read(d / f"{stem}.npz", prov), prov
    arrays, seconds = compute(encoders, splits, spec, key=key, label=name, progress=progress)
    d, stem = art if build else cached
    prov = _write(
        d,
        stem,
        arrays,
        {
            "name": name,
            "zoo": zoo,
            "task": task,
            "key": key,
            "encoders": list(names),
            "fingerprints": [e.fingerprint() for e in encoders],
            "spec": _spec_dict(spec),
            "sizes": {"train": int(splits[0].n), "val": int(splits[1].n), "test": int(splits[2].n)},
            "seconds": round(seconds, 1),
            "command": command or " ".join(sys.argv),
        },
    )
    return arrays, prov


def _spec_dict(spec: Any) -> dict:
    import dataclasses

    return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(spec).items()}


def _provenance(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _write(d: Path, name: str, arrays: Mapping[str, np.ndarray], prov: dict) -> dict:
    d.mkdir(parents=True, exist_ok=True)
    blob = arrays_bytes(arrays)
    prov = {
        **prov,
        "source_commit": _commit(),
        "machine": _machine(),
        "sha256": hashlib.sha256(blob).hexdigest(),
    }
    atomic_write_bytes(d / f"{name}.npz", blob)
    atomic_write_text(
        d / f"{name}.json", json.dumps(prov, indent=1, sort_keys=True, default=str) + "\n"
    )
    return prov


def verify(directory: Path | None = None) -> list[dict]:
    """Check every ground-truth artifact's SHA-256; their provenance (ChecksumError at
    the first that differs)."""
    d = Path(directory) if directory else artifact_dir()
    out = []
    for p in sorted(d.glob("*.json")) if d.exists() else []:
        prov = json.loads(p.read_text())
        _read(p.with_suffix(".npz"), prov)
        out.append(prov)
    return out
