"""One checkpoint format for long runs (stage 1, encoder pre-training).

A checkpoint is an ``.npz`` written atomically (``mdlnb.infra._io.atomic_savez``, no
pickles) holding a parameter pytree as numbered leaves ``leaf0000 …``, a JSON
``meta`` dict, the ``key`` of the run it belongs to, and any extra named
arrays. :func:`load` restores the pytree in the structure of a template and
returns ``None`` when the file belongs to another run or does not fit the
template (other key, leaf count, shapes or dtypes, unreadable file), so a
caller can start afresh instead of resuming from the wrong state.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from mdlnb.infra._io import atomic_savez, load_entry

# Imported inside the functions that use them, so that importing this module does not load
# them: JAX.

_RESERVED = ("meta", "key")


class Checkpoint(NamedTuple):
    """What :func:`load` returns: the pytree, the extra arrays and the meta dict."""

    tree: Any
    arrays: dict[str, np.ndarray]
    meta: dict[str, Any]


def save(
    path: str | Path, tree: Any, *, key: str = "", meta: dict | None = None, **arrays: Any
) -> Path:
    """Write ``tree``'s leaves, ``meta`` (JSON) and ``arrays`` to ``path`` atomically."""
    import jax

    bad = [k for k in arrays if k in _RESERVED or k.startswith("leaf")]
    if bad:
        raise ValueError(f"arrays: reserved names {bad}")
    leaves = jax.tree_util.tree_leaves(tree)
    return atomic_savez(
        path,
        key=np.array(str(key)),
        meta=np.array(json.dumps(meta or {}, default=str)),
        **{f"leaf{i:04d}": np.asarray(v) for i, v in enumerate(leaves)},
        **{k: np.asarray(v) for k, v in arrays.items()},
    )


def _dtype(leaf) -> np.dtype:
    """The dtype of an array, a ``jax.ShapeDtypeStruct`` or a Python scalar."""
    return np.dtype(leaf.dtype) if hasattr(leaf, "dtype") else np.asarray(leaf).dtype


def load(path: str | Path, like: Any, *, key: str | None = "") -> Checkpoint | None:
    """The checkpoint at ``path`` in the structure of ``like`` (leaves as JAX arrays),
    or ``None`` if it is missing, unreadable, of another ``key`` or does not fit ``like``.
    ``key=None`` skips the key check (files whose name already holds their key).

    ``like`` may hold arrays or only their shapes and dtypes
    (``jax.ShapeDtypeStruct``), so a caller can drop its own state before
    reading. The leaves are read once and handed to JAX one at a time, each
    NumPy copy released as soon as it is converted: peak memory is about one
    state plus one leaf (a ``vtab`` checkpoint is ~10 GB; copying every leaf
    twice got a resuming run OOM-killed at 24 GB).
    """
    import jax
    import jax.numpy as jnp

    leaves_t, treedef = jax.tree_util.tree_flatten(like)
    z = load_entry(path)  # None: absent, or damaged (warned; the caller recomputes)
    if z is None:
        return None
    try:
        if key is not None and str(z["key"]) != str(key):
            return None
        names = [f"leaf{i:04d}" for i in range(len(leaves_t))]
        if sorted(f for f in z if f.startswith("leaf")) != names:
            return None
        meta = json.loads(str(z["meta"]))
        arrays = {f: v for f, v in z.items() if f not in _RESERVED and not f.startswith("leaf")}
    except (KeyError, ValueError):
        return None
    if any(
        z[f].shape != tuple(np.shape(b)) or z[f].dtype != _dtype(b) for f, b in zip(names, leaves_t)
    ):
        return None
    leaves = [jnp.asarray(z.pop(f)) for f in names]  # each NumPy copy freed once converted
    return Checkpoint(jax.tree_util.tree_unflatten(treedef, leaves), arrays, meta)
