"""64-byte-aligned float32 buffers, which XLA's CPU client reads in place.

``jax.device_put`` of a C-contiguous float32 NumPy array whose data is
64-byte aligned aliases it on a CPU backend; any other array is copied (once,
by :func:`mdlnb.switching._transport.to_device`). NumPy's own allocations are
only 16-byte aligned, so stage 1 allocates its loss matrices here and
:func:`mdlnb.infra._io.read_npz` reads float32 arrays into such buffers: stage 2 on
a :class:`~mdlnb.prequential.LossMatrix` then copies nothing (on the paper's
largest grid that copy is 12 GB beside the matrix and its posterior).
"""

from __future__ import annotations

import numpy as np

ALIGN = 64  # bytes
_CHUNK = 1 << 24  # bytes per read when filling a buffer from a stream


def empty(shape) -> np.ndarray:
    """An uninitialized C-contiguous float32 array whose data is ``ALIGN``-byte aligned."""
    shape = (int(shape),) if np.isscalar(shape) else tuple(int(s) for s in shape)
    nbytes = int(np.prod(shape, dtype=np.int64)) * 4
    buf = np.empty(nbytes + ALIGN, np.uint8)
    off = (-buf.ctypes.data) % ALIGN
    return buf[off : off + nbytes].view(np.float32).reshape(shape)


def is_aligned(a: np.ndarray) -> bool:
    """Whether XLA's CPU client can alias ``a`` (float32, C-contiguous, aligned;
    an empty array has nothing to align)."""
    return (
        a.dtype == np.float32
        and a.flags.c_contiguous
        and (a.size == 0 or a.ctypes.data % ALIGN == 0)
    )


def read_npy(f) -> np.ndarray | None:
    """The array of a ``.npy`` stream ``f`` in an :func:`empty` buffer, when it
    is a C-order little-endian float32 array of format 1.0/2.0; else ``None``
    (read it with :func:`numpy.lib.format.read_array` instead). Read in chunks:
    no second copy of the array is ever held."""
    fmt = np.lib.format
    version = fmt.read_magic(f)
    if version not in ((1, 0), (2, 0)):
        return None
    header = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
    shape, fortran, dtype = header(f)
    if fortran or dtype != np.dtype("<f4"):
        return None
    out = empty(shape)
    view = out.reshape(-1).view(np.uint8)
    done = 0
    while done < view.size:
        chunk = f.read(min(_CHUNK, view.size - done))
        if not chunk:
            raise ValueError(f"truncated array data: {done} of {view.size} bytes")
        view[done : done + len(chunk)] = np.frombuffer(chunk, np.uint8)
        done += len(chunk)
    return out
