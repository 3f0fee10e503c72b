"""The switching study's driver: one unit of work per (pair, order)."""

from __future__ import annotations

from mdlnb.studies.switching_strategies._config import SwitchingConfig
from mdlnb.studies.switching_strategies._pair import pair_task, run_pair
from mdlnb.studies.switching_strategies._result import SwitchingResult


def run(config: SwitchingConfig | None = None) -> SwitchingResult:
    """Every (pair, order) of ``config`` (default: :class:`SwitchingConfig`'s CPU run).

    A unit's stage 1 — the loss matrix of the board on the pair's task in that
    order, all the compute — is cached on disk under a hash of its inputs
    (:func:`mdlnb.prequential.run`), and so are an encoder's features, so a rerun
    or an interrupted run resumes from the finished units; stage 2 and the frames
    (seconds) are recomputed."""
    config = config or SwitchingConfig()
    if not isinstance(config, SwitchingConfig):
        raise ValueError(f"config: expected a SwitchingConfig, got {type(config).__name__}")
    board = config.board()
    tasks = {pair: pair_task(*pair.split("/"), size=config.size) for pair in config.pairs}
    results = tuple(
        run_pair(
            pair,
            task,
            board,
            seed=s,
            m=config.m,
            batch_size=config.batch_size,
            points=config.points,
            ms=config.ms,
            alphas=config.alphas,
        )
        for pair, task in tasks.items()
        for s in config.seeds
    )
    return SwitchingResult(config, results, {p: int(t.features.shape[1]) for p, t in tasks.items()})
