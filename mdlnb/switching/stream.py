"""Streaming codelength: losses arrive a chunk at a time, O(K) state."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from mdlnb.infra import _xla_cache
from mdlnb.switching import forward
from mdlnb.switching._losses import check_losses, raise_for_flags
from mdlnb.switching._transport import bucket
from mdlnb.switching.strategies import FixedShare, get_strategy


class Stream:
    """Online codelength (paper Alg. 1): feed loss rows as they arrive.

    ``update(chunk)`` takes an (B, K) or (K,) array, returns the per-step
    mixture losses (nats, float64) and folds them into ``total_nats`` (a
    float64 sum). Memory beyond the chunk: the (R, K) state. Chunks are padded
    to a power of two ≥ 1024 rows so that varying chunk sizes compile a
    few times, not once per size (for row-at-a-time use inside JAX, use
    ``step``). Input is validated (ValueError names the
    global step); a chunk (of at most ``max_chunk_rows`` rows) that raises is
    not consumed, so the stream stays usable.
    """

    def __init__(self, strategy, num_experts: int, *, max_chunk_rows: int = 1 << 16):
        _xla_cache.ensure()  # compiled programs are cached on disk
        self.strategy = get_strategy(strategy)
        self.num_experts = int(num_experts)
        self.state = forward.init_state(self.strategy, self.num_experts)
        self._linear = forward.uses_linear_kernel(self.strategy, self.num_experts)
        self._skeleton = self.strategy.skeleton()
        self._params = self.strategy.params(self.num_experts)
        self._max = int(max_chunk_rows)
        self._total = 0.0
        self._comp = 0.0

    @property
    def num_steps(self) -> int:
        return int(self.state.t)

    @property
    def total_nats(self) -> float:
        return self._total + self._comp

    @property
    def total_bits(self) -> float:
        return self.total_nats / math.log(2.0)

    @property
    def log_posterior(self) -> np.ndarray:
        """(K,) log p(ξ_{t+1} | D_≤t), the belief for the next example."""
        return np.asarray(self.state.log_posterior)

    def update(self, chunk) -> np.ndarray:
        L = np.asarray(chunk)
        if L.ndim == 1:
            L = L[None, :]
        L = check_losses(L, "chunk")  # type: ignore[assignment]  # NumPy in, NumPy out
        if L.shape[1] != self.num_experts:
            raise ValueError(f"chunk: has {L.shape[1]} experts, the stream has {self.num_experts}")
        out = []
        for start in range(0, L.shape[0], self._max):
            with np.errstate(over="ignore"):  # a loss beyond float32 is +inf (probability 0)
                block = np.asarray(L[start : start + self._max], np.float32)
            m = block.shape[0]
            size = bucket(m, self._max)
            if size != m:
                block = np.concatenate([block, np.zeros((size - m, self.num_experts), np.float32)])
            offset = self.num_steps
            state, ps, _, flags = forward.run_chunk(
                self._skeleton,
                self._params,
                self.state,
                block,
                m,
                posterior=False,
                linear=self._linear,
            )
            ps = np.asarray(ps[:m], np.float64)
            raise_for_flags(np.asarray(flags[:m]), ps, offset, "chunk")
            self.state = state
            # Neumaier-compensated float64 running total.
            s = float(np.sum(ps))
            t = self._total + s
            if abs(self._total) >= abs(s):
                self._comp += (self._total - t) + s
            else:
                self._comp += (s - t) + self._total
            self._total = t
            out.append(ps)
        return np.concatenate(out)


def streaming(strategy, num_experts: int, **kwargs) -> Stream:
    """A :class:`Stream` for ``strategy`` over ``num_experts`` experts."""
    return Stream(strategy, num_experts, **kwargs)


def codelength_chunked(
    chunks: Iterable, strategy=None, *, num_experts: int | None = None
) -> Stream:
    """Consume an iterable of (B, K) loss chunks; returns the finished Stream
    (``.total_nats``, ``.num_steps``, ``.log_posterior``). ``strategy=None``:
    ``FixedShare()`` (m = ``DEFAULT_M`` = 2, the default protocol's)."""
    strategy = FixedShare() if strategy is None else get_strategy(strategy)
    stream = None
    for chunk in chunks:
        c = np.asarray(chunk)
        if stream is None:
            stream = Stream(strategy, num_experts or c.shape[-1])
        stream.update(c)
    if stream is None:
        raise ValueError("chunks: is empty")
    return stream
