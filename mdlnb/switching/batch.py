"""Codelength of a whole loss matrix (paper Eq. 1, Alg. 2 stage 2)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from mdlnb import _aligned, _xla_cache
from mdlnb._checks import as_array
from mdlnb.switching import _rowsplit, forward
from mdlnb.switching.result import SwitchResult
from mdlnb.switching.strategies import FixedShare, get_strategy

DEFAULT_CHUNK_ROWS = 1 << 16


def check_losses(losses, name: str = "losses") -> np.ndarray | jax.Array:
    """(N, K) real array with N, K ≥ 1 (a JAX array stays one); values are
    checked inside the pass."""
    if isinstance(losses, jax.Array):
        L: np.ndarray | jax.Array = losses
        if L.ndim != 2:
            raise ValueError(f"{name}: expected a 2-D array, got shape {L.shape}")
    else:
        L = as_array(losses, name, ndim=2)
    if L.dtype.kind not in "fiu":
        raise ValueError(f"{name}: expected real numbers, got dtype {L.dtype}")
    if L.shape[0] == 0 or L.shape[1] == 0:
        raise ValueError(f"{name}: needs N >= 1 rows and K >= 1 experts, got shape {L.shape}")
    return L


def raise_for_flags(
    flags: np.ndarray, per_step: np.ndarray, offset: int, name: str = "losses"
) -> None:
    """ValueError naming the first bad step (1-indexed t = row + 1)."""
    bad = np.flatnonzero(flags)
    if bad.size:
        i = int(bad[0])
        f, t = int(flags[i]), offset + i + 1
        if f & forward.FLAG_NEGATIVE:
            raise ValueError(
                f"{name}: negative loss at step t={t} (row {t - 1}); log-losses are >= 0"
            )
        raise ValueError(f"{name}: every expert has an infinite loss at step t={t} (row {t - 1})")
    inf = np.flatnonzero(~np.isfinite(per_step))
    if inf.size:
        t = offset + int(inf[0]) + 1
        raise ValueError(
            f"{name}: the mixture gives zero probability at step t={t} (row {t - 1}): every expert "
            "with positive weight has an infinite loss there"
        )


_PARALLEL_COPY_BYTES = 1 << 26  # a NumPy input this large is copied in row parts, in threads


def _to_device(L: np.ndarray) -> jax.Array:
    """L as a float32 XLA array, with one host copy at most.

    ``jax.device_put`` of a C-contiguous float32 array whose data is 64-byte
    aligned (:mod:`mdlnb._aligned`; a ``LossMatrix``'s losses are): on a CPU
    backend XLA aliases it (no copy), on an accelerator it is the one
    host-to-device transfer. Any other array is first copied once, as
    float32, into such a buffer (NumPy's own allocations are 16-byte
    aligned), in row parts in threads when it is large; ``jnp.asarray``
    would copy through a slower path (2-4x a memcpy here). A loss beyond
    float32 becomes +inf (probability 0).
    """
    if not _aligned.is_aligned(L):
        A = _aligned.empty(L.shape)
        # row parts copied in threads (NumPy releases the GIL): the copy and the
        # page faults of the new buffer both halve on two cores
        parts = _rowsplit.MAX_PARTS if A.nbytes >= _PARALLEL_COPY_BYTES else 1
        cuts = [len(A) * j // parts for j in range(parts + 1)]

        def copy(j):
            with np.errstate(over="ignore"):
                np.copyto(A[cuts[j] : cuts[j + 1]], L[cuts[j] : cuts[j + 1]], casting="unsafe")

        if parts == 1:  # small: no thread hop
            copy(0)
        else:
            list(_rowsplit._pool().map(copy, range(parts)))
        L = A
    return jax.device_put(L)


def _flat_view(L: np.ndarray):
    """``(flat, head, offset)`` for ``forward.run_flat``, or None where L is
    aligned already or cannot be read so (not a C-contiguous float32 array).

    ``flat``: L's entries from the first 64-byte-aligned one (``offset``
    entries in, 0 < offset < 16) as an XLA array sharing L's memory;
    ``head``: a copy of L's first ``forward.head_rows(N, K)`` rows, the only
    entries copied.
    """
    if (
        not isinstance(L, np.ndarray)
        or L.dtype != np.float32
        or not L.flags.c_contiguous
        or _aligned.is_aligned(L)
        or L.ctypes.data % 4
    ):
        return None
    offset = (-L.ctypes.data % _aligned.ALIGN) // 4
    if offset >= L.size:
        return None
    head = jax.device_put(np.ascontiguousarray(L[: forward.head_rows(*L.shape)]))
    return jax.device_put(L.reshape(-1)[offset:]), head, offset


def _result(strategy, n: int, ps, lp, flags) -> SwitchResult:
    """SwitchResult of a whole pass's outputs (their first n rows), checked."""
    ps = np.asarray(ps, np.float64)[:n]
    raise_for_flags(np.asarray(flags)[:n], ps, 0)
    return SwitchResult(float(np.sum(ps)), ps, None if lp is None else np.asarray(lp)[:n], strategy)


def _bucket(n: int, chunk_rows: int, smallest: int = 1024) -> int:
    """Padded chunk length: a power of two ≥ ``smallest`` (few compilations)."""
    return min(chunk_rows, max(smallest, 1 << (n - 1).bit_length()))


