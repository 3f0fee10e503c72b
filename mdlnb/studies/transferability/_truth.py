"""Ground truth per (encoder, task): fine-tuned accuracy beside frozen-probe accuracy.

* ``"finetune"`` (PACTran Sec. 4.1.3, App. B.3): the whole encoder and a linear
  head trained on the task's training split at each rate of a small grid, the
  rate chosen by validation cross-entropy, top-1 accuracy on the test split
  (:mod:`._finetune`, kept as artifacts by :mod:`._groundtruth`).
* ``"probe"`` (PACTran App. B.3's top-layer runs): a multinomial logistic
  regression on the frozen, standardised features of the training split for
  each β of ``beta_factors`` (in units of the training size; PACTran's weight
  decay (1/B)·{0.01 … 100}), all checkpoints of a zoo in one program
  (:func:`mdlnb.baselines.transfer._softmax_batch.fit_batch`), β chosen by validation
  cross-entropy, top-1 accuracy on the test split.
* ``"best"``: per checkpoint, whichever of the two has the lower validation
  cross-entropy (PACTran takes the lowest *test* error over both kinds of run).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mdlnb.baselines.transfer._softmax_batch import fit_batch

TRUTH_COLUMNS = ["zoo", "encoder", "task", "readout", "model", "accuracy", "val_loss [nats]"]


def _standardised(fs: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    tr = np.asarray(fs.train.x, np.float64)
    mu, sd = tr.mean(0), tr.std(0)
    sd = np.where(sd > 0, sd, 1.0)
    return tuple((np.asarray(t.x, np.float64) - mu) / sd for t in (fs.train, fs.val, fs.test))


def _ce_and_accuracy(x: np.ndarray, y: np.ndarray, params: np.ndarray) -> tuple[float, float]:
    from scipy.special import log_softmax

    lp = log_softmax(x @ params[:-1] + params[-1], axis=1)
    return float(-lp[np.arange(len(y)), y].mean()), float(np.mean(lp.argmax(1) == y))


def probe_rows(
    zoo: str,
    featuresets: Sequence[Any],
    *,
    beta_factors: Sequence[float] = (0.01, 0.1, 1.0, 10.0, 100.0),
) -> list[dict]:
    """The frozen-probe rows of one zoo's encoders on one task (module docstring)."""
    if not featuresets:
        return []
    data = [_standardised(fs) for fs in featuresets]
    y = [np.asarray(fs.train.y) for fs in featuresets]
    n, c, f = len(y[0]), int(featuresets[0].train.num_classes), list(beta_factors)
    x = np.stack([d[0] for d in data for _ in f])
    fit = fit_batch(
        x, np.stack([yy for yy in y for _ in f]), c, np.array([b * n for _ in data for b in f])
    )
    rows = []
    for i, fs in enumerate(featuresets):
        scored = []
        for j, b in enumerate(f):
            p = fit.params[i * len(f) + j]
            vl, _ = _ce_and_accuracy(data[i][1], np.asarray(fs.val.y), p)
            _, acc = _ce_and_accuracy(data[i][2], np.asarray(fs.test.y), p)
            scored.append((vl, acc, b))
        vl, acc, b = min(scored, key=lambda t: t[0])
        rows.append(
            {
                "zoo": zoo,
                "encoder": fs.encoder,
                "task": fs.task,
                "readout": "probe",
                "model": f"logistic beta={b:g}N",
                "accuracy": acc,
                "val_loss [nats]": vl,
            }
        )
    return rows


def finetune_rows(
    zoo: str, task: str, names: Sequence[str], arrays: dict, learning_rates: Sequence[float]
) -> list[dict]:
    """The fine-tuning rows of one (zoo, task) ground-truth artifact."""
    rows = []
    for i, name in enumerate(names):
        k = int(arrays["chosen"][i])
        rows.append(
            {
                "zoo": zoo,
                "encoder": name,
                "task": task,
                "readout": "finetune",
                "model": f"finetune lr={learning_rates[k]:g}",
                "accuracy": float(arrays["test_accuracy"][i]),
                "val_loss [nats]": float(arrays["val_loss"][i, k]),
            }
        )
    return rows


def best_rows(rows: Sequence[dict]) -> list[dict]:
    """Per (encoder, task), the fine-tuning or probe row of lower validation loss, as
    readout ``"best"``."""
    by: dict[tuple, list[dict]] = {}
    for r in rows:
        if r["readout"] in ("finetune", "probe"):
            by.setdefault((r["zoo"], r["encoder"], r["task"]), []).append(r)
    return [{**min(g, key=lambda r: r["val_loss [nats]"]), "readout": "best"} for g in by.values()]
