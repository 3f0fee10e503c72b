"""The parity toy's driver: the exact algorithms' curves, the MLP probes' curves and
readout switching on both representations."""

from __future__ import annotations

from typing import Any

import mdlnb
from mdlnb.baselines import curves
from mdlnb.board import experts, readouts
from mdlnb.infra._stages import Stages
from mdlnb.studies.parity._config import ParityConfig
from mdlnb.studies.parity._result import ParityResult


def _g3_curve(c: ParityConfig, grid: Any) -> Any:
    """Claim g3's noisy label: the same examples and uniform draws as A, noise rate
    ``g3_alpha``, its count algorithm's loss-data curve on the same split and sizes."""
    _, noisy_g3, _ = curves.parity_tasks(c.d, c.n_examples, alpha=c.g3_alpha, seed=c.seed)
    pool_g3, test_g3 = curves.split_test(noisy_g3, 0.2)
    return curves.algorithm_curve(
        pool_g3,
        "bernoulli",
        test=test_g3,
        sizes=grid,
        seeds=c.seeds,
        representation=f"A': noisy label at {c.g3_alpha} (count)",
    )


def _switching(c: ParityConfig, noisy: Any, raw: Any) -> tuple[Any, Any]:
    """Readout switching on A and on B over one board (linear, MLPs of 1 and 2 hidden
    layers, replay 10): the two Reports."""
    board = experts.expert_grid(
        [readouts.linear(), readouts.mlp(1, c.mlp_width), readouts.mlp(2, c.mlp_width)],
        learning_rate=c.switching_lr,
        replay_streams=[10],
    )
    rep_a = mdlnb.evaluate(noisy, experts=board, batch_size=32, seed=c.seed)
    rep_b = mdlnb.evaluate(raw, experts=board, batch_size=32, seed=c.seed)
    return rep_a, rep_b


def run(config: ParityConfig | None = None, *, progress: bool | None = None) -> ParityResult:
    """Draw the data, split it (the same examples and split for A and B), and measure.

    The exact algorithms (a count for A, GF(2) elimination for B) take
    milliseconds; the MLP probes train all sizes × seeds of one representation in
    one compiled call; switching's stage 1 is cached on disk
    (:func:`mdlnb.evaluate`). ``progress``: a bar over these stages where someone
    watches (:mod:`mdlnb.infra._stages`; ``None``, the package's default)."""
    config = config or ParityConfig()
    if not isinstance(config, ParityConfig):
        raise ValueError(f"config: expected a ParityConfig, got {type(config).__name__}")
    c = config
    stages = Stages(
        ("exact algorithms", "MLP probes of A", "MLP probes of B", "switching"),
        desc="parity",
        progress=progress,
    )
    with stages:
        stages.start("exact algorithms")
        raw, noisy, secret = curves.parity_tasks(c.d, c.n_examples, alpha=c.alpha, seed=c.seed)
        pool_b, test_b = curves.split_test(raw, 0.2)
        pool_a, test_a = curves.split_test(noisy, 0.2)  # the same examples, the same split
        grid = curves.log_grid(pool_b.n, c.num_sizes, n_min=2)
        curve_a = curves.algorithm_curve(
            pool_a,
            "bernoulli",
            test=test_a,
            sizes=grid,
            seeds=c.seeds,
            representation="A: noisy label (count)",
        )
        curve_b = curves.algorithm_curve(
            pool_b,
            "gf2",
            test=test_b,
            sizes=grid,
            seeds=c.seeds,
            representation="B: raw bits (GF(2) elimination)",
        )
        curve_g3 = _g3_curve(c, grid)
        probe = readouts.mlp(2, c.mlp_width)
        mlp = {}
        for key, pool, test, what in (
            ("A", pool_a, test_a, "A: noisy label (MLP)"),
            ("B", pool_b, test_b, "B: raw bits (MLP)"),
        ):
            stages.start(f"MLP probes of {key}")
            mlp[key] = curves.loss_data_curve(
                pool,
                probe,
                test=test,
                sizes=grid,
                seeds=c.seeds,
                steps=c.mlp_steps,
                batch_size=32,
                learning_rate=c.mlp_lr,
                representation=what,
            )
        stages.start("switching")
        rep_a, rep_b = _switching(c, noisy, raw)
    return ParityResult(
        config,
        secret,
        int(pool_b.n),
        int(test_b.n),
        int(raw.n),
        grid,
        curve_a,
        curve_b,
        mlp["A"],
        mlp["B"],
        rep_a,
        rep_b,
        curve_g3,
    )
