"""A loss-data curve as data: the training-set sizes, the nested-prefix orders of its
seeds, and :class:`LossDataCurve`, the held-out loss and accuracy of probes against n
(Whitney et al. 2020, arXiv:2009.07368, Sec. 2.1). The curves are computed by
:func:`mdlnb.baselines.curves.loss_data_curve`."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from mdlnb.core._checks import as_array, check_finite, check_int, check_integer_values
from mdlnb.core._grid import log_integers


def log_grid(n_max: int, num: int = 20, n_min: int = 10) -> np.ndarray:
    """``num`` sizes log-uniform on ``[n_min, n_max]``, rounded, distinct, int64."""
    check_int("n_max", n_max, minimum=1)
    check_int("num", num, minimum=1)
    lo = min(int(n_min), int(n_max))
    if lo < 1:
        raise ValueError(f"n_min: must be >= 1, got {n_min!r}")
    return log_integers(lo, n_max, num)


def permutations(n: int, seeds: Sequence[int]) -> np.ndarray:
    """``(R, n)`` int32: one permutation of ``range(n)`` per seed (the nested-prefix orders)."""
    return np.stack([np.random.default_rng(int(s)).permutation(n) for s in seeds]).astype(np.int32)


@dataclasses.dataclass(frozen=True, eq=False)
class LossDataCurve:
    """Held-out loss (nats per example) and accuracy of probes against training-set size.

    Attributes:
      representation: label of the representation (e.g. ``"raw pixels"``).
      sizes: ``(S,)`` increasing training-set sizes n.
      loss: ``(R, S)`` held-out mean log-loss, nats, one row per seed.
      accuracy: ``(R, S)`` held-out top-1 accuracy (NaN where not measured).
      seeds: the ``R`` seeds.
      num_classes: C (the uniform code costs ``log C`` nats), or None if unknown.
      meta: how the curve was made (algorithm, steps, test size, ...).
    """

    representation: str
    sizes: np.ndarray
    loss: np.ndarray
    accuracy: np.ndarray
    seeds: tuple
    num_classes: int | None = None
    meta: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        n = as_array(self.sizes, "sizes", ndim=1)
        loss = check_finite(as_array(self.loss, "loss", ndim=(1, 2)).astype(np.float64), "loss")
        loss = loss[None, :] if loss.ndim == 1 else loss
        acc = (
            np.full_like(loss, np.nan)
            if self.accuracy is None
            else as_array(self.accuracy, "accuracy", ndim=(1, 2))
            .astype(np.float64)
            .reshape(loss.shape)
        )
        if loss.shape[1] != n.shape[0]:
            raise ValueError(f"loss: has {loss.shape[1]} columns for {n.shape[0]} sizes")
        object.__setattr__(self, "sizes", _check_sizes(n))
        object.__setattr__(self, "loss", loss)
        object.__setattr__(self, "accuracy", acc)
        seeds = tuple(range(loss.shape[0])) if self.seeds is None else tuple(self.seeds)
        if len(seeds) != loss.shape[0]:
            raise ValueError(f"seeds: {len(seeds)} seeds for {loss.shape[0]} loss rows")
        object.__setattr__(self, "seeds", seeds)
        object.__setattr__(self, "meta", dict(self.meta))

    @classmethod
    def from_arrays(
        cls,
        n: Any,
        loss: Any,
        *,
        representation: str = "curve",
        num_classes: int | None = None,
        accuracy: Any = None,
    ) -> LossDataCurve:
        """A curve from plain arrays: ``n`` (S,), ``loss`` (S,) or (R, S) in nats."""
        return cls(representation, n, loss, accuracy, None, num_classes)

    @property
    def n(self) -> np.ndarray:
        return self.sizes

    @property
    def mean_loss(self) -> np.ndarray:
        """(S,) mean over seeds, nats."""
        return self.loss.mean(axis=0)

    @property
    def std_loss(self) -> np.ndarray:
        """(S,) standard deviation over seeds (ddof 1; 0 for one seed), nats."""
        r = self.loss.shape[0]
        return self.loss.std(axis=0, ddof=1) if r > 1 else np.zeros(self.loss.shape[1])

    def frame(self):
        """Tidy table: representation, seed, n, loss [nats], accuracy — one row per probe."""
        import pandas as pd

        r, s = self.loss.shape
        return pd.DataFrame(
            {
                "representation": self.representation,
                "seed": np.repeat(np.asarray(self.seeds), s),
                "n": np.tile(self.sizes, r),
                "loss [nats]": self.loss.ravel(),
                "accuracy": self.accuracy.ravel(),
            }
        )

    def summary(self):
        """Per n: mean and standard deviation over seeds of loss (nats) and accuracy."""
        import pandas as pd

        r = self.loss.shape[0]
        sd = (lambda a: a.std(axis=0, ddof=1)) if r > 1 else (lambda a: np.zeros(a.shape[1]))
        return pd.DataFrame(
            {
                "representation": self.representation,
                "n": self.sizes,
                "loss mean [nats]": self.mean_loss,
                "loss std [nats]": sd(self.loss),
                "accuracy mean": self.accuracy.mean(axis=0),
                "accuracy std": sd(self.accuracy),
                "seeds": r,
            }
        )

    def merge(self, other: LossDataCurve) -> LossDataCurve:
        """The union of two curves of the same seeds (sizes of ``other`` win on overlap)."""
        if not isinstance(other, LossDataCurve) or other.seeds != self.seeds:
            raise ValueError("other: must be a LossDataCurve with the same seeds")
        keep = ~np.isin(self.sizes, other.sizes)
        sizes = np.concatenate([self.sizes[keep], other.sizes])
        order = np.argsort(sizes)
        cat = lambda a, b: np.concatenate([a[:, keep], b], axis=1)[:, order]
        return dataclasses.replace(
            self,
            sizes=sizes[order],
            loss=cat(self.loss, other.loss),
            accuracy=cat(self.accuracy, other.accuracy),
        )

    def __repr__(self) -> str:
        return (
            f"LossDataCurve({self.representation!r}, sizes {self.sizes[0]}..{self.sizes[-1]} "
            f"({len(self.sizes)}), seeds={len(self.seeds)}, final loss "
            f"{self.mean_loss[-1]:.4f} ± {self.std_loss[-1]:.4f} nats)"
        )


def _check_sizes(n: np.ndarray, name: str = "sizes") -> np.ndarray:
    if n.size == 0:
        raise ValueError(f"{name}: is empty")
    if n.dtype.kind == "b":
        raise ValueError(f"{name}: example counts must be integers, got dtype {n.dtype}")
    n = check_integer_values(n, name, "example counts")
    if n[0] < 1:
        raise ValueError(f"{name}: must be >= 1, got {n[0]}")
    if np.any(np.diff(n) <= 0):
        raise ValueError(f"{name}: must be strictly increasing")
    return n


def _as_seeds(seeds: Any) -> tuple[int, ...]:
    if isinstance(seeds, (int, np.integer)) and not isinstance(seeds, bool):
        if seeds < 1:
            raise ValueError(f"seeds: must be >= 1 (a count) or a list of seeds, got {seeds}")
        return tuple(range(int(seeds)))
    try:
        out = tuple(int(s) for s in seeds)
    except TypeError:
        raise ValueError(f"seeds: must be a count or a list of integers, got {seeds!r}") from None
    if not out or len(set(out)) != len(out):
        raise ValueError(f"seeds: must be non-empty and distinct, got {seeds!r}")
    return out
