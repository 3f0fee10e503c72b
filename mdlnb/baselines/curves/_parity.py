"""The parity toy of SDL paper Sec. 3.1 (Fig. 1 right), and its two exact learning algorithms.

Data: a secret ``s ∈ {0,1}^d``; ``x`` uniform on ``{0,1}^d``; label
``y = ⟨x, s⟩ mod 2``. Two representations of the same examples:

* **A, noisy label**: ``z = y ⊕ e`` with ``e ~ Bernoulli(α)``, α < 1/2 — one bit
  that predicts y with accuracy 1 − α at *any* n; its best loss is the binary
  entropy ``H(α)`` nats.
* **B, raw bits**: ``x`` itself — y is a deterministic (linear over GF(2))
  function of it, learnable exactly once d independent rows are seen.

Algorithms (closed form, no gradient training):

* :func:`bernoulli_fit`: the count-based estimator for A,
  ``p(y = z) = (#agree + ½) / (n + 1)`` (Krichevsky–Trofimov), loss → H(α).
* :func:`gf2_fit`: Gaussian elimination over GF(2) for B. With the training
  rows in reduced row-echelon form, a test ``x`` in their row space has its
  label determined (probability 1); outside it the label is uniform over the
  secrets consistent with the data (probability ½) — the exact posterior
  predictive under a uniform prior on ``s``, hence calibrated. Expected loss
  ``E[1 − 2^{rank − d}] · log 2``; zero error once rank = d, which happens with
  probability ``∏_{i<d} (1 − 2^{i−n}) ≥ 1 − 2^{d−n}``.

:func:`algorithm_curve` measures either on the same nested prefixes and
held-out set as :func:`mdlnb.baselines.curves.loss_data_curve`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from mdlnb.baselines.curves._curve import (
    LossDataCurve,
    _as_seeds,
    _check_sizes,
    log_grid,
    permutations,
    split_test,
)
from mdlnb.core._checks import as_array, check_int
from mdlnb.core._task import Task


def binary_entropy(alpha: float) -> float:
    """H(α) = −α log α − (1−α) log(1−α), nats."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha: must lie in [0, 1], got {alpha}")
    return -sum(p * math.log(p) for p in (alpha, 1.0 - alpha) if p > 0)


def parity_tasks(
    d: int, n: int, *, alpha: float = 0.1, seed: int = 0
) -> tuple[Task, Task, np.ndarray]:
    """``(raw bits task B, noisy-label task A, secret s)`` on the same ``n`` examples.

    ``s`` is uniform on ``{0,1}^d`` minus the zero vector (so y is not constant);
    tasks carry uint8 features (B: ``(n, d)``, A: ``(n, 1)``) and binary labels."""
    for v, nm in ((d, "d"), (n, "n")):
        check_int(nm, v, minimum=1)
    if not 0.0 <= alpha < 0.5:
        raise ValueError(f"alpha: must lie in [0, 0.5), got {alpha}")
    rng = np.random.default_rng(seed)
    s = np.zeros(d, np.uint8)
    while not s.any():
        s = rng.integers(0, 2, d, dtype=np.uint8)
    x = rng.integers(0, 2, (n, d), dtype=np.uint8)
    y = (x.astype(np.int64) @ s % 2).astype(np.int32)
    z = (y ^ (rng.random(n) < alpha)).astype(np.uint8)
    meta = dict(
        d=int(d), alpha=float(alpha), seed=int(seed), secret=s.tolist(), paper="SDL Sec. 3.1"
    )
    raw = Task("parity_raw", x, y, 2, meta={**meta, "representation": "raw bits"})
    noisy = Task("parity_noisy", z[:, None], y, 2, meta={**meta, "representation": "noisy label"})
    return raw, noisy, s


def gf2_rref(a: Any) -> tuple[np.ndarray, np.ndarray]:
    """Reduced row-echelon form over GF(2) of a 0/1 matrix ``(m, k)``.

    Returns ``(rows (r, k) uint8, pivots (r,) int64)``: the r = rank nonzero
    rows; row i has a 1 in column ``pivots[i]`` and every other row a 0 there."""
    m = as_array(a, "a", ndim=2)
    if m.size and not np.all((m == 0) | (m == 1)):
        raise ValueError("a: must hold only 0 and 1")
    m = m.astype(np.uint8).copy()
    pivots, r = [], 0
    for col in range(m.shape[1]):
        if r == m.shape[0]:
            break
        nz = np.flatnonzero(m[r:, col])
        if nz.size == 0:
            continue
        p = r + int(nz[0])
        m[[r, p]] = m[[p, r]]
        hit = np.flatnonzero(m[:, col])
        hit = hit[hit != r]
        m[hit] ^= m[r]
        pivots.append(col)
        r += 1
    return m[:r], np.asarray(pivots, np.int64)


