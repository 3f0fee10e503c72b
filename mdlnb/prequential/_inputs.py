"""Host-side inputs of one chunk of batches: the features and labels in stream
order, padding batches, and the prefix standardisation statistics accumulated
in float64 (see :mod:`mdlnb.prequential`)."""

from __future__ import annotations

import math

import numpy as np

from mdlnb.core import _standardize


def _chunk_inputs(x_ord, y_ord, first_batch, nbatch, b, running, standardize, target_moments=None):
    """Host-side arrays for batches ``first_batch .. first_batch + nbatch - 1``.

    Batches past the end of the stream are padding (``valid = False``, no
    update). ``running = (sum x, sum x², count)`` in float64 over the positions
    before ``first_batch``; returns the inputs and the updated running sums.
    ``target_moments``: regression only, ``(mean, inv_std)`` of the targets
    after each number of batches (:func:`mdlnb.core._targets.prefix_moments`), given
    to the program as ``ymean_prev``/``yinv_prev`` (coding) and
    ``ymean``/``yinv`` (training); ``y_ord`` is then float32 ``(N, P)``.
    """
    n, d = x_ord.shape
    lo, hi = first_batch * b, min((first_batch + nbatch) * b, n)
    x = np.zeros((nbatch * b, d), np.float32)
    y = np.zeros((nbatch * b,) + y_ord.shape[1:], y_ord.dtype)
    x[: hi - lo], y[: hi - lo] = x_ord[lo:hi], y_ord[lo:hi]
    batches = first_batch + np.arange(nbatch)
    valid = batches < math.ceil(n / b)
    t_end = np.minimum((batches + 1) * b, n)
    s1, s2, count = running
    xb = x.reshape(nbatch, b, d).astype(np.float64)
    c1 = np.concatenate([s1[None], s1 + np.cumsum(xb.sum(axis=1), axis=0)])
    c2 = np.concatenate([s2[None], s2 + np.cumsum((xb * xb).sum(axis=1), axis=0)])
    counts = np.concatenate([[count], t_end]).astype(np.float64)
    mean, inv = _standardize.from_sums(c1, c2, counts)
    if not standardize:
        mean, inv = np.zeros_like(mean), np.ones_like(inv)
    xs = {
        "batch": batches.astype(np.int32),
        "t_end": t_end.astype(np.int32),
        "valid": valid,
        "x": x.reshape(nbatch, b, d),
        "y": y.reshape((nbatch, b) + y_ord.shape[1:]),
        "mean": mean[1:].astype(np.float32),
        "inv_std": inv[1:].astype(np.float32),
        "mean_prev": mean[:-1].astype(np.float32),
        "inv_std_prev": inv[:-1].astype(np.float32),
    }
    if target_moments is not None:
        ym, yi = target_moments
        t = np.minimum(batches, len(ym) - 2)  # padding batches repeat the last real one
        xs.update(
            ymean_prev=ym[t].astype(np.float32),
            yinv_prev=yi[t].astype(np.float32),
            ymean=ym[t + 1].astype(np.float32),
            yinv=yi[t + 1].astype(np.float32),
        )
    last = int(valid.sum())  # row of c1/c2 after the last real batch
    return xs, (c1[last], c2[last], float(counts[last]))
