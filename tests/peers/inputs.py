"""Real inputs of the peer comparisons, rebuilt identically by the generator
(``make_expected.py``, run in a scratch environment with the peers) and by the
CI test (``test_peers.py``). Only NumPy and scikit-learn's bundled datasets;
every random choice is a seeded ``numpy.random.default_rng`` draw.
"""

from __future__ import annotations

import numpy as np
from scipy.special import log_softmax


def _digits():
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    return x.astype(np.float64), y.astype(np.int64)


def digits_projection(n: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Digits (first ``n`` rows) through a fixed Gaussian projection 64 → 16, (N, 16)."""
    x, y = _digits()
    w = np.random.default_rng(0).normal(size=(64, 16)) / 8.0
    f = x @ w
    return (f, y) if n is None else (f[:n], y[:n])


def digits_source16(n: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities (N, 16) of a fixed 16-way linear "source head" on
    standardised digits: softmax(z W), W ~ N(0, 1/64) seeded."""
    x, y = _digits()
    z = (x - x.mean(0)) / (x.std(0) + 1e-9)
    w = np.random.default_rng(0).normal(size=(64, 16)) / 8.0
    p = np.exp(log_softmax(z @ w, axis=1))
    return (p, y) if n is None else (p[:n], y[:n])


def digits_few_shot(shots: int) -> tuple[np.ndarray, np.ndarray]:
    """Raw digits (D = 64), the first ``shots`` examples of each class (N = 10·shots)."""
    x, y = _digits()
    idx = np.concatenate([np.flatnonzero(y == k)[:shots] for k in range(10)])
    return x[idx], y[idx]


def breast_cancer() -> tuple[np.ndarray, np.ndarray]:
    """Raw scikit-learn breast cancer (569 × 30; covariance condition number ~6e11)."""
    from sklearn.datasets import load_breast_cancer

    x, y = load_breast_cancer(return_X_y=True)
    return x.astype(np.float64), y.astype(np.int64)


def wine_standardised() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_wine

    x, y = load_wine(return_X_y=True)
    return (x - x.mean(0)) / x.std(0), y.astype(np.int64)


def wine_views() -> tuple[np.ndarray, np.ndarray]:
    """Two "views" of standardised wine: each plus fixed Gaussian noise (σ = 0.3)."""
    x, _ = wine_standardised()
    rng = np.random.default_rng(1)
    return x + 0.3 * rng.normal(size=x.shape), x + 0.3 * rng.normal(size=x.shape)


def digits_with_duplicates() -> np.ndarray:
    """The first 400 raw digits rows plus copies of the first 30 (30 exact pairs)."""
    x, _ = _digits()
    return np.concatenate([x[:400], x[:30]])


TABLE_DATASETS = (
    "iris",
    "wine",
    "breast_cancer",
    "digits",
    "digits_0to4",
    "digits_5to9",
    "digits_parity",
    "wine_0v1",
)
TABLE_CLASSIFIERS = ("logreg", "knn5", "tree", "gnb", "svc")


def table_dataset(name: str) -> tuple[np.ndarray, np.ndarray]:
    """The classification datasets of the rank table (rows of the pinned
    5-fold accuracy table the generator computes)."""
    from sklearn.datasets import load_breast_cancer, load_iris, load_wine

    if name == "iris":
        return load_iris(return_X_y=True)
    if name in ("wine", "wine_0v1"):
        x, y = load_wine(return_X_y=True)
        return (x, y) if name == "wine" else (x[y < 2], y[y < 2])
    if name == "breast_cancer":
        return load_breast_cancer(return_X_y=True)
    x, y = _digits()
    if name == "digits":
        return x, y
    if name == "digits_0to4":
        return x[y < 5], y[y < 5]
    if name == "digits_5to9":
        return x[y >= 5], y[y >= 5] - 5
    if name == "digits_parity":
        return x, y % 2
    raise ValueError(name)


def digits_jittered(n: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Raw digits plus seeded Gaussian noise (σ = 0.5): no constant pixel, so
    the 64 × 64 covariance has full rank (first ``n`` rows)."""
    x, y = _digits()
    x = x + 0.5 * np.random.default_rng(2).normal(size=x.shape)
    return (x, y) if n is None else (x[:n], y[:n])


def digits_wide() -> np.ndarray:
    """Raw digits through a fixed Gaussian projection 64 → 128 plus seeded noise
    (σ = 0.5): 1797 × 128 with 128 non-zero covariance eigenvalues."""
    x, _ = _digits()
    w = np.random.default_rng(3).normal(size=(64, 128)) / 8.0
    return x @ w + 0.5 * np.random.default_rng(4).normal(size=(x.shape[0], 128))


def digits_views(n: int = 300, q: int = 4) -> np.ndarray:
    """``q`` noisy "augmented views" (σ = 0.5, seeded) of each of the first ``n``
    projected digits: (n, q, 16)."""
    f, _ = digits_projection(n)
    rng = np.random.default_rng(5)
    return f[:, None, :] + 0.5 * rng.normal(size=(n, q, f.shape[1]))
