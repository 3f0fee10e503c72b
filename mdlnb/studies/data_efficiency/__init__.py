"""Data-efficiency study: frozen readouts and fine-tuning against training from scratch (paper Sec. 4, Fig. 3; App. A.9, Fig. 10).

On one stream of a task's images, in domain and out of domain of the
encoder's pretraining data, four methods are coded by the same prequential
protocol (same order, batch size B; nats): a linear probe and deep MLP
readouts on the frozen encoder, the encoder fine-tuned, and the same
architecture trained from scratch, the comparator. The regret of a method at
n is its cumulative next-step loss minus from scratch's.

    config = DataEfficiencyConfig.from_overrides({"task_size": 300})
    result = run(config)            # one unit of work per (domain, order); cached
    result.tables(); result.plot_regret(); result.claims(); result.save("paper")

Modules: ``_measures`` (the four codes of one stream, regret frames,
:func:`zero_crossing`), ``_config`` (DataEfficiencyConfig), ``_run`` (the
driver), ``_plots``, ``_claims`` (e1, e2), ``_result`` (DataEfficiencyResult).
"""

from mdlnb.studies.data_efficiency._claims import claims
from mdlnb.studies.data_efficiency._config import DOMAINS, DataEfficiencyConfig
from mdlnb.studies.data_efficiency._measures import (
    METHODS,
    SCRATCH,
    per_step_losses,
    regret_at,
    regret_frames,
    zero_crossing,
)
from mdlnb.studies.data_efficiency._result import DataEfficiencyResult
from mdlnb.studies.data_efficiency._run import run

#: The study's config class, under the name every study package uses (mdlnb.studies).
Config = DataEfficiencyConfig

__all__ = [
    "Config",
    "DOMAINS",
    "DataEfficiencyConfig",
    "DataEfficiencyResult",
    "METHODS",
    "SCRATCH",
    "claims",
    "per_step_losses",
    "regret_at",
    "regret_frames",
    "run",
    "zero_crossing",
]
