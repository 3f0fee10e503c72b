"""Loss-data study: VA, MDL, SDL and εSC of several representations of Fashion-MNIST as the evaluation set grows (SDL paper Fig. 2).

A loss-data curve per representation (an MLP probe trained on nested
prefixes of a pool, scored on held-out examples); every measure read off it
at every evaluation-set size n, from the curve up to n; which representation
each measure prefers as n grows; εSC refined by Alg. 2 where a curve crosses ε.

    config = LossDataConfig.from_overrides({"train_size": 300, "representations": ["pixels"]})
    result = run(config)
    result.rankings(); result.plot_measures(); result.save("paper")

Modules: ``_config`` (LossDataConfig), ``_run`` (the driver), ``_result``
(LossDataResult: tables, figures, findings), ``_claims`` (q1, q2 and the check q3:
the paper's Fig. 2 statement that VA and MDL change their winner with n, SDL and
εSC do not).
"""

from mdlnb.studies.loss_data._claims import claims, seed_winners
from mdlnb.studies.loss_data._config import LossDataConfig
from mdlnb.studies.loss_data._result import LossDataResult
from mdlnb.studies.loss_data._run import run

#: The study's config class, under the name every study package uses (mdlnb.studies).
Config = LossDataConfig

__all__ = ["Config", "LossDataConfig", "LossDataResult", "claims", "run", "seed_winners"]
