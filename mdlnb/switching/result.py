"""The result of a switching codelength computation."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from mdlnb.core._units import Codelength
from mdlnb.switching._posterior import posterior_frame


@dataclass(frozen=True)
class SwitchResult(Codelength):
    """Codelength of Eq. 1 for one strategy over an (N, K) loss matrix.

    total_nats:    the codelength −log p(y_{1:N}) in nats (float64 sum).
    per_step_nats: (N,) float64, the mixture's next-step loss
                   −log Σ_k p(ξ_t = k | D_<t) p_k(y_t) in nats; sums to total.
                   (``per_step`` is a deprecated alias.)
    log_posterior: (N, K) float32, log p(ξ_t | D_<t) (before seeing y_t), or
                   None when not requested.
    strategy:      the strategy object used.
    """

    total_nats: float
    per_step_nats: np.ndarray
    log_posterior: np.ndarray | None
    strategy: Any

    @property
    def per_step(self) -> np.ndarray:
        """Deprecated alias of :attr:`per_step_nats`."""
        warnings.warn(
            "SwitchResult.per_step is deprecated: use per_step_nats (the unit in the name)",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.per_step_nats

    @property
    def num_steps(self) -> int:
        return int(self.per_step_nats.shape[0])

    @property
    def n(self) -> int:
        """Examples coded (``num_steps``)."""
        return self.num_steps

    @property
    def cumulative_nats(self) -> np.ndarray:
        """(N,) codelength of the first t examples, nats."""
        return np.cumsum(self.per_step_nats)

    @property
    def posterior(self) -> np.ndarray:
        """(N, K) p(ξ_t | D_<t) as probabilities."""
        if self.log_posterior is None:
            raise ValueError("posterior: not computed (call codelength(..., posterior=True))")
        return np.exp(self.log_posterior.astype(np.float64))

    def to_frame(
        self,
        names: Sequence[str] | None = None,
        every: int = 1,
        readouts: Sequence[str] | None = None,
    ) -> pd.DataFrame:
        """Tidy posterior in the package's one format (:func:`mdlnb.api.evaluation.posterior_frame`,
        as ``Report.posterior`` and the CLI's ``--posterior``): one row per (t, expert),
        columns ``t`` (examples seen before the prediction, 0 … N−1; 0 is the prior),
        ``expert`` (name, or column index as text), ``readout`` (missing when not given)
        and ``probability``; every ``every``-th t from 0."""
        post = self.posterior
        n, k = post.shape
        names = [str(i) for i in range(k)] if names is None else list(names)
        if len(names) != k:
            raise ValueError(f"names: has {len(names)} entries but there are K = {k} experts")
        if isinstance(every, bool) or int(every) < 1:
            raise ValueError(f"every: must be >= 1, got {every}")
        rows = np.arange(0, n, int(every))
        frame = posterior_frame(post[rows], names, readouts)
        frame["t"] = np.repeat(rows, k)
        return frame

    def summary(self) -> pd.DataFrame:
        """One-row DataFrame, units in the column names (as ``Report.summary()``):
        ``strategy``, ``N``, ``total [nats]``, ``total [bits]``, ``per example [nats]``,
        ``per example [bits]``."""
        return pd.DataFrame(
            [
                {
                    "strategy": repr(self.strategy),
                    "N": self.num_steps,
                    "total [nats]": self.total_nats,
                    "total [bits]": self.total_bits,
                    "per example [nats]": self.nats_per_example,
                    "per example [bits]": self.bits_per_example,
                }
            ]
        )
