"""Transferability metrics: arrays in, a float out (PACTran paper, Sec. 2–4).

Sign conventions follow the papers, recorded in :data:`METRICS`: LEEP,
N-LEEP, NCE, H-score, LogME, SFDA, GBC, PARC, TransRate, NCTI and ETran are
higher-is-better; PACTran-*, LINEAR and LINEAR-VALID are losses/bounds in
nats per example, lower-is-better. NCTI and ETran rank several models by
min-max normalising their parts across the models (:func:`ncti_combine`,
:func:`etran_combine`); their per-model values are the unnormalised sums.
Use :func:`oriented` to turn any value into higher-is-better.

Metrics needing a source classifier (LEEP, NCE, PT-Dir, PT-Gam) take its
probabilities ``source_probs`` (N, Z); derive them from logits or a linear
head with :func:`source_probs_from_logits` / :func:`source_probs_from_head`.
The ``nleep``-style variants N-PT-Dir/N-PT-Gam use the N-LEEP GMM posteriors.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mdlnb.baselines.transfer import _leep
from mdlnb.baselines.transfer import _validate as _v
from mdlnb.baselines.transfer._etran import (
    ETranResult,
    etran,
    etran_classification,
    etran_combine,
    etran_energy,
    etran_result,
)
from mdlnb.baselines.transfer._gaussian import (
    SIGMA0_FACTORS,
    PactranGaussianResult,
    pactran_gaussian,
    pactran_gaussian_grid,
    pactran_gaussian_result,
    select_by_kendall,
)
from mdlnb.baselines.transfer._gbc import GBCResult, gbc, gbc_result
from mdlnb.baselines.transfer._hscore import hscore, ledoit_wolf_shrinkage, regularized_hscore
from mdlnb.baselines.transfer._leep import (
    COMPONENT_RULES,
    NLeepResult,
    gmm_posteriors,
    leep,
    nce,
    nleep,
    nleep_components,
    nleep_result,
    source_probs_from_head,
    source_probs_from_logits,
)
from mdlnb.baselines.transfer._linear import (
    BETA_FACTORS,
    linear,
    linear_valid,
    linear_valid_losses,
    two_folds,
)
from mdlnb.baselines.transfer._logme import (
    LogMEResult,
    logme,
    logme_regression,
    logme_regression_result,
    logme_result,
)
from mdlnb.baselines.transfer._ncti import NCTIResult, ncti, ncti_combine, ncti_result
from mdlnb.baselines.transfer._pactran import (
    PactranResult,
    pactran_dirichlet,
    pactran_dirichlet_result,
    pactran_gamma,
    pactran_gamma_result,
)
from mdlnb.baselines.transfer._parc import parc
from mdlnb.baselines.transfer._registry import METRICS, Metric
from mdlnb.baselines.transfer._sfda import SFDAResult, sfda, sfda_result
from mdlnb.baselines.transfer._transrate import transrate


def oriented(name: str, value: float) -> float:
    """``value`` turned higher-is-better using the metric's registered sign."""
    if name not in METRICS:
        raise ValueError(f"name: unknown metric {name!r}; known: {sorted(METRICS)}")
    return METRICS[name].sign * float(value)


def score_all(
    features: Any,
    labels: Any,
    source_probs: Any = None,
    *,
    num_classes: int | None = None,
    metrics: Sequence[str] | None = None,
    seed: int = 0,
    nleep_components: str | int = "paper",
) -> dict[str, float]:
    """Every applicable metric of :data:`METRICS` (or those named in ``metrics``).

    Metrics needing ``source_probs`` are skipped when it is None (an error if
    named explicitly). The GMM of N-LEEP is fitted once and shared by the
    N-PT variants; ``nleep_components`` is its component rule
    (:func:`nleep_components`: ``"paper"``, ``"classes"`` or an int).
    Returns ``{name: value}`` with each metric's own sign.
    """
    f = _v.features(features, keep_float32=True)
    y, c = _v.labels(labels, f.shape[0], num_classes)
    _leep.nleep_components(nleep_components, f.shape[0], c)  # validate the rule
    inputs: dict[Any, Any] = {"features": f, "nleep_components": nleep_components}
    if source_probs is not None:
        sp = _v.probabilities(source_probs)
        _v.same_length(f, sp, "features", "source_probs")
        inputs["source_probs"] = sp
    names = list(METRICS) if metrics is None else list(metrics)
    unknown = [m for m in names if m not in METRICS]
    if unknown:
        raise ValueError(f"metrics: unknown {unknown}; known: {sorted(METRICS)}")
    out = {}
    for name in names:
        m = METRICS[name]
        if any(k not in inputs for k in m.needs):
            if metrics is not None:
                raise ValueError(f"source_probs: metric {name!r} needs it")
            continue
        out[name] = float(m.fn(inputs, y, c, seed))
    return out


__all__ = [
    "METRICS",
    "Metric",
    "oriented",
    "score_all",
    "BETA_FACTORS",
    "SIGMA0_FACTORS",
    "leep",
    "nleep",
    "nleep_result",
    "NLeepResult",
    "nleep_components",
    "COMPONENT_RULES",
    "nce",
    "gmm_posteriors",
    "source_probs_from_logits",
    "source_probs_from_head",
    "hscore",
    "regularized_hscore",
    "ledoit_wolf_shrinkage",
    "logme",
    "logme_result",
    "LogMEResult",
    "logme_regression",
    "logme_regression_result",
    "pactran_dirichlet",
    "pactran_dirichlet_result",
    "pactran_gamma",
    "pactran_gamma_result",
    "PactranResult",
    "pactran_gaussian",
    "pactran_gaussian_result",
    "pactran_gaussian_grid",
    "PactranGaussianResult",
    "select_by_kendall",
    "linear",
    "linear_valid",
    "linear_valid_losses",
    "two_folds",
    "sfda",
    "sfda_result",
    "SFDAResult",
    "gbc",
    "gbc_result",
    "GBCResult",
    "parc",
    "transrate",
    "ncti",
    "ncti_result",
    "ncti_combine",
    "NCTIResult",
    "etran",
    "etran_result",
    "etran_energy",
    "etran_classification",
    "etran_combine",
    "ETranResult",
]
