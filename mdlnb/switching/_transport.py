"""How the rows of a loss matrix reach the device for one forward pass.

:func:`mdlnb.switching.batch.codelength` checks its arguments and hands the
matrix here; the recursion itself is :mod:`.forward`'s (and
:mod:`._rowsplit`'s). :func:`forward_pass` picks one of three routes:

* **a JAX array** (:func:`_on_device`): read in place, one pass, no host
  round trip; a short input is padded on the device to a bucketed size
  (:func:`bucket`: few compilations); the Bayesian mixture on a CPU runs in
  row parts, in threads (:mod:`._rowsplit`).
* **a NumPy array, whole** (:func:`_whole`): with the posterior, more than
  ``chunk_rows`` rows and a CPU backend. The (N, K) posterior is written
  anyway, and one pass over the whole matrix hands it back without a copy:
  fixed share's linear kernel reads a C-contiguous float32 array in place
  from its first 64-byte-aligned entry (:func:`flat_view`, only the first
  block of rows copied); any other input is transferred once
  (:func:`to_device`: one more (N, K) float32 copy unless it is aligned) and
  read as a JAX array.
* **a NumPy array, in chunks** (:func:`_chunks`): every other case. Each
  chunk of ``chunk_rows`` rows is a view of L transferred once (memory
  beyond the input: O(chunk_rows · K)); the last chunk of a longer input
  re-reads rows of the one before and skips them (:func:`_windows`: no
  padding copy); an input of one short chunk is padded to a bucketed size.
  Each chunk's posterior is copied once, straight into the output.

A loss beyond float32 becomes +inf (probability 0) on every route. Each
route returns ``(per_step, log_posterior)``: (N,) float64 per-step losses and
the (N, K) float32 ``log p(ξ_t | D_<t)`` (None without ``posterior``; it may
be a read-only view), having raised a ValueError for the first flagged step
(:func:`~mdlnb.switching._losses.raise_for_flags`).
"""

from __future__ import annotations

from collections.abc import Iterator

import jax
import jax.numpy as jnp
import numpy as np

from mdlnb.infra import _aligned
from mdlnb.switching import _rowsplit, forward
from mdlnb.switching._losses import raise_for_flags

_PARALLEL_COPY_BYTES = 1 << 26  # a NumPy input this large is copied in row parts, in threads


def bucket(n: int, chunk_rows: int, smallest: int = 1024) -> int:
    """Padded chunk length: a power of two ≥ ``smallest`` (few compilations)."""
    return min(chunk_rows, max(smallest, 1 << (n - 1).bit_length()))


def to_device(L: np.ndarray) -> jax.Array:
    """L as a float32 XLA array, with one host copy at most.

    ``jax.device_put`` of a C-contiguous float32 array whose data is 64-byte
    aligned (:mod:`mdlnb.infra._aligned`; a ``LossMatrix``'s losses are): on a CPU
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


def flat_view(L: np.ndarray):
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


def forward_pass(strategy, L, *, posterior: bool, chunk_rows: int):
    """``(per_step, log_posterior)`` of the strategy's forward pass over L
    (N, K), a checked NumPy or JAX array, by the route that suits it (see
    the module docstring); ``chunk_rows`` ≥ 16."""
    if isinstance(L, jax.Array):
        return _on_device(strategy, L, posterior, chunk_rows)
    if posterior and L.shape[0] > chunk_rows and jax.default_backend() == "cpu":
        return _whole(strategy, L, chunk_rows)
    return _chunks(strategy, L, posterior, chunk_rows)


def _checked(n: int, ps, lp, flags):
    """A whole pass's outputs (their first n rows) as host arrays, checked."""
    ps = np.asarray(ps, np.float64)[:n]
    raise_for_flags(np.asarray(flags)[:n], ps, 0)
    return ps, None if lp is None else np.asarray(lp)[:n]


def _on_device(strategy, L: jax.Array, posterior: bool, chunk_rows: int):
    """One pass over a device array in place (padded when short)."""
    if L.dtype != jnp.float32:
        L = L.astype(jnp.float32)
    n, k = L.shape
    linear = forward.uses_linear_kernel(strategy, k, n)
    params, state = forward.start(strategy, k)
    size = bucket(n, chunk_rows)
    if _rowsplit.applies(strategy, n):  # Bayes on a CPU: row parts in threads
        _, ps, lp, flags = _rowsplit.run_all(params, state, L, posterior=posterior)
    elif n > chunk_rows or size == n:
        _, ps, lp, flags = forward.run_all(
            strategy.skeleton(), params, state, L, posterior=posterior, linear=linear
        )
    else:
        padded = jnp.pad(L, ((0, size - n), (0, 0)))
        _, ps, lp, flags = forward.run_chunk(
            strategy.skeleton(), params, state, padded, n, posterior=posterior, linear=linear
        )
    return _checked(n, ps, lp, flags)


def _whole(strategy, L: np.ndarray, chunk_rows: int):
    """One pass over a whole NumPy array, with the posterior, on a CPU backend:
    in place from its first aligned entry where fixed share's linear kernel
    reads it so, else transferred once."""
    n, k = L.shape
    linear = forward.uses_linear_kernel(strategy, k, n)
    flat = flat_view(L) if forward.reads_flat(strategy, linear) else None
    if flat is None:
        return _on_device(strategy, to_device(L), True, chunk_rows)
    F, head, offset = flat
    params, state = forward.start(strategy, k)
    _, ps, lp, flags = forward.run_flat(
        strategy.skeleton(), params, state, F, head, offset=offset, posterior=True
    )
    return _checked(n, ps, lp, flags)


def _windows(n: int, C: int) -> Iterator[tuple[int, int, int]]:
    """``(start, skip, m)`` of each chunk of C rows: the chunk is rows
    ``start − skip … start − skip + m`` of L, its first ``skip`` rows re-read
    (the last chunk of a longer input reaches back to C rows rather than be
    padded); m < C only for an input of one short chunk."""
    for start in range(0, n, C):
        m = min(C, n - start)
        skip = 0
        if m < C and n > C:
            skip, m = C - m, C
        yield start, skip, m


def _block(L: np.ndarray, start: int, skip: int, m: int, C: int, cpu: bool):
    """The chunk of L at ``(start, skip, m)`` as the pass's float32 argument."""
    with np.errstate(over="ignore"):  # a loss beyond float32 is +inf (probability 0)
        block = L[start - skip : start - skip + m]
        size = bucket(m, C)
        if size != m:  # the whole input is one short chunk: pad it to a bucketed size
            block = np.concatenate(
                [np.asarray(block, np.float32), np.zeros((size - m, L.shape[1]), np.float32)]
            )
        # on a CPU backend the aligned copy of to_device (none for an aligned float32
        # view) instead of the slower copy XLA makes of any other NumPy argument
        return to_device(block) if cpu else np.asarray(block, np.float32)


def _chunks(strategy, L: np.ndarray, posterior: bool, C: int):
    """The pass over a NumPy array in chunks of C rows, each transferred once,
    the state carried from one to the next."""
    n, k = L.shape
    linear = forward.uses_linear_kernel(strategy, k, n)
    params, state = forward.start(strategy, k)
    skeleton = strategy.skeleton()
    cpu = jax.default_backend() == "cpu"
    per_step = np.empty(n, np.float64)
    log_post = None
    for start, skip, m in _windows(n, C):
        block = _block(L, start, skip, m, C, cpu)
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
    return per_step, log_post
