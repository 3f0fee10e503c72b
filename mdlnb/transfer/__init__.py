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

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from mdlnb.transfer import _leep
from mdlnb.transfer import _validate as _v
from mdlnb.transfer._etran import (
    ETranResult,
    etran,
    etran_classification,
    etran_combine,
    etran_energy,
    etran_result,
)
from mdlnb.transfer._gaussian import (
    SIGMA0_FACTORS,
    PactranGaussianResult,
    pactran_gaussian,
    pactran_gaussian_grid,
    pactran_gaussian_result,
    select_by_kendall,
)
from mdlnb.transfer._gbc import GBCResult, gbc, gbc_result
from mdlnb.transfer._hscore import hscore, ledoit_wolf_shrinkage, regularized_hscore
from mdlnb.transfer._leep import (
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
from mdlnb.transfer._linear import (
    BETA_FACTORS,
    linear,
    linear_valid,
    linear_valid_losses,
    two_folds,
)
from mdlnb.transfer._logme import (
    LogMEResult,
    logme,
    logme_regression,
    logme_regression_result,
    logme_result,
)
from mdlnb.transfer._ncti import NCTIResult, ncti, ncti_combine, ncti_result
from mdlnb.transfer._pactran import (
    PactranResult,
    pactran_dirichlet,
    pactran_dirichlet_result,
    pactran_gamma,
    pactran_gamma_result,
)
from mdlnb.transfer._parc import parc
from mdlnb.transfer._sfda import SFDAResult, sfda, sfda_result
from mdlnb.transfer._transrate import transrate


@dataclasses.dataclass(frozen=True)
class Metric:
    """A registered metric.

    Attributes:
      name: registry key.
      fn: ``fn(inputs: dict, labels, num_classes, seed) -> float``.
      sign: +1 if higher is better, -1 if lower is better.
      needs: input names besides ``labels``: ``"features"``, ``"source_probs"``.
      unit: ``"nats/example"``, ``"nats"`` (TransRate: a rate of the whole set),
        ``"dimensionless"``, or ``"mixed"`` (ETran: nats of energy + a probability).
      knobs: the defaults used, for recording next to results.
    """

    name: str
    fn: Callable[..., float]
    sign: int
    needs: tuple[str, ...]
    unit: str
    knobs: Mapping[str, Any]


def _gmm(inp, labels, num_classes, seed):
    key = ("gmm", seed)
    if key not in inp:
        c = num_classes if num_classes is not None else int(np.max(labels)) + 1
        k = nleep_components(inp.get("nleep_components", "paper"), len(labels), c)
        inp[key] = gmm_posteriors(inp["features"], k, variance=0.8, seed=seed)
    return inp[key]


def _registry() -> dict[str, Metric]:
    nat, dim = "nats/example", "dimensionless"
    f, s = ("features",), ("source_probs",)
    entries = [
        Metric(
            "leep", lambda i, y, c, r: leep(i["source_probs"], y, num_classes=c), +1, s, nat, {}
        ),
        Metric(
            "nce",
            lambda i, y, c, r: nce(i["source_probs"], y, num_classes=c),
            +1,
            s,
            nat,
            {"source_labels": "argmax of source_probs"},
        ),
        Metric(
            "nleep",
            lambda i, y, c, r: leep(_gmm(i, y, c, r), y, num_classes=c),
            +1,
            f,
            nat,
            {
                "variance": 0.8,
                "covariance_type": "full",
                "n_components": "score_all(nleep_components=): 'paper' (default) = "
                "max(min(C, int(0.2N)), int(0.1N)), 'classes' = C, or an int",
            },
        ),
        Metric(
            "hscore",
            lambda i, y, c, r: hscore(i["features"], y, num_classes=c),
            +1,
            f,
            dim,
            {
                "rank": "centred unit-norm columns (Gram if cond^2 < 1e8, else SVD); rcond max(N,D)*eps",
                "invariance": "invertible linear maps of the features",
            },
        ),
        Metric(
            "regularized_hscore",
            lambda i, y, c, r: regularized_hscore(i["features"], y, num_classes=c),
            +1,
            f,
            dim,
            {"shrinkage": "Ledoit-Wolf", "covariance": "1/N"},
        ),
        Metric(
            "logme",
            lambda i, y, c, r: logme(i["features"], y, num_classes=c),
            +1,
            f,
            nat,
            {"tol": 1e-10, "init": "alpha=beta=1"},
        ),
        Metric(
            "pactran_dirichlet",
            lambda i, y, c, r: pactran_dirichlet(i["source_probs"], y, num_classes=c),
            -1,
            s,
            nat,
            {"prior": "p(y)", "lambda": "N", "tol": 1e-12, "dtype": "float64"},
        ),
        Metric(
            "pactran_gamma",
            lambda i, y, c, r: pactran_gamma(i["source_probs"], y, num_classes=c),
            -1,
            s,
            nat,
            {"prior": "p(y)", "b": 1, "lambda": "N", "tol": 1e-12, "dtype": "float64"},
        ),
        Metric(
            "n_pactran_dirichlet",
            lambda i, y, c, r: pactran_dirichlet(_gmm(i, y, c, r), y, num_classes=c),
            -1,
            f,
            nat,
            {"prior": "p(y)", "source": "N-LEEP GMM posteriors"},
        ),
        Metric(
            "n_pactran_gamma",
            lambda i, y, c, r: pactran_gamma(_gmm(i, y, c, r), y, num_classes=c),
            -1,
            f,
            nat,
            {"prior": "p(y)", "source": "N-LEEP GMM posteriors"},
        ),
        Metric(
            "pactran_gaussian",
            lambda i, y, c, r: pactran_gaussian(i["features"], y, num_classes=c),
            -1,
            f,
            nat,
            {"beta": "10N", "sigma0_sq": "100/D", "bias": "regularised, counted"},
        ),
        Metric(
            "linear",
            lambda i, y, c, r: linear(i["features"], y, num_classes=c),
            -1,
            f,
            nat,
            {"beta": "1N", "bias": "regularised"},
        ),
        Metric(
            "linear_valid",
            lambda i, y, c, r: linear_valid(i["features"], y, num_classes=c, seed=r),
            -1,
            f,
            nat,
            {"beta": "{0.1,1,10}N", "folds": "2, stratified"},
        ),
        Metric(
            "sfda",
            lambda i, y, c, r: sfda(i["features"], y, num_classes=c),
            +1,
            f,
            dim,
            {
                "a": 5.0,
                "sigma_max": "exact (authors' code: 3 power iterations)",
                "score": "mean true-class probability, no log",
            },
        ),
        Metric(
            "gbc",
            lambda i, y, c, r: gbc(i["features"], y, num_classes=c),
            +1,
            f,
            dim,
            {
                "gaussian": "spherical",
                "n_dims": "64 (exact PCA when D > 64)",
                "min_variance": 1e-4,
                "log_det": "paper (D log s^2; authors' code: once)",
            },
        ),
        Metric(
            "parc",
            lambda i, y, c, r: parc(i["features"], y, num_classes=c),
            +1,
            f,
            dim,
            {"n_dims": 32, "pca": "exact", "scale": "[-1, 1] (authors' code: x100)"},
        ),
        Metric(
            "transrate",
            lambda i, y, c, r: transrate(i["features"], y, num_classes=c),
            +1,
            f,
            "nats",
            {"eps": 1e-4, "class_average": "uniform 1/K"},
        ),
        Metric(
            "ncti",
            lambda i, y, c, r: ncti(i["features"], y, num_classes=c),
            +1,
            f,
            dim,
            {
                "n_components": 64,
                "top": 32,
                "value": "unnormalised seli + ncc - vc; rank models with ncti_combine",
            },
        ),
        Metric(
            "etran",
            lambda i, y, c, r: etran(i["features"], y, num_classes=c),
            +1,
            f,
            "mixed",
            {
                "fraction": 0.005,
                "covariance": "lda",
                "value": "S_en + S_cls; authors rank with etran_combine",
            },
        ),
    ]
    return {m.name: m for m in entries}


METRICS: dict[str, Metric] = _registry()


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
