"""The parity toy: VA and MDL change their ranking with n, SDL and εSC do not (SDL paper Sec. 3.1, Fig. 1 right).

Two representations of the same parity examples — a noisy label that learns
quickly but not well (A), the raw bits that are perfect in the limit (B) —
measured three ways: the exact algorithms' loss-data curves (a count;
GF(2) elimination), MLP probes' curves, and readout switching
(:func:`mdlnb.evaluate`).

    config = ParityConfig.from_overrides({"d": 6, "n_examples": 200})
    result = run(config)
    result.tables(); result.plot_curves(); result.claims(); result.save("paper")

Modules: ``_config`` (ParityConfig), ``_run`` (the driver), ``_result``
(ParityResult: tables, figures, findings), ``_claims`` (g1–g3, :func:`parity_claims`).
"""

from mdlnb.studies.parity._claims import parity_claims
from mdlnb.studies.parity._config import ParityConfig
from mdlnb.studies.parity._result import ParityResult
from mdlnb.studies.parity._run import run

#: The study's config class, under the name every study package uses (mdlnb.studies).
Config = ParityConfig

__all__ = ["Config", "ParityConfig", "ParityResult", "parity_claims", "run"]
