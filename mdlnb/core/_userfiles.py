"""Features and labels from the files people keep them in: ``.npy``, ``.npz``,
``.parquet`` and ``.csv`` — what the command line (:mod:`mdlnb.tools.cli`) reads.

One rule for every format (:func:`read_features`, :func:`read_labels`):

Features come back as float32 (what stage 1 computes in), so the same numbers
give the same task, and the same stage-1 cache entry, from every format.

* ``.npy``: one array. As features it is ``x`` (N, D) (more dimensions are
  flattened later, with a warning, as :func:`mdlnb.evaluate` does); as labels it
  is ``y``, (N,) or (N, P) real targets.
* ``.npz``: arrays by name: ``x_key`` (default ``x``), ``y_key`` (default
  ``y``), and optionally ``kind`` and ``num_classes`` (what
  :meth:`mdlnb.Task.to_npz` writes). As labels, a file with one array needs no key.
* ``.parquet``, ``.csv``: a table. The labels are column ``y_key``; the features
  are column ``x_key`` when it holds one list per row (parquet), else every other
  numeric column, in file order. A CSV whose first row is all numbers has no
  header (``numpy.savetxt``'s output) and is read as such; as labels, a table
  with one column needs no key.

Anything unreadable — a missing file, another suffix, a damaged archive, text
where numbers belong, an object array — is a ``ValueError`` naming the argument
and the file, never a traceback from NumPy or pandas.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

# Imported inside the functions that use them, so that importing this module does not load
# them: pandas (and pyarrow through it).

SUFFIXES = (".npy", ".npz", ".parquet", ".csv")


class Features(NamedTuple):
    """What a features file holds: ``x``; ``y`` (None when the file has no labels);
    ``kind`` and ``num_classes`` when an ``.npz`` records them (else None)."""

    x: np.ndarray
    y: np.ndarray | None
    kind: str | None
    num_classes: int | None


def _suffix(path: Path, arg: str) -> str:
    if not path.is_file():
        raise ValueError(f"{arg}: no such file {str(path)!r}")
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise ValueError(
            f"{arg}: {str(path)!r} is not a {', '.join(SUFFIXES[:-1])} or "
            f"{SUFFIXES[-1]} file (got {suffix or 'no suffix'!r})"
        )
    return suffix


def _numeric(a: Any, arg: str, path: Path, what: str) -> np.ndarray:
    a = np.asarray(a)
    if a.dtype.kind not in "biuf" or a.size == 0:
        raise ValueError(
            f"{arg}: {what} in {str(path)!r} must be a non-empty array of "
            f"numbers, got dtype {a.dtype} and shape {a.shape}"
        )
    return a


def _npy(path: Path, arg: str) -> np.ndarray:
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as e:
        raise ValueError(f"{arg}: {str(path)!r} is not a readable .npy file ({e})") from None


def _npz(path: Path, arg: str) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError) as e:  # zipfile.BadZipFile is an OSError
        raise ValueError(f"{arg}: {str(path)!r} is not a readable .npz file ({e})") from None
    except Exception as e:  # a damaged member: zlib.error, KeyError, ...
        raise ValueError(
            f"{arg}: {str(path)!r} is not a readable .npz file ({type(e).__name__}: {e})"
        ) from None


def _table(path: Path, suffix: str, arg: str):
    """The file as a DataFrame (a headerless CSV gets columns 0 … D−1)."""
    import pandas as pd

    try:
        if suffix == ".parquet":
            return pd.read_parquet(path)
        df = pd.read_csv(path)
        if len(df.columns) and all(_is_number(c) for c in df.columns):
            df = pd.read_csv(path, header=None)  # the first row was data
        return df
    except Exception as e:  # pyarrow and pandas raise many types
        raise ValueError(
            f"{arg}: {str(path)!r} is not a readable {suffix} file ({type(e).__name__}: {e})"
        ) from None


def _is_number(text: Any) -> bool:
    try:
        float(str(text))
    except ValueError:
        return False
    return True


def _table_features(df, path: Path, arg: str, x_key: str, y_key: str) -> np.ndarray:
    if x_key in df.columns and df[x_key].dtype == object:
        try:
            return np.stack([np.asarray(v, dtype=np.float32) for v in df[x_key]])
        except (TypeError, ValueError) as e:
            raise ValueError(
                f"{arg}: column {x_key!r} of {str(path)!r} does not hold one "
                f"list of numbers per row ({e})"
            ) from None
    rest = [c for c in df.columns if str(c) != y_key]
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    text = [str(c) for c in rest if not is_numeric_dtype(df[c]) or is_bool_dtype(df[c])]
    if text:
        raise ValueError(
            f"{arg}: column(s) {text[:5]} of {str(path)!r} are not numbers; "
            f"features are every column but the labels {y_key!r} "
            "(--y-key names the label column)"
        )
    if not rest:
        raise ValueError(f"{arg}: {str(path)!r} has no feature columns besides {y_key!r}")
    return df[rest].to_numpy()


def read_features(
    path: str | Path, *, x_key: str = "x", y_key: str = "y", arg: str = "features"
) -> Features:
    """The features (float32) and labels, if the file has them, of one file; see the
    module docstring for the formats. ``arg`` names the argument in error messages."""
    got = _read_features(Path(path), x_key, y_key, arg)
    return got._replace(x=got.x.astype(np.float32, copy=False))


def _read_features(path: Path, x_key: str, y_key: str, arg: str) -> Features:
    suffix = _suffix(path, arg)
    if suffix == ".npy":
        return Features(_numeric(_npy(path, arg), arg, path, "the array"), None, None, None)
    if suffix == ".npz":
        z = _npz(path, arg)
        if x_key not in z:
            raise ValueError(
                f"{arg}: no array {x_key!r} in {str(path)!r} (it has "
                f"{sorted(z)}; --x-key names another)"
            )
        y = _numeric(z[y_key], arg, path, f"array {y_key!r}") if y_key in z else None
        kind = str(z["kind"]) if "kind" in z else None
        c = int(z["num_classes"]) if "num_classes" in z else None
        return Features(_numeric(z[x_key], arg, path, f"array {x_key!r}"), y, kind, c)
    df = _table(path, suffix, arg)
    x = _table_features(df, path, arg, x_key, y_key)
    y = (
        _numeric(df[y_key].to_numpy(), arg, path, f"column {y_key!r}")
        if y_key in df.columns
        else None
    )
    return Features(_numeric(x, arg, path, "the feature columns"), y, None, None)


def read_labels(path: str | Path, *, y_key: str = "y", arg: str = "labels") -> np.ndarray:
    """The labels (N,) — or real targets (N,) / (N, P) — of one file: a ``.npy`` array,
    an ``.npz`` array ``y_key`` (or its only array), a table's column ``y_key`` (or its
    only column)."""
    path = Path(path)
    suffix = _suffix(path, arg)
    if suffix == ".npy":
        return _numeric(_npy(path, arg), arg, path, "the array")
    if suffix == ".npz":
        z = _npz(path, arg)
        if y_key not in z and len(z) != 1:
            raise ValueError(
                f"{arg}: no array {y_key!r} in {str(path)!r} (it has "
                f"{sorted(z)}; --y-key names another)"
            )
        return _numeric(z[y_key] if y_key in z else next(iter(z.values())), arg, path, "the labels")
    df = _table(path, suffix, arg)
    if y_key in df.columns:
        return _numeric(df[y_key].to_numpy(), arg, path, f"column {y_key!r}")
    if len(df.columns) == 1:
        return _numeric(df.iloc[:, 0].to_numpy(), arg, path, "the labels")
    raise ValueError(
        f"{arg}: no column {y_key!r} in {str(path)!r} (columns "
        f"{[str(c) for c in df.columns][:8]}; --y-key names another)"
    )
