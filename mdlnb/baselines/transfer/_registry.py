"""The metric registry: each transferability metric with the inputs it needs, its
sign (higher- or lower-is-better), its unit and the defaults it runs with
(:data:`METRICS`, re-exported by :mod:`mdlnb.baselines.transfer`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from mdlnb.baselines.transfer._etran import etran
from mdlnb.baselines.transfer._gaussian import pactran_gaussian
from mdlnb.baselines.transfer._gbc import gbc
from mdlnb.baselines.transfer._hscore import hscore, regularized_hscore
from mdlnb.baselines.transfer._leep import gmm_posteriors, leep, nce, nleep_components
from mdlnb.baselines.transfer._linear import linear, linear_valid
from mdlnb.baselines.transfer._logme import logme
from mdlnb.baselines.transfer._ncti import ncti
from mdlnb.baselines.transfer._pactran import pactran_dirichlet, pactran_gamma
from mdlnb.baselines.transfer._parc import parc
from mdlnb.baselines.transfer._sfda import sfda
from mdlnb.baselines.transfer._transrate import transrate


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


nat, dim = "nats/example", "dimensionless"
f, s = ("features",), ("source_probs",)
_ENTRIES = [
    Metric("leep", lambda i, y, c, r: leep(i["source_probs"], y, num_classes=c), +1, s, nat, {}),
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
#: Every metric by name: what it needs, its sign, unit and the defaults it uses.
METRICS: dict[str, Metric] = {m.name: m for m in _ENTRIES}
