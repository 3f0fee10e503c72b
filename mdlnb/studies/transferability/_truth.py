"""Ground truth: best-readout test accuracy on the full (capped) training split.

Per (encoder, task), :func:`mdlnb.probes.accuracy` trains each readout of
``readouts`` over the hyperparameter ``grid`` on 90 % of the training split,
picks by validation loss (nats), and reports top-1 test accuracy. Rows are
kept per readout family (``"linear"``, ``"mlp"``) and for the family with the
lowest validation loss (``"best"``). Fine-tuning the encoders, the papers'
ground truth, is unaffordable on a CPU.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mdlnb.studies.transferability._config import readout_from_name
from mdlnb.studies.transferability._features import FeatureSet

TRUTH_COLUMNS = ["encoder", "task", "readout", "model", "accuracy", "val_loss [nats]"]


def truth_rows(
    fs: FeatureSet,
    *,
    readouts: Sequence[str] = ("linear",),
    grid: Mapping[str, Sequence[float]] | None = None,
    steps: int = 500,
    batch_size: int = 256,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Ground-truth rows (dicts with :data:`TRUTH_COLUMNS`) of one (encoder, task)."""
    from mdlnb import probes

    ros = [readout_from_name(r) for r in readouts]
    table = probes.accuracy(
        fs.train, ros, grid, test=fs.test, seed=seed, steps=steps, batch_size=batch_size
    )
    rows = [
        {
            "encoder": fs.encoder,
            "task": fs.task,
            "readout": rec["family"],
            "model": rec["readout"],
            "accuracy": float(rec["test_accuracy"]),
            "val_loss [nats]": float(rec["val_loss [nats]"]),
        }
        for rec in table.to_dict("records")
    ]
    best = table.loc[table["val_loss [nats]"].idxmin()]
    rows.append(
        {
            "encoder": fs.encoder,
            "task": fs.task,
            "readout": "best",
            "model": best["readout"],
            "accuracy": float(best["test_accuracy"]),
            "val_loss [nats]": float(best["val_loss [nats]"]),
        }
    )
    return rows


def ground_truth(
    featuresets: Sequence[FeatureSet],
    *,
    readouts: Sequence[str] = ("linear",),
    grid: Mapping[str, Sequence[float]] | None = None,
    steps: int = 500,
    batch_size: int = 256,
    seed: int = 0,
):
    """Tidy DataFrame of :func:`truth_rows` over every (encoder, task): ``encoder``,
    ``task``, ``readout`` (family or ``"best"``), ``model``, ``accuracy`` (test top-1),
    ``val_loss [nats]``."""
    import pandas as pd

    rows = [
        r
        for fs in featuresets
        for r in truth_rows(
            fs, readouts=readouts, grid=grid, steps=steps, batch_size=batch_size, seed=seed
        )
    ]
    return pd.DataFrame(rows, columns=TRUTH_COLUMNS)