def gf2_fit(x: np.ndarray, y: np.ndarray, x_test: np.ndarray) -> np.ndarray:
    """``(T, 2)`` predictive probabilities from GF(2) elimination on ``[x | y]`` (see module doc)."""
    d = x.shape[1]
    rows, piv = gf2_rref(np.concatenate([x, y[:, None]], axis=1).astype(np.uint8))
    keep = piv < d  # a pivot in the label column: inconsistent data (noise)
    if not np.all(keep):
        raise ValueError("y: not a parity of x (the data are inconsistent over GF(2))")
    basis, labels = rows[:, :d].astype(np.int64), rows[:, d].astype(np.int64)
    coef = x_test[:, piv].astype(np.int64)  # which basis rows make x_test (RREF)
    in_span = np.all((coef @ basis) % 2 == x_test, axis=1)
    pred = (coef @ labels) % 2
    p1 = np.where(in_span, pred.astype(np.float64), 0.5)
    return np.stack([1.0 - p1, p1], axis=1)


def bernoulli_fit(z: np.ndarray, y: np.ndarray, z_test: np.ndarray) -> np.ndarray:
    """``(T, 2)`` probabilities from the count estimator ``p(y = z) = (#agree + ½)/(n + 1)``."""
    agree = float(np.sum(z[:, 0] == y))
    q = (agree + 0.5) / (len(y) + 1.0)
    zt = z_test[:, 0].astype(np.int64)
    p1 = np.where(zt == 1, q, 1.0 - q)
    return np.stack([1.0 - p1, p1], axis=1)


ALGORITHMS: dict[str, Callable] = {"gf2": gf2_fit, "bernoulli": bernoulli_fit}


def algorithm_curve(
    task: Task,
    algorithm: str | Callable,
    *,
    test: Task | float | None = None,
    sizes: Sequence[int] | None = None,
    seeds: int | Sequence[int] = 8,
    representation: str | None = None,
) -> LossDataCurve:
    """Loss-data curve of a closed-form algorithm ``fit(x, y, x_test) -> probs (T, C)``.

    Same nested prefixes (one permutation per seed) and held-out split as
    :func:`~mdlnb.baselines.curves.loss_data_curve`; loss is the mean held-out log-loss, nats."""
    if not isinstance(task, Task):
        raise ValueError(f"task: expected an mdlnb.Task, got {type(task).__name__}")
    if isinstance(algorithm, str):
        if algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm: must be one of {sorted(ALGORITHMS)} or a callable")
        name, fit = algorithm, ALGORITHMS[algorithm]
    elif callable(algorithm):
        name, fit = getattr(algorithm, "__name__", "algorithm"), algorithm
    else:
        raise ValueError(f"algorithm: must be a name or a callable, got {type(algorithm).__name__}")
    pool, test_task = split_test(task, test)
    grid = (
        log_grid(pool.n, n_min=1)
        if sizes is None
        else _check_sizes(as_array(sizes, "sizes", ndim=1))
    )
    if grid[-1] > pool.n:
        raise ValueError(f"sizes: largest size {grid[-1]} exceeds the {pool.n} training examples")
    seed_list = _as_seeds(seeds)
    perms = permutations(pool.n, seed_list)
    x, y = pool.x.reshape(pool.n, -1), pool.y
    xt, yt = test_task.x.reshape(test_task.n, -1), test_task.y
    loss = np.zeros((len(seed_list), len(grid)))
    acc = np.zeros_like(loss)
    for r in range(len(seed_list)):
        for k, n in enumerate(grid):
            idx = perms[r, :n]
            p = np.clip(fit(x[idx], y[idx], xt), 1e-300, 1.0)
            loss[r, k] = float(np.mean(-np.log(p[np.arange(len(yt)), yt])))
            acc[r, k] = float(np.mean(np.argmax(p, axis=1) == yt))
    meta = dict(
        algorithm=name,
        task=task.name,
        n_pool=pool.n,
        n_test=test_task.n,
        units="nats",
        prefixes="nested prefixes of one permutation per seed",
    )
    return LossDataCurve(
        representation or task.name, grid, loss, acc, seed_list, task.num_classes, meta
    )