def codelength(
    losses, strategy=None, *, posterior: bool = True, chunk_rows: int = DEFAULT_CHUNK_ROWS
) -> SwitchResult:
    """Switching codelength of a loss matrix, in nats (Eq. 1).

    losses:   (N, K) NumPy or JAX array, L[t, k] = −log p_k(y_t | x_t; θ_k(D_<t))
              in nats, ≥ 0; +inf or NaN marks a diverged expert (probability 0
              of the label, so filtered weight 0; see :func:`diverged`).
              Computed in float32, totals accumulated in float64. A
              ValueError names the step where a loss is negative or every
              expert with positive weight has an infinite loss.
    strategy: a strategy object, a name accepted by ``get_strategy``, or None
              (``FixedShare()``: decreasing rate α_t = 1/t,
              m = ``DEFAULT_M`` = 2, the default protocol's).
    posterior: also return log p(ξ_t | D_<t), (N, K) float32.

    Exact forward pass of the strategy's HMM. A JAX array is read in place (one
    pass). A NumPy array is streamed over chunks of ``chunk_rows`` rows, each
    transferred once (memory beyond the input: O(chunk_rows · K)); with
    ``posterior`` on a CPU backend it is read whole instead, so that the
    (N, K) posterior needs no copy: in place for fixed share's linear
    kernel (the default; a C-contiguous float32 array, read from its first
    64-byte-aligned entry, only the first block of rows copied), else
    transferred once (one more (N, K) float32 copy unless the array is
    aligned). The returned ``log_posterior`` may be a read-only view.
    """
    _xla_cache.ensure()  # compiled programs are cached on disk
    strategy = FixedShare() if strategy is None else get_strategy(strategy)
    L = check_losses(losses)
    n, k = L.shape
    if int(chunk_rows) < 16:
        raise ValueError(f"chunk_rows: must be >= 16, got {chunk_rows}")
    linear = forward.uses_linear_kernel(strategy, k, n)
    params, state = forward.start(strategy, k)
    if isinstance(L, jax.Array):
        # Already in XLA memory: one pass in place, no host round trip or chunk copies
        # (a short input is padded on the device to a bucketed size: few compilations).
        if L.dtype != jnp.float32:
            L = L.astype(jnp.float32)
        size = _bucket(n, int(chunk_rows))
        if _rowsplit.applies(strategy, n):  # Bayes on a CPU: row parts in threads
            state, ps, lp, flags = _rowsplit.run_all(params, state, L, posterior=posterior)
        elif n > chunk_rows or size == n:
            state, ps, lp, flags = forward.run_all(
                strategy.skeleton(), params, state, L, posterior=posterior, linear=linear
            )
        else:
            state, ps, lp, flags = forward.run_chunk(
                strategy.skeleton(),
                params,
                state,
                jnp.pad(L, ((0, size - n), (0, 0))),
                n,
                posterior=posterior,
                linear=linear,
            )
        return _result(strategy, n, ps, lp, flags)
    if posterior and n > chunk_rows and jax.default_backend() == "cpu":
        # The (N, K) posterior is written anyway, and on a CPU backend the one pass
        # over the whole matrix hands it back without a copy: L is read whole, in
        # place from its first aligned entry (fixed share's linear kernel) or
        # transferred once.
        flat = _flat_view(L) if forward.reads_flat(strategy, linear) else None
        if flat is None:
            return codelength(_to_device(L), strategy, posterior=True, chunk_rows=chunk_rows)
        F, head, offset = flat
        state, ps, lp, flags = forward.run_flat(
            strategy.skeleton(), params, state, F, head, offset=offset, posterior=True
        )
        return _result(strategy, n, ps, lp, flags)
    # A NumPy input: each chunk is a view of L, transferred once (no padding copy:
    # the last chunk of a longer input re-reads rows of the one before and skips
    # them); each chunk's posterior is copied once, straight into the output.
    per_step = np.empty(n, np.float64)
    log_post = None
    C = int(chunk_rows)
    skeleton = strategy.skeleton()
    cpu = jax.default_backend() == "cpu"
    for start in range(0, n, C):
        m = min(C, n - start)
        skip = 0
        if m < C and n > C:
            skip, m = C - m, C
        with np.errstate(over="ignore"):  # a loss beyond float32 is +inf (probability 0)
            block = L[start - skip : start - skip + m]
            size = _bucket(m, C)
            if size != m:  # the whole input is one short chunk: pad it to a bucketed size
                block = np.concatenate(
                    [np.asarray(block, np.float32), np.zeros((size - m, k), np.float32)]
                )
            # on a CPU backend the aligned copy of _to_device (none for an aligned float32
            # view) instead of the slower copy XLA makes of any other NumPy argument
            block = _to_device(block) if cpu else np.asarray(block, np.float32)  # type: ignore[assignment]
        state, ps, lp, flags = forward.run_chunk(
            skeleton, params, state, block, m, skip, posterior=posterior, linear=linear
        )
        ps = np.asarray(ps, np.float64)[skip:m]
        raise_for_flags(np.asarray(flags)[skip:m], ps, start)
        per_step[start : start + m - skip] = ps
        if posterior:
            lp = np.asarray(lp)  # no copy on a CPU backend (read-only view)
            if n <= C:
                log_post = lp[:m]
            else:
                if log_post is None:
                    log_post = np.empty((n, k), np.float32)
                log_post[start : start + m - skip] = lp[skip:m]
    return SwitchResult(float(np.sum(per_step)), per_step, log_post, strategy)
