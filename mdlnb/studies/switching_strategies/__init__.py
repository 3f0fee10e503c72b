"""Switching-strategy study: which prior over readout sequences codes best (paper App. A.6 / Fig. 5, App. A.1).

On real loss matrices of the paper's VTAB board (linear + MLPs of 1–7 hidden
layers), per (encoder, task) pair and example order:

* regret of each strategy of App. A.6 (Bayesian and elementwise mixtures,
  switch distribution, run-length) to fixed share with α_t = (m − 1)/t (Fig. 5);
* fixed share's sensitivity to m and to a constant α;
* the regret to the best single expert against the exact never-switch cost,
  and the regret to the best (m − 1)-switch sequence against the A.1 bound;
* how often the posterior's favourite readout changes.

    config = SwitchingConfig.from_overrides({"pairs": ["pixels/digits"], "size": 300})
    result = run(config)            # one unit of work per (pair, order); stage 1 cached
    result.tables(); result.plot_regret(); result.claims(); result.save("paper")

Modules: ``_measures`` (the frames of one loss matrix), ``_pair`` (one
(pair, order): :func:`run_pair`, and combining them), ``_config``
(SwitchingConfig), ``_run`` (the driver), ``_tables`` and ``_plots``,
``_claims`` (b1, b2, c1, c2), ``_result`` (SwitchingResult).
"""

from mdlnb.studies.switching_strategies._claims import claims
from mdlnb.studies.switching_strategies._config import SwitchingConfig
from mdlnb.studies.switching_strategies._measures import (
    BASELINE,
    best_sequence_loss,
    bound_curves,
    checkpoints,
    fixed_share_bound,
    regret_curves,
    sensitivity,
    strategies,
    switch_counts,
)
from mdlnb.studies.switching_strategies._pair import (
    PairResult,
    final_codelengths,
    final_regrets,
    gather,
    pair_task,
    run_pair,
    spread,
)
from mdlnb.studies.switching_strategies._result import SwitchingResult
from mdlnb.studies.switching_strategies._run import run

#: The study's config class, under the name every study package uses (mdlnb.studies).
Config = SwitchingConfig

__all__ = [
    "BASELINE",
    "Config",
    "PairResult",
    "SwitchingConfig",
    "SwitchingResult",
    "best_sequence_loss",
    "bound_curves",
    "checkpoints",
    "claims",
    "final_codelengths",
    "final_regrets",
    "fixed_share_bound",
    "gather",
    "pair_task",
    "regret_curves",
    "run",
    "run_pair",
    "sensitivity",
    "spread",
    "strategies",
    "switch_counts",
]
