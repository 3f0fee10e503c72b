"""Input validation shared by every public function.

Each check raises ``ValueError`` naming the offending argument, so a user
sees *which* input is wrong, not a traceback from inside a jitted kernel.
"""

from __future__ import annotations

import math
from typing import Any, Literal, overload

import numpy as np


def as_array(
    x: Any, name: str, *, ndim: int | tuple[int, ...] | None = None, dtype: Any = None
) -> np.ndarray:
    """``np.asarray(x)`` with a rank check that names ``name``."""
    try:
        a = np.asarray(x, dtype=dtype)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{name}: cannot convert to an array ({e})") from None
    if (
        dtype is None
        and a.dtype.kind == "V"
        and a.dtype.names is None
        and a.dtype.type.__module__.split(".")[0] == "ml_dtypes"
    ):
        a = a.astype(np.float32)  # bfloat16, float8_*, int4 (JAX's ml_dtypes): widened exactly
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if a.ndim not in allowed:
            want = " or ".join(str(d) for d in allowed)
            raise ValueError(f"{name}: expected a {want}-D array, got shape {a.shape}")
    return a


@overload
def check_int(
    name: str,
    value: Any,
    *,
    minimum: int | None = ...,
    maximum: int | None = ...,
    allow_none: Literal[False] = ...,
    whole_floats: bool = ...,
    what: str | None = ...,
) -> int: ...


@overload
def check_int(
    name: str,
    value: Any,
    *,
    minimum: int | None = ...,
    maximum: int | None = ...,
    allow_none: bool = ...,
    whole_floats: bool = ...,
    what: str | None = ...,
) -> int | None: ...


def check_int(
    name: str,
    value: Any,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    allow_none: bool = False,
    whole_floats: bool = False,
    what: str | None = None,
) -> int | None:
    """``value`` as a Python int in ``[minimum, maximum]`` (either bound optional),
    or a ValueError ``"NAME: must be an integer >= K, got V"`` naming ``name``.

    The one integer-argument check: Python and NumPy integers pass, bools do not
    (``True`` is not a count), nor floats — unless ``whole_floats``, which takes
    finite whole floats such as ``3.0`` — nor strings. ``allow_none``: ``None``
    passes through (the message then says "... or None"). ``what`` replaces the
    description after "must be" where a caller's message says more (e.g.
    ``"an int >= 1 or 'auto'"``)."""
    if value is None and allow_none:
        return None
    types = (int, np.integer, float, np.floating) if whole_floats else (int, np.integer)
    ok = not isinstance(value, bool) and isinstance(value, types)
    if ok and isinstance(value, (float, np.floating)):
        ok = math.isfinite(value) and int(value) == value
    ok = ok and (minimum is None or value >= minimum) and (maximum is None or value <= maximum)
    if not ok:
        if what is None:
            bound = (
                f" in [{minimum}, {maximum}]"
                if minimum is not None and maximum is not None
                else f" >= {minimum}"
                if minimum is not None
                else f" <= {maximum}"
                if maximum is not None
                else ""
            )
            what = f"an integer{bound}" + (" or None" if allow_none else "")
        raise ValueError(f"{name}: must be {what}, got {value!r}")
    return int(value)


def check_finite(a: np.ndarray, name: str) -> np.ndarray:
    """Reject NaN and ±inf, naming the first bad index."""
    a = np.asarray(a)
    if a.dtype.kind in "fc" and not np.all(np.isfinite(a)):
        bad = np.argwhere(~np.isfinite(a))[0]
        raise ValueError(
            f"{name}: contains NaN or inf (first at index {tuple(int(i) for i in bad)})"
        )
    return a


def check_nonempty(a: np.ndarray, name: str) -> np.ndarray:
    if a.size == 0 or (a.ndim > 0 and a.shape[0] == 0):
        raise ValueError(f"{name}: is empty (shape {a.shape})")
    return a


def check_matrix(x: Any, name: str) -> np.ndarray:
    """A non-empty, finite, numeric (N, D) array with D >= 1 (dtype kept)."""
    a = as_array(x, name, ndim=2)
    if a.dtype.kind not in "fiub":
        raise ValueError(f"{name}: expected a numeric array, got dtype {a.dtype}")
    check_nonempty(a, name)
    if a.shape[1] == 0:
        raise ValueError(f"{name}: has no columns (shape {a.shape})")
    return check_finite(a, name)


def check_integer_values(a: np.ndarray, name: str, what: str = "values") -> np.ndarray:
    """``a`` (integer, boolean, or float holding whole numbers) as int64; a
    ValueError naming ``name`` says "<what> must be integers" otherwise."""
    if a.dtype.kind == "f":
        if not np.all(np.isfinite(a)) or not np.all(a == np.round(a)):
            raise ValueError(f"{name}: {what} must be integers, got non-integer values")
        if a.size and np.max(np.abs(a)) >= 2.0**62:  # beyond int64: the cast would wrap
            raise ValueError(
                f"{name}: {what} are too large for integers "
                f"(largest magnitude {np.max(np.abs(a)):.3g})"
            )
    elif a.dtype.kind not in "iub":
        raise ValueError(f"{name}: {what} must be integers, got dtype {a.dtype}")
    return a.astype(np.int64)


