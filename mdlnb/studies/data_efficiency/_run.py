"""The data-efficiency study's driver: one unit of work per (domain, order)."""

from __future__ import annotations

from mdlnb import data
from mdlnb.encoders import pretrain
from mdlnb.studies.data_efficiency._config import DataEfficiencyConfig
from mdlnb.studies.data_efficiency._measures import per_step_losses
from mdlnb.studies.data_efficiency._result import DataEfficiencyResult


def run(config: DataEfficiencyConfig | None = None) -> DataEfficiencyResult:
    """Pretrain the encoder, load the two streams, and code each in every order four ways.

    Every expensive step is cached on disk under a hash of its inputs: the
    pretrained encoder (:func:`mdlnb.encoders.pretrain`), its features, and the
    stage-1 loss matrices of each (domain, order) (:func:`mdlnb.prequential.run`,
    :func:`mdlnb.finetune.compare`), so a rerun or an interrupted run resumes."""
    config = config or DataEfficiencyConfig()
    if not isinstance(config, DataEfficiencyConfig):
        raise ValueError(f"config: expected a DataEfficiencyConfig, got {type(config).__name__}")
    c = config
    encoder = pretrain(c.objective, c.arch, c.arch_size,
                       data.load(c.pretrain_task, split="train", size=c.pretrain_size, seed=0),
                       c.pretrain_steps, 0, batch_size=64, learning_rate=3e-3)
    tasks = {"in-domain": data.load(c.in_domain, split="test", size=c.task_size, seed=0),
             "out-of-domain": data.load(c.out_of_domain, split="train", size=c.task_size, seed=0)}
    runs = tuple((t.name, domain, s, per_step_losses(
        t, encoder, mlp_layers=c.mlp_layers, mlp_width=c.mlp_width, learning_rate=c.learning_rates,
        probe_learning_rate=c.probe_learning_rates, replay_streams=c.replay_streams,
        batch_size=c.batch_size, seed=s)) for domain, t in tasks.items() for s in c.seeds)
    return DataEfficiencyResult(config, encoder.name, int(encoder.feature_dim),
                                {d: str(t) for d, t in tasks.items()},
                                {d: int(t.num_classes) for d, t in tasks.items()}, runs)
