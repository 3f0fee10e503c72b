"""The ``Task``: inputs, integer labels or real targets, and what they are."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from mdlnb.core._checks import (
    as_array,
    check_finite,
    check_int,
    check_labels,
    check_nonempty,
    check_same_length,
    check_targets,
)
from mdlnb.core._targets import check_kind
from mdlnb.infra._io import DamagedFile, atomic_savez, content_hash, read_npz

# ``import mdlnb`` imports this module: mdlnb.infra._io (hashlib, tempfile, zipfile; about 15 ms,
# a tenth of ``import mdlnb``), zipfile and pandas are imported inside the functions that
# hash, read or write a Task.

GROUPS = ("natural", "specialized", "structured")


@dataclasses.dataclass(frozen=True, eq=False)
class Task:
    """A labelled downstream task: class labels or real-valued targets.

    Attributes:
      name: short identifier, e.g. ``"fashion_mnist"``.
      x: inputs, shape ``(N, ...)``: images ``(N, H, W, C)`` or features ``(N, D)``.
      y: ``kind="classification"``: integer labels in ``[0, num_classes)``, shape
        ``(N,)`` (int32). ``kind="regression"``: finite real targets, shape
        ``(N,)`` or ``(N, P)`` (float64, shape kept).
      num_classes: C, the size of the label alphabet (the uniform code costs
        ``log C`` nats per example); required for classification, must be
        ``None`` for regression (there are no classes).
      group: ``"natural"``, ``"specialized"``, ``"structured"`` or ``None``.
      meta: free-form provenance (source, split, preprocessing).
      kind: ``"classification"`` (default) or ``"regression"``
        (:mod:`mdlnb.core._targets`: readouts then predict a Gaussian density and
        codelengths are density codelengths, defined up to the targets'
        quantisation).
    """

    name: str
    x: np.ndarray
    y: np.ndarray
    num_classes: int | None = None
    group: str | None = None
    meta: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    kind: str = "classification"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"name: must be a non-empty string, got {self.name!r}")
        check_kind(self.kind)
        x = as_array(self.x, "x")
        if x.ndim < 2:
            raise ValueError(f"x: expected shape (N, ...) with at least 2 dims, got {x.shape}")
        check_nonempty(x, "x")
        if x.dtype.kind not in "fiub":
            raise ValueError(f"x: must be numeric, got dtype {x.dtype}")
        check_finite(x, "x")
        if self.kind == "regression":
            if self.num_classes is not None:
                raise ValueError(
                    f"num_classes: a regression task has no classes; pass None, "
                    f"got {self.num_classes!r}"
                )
            y = check_targets(self.y, "y")
        else:
            num_classes = check_int("num_classes", self.num_classes, minimum=2)
            y = check_labels(self.y, num_classes, "y")
            object.__setattr__(self, "num_classes", num_classes)
        check_same_length(x, y, "x", "y")
        if self.group is not None and self.group not in GROUPS:
            raise ValueError(f"group: must be one of {GROUPS} or None, got {self.group!r}")
        object.__setattr__(self, "x", x)
        object.__setattr__(self, "y", y)
        object.__setattr__(self, "meta", dict(self.meta))

    @property
    def is_regression(self) -> bool:
        return self.kind == "regression"

    @property
    def target_dims(self) -> int:
        """P, the number of real targets (regression); 0 for classification."""
        return (1 if self.y.ndim == 1 else int(self.y.shape[1])) if self.is_regression else 0

    @property
    def out_dim(self) -> int:
        """Outputs of a readout for this task: C logits, or ``2P`` (Gaussian mean and
        log-variance per target, :mod:`mdlnb.core._targets`)."""
        return 2 * self.target_dims if self.is_regression else int(self.num_classes)  # type: ignore[arg-type]

    # -- basic views ---------------------------------------------------------
    def __len__(self) -> int:
        return int(self.y.shape[0])

    @property
    def n(self) -> int:
        """Number of examples N."""
        return len(self)

    @property
    def features(self) -> np.ndarray:
        """``x`` flattened to ``(N, D)`` float32."""
        return self.x.reshape(len(self), -1).astype(np.float32, copy=False)

    def __repr__(self) -> str:
        if self.is_regression:
            return (
                f"Task(name={self.name!r}, N={self.n}, x={self.x.shape[1:]}, "
                f"kind='regression', P={self.target_dims}, group={self.group!r})"
            )
        return (
            f"Task(name={self.name!r}, N={self.n}, x={self.x.shape[1:]}, "
            f"num_classes={self.num_classes}, group={self.group!r})"
        )

    def replace(self, **changes: Any) -> Task:
        return dataclasses.replace(self, **changes)

    def take(self, idx: Any, *, name: str | None = None) -> Task:
        """The sub-task at indices ``idx`` (order kept)."""
        idx = np.asarray(idx)
        return self.replace(x=self.x[idx], y=self.y[idx], name=name or self.name)

    def subsample(self, n: int, seed: int = 0) -> Task:
        """A uniformly random subset of ``n`` examples (without replacement)."""
        if not 1 <= n <= self.n:
            raise ValueError(f"n: must be in [1, {self.n}], got {n}")
        idx = np.sort(np.random.default_rng(seed).choice(self.n, size=n, replace=False))
        return self.take(idx).replace(meta={**self.meta, "subsample": {"n": n, "seed": seed}})

    # -- user data -----------------------------------------------------------
    @classmethod
    def from_arrays(
        cls,
        x: Any,
        y: Any,
        *,
        name: str | None = None,
        num_classes: int | None = None,
        kind: str = "classification",
        **kw: Any,
    ) -> Task:
        """Build a task from arrays; ``num_classes`` defaults to ``max(y) + 1``.

        ``kind="regression"``: ``y`` are real targets ``(N,)`` or ``(N, P)`` and
        ``num_classes`` must be None (see :class:`Task`).

        ``name`` defaults to a fingerprint of the arrays, ``arrays-<8 hex>``, so
        reports of different features never print the same name; name your
        representation (e.g. ``"digits|pca16"``) to read reports at a glance.

        When C is inferred and C > N/10, or the labels look like a continuous
        quantity (many distinct values with most of ``[0, C)`` unused, e.g.
        scikit-learn's diabetes targets 25…346), a ``UserWarning`` says so
        (:func:`warn_label_alphabet`; non-integer labels are a ValueError).
        Otherwise, when C is inferred and a class in ``[0, C)`` never occurs
        (labels 1..10 give C = 11 with class 0 unused: the uniform code then
        costs ``N log 11`` instead of ``N log 10``), a ``UserWarning`` says which
        classes are missing and how to pass ``num_classes``.
        """
        check_kind(kind)
        if kind == "regression":
            y = check_targets(y, "y")
            if num_classes is not None:
                raise ValueError(
                    f"num_classes: a regression task has no classes; pass None, got {num_classes!r}"
                )
            if name is None:
                name = f"arrays-{content_hash(np.asarray(x), y, length=8)}"
            return cls(name=name, x=np.asarray(x), y=y, kind="regression", **kw)
        y = check_labels(y, None, "y")
        check_int("num_classes", num_classes, allow_none=True, what="an integer >= 2")
        c = int(num_classes) if num_classes is not None else max(int(y.max()) + 1, 2)
        if name is None:
            name = f"arrays-{content_hash(np.asarray(x), y, length=8)}"
        if num_classes is None and not warn_label_alphabet(y, c, name):
            warn_missing_classes(y, c, name)
        return cls(name=name, x=np.asarray(x), y=y, num_classes=c, **kw)

    @classmethod
    def from_npz(
        cls,
        path: str | Path,
        *,
        x_key: str = "x",
        y_key: str = "y",
        name: str | None = None,
        num_classes: int | None = None,
        **kw: Any,
    ) -> Task:
        """Load ``x`` and ``y`` arrays from an ``.npz`` file."""
        path = Path(path)
        if not path.is_file():
            raise ValueError(f"path: no such file {str(path)!r}")
        import zipfile

        if not zipfile.is_zipfile(path):
            raise ValueError(f"path: {str(path)!r} is not a readable .npz file (not a zip archive)")

        try:  # checksum verified when the file has one (Task.save writes it)
            z = read_npz(path, require_checksum=False)
        except DamagedFile as e:
            raise ValueError(f"path: not a readable .npz file ({e})") from None
        keys = set(z)
        for k, arg in ((x_key, "x_key"), (y_key, "y_key")):
            if k not in keys:
                raise ValueError(f"{arg}: {k!r} not in {path.name} (keys: {sorted(keys)})")
        x, y = z[x_key], z[y_key]
        if "kind" in keys and "kind" not in kw:
            kw["kind"] = str(z["kind"])
        if num_classes is None and "num_classes" in keys:
            num_classes = int(z["num_classes"])
        return cls.from_arrays(x, y, name=name or path.stem, num_classes=num_classes, **kw)

    @classmethod
    def from_parquet(
        cls,
        path: str | Path,
        *,
        y_key: str = "y",
        x_key: str | None = "x",
        name: str | None = None,
        num_classes: int | None = None,
        **kw: Any,
    ) -> Task:
        """Load a table: label column ``y_key``; features from column ``x_key``
        (list-valued) if present, else every other numeric column."""
        import pandas as pd

        path = Path(path)
        if not path.is_file():
            raise ValueError(f"path: no such file {str(path)!r}")
        try:
            df = pd.read_parquet(path)
        except Exception as e:  # pyarrow raises several types
            raise ValueError(f"path: {str(path)!r} is not a readable parquet file ({e})") from None
        if y_key not in df.columns:
            raise ValueError(f"y_key: column {y_key!r} not in {path.name}")
        if x_key is not None and x_key in df.columns:
            try:
                x = np.stack([np.asarray(v, dtype=np.float32) for v in df[x_key]])
            except (TypeError, ValueError) as e:
                raise ValueError(
                    f"x_key: column {x_key!r} of {path.name} is not a column of "
                    f"numeric vectors ({e})"
                ) from None
        else:
            cols = [
                c
                for c in df.columns
                if c != y_key
                and pd.api.types.is_numeric_dtype(df[c])
                and not pd.api.types.is_bool_dtype(df[c])
            ]
            if not cols:
                raise ValueError(f"path: {path.name} has no numeric feature columns")
            x = df[cols].to_numpy(np.float32)
        return cls.from_arrays(
            x, df[y_key].to_numpy(), name=name or path.stem, num_classes=num_classes, **kw
        )

    def to_npz(self, path: str | Path) -> Path:
        if self.is_regression:
            return atomic_savez(path, x=self.x, y=self.y, kind=np.array(self.kind))
        return atomic_savez(path, x=self.x, y=self.y, num_classes=np.int64(self.num_classes))  # type: ignore[arg-type]


def require_classification(task: Task, what: str) -> None:
    """A ValueError naming ``task`` when it is a regression task and ``what`` (a
    function of class labels: accuracy probes, block-wise MDL, loss-data curves)
    has no regression mode."""
    if getattr(task, "is_regression", False):
        raise ValueError(
            f"task: {what} codes class labels; {task.name!r} is a regression task "
            "(real targets): use mdlnb.evaluate / mdlnb.compare / "
            "mdlnb.prequential.run, which code them with Gaussian readouts"
        )


def warn_missing_classes(y: np.ndarray, num_classes: int, name: str = "task") -> list[int]:
    """Warn (``UserWarning``) when a class in ``[0, num_classes)`` never occurs in ``y``
    and ``num_classes`` was inferred as ``max(y) + 1``; returns the missing classes."""
    missing = np.setdiff1d(np.arange(num_classes), np.unique(y)).tolist()
    if missing:
        shown = missing if len(missing) <= 8 else [*missing[:8], "..."]
        hint = " (labels look 1-based: pass y - 1)" if missing == [0] else ""
        warnings.warn(
            f"y: {len(missing)} of the C = max(y) + 1 = {num_classes} classes never occur in "
            f"{name!r}: {shown}{hint}. The uniform code and every readout's output layer count "
            f"them. If the label alphabet is smaller, relabel y to 0..C-1; if it is larger, "
            "pass num_classes: Task.from_arrays(x, y, num_classes=C), "
            "mdlnb.evaluate({'x': x, 'y': y, 'num_classes': C}) or `mdlnb evaluate "
            "--num-classes C`.",
            UserWarning,
            stacklevel=3,
        )
    return missing


#: Fewer examples per class than this on average (C inferred from the labels) is warned about.
MIN_EXAMPLES_PER_CLASS = 10


def warn_label_alphabet(y: np.ndarray, num_classes: int, name: str = "task") -> bool:
    """Warn (``UserWarning``) when ``num_classes`` = max(y) + 1 was inferred and is
    implausible for class labels: C > N/10 (fewer than 10 examples per class on
    average), or the labels look like a continuous quantity (at least 20 distinct
    values and over half of ``[0, C)`` never occurring). Returns whether it warned
    (then :func:`warn_missing_classes` need not)."""
    n = int(len(y))
    distinct = int(np.unique(y).size)
    many = num_classes * MIN_EXAMPLES_PER_CLASS > n
    continuous = distinct >= 20 and distinct < num_classes / 2
    if not (many or continuous):
        return False
    why = []
    if many:
        why.append(
            f"C > N/{MIN_EXAMPLES_PER_CLASS}: under {MIN_EXAMPLES_PER_CLASS} examples "
            "per class on average"
        )
    if distinct >= 20 and (continuous or distinct > n / MIN_EXAMPLES_PER_CLASS):
        why.append(
            f"{distinct} distinct values over {int(y.min())}..{int(y.max())}: they look "
            "like a continuous quantity (a regression target?), not class indices"
        )
    warnings.warn(
        f"y: C = max(y) + 1 = {num_classes} classes for N = {n} examples in {name!r} "
        f"({'; '.join(why)}). mdlnb codes these as class labels; for a real-valued target "
        "make a regression task: Task.from_arrays(x, y, kind='regression'). If these are "
        "classes, relabel them "
        "0..C-1 (np.unique(y, return_inverse=True)[1]) or pass num_classes to silence this.",
        UserWarning,
        stacklevel=3,
    )
    return True
