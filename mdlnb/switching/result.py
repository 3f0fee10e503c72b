"""The result of a switching codelength computation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np
import pandas as pd

from mdlnb._units import Codelength



@dataclass(frozen=True)
class SwitchResult(Codelength):
    """Codelength of Eq. 1 for one strategy over an (N, K) loss matrix.

    total_nats:    the codelength −log p(y_{1:N}) in nats (float64 sum).
    per_step:      (N,) float64, the mixture's next-step loss
                   −log Σ_k p(ξ_t = k | D_<t) p_k(y_t) in nats; sums to total.
    log_posterior: (N, K) float32, log p(ξ_t | D_<t) (before seeing y_t), or
                   None when not requested.
    strategy:      the strategy object used.
    """

    total_nats: float
    per_step: np.ndarray
    log_posterior: Optional[np.ndarray]
    strategy: Any

    @property
    def num_steps(self) -> int:
        return int(self.per_step.shape[0])

    @property
    def n(self) -> int:
        """Examples coded (``num_steps``)."""
        return self.num_steps

    @property
    def cumulative_nats(self) -> np.ndarray:
        """(N,) codelength of the first t examples, nats."""
        return np.cumsum(self.per_step)

    @property
    def posterior(self) -> np.ndarray:
        """(N, K) p(ξ_t | D_<t) as probabilities."""
        if self.log_posterior is None:
            raise ValueError("posterior: not computed (call codelength(..., posterior=True))")
        return np.exp(self.log_posterior.astype(np.float64))

    def to_frame(self, names: Optional[Sequence[str]] = None, every: int = 1) -> pd.DataFrame:
        """Tidy posterior: one row per (t, expert) with columns t (1-indexed
        example), expert (name or index) and probability; every ``every``-th t."""
        post = self.posterior
        n, k = post.shape
        if names is None:
            names = [str(i) for i in range(k)]
        names = list(names)
        if len(names) != k:
            raise ValueError(f"names: has {len(names)} entries but there are K = {k} experts")
        if int(every) < 1:
            raise ValueError(f"every: must be >= 1, got {every}")
        rows = np.arange(0, n, int(every))
        return pd.DataFrame({
            "t": np.repeat(rows + 1, k),
            "expert": pd.Categorical(np.tile(np.asarray(names, dtype=object), len(rows)),
                                     categories=list(dict.fromkeys(names))),
            "probability": post[rows].reshape(-1),
        })

    def summary(self) -> dict:
        """Plain-number summary (nats and bits, total and per example)."""
        return {
            "strategy": repr(self.strategy),
            "num_steps": self.num_steps,
            "total_nats": self.total_nats,
            "total_bits": self.total_bits,
            "nats_per_example": self.nats_per_example,
            "bits_per_example": self.bits_per_example,
        }