def check_labels(y: Any, num_classes: int | None, name: str = "y") -> np.ndarray:
    """Integer labels in ``[0, num_classes)``; returns an int32 array.

    Floats are accepted only when integer-valued (class indices in disguise);
    other floats are a ValueError pointing to the regression task kind
    (``Task(..., kind="regression")``). A 2-D one-hot (or probability) matrix is a ValueError that says
    so and how to pass class indices."""
    y = as_array(y, name)
    if y.ndim == 2 and y.shape[1] >= 2 and y.size and y.dtype.kind in "fiub":
        rows = y.astype(np.float64)
        onehot = bool(np.all((rows == 0) | (rows == 1)) and np.all(rows.sum(axis=1) == 1))
        what = "one-hot" if onehot else "a 2-D matrix"
        raise ValueError(
            f"{name}: labels are {what} of shape {y.shape}; mdlnb takes class "
            f"indices, shape (N,): pass {name}.argmax(axis=1)"
            + ("" if onehot else " if the columns are classes")
        )
    if y.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array of class indices, got shape {y.shape}")
    check_nonempty(y, name)
    if y.dtype.kind == "f" and np.all(np.isfinite(y)) and not np.all(y == np.round(y)):
        bad = y[y != np.round(y)][0]
        raise ValueError(
            f"{name}: labels must be integer class indices, got non-integer "
            f"values (e.g. {bad:g}); real-valued targets are the regression task "
            "kind: mdlnb.Task(name, x, y, kind='regression') or "
            "Task.from_arrays(x, y, kind='regression')"
        )
    big = f"{name}: labels must be class indices below 2**31 - 1, got "
    if y.dtype.kind == "u" and y.dtype.itemsize == 8 and y.max() > np.iinfo(np.int64).max:
        raise ValueError(f"{big}{int(y.max())}")
    y = check_integer_values(y, name, "labels")
    if y.min() < 0:
        raise ValueError(f"{name}: labels must be >= 0, got {int(y.min())}")
    if y.max() >= np.iinfo(np.int32).max:  # stored as int32: larger ones would wrap around
        raise ValueError(f"{big}{int(y.max())}")
    if num_classes is not None:
        if int(num_classes) < 1:
            raise ValueError(f"num_classes: must be >= 1, got {num_classes}")
        if y.max() >= num_classes:
            raise ValueError(f"{name}: labels must be in [0, {num_classes}), got {int(y.max())}")
    return y.astype(np.int32)


def check_targets(y: Any, name: str = "y") -> np.ndarray:
    """Real regression targets: a non-empty, finite, numeric ``(N,)`` or ``(N, P)``
    array with P >= 1; returns it as float64 (shape kept)."""
    y = as_array(y, name)
    if y.ndim not in (1, 2):
        raise ValueError(
            f"{name}: regression targets must have shape (N,) or (N, P), got {y.shape}"
        )
    if y.dtype.kind not in "fiub":
        raise ValueError(f"{name}: regression targets must be numeric, got dtype {y.dtype}")
    check_nonempty(y, name)
    if y.ndim == 2 and y.shape[1] == 0:
        raise ValueError(f"{name}: has no target columns (shape {y.shape})")
    y = y.astype(np.float64)
    return check_finite(y, name)


def check_same_length(a: np.ndarray, b: np.ndarray, name_a: str, name_b: str) -> None:
    if len(a) != len(b):
        raise ValueError(f"{name_a} and {name_b}: lengths differ ({len(a)} vs {len(b)})")


def check_positive(v: float, name: str, *, strict: bool = True) -> float:
    ok = v > 0 if strict else v >= 0
    if not np.isfinite(v) or not ok:
        raise ValueError(f"{name}: must be {'>' if strict else '>='} 0, got {v}")
    return v


def check_probability(p: float, name: str) -> float:
    if not (0.0 <= p <= 1.0):
        raise ValueError(f"{name}: must lie in [0, 1], got {p}")
    return p


IMAGE_TOL = 1e-3


def check_images(x: Any, name: str) -> tuple[np.ndarray, float]:
    """Images ``(N, H, W)`` or ``(N, H, W, C)`` with C ∈ {1, 3}, as a 4-D array, and
    the value of a white pixel: 255 for uint8, 1 for floats, which must lie in
    [0, 1] (up to ``IMAGE_TOL`` = 1e-3, the round-off of a resampled white pixel).
    The one image validator (encoder inputs, pre-training data, fine-tuned
    readouts)."""
    a = as_array(x, name, ndim=(3, 4))
    if a.ndim == 3:
        a = a[..., None]
    if a.shape[3] not in (1, 3):
        raise ValueError(
            f"{name}: expected images (N, H, W) or (N, H, W, 1|3), got shape {np.shape(x)}"
        )
    if a.dtype == np.uint8:
        return a, 255.0
    if a.dtype.kind not in "fiub":
        raise ValueError(f"{name}: expected numeric images, got dtype {a.dtype}")
    if a.size and not (
        np.all(np.isfinite(a)) and a.min() >= -IMAGE_TOL and a.max() <= 1 + IMAGE_TOL
    ):
        raise ValueError(f"{name}: float images must lie in [0, 1] (or be uint8)")
    return a, 1.0
