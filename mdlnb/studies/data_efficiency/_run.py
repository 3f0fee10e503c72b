"""The data-efficiency study's driver: one unit of work per (encoder, task, order)."""

from __future__ import annotations

from mdlnb import data
from mdlnb.encoders import pretrain
from mdlnb.studies.data_efficiency._config import DataEfficiencyConfig
from mdlnb.studies.data_efficiency._measures import per_step_losses
from mdlnb.studies.data_efficiency._result import DataEfficiencyResult


def run(config: DataEfficiencyConfig | None = None) -> DataEfficiencyResult:
    """Pretrain the encoders, load the streams, and code each in every order four ways.

    Every expensive step is cached on disk under a hash of its inputs: each
    pretrained encoder (:func:`mdlnb.encoders.pretrain`), its features, and the
    stage-1 loss matrices of each (encoder, task, order) (:func:`mdlnb.prequential.run`,
    :func:`mdlnb.baselines.finetune.compare`), so a rerun or an interrupted run resumes."""
    config = config or DataEfficiencyConfig()
    if not isinstance(config, DataEfficiencyConfig):
        raise ValueError(f"config: expected a DataEfficiencyConfig, got {type(config).__name__}")
    c = config
    pretraining = data.load(c.pretrain_task, split="train", size=c.pretrain_size, seed=0)
    encoders = [
        pretrain(
            o,
            c.arch,
            c.arch_size,
            pretraining,
            c.pretrain_steps,
            0,
            batch_size=64,
            learning_rate=3e-3,
        )
        for o in c.objectives
    ]
    tasks = {
        c.in_domain: ("in-domain", data.load(c.in_domain, split="test", size=c.task_size, seed=0))
    }
    tasks.update(
        {
            name: ("out-of-domain", data.load(name, split="train", size=c.task_size, seed=0))
            for name in c.out_of_domain
        }
    )
    runs = tuple(
        (
            e.name,
            name,
            domain,
            s,
            per_step_losses(
                t,
                e,
                mlp_layers=c.mlp_layers,
                mlp_width=c.mlp_width,
                learning_rate=c.learning_rates,
                probe_learning_rate=c.probe_learning_rates,
                replay_streams=c.replay_streams,
                batch_size=c.batch_size,
                seed=s,
            ),
        )
        for e in encoders
        for name, (domain, t) in tasks.items()
        for s in c.seeds
    )
    return DataEfficiencyResult(
        config,
        {e.name: int(e.feature_dim) for e in encoders},
        {name: domain for name, (domain, _) in tasks.items()},
        {name: str(t) for name, (_, t) in tasks.items()},
        {name: int(t.num_classes) for name, (_, t) in tasks.items()},
        runs,
    )
