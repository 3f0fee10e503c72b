"""The study's metric names: which way is better, their units, their order in tables."""

from __future__ import annotations

from typing import Any

from mdlnb.baselines import transfer

#: Scores computed by the study besides :data:`mdlnb.baselines.transfer.METRICS`: name → (sign, unit).
EXTRA_METRICS: dict[str, tuple[int, str]] = {
    "pactran_gaussian_grid": (-1, "nats/example"),
    "linear_grid": (-1, "nats/example"),
    "mdl": (-1, "nats/example"),
    "cl": (+1, "accuracy"),
    "twonn_id": (+1, "dimensions"),
    "clid": (+1, "dimensionless"),
    "rankme": (+1, "dimensions"),
    "params": (+1, "parameters"),
    "source_accuracy": (+1, "ImageNet top-1"),
}
LABEL_FREE = ("cl", "twonn_id", "clid", "rankme")
#: Baselines that look at the encoder only, never at the task's data.
STATIC = ("params", "source_accuracy")
GRID_METRICS = ("pactran_gaussian_grid", "linear_grid")
#: Registry metrics that use the N-LEEP Gaussian mixture (and so its number of components).
GMM_METRICS = ("nleep", "n_pactran_dirichlet", "n_pactran_gamma")


def metric_sign(name: str) -> int:
    """+1 if ``name`` is higher-is-better, −1 if lower-is-better."""
    if name in transfer.METRICS:
        return transfer.METRICS[name].sign
    if name in EXTRA_METRICS:
        return EXTRA_METRICS[name][0]
    raise ValueError(f"name: unknown metric {name!r}")


def metric_order(names: Any) -> list[str]:
    """Registry order, then the grid metrics, MDL, and the label-free ones."""
    ref = list(transfer.METRICS) + list(EXTRA_METRICS)
    names = list(names)
    return [m for m in ref if m in names] + sorted(m for m in names if m not in ref)


def with_zoo(df):
    """``df`` with a ``zoo`` column (``"all"`` where it has none: one pool of encoders)."""
    return df if "zoo" in df else df.assign(zoo="all")


_NAMES = {
    "leep": "LEEP",
    "nleep": "N-LEEP",
    "nce": "NCE",
    "hscore": "H-score",
    "regularized_hscore": "Ledoit–Wolf H-score",
    "logme": "LogME",
    "pactran_dirichlet": "PT-Dir",
    "pactran_gamma": "PT-Gam",
    "n_pactran_dirichlet": "N-PT-Dir",
    "n_pactran_gamma": "N-PT-Gam",
    "pactran_gaussian": "PT-Gauss",
    "linear": "LINEAR",
    "linear_valid": "LINEAR-VALID",
    "pactran_gaussian_grid": "PT-Gauss-grid",
    "linear_grid": "LINEAR-grid",
    "mdl": "MDL",
    "cl": "CL",
    "twonn_id": "TwoNN ID",
    "clid": "CLID",
    "rankme": "RankMe",
    "sfda": "SFDA",
    "gbc": "GBC",
    "parc": "PARC",
    "transrate": "TransRate",
    "ncti": "NCTI",
    "etran": "ETran",
    "params": "#params (static)",
    "source_accuracy": "source accuracy (static)",
}


def display_name(metric: str) -> str:
    """The papers' name of a metric (``"linear_valid"`` → ``"LINEAR-VALID"``)."""
    return _NAMES.get(metric, metric)
