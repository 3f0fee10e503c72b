"""Drive the pretraining stage: one unit of work per encoder, each kept as an artifact.

:func:`run` trains every encoder of the suite that has no artifact yet (or
all of them into another directory, ``retrain=True``), each until its linear
probe on the held-out split stops improving
(:func:`mdlnb.encoders.train_until_plateau`), and writes its artifact
(:mod:`._artifacts`) as soon as it finishes, so an interrupted stage loses at
most one encoder's progress since its last evaluation (that is checkpointed
too). :func:`result` reads the artifacts back into tidy tables and figures
for ``paper/``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from mdlnb import data
from mdlnb.encoders import train_until_plateau
from mdlnb.infra import _progress
from mdlnb.studies.pretraining import _artifacts
from mdlnb.studies.pretraining._config import PretrainingConfig, parse_unit
from mdlnb.studies.pretraining._probe import ProbeMonitor
from mdlnb.studies.pretraining._result import PretrainingResult


def monitor(config: PretrainingConfig) -> ProbeMonitor:
    """The stage's monitor: probe fitted on ``probe_train_size`` training images,
    scored on the held-out (test) split."""
    train = data.load(config.data, split="train", size=config.probe_train_size, seed=config.seed)
    test = data.load(config.data, split="test", size=config.probe_test_size, seed=config.seed)
    mdl = (
        None
        if config.mdl_task is None
        else data.load(config.mdl_task, split="train", size=config.mdl_size, seed=config.seed)
    )
    return ProbeMonitor(
        train, test, mdl_task=mdl, mdl_protocol=config.mdl_protocol, mdl_seed=config.seed
    )


def run(
    config: PretrainingConfig | None = None,
    *,
    only: Sequence[str] | None = None,
    retrain: bool = False,
    directory: str | Path | None = None,
    progress: bool | None = None,
    command: str | None = None,
) -> list[dict]:
    """Train the encoders of ``config.suite`` (or the units in ``only``) that have
    no artifact in ``directory`` (default :func:`_artifacts.artifact_dir`);
    ``retrain=True`` trains them even so. Returns their provenance dicts.
    ``command``: how this run was started, for the provenance (default: argv).
    ``progress``: a line per unit and per probe evaluation on stdout; ``None`` (the
    package's one default, :func:`mdlnb.infra._progress.wanted`) prints them where
    someone watches (a terminal or a notebook), ``True``/``False`` force it (the
    command line, ``python -m mdlnb.studies.pretraining train``, passes True)."""
    config = config or PretrainingConfig()
    units = list(only) if only else list(config.suite)
    for u in units:
        parse_unit(u)
    d = Path(directory) if directory else _artifacts.artifact_dir()
    pending = [
        u
        for u in units
        if retrain
        or _artifacts.provenance(_artifacts.unit_name(*parse_unit(u), config.seed), directory=d)
        is None
    ]
    if not pending:
        return [
            _artifacts.check(_artifacts.unit_name(*parse_unit(u), config.seed), directory=d)
            for u in units
        ]
    progress = _progress.wanted(progress)
    commit = _artifacts._commit()  # the code this run starts from
    command = command or " ".join(sys.argv)
    pre = data.load(config.data, split="train", seed=config.seed)
    mon = monitor(config)
    for u in pending:
        objective, arch, size = parse_unit(u)
        if progress:
            print(f"pretraining {u} (artifacts: {d})", flush=True)
        # A retrain starts from nothing: its resumable state lives beside its artifacts,
        # not in the shared cache where the first training's final state is kept.
        staged = train_until_plateau(
            objective,
            arch,
            size,
            pre,
            mon,
            plateau=config.plateau(),
            seed=config.seed,
            hyper=config.hyper(),
            progress=progress,
            directory=d / ".state" if retrain else None,
            keep_evaluations=True,
        )
        prov = _artifacts.write(
            staged, directory=d, command=command, source_commit=commit, monitor=mon.describe()
        )
        if progress:
            print(
                f"  -> {prov['name']}: chosen step {prov['chosen_step']} of "
                f"{prov['trained_steps']} ({prov['stop_reason']}), probe accuracy "
                f"{prov['probe_accuracy']:.4f}, sha256 {prov['sha256'][:12]}",
                flush=True,
            )
    return [
        _artifacts.check(_artifacts.unit_name(*parse_unit(u), config.seed), directory=d)
        for u in units
    ]


def result(directory: str | Path | None = None) -> PretrainingResult:
    """The committed artifacts (each checked against its SHA-256) as tidy tables."""
    import pandas as pd

    d = Path(directory) if directory else _artifacts.artifact_dir()
    provs = _artifacts.verify(d)
    rows, curves = [], []
    for p in provs:
        label = f"{p['objective']}:{p['arch']}_{p['size']}"
        rows.append({"encoder": label, **{k: v for k, v in p.items() if not isinstance(v, dict)}})
        c = pd.read_csv(d / f"{p['name']}.curve.csv")
        c.insert(0, "encoder", label)
        c.insert(1, "objective", p["objective"])
        curves.append(c)
    enc = pd.DataFrame(rows)
    if len(enc):
        enc["final_loss"] = pd.to_numeric(enc["final_loss"])  # None (untrained) -> NaN
    cur = pd.concat(curves, ignore_index=True) if curves else pd.DataFrame()
    return PretrainingResult(enc, cur, directory=d)
