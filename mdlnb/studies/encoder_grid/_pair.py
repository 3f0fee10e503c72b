"""One unit of work: everything the study measures on one (encoder, task) pair.

For every data order ``s`` in ``config.seeds`` (paper Sec. 4, App. A.3):

* stage 1, the ``LossMatrix`` L[t, k] of the protocol's board on the training
  split's features (cached on disk by :func:`mdlnb.prequential.run`);
* stage 2, the switching codelength (nats) and the posterior p(ξ_t | D_<t);
* the best single expert's codelength (nats);
* the preferred readout, argmax_r (1/N) Σ_t p(r | D_<t) (paper Fig. 2),
  stored as its number of hidden layers (0 = linear, h = MLP with h layers);
* readout switches: how often the MAP readout argmax_r p(r | D_<t) changes
  along t (the "switching frequency" of Sec. 4, Readout Models);
* a compact trace: in ``bins`` log-spaced bins of t the mean posterior of
  each readout, and the cumulative switching codelength at each bin's end.

Once per pair: linear and best-MLP test accuracy under the App. A.4 protocol
(:func:`mdlnb.baselines.probes.accuracy`: 90/10 train/validation, the readout and its
hyperparameters chosen on validation loss within each family).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from mdlnb import prequential
from mdlnb.api.evaluation import Report
from mdlnb.baselines import probes
from mdlnb.board._arguments import resolve_protocol
from mdlnb.core._grid import log_integers
from mdlnb.core._task import Task
from mdlnb.core._units import LN2
from mdlnb.studies.transferability import readout_from_name

#: metric name → (lower is better?, unit)
METRICS: dict[str, tuple[bool, str]] = {
    "codelength [nats]": (True, "nats"),
    "codelength [bits/example]": (True, "bits/example"),
    "best expert [nats]": (True, "nats"),
    "preferred readout depth": (True, "hidden layers"),
    "readout switches": (True, "count"),
    "linear accuracy": (False, "top-1"),
    "mlp accuracy": (False, "top-1"),
    "best accuracy": (False, "top-1"),
}


def stream_bins(n: int, bins: int) -> np.ndarray:
    """Edges ``0 = e_0 < e_1 < … < e_B = n`` of at most ``bins`` log-spaced bins
    of stream positions (bin i covers t ∈ [e_i, e_{i+1}))."""
    if n < 1 or bins < 1:
        raise ValueError(f"bins: need n >= 1 and bins >= 1, got n={n}, bins={bins}")
    edges = log_integers(1, n, bins + 1)
    return np.unique(np.concatenate([[0], edges, [n]]))


def readout_trace(mat: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """(B, R) mean of the (N, R) readout posterior over each bin of ``edges``."""
    return np.stack([mat[a:b].mean(axis=0) for a, b in zip(edges[:-1], edges[1:])])


def map_switches(mat: np.ndarray) -> int:
    """Number of t with argmax_r p(r | D_<t) ≠ argmax_r p(r | D_<t−1)."""
    top = np.argmax(mat, axis=1)
    return int(np.count_nonzero(top[1:] != top[:-1]))


def mdl_rows(
    train: Task, config: Any, *, cache: bool = True, losses: Sequence[Any] | None = None
) -> dict[str, list]:
    """Stage 1 + 2 for every order: metric rows, posterior trace rows, curve rows.

    Stage 1 of the orders runs as one batch of streams
    (:func:`mdlnb.prequential.run_streams`), unless ``losses`` gives their loss
    matrices (one per seed of ``config.seeds``, e.g. from a batch over many pairs)."""
    plan = resolve_protocol(config.protocol)
    edges = stream_bins(train.n, int(config.posterior_bins))
    rows, post, curve = [], [], []
    if losses is None:
        losses = prequential.run_streams(
            [(train, int(s)) for s in config.seeds], protocol=plan, progress=False, cache=cache
        )
    if len(losses) != len(config.seeds):
        raise ValueError(
            f"losses: expected {len(config.seeds)} loss matrices (one per seed), got {len(losses)}"
        )
    for s, lm in zip(config.seeds, losses):
        if int(lm.seed) != int(s) or lm.losses.shape[0] != train.n:
            raise ValueError(
                f"losses: the loss matrix for seed {s} is of seed {lm.seed} and "
                f"N = {lm.losses.shape[0]} (the task has {train.n})"
            )
        rep = Report.from_losses(lm, plan.strategy, warn=False)
        ros, mat = rep.readout_matrix()
        depth = {e.readout.name: int(e.readout.hidden_layers) for e in lm.experts}
        rows += [
            (int(s), "codelength [nats]", rep.total_nats),
            (int(s), "codelength [bits/example]", rep.total_nats / LN2 / train.n),
            (int(s), "best expert [nats]", rep.best_expert_nats),
            (
                int(s),
                "preferred readout depth",  # NaN: N ≤ B, no readout trained
                float(depth[rep.preferred_readout]) if rep.trained else float("nan"),
            ),
            (int(s), "readout switches", float(map_switches(mat))),
        ]
        trace = readout_trace(mat, edges)
        cum = np.cumsum(rep.per_step_nats.astype(np.float64))
        for i, (a, b) in enumerate(zip(edges[:-1], edges[1:])):
            post += [(int(s), int(a), int(b), r, float(trace[i, j])) for j, r in enumerate(ros)]
            curve.append((int(s), int(b), float(cum[b - 1])))
    return {"rows": rows, "posterior": post, "curve": curve}


def probe_rows(train: Task, test: Task, config: Any) -> list:
    """Linear, best-MLP and overall-best test accuracy (App. A.4), seed ``config.seed``."""
    ros = [readout_from_name(r) for r in config.probe_readouts]
    table = probes.accuracy(
        train,
        ros,
        config.probe_grid,
        test=test,
        seed=int(config.seed),
        steps=int(config.probe_steps),
        batch_size=int(config.probe_batch_size),
    )
    out = [
        (int(config.seed), f"{rec['family']} accuracy", float(rec["test_accuracy"]))
        for rec in table.to_dict("records")
    ]
    best = table.loc[table["val_loss [nats]"].idxmin()]
    out.append((int(config.seed), "best accuracy", float(best["test_accuracy"])))
    return out


def compute_pair(
    train: Task, test: Task, config: Any, *, cache: bool = True, losses: Sequence[Any] | None = None
) -> dict[str, Any]:
    """All measurements of one pair as a JSON-able dict (see the module docstring);
    ``seconds`` holds the wall time of the MDL part and of the accuracy protocol.
    ``losses``: the pair's stage-1 loss matrices, if already computed (:func:`mdl_rows`)."""
    t0 = time.perf_counter()
    mdl = mdl_rows(train, config, cache=cache, losses=losses)
    t1 = time.perf_counter()
    acc = probe_rows(train, test, config)
    t2 = time.perf_counter()
    return {
        "rows": mdl["rows"] + acc,
        "posterior": mdl["posterior"],
        "curve": mdl["curve"],
        "n": int(train.n),
        "seconds": {"mdl": round(t1 - t0, 3), "accuracy": round(t2 - t1, 3)},
    }
