"""Parameter sweeps: one executed notebook per combination of parameter values, and one
tidy table of the numbers every run wrote, beside them::

    python -m mdlnb.tools.runner quickstart --profile smoke --sweep seed=0,1,2
    python -m mdlnb.tools.runner quickstart --profile smoke --sweep seed=0,1 --sweep size=200,300 -p protocol=small
    python -m mdlnb.tools.runner objectives --profile smoke --sweep "overrides.tasks=[digits],[digits, lfw_faces]"

``--sweep KEY=V1,V2,...`` is repeatable; the runs are the cross product of the value lists,
in the order given (the last key varies fastest). Each value is read as YAML, as ``-p``
reads one (``1`` an int, ``1e-3`` a float, ``[a, b]`` a list); ``-p`` fixes the parameters
that are not swept, and ``overrides.FIELD`` sweeps one field of a study notebook's config.
Every combination is checked (names, types, the study's config) before the first run, and
``--check`` does only that.

Under ``--out-dir`` (default ``build/sweeps/<profile>/<notebook>``):

* ``<label>/<notebook>.ipynb``: the executed notebook of one run, ``<label>`` naming its
  values (``seed=1``, ``seed=1,size=200``); ``<label>/paper/``: what it saved (its
  ``paper_dir``);
* ``runs.csv``: one row per run: its label, its swept values, ``status`` (``ran``, ``up to
  date``, ``failed``), wall time and notebook;
* ``values.csv``: the tidy table: one row per number a run saved — the swept values, then
  ``table`` (the CSV file, as the run's manifest lists them, and its claims), ``row`` (the
  row's text columns, ``key=value; ...``, or its position where they do not identify it),
  ``column`` and ``value``.

A run whose executed notebook is there with the same parameters is not run again (a sweep
that was stopped resumes where it was); a run that fails is reported and the others go on;
the command's status is 1 when one failed.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mdlnb.infra._io import atomic_write_text
from mdlnb.tools.runner import _notebooks
from mdlnb.tools.runner._params import parse_parameters
from mdlnb.tools.runner._paths import ROOT, shown

# yaml, pandas and nbformat are imported inside the functions that use them.

RUN_COLUMNS = ["run", "status", "wall [s]", "notebook", "error"]
VALUE_COLUMNS = ["run", "table", "row", "column", "value"]
_FLOAT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+")


@dataclasses.dataclass(frozen=True)
class Sweep:
    """What :func:`sweep` did: ``runs`` (one row per run) and ``values`` (the tidy table of
    every number the runs saved), and where both were written."""

    runs: Any
    values: Any
    runs_path: Path
    values_path: Path

    @property
    def failed(self) -> list[str]:
        return list(self.runs.loc[self.runs["status"] == "failed", "run"])


def parse_sweep(items: Sequence[str]) -> dict[str, list[Any]]:
    """``["seed=0,1,2", "overrides.tasks=[a],[a, b]"]`` → ``{"seed": [0, 1, 2],
    "overrides.tasks": [["a"], ["a", "b"]]}``: each value list read as the YAML flow
    sequence ``[V1, V2, ...]`` (a number with an exponent is a float, as for ``-p``)."""
    import yaml

    grid: dict[str, list[Any]] = {}
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key or not text.strip():
            raise ValueError(f"sweep: expected KEY=V1,V2,..., got {item!r}")
        if key == "overrides." or (key.startswith("overrides.") and "." in key[10:]):
            raise ValueError(f"sweep: expected overrides.FIELD=V1,V2,..., got {item!r}")
        if key in grid:
            raise ValueError(f"sweep: {key} is swept twice")
        try:
            values = yaml.safe_load(f"[{text}]")
        except yaml.YAMLError as err:
            raise ValueError(f"sweep: {key}: [{text}] is not a YAML list ({err})") from None
        grid[key] = [
            float(v) if isinstance(v, str) and _FLOAT.fullmatch(v.strip()) else v for v in values
        ]
    return grid


def combinations(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """The cross product of ``grid``'s value lists, one ``{key: value}`` per run, in order
    (the last key varies fastest)."""
    for key, values in grid.items():
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not values:
            raise ValueError(f"grid: {key} must be a non-empty list of values, got {values!r}")
    keys = list(grid)
    return [dict(zip(keys, combo)) for combo in itertools.product(*grid.values())]


def label(combo: Mapping[str, Any]) -> str:
    """The folder name of one run: ``seed=1,size=200`` (characters a file name or an
    artifact name should not hold replaced by ``_``; ``overrides.`` dropped)."""
    text = ",".join(f"{k.removeprefix('overrides.')}={_text(v)}" for k, v in combo.items())
    return re.sub(r"[^A-Za-z0-9._=,+-]", "_", text)[:120] or "run"


def _text(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "+".join(_text(v) for v in value)
    return "null" if value is None else str(value)


def _parameters(combo: Mapping[str, Any], fixed: Mapping[str, Any]) -> dict[str, Any]:
    """``fixed`` (parsed ``-p``) with one run's swept values on top; ``overrides.FIELD``
    set field by field."""
    params = {
        k: (dict(v) if k == "overrides" and isinstance(v, Mapping) else v) for k, v in fixed.items()
    }
    for key, value in combo.items():
        if key.startswith("overrides."):
            params.setdefault("overrides", {})[key.split(".", 1)[1]] = value
        else:
            params[key] = value
    return params


def plan(
    name: str,
    profile: str,
    grid: Mapping[str, Sequence[Any]],
    *,
    parameters: Mapping[str, Any] | None = None,
    out_dir: str | Path | None = None,
) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """``(label, swept values, parameters)`` of every run of the sweep, each checked with
    :func:`mdlnb.tools.runner.merged_parameters` (names, types, the study's config), so a bad
    value fails before any kernel starts. A run's ``paper_dir`` is ``<label>/paper`` in
    ``out_dir`` (or in a ``paper_dir`` given in ``parameters``) unless it is swept."""
    fixed = dict(parameters or {})
    fields = fixed.get("overrides") if isinstance(fixed.get("overrides"), Mapping) else {}
    taken = {*fixed, *(f"overrides.{f}" for f in fields)}
    both = sorted(k for k in grid if k in taken or (k == "overrides" and "overrides" in fixed))
    if both:
        raise ValueError(f"sweep: {both} both swept and fixed by a parameter")
    root = sweep_dir(name, profile, out_dir)
    runs, seen = [], set()
    for combo in combinations(grid):
        tag = label(combo)
        tag = tag if tag not in seen else f"{tag}-{len(runs)}"
        seen.add(tag)
        params = _parameters(combo, fixed)
        if "paper_dir" not in combo:
            base = Path(fixed["paper_dir"]) / tag if "paper_dir" in fixed else root / tag / "paper"
            params["paper_dir"] = str(base if base.is_absolute() else ROOT / base)
        _notebooks.merged_parameters(name, profile, params)
        runs.append((tag, combo, params))
    return runs


def sweep_dir(name: str, profile: str, out_dir: str | Path | None = None) -> Path:
    """Where a sweep of notebook ``name`` writes: ``out_dir`` (absolute), else
    ``build/sweeps/<profile>/<name>`` in the repository."""
    return Path(out_dir).resolve() if out_dir else ROOT / "build" / "sweeps" / profile / name


def _recorded(path: Path, name: str, profile: str, params: Mapping[str, Any]) -> dict | None:
    """What the runner recorded of the run at ``path`` (``metadata["mdlnb"]``: wall time,
    ...) when it is a successful run of these parameters, else None (the runner writes the
    executed notebook only on success, with the parameters it ran)."""
    import nbformat

    if not path.exists():
        return None
    meta = dict(nbformat.read(path, as_version=4).metadata.get("mdlnb", {}))
    now = json.loads(json.dumps(_notebooks.merged_parameters(name, profile, params), default=str))
    return meta if meta.get("parameters") == now else None


def sweep(
    name: str,
    profile: str = "default",
    grid: Mapping[str, Sequence[Any]] | None = None,
    *,
    parameters: Mapping[str, Any] | None = None,
    out_dir: str | Path | None = None,
    progress: bool = False,
) -> Sweep:
    """Run notebook ``name`` once per combination of ``grid`` (``{parameter: [values]}``;
    ``"overrides.FIELD"`` for a study config's field) under ``profile``, ``parameters``
    fixing the others; collect every number the runs saved into one tidy table. See the
    module's docstring for the layout; e.g. ``sweep("quickstart", "smoke", {"seed": [0, 1,
    2]})``."""
    runs = plan(name, profile, grid or {}, parameters=parameters, out_dir=out_dir)
    if not runs:
        raise ValueError("grid: names no parameter to sweep")
    root = sweep_dir(name, profile, out_dir)
    rows = []
    for tag, combo, params in runs:
        out = root / tag / f"{name}.ipynb"
        row: dict[str, Any] = {
            "run": tag,
            **combo,
            "status": "up to date",
            "wall [s]": float("nan"),
            "notebook": shown(out),
            "error": "",
        }
        recorded = _recorded(out, name, profile, params)
        if recorded is not None:
            row["wall [s]"] = recorded.get("wall_s", float("nan"))
        else:
            print(f">> {name} [{profile}] {tag} ...", flush=True)
            t0 = time.perf_counter()
            try:
                _notebooks.run(
                    name, profile, out_dir=out.parent, parameters=params, progress=progress
                )
                row["status"] = "ran"
            except Exception as err:  # noqa: BLE001 - reported, and the other runs go on
                row.update(
                    status="failed",
                    error=str(err).strip().splitlines()[-1][:300]
                    if str(err).strip()
                    else type(err).__name__,
                )
            row["wall [s]"] = round(time.perf_counter() - t0, 1)
            print(f"   {row['status']} in {row['wall [s]']:.1f} s", flush=True)
        rows.append(row)
    return _write(
        root, name, rows, [(tag, combo, Path(params["paper_dir"])) for tag, combo, params in runs]
    )


def _write(
    root: Path,
    name: str,
    rows: list[dict[str, Any]],
    papers: list[tuple[str, dict[str, Any], Path]],
) -> Sweep:
    """Write ``runs.csv`` and ``values.csv`` under ``root``, atomically."""
    import pandas as pd

    keys = list(papers[0][1]) if papers else []
    runs = pd.DataFrame(rows, columns=["run", *keys, *RUN_COLUMNS[1:]])
    failed = set(runs.loc[runs["status"] == "failed", "run"])
    frames = [
        values(paper, name).assign(run=tag, **{k: _cell(v) for k, v in combo.items()})
        for tag, combo, paper in papers
        if tag not in failed
    ]
    columns = ["run", *keys, *VALUE_COLUMNS[1:]]
    table = pd.concat([pd.DataFrame(columns=columns), *frames], ignore_index=True)[columns]
    runs_path = atomic_write_text(root / "runs.csv", runs.to_csv(index=False))
    values_path = atomic_write_text(root / "values.csv", table.to_csv(index=False))
    return Sweep(runs, table, runs_path, values_path)


def _cell(value: Any) -> Any:
    """A swept value as one table cell: lists and mappings as their JSON text."""
    return json.dumps(value) if isinstance(value, (list, tuple, dict)) else value


def values(paper_dir: str | Path, name: str):
    """Every number notebook ``name`` saved in ``paper_dir``, tidy: one row per numeric
    cell of each table its manifest (``manifest/<name>.csv``) lists — every ``*.csv`` of
    ``paper_dir`` when there is no manifest — and of its claims (``claims/<name>.csv``),
    with columns ``table``, ``row``, ``column``, ``value``."""
    import pandas as pd

    paper = Path(paper_dir)
    manifest = paper / "manifest" / f"{name}.csv"
    if manifest.exists():
        listed = pd.read_csv(manifest, dtype=str, keep_default_na=False)
        files = [paper / f for f in listed.loc[listed["kind"] == "table", "file"]]
    else:
        files = sorted(paper.glob("*.csv"))
    claims = paper / "claims" / f"{name}.csv"
    files += [claims] if claims.exists() else []
    rows = []
    for path in files:
        df = pd.read_csv(path)
        text = [c for c in df.columns if not pd.api.types.is_numeric_dtype(df[c])]
        unique = bool(text) and not df.duplicated(text).any()
        numeric = [c for c in df.columns if c not in text]  # booleans count as 0/1
        table = path.relative_to(paper).with_suffix("").as_posix()
        for i, rec in enumerate(df.to_dict("records")):
            row = "; ".join(f"{c}={rec[c]}" for c in text) if unique else str(i)
            rows += [
                {"table": table, "row": row, "column": str(c), "value": float(rec[c])}
                for c in numeric
            ]
    return pd.DataFrame(rows, columns=VALUE_COLUMNS[1:])


def main(args: Any) -> int:
    """``python -m mdlnb.tools.runner NOTEBOOK --sweep KEY=V1,V2 ...`` (the runner's parsed
    arguments): run the sweep, or with ``--check`` only check every run's parameters."""
    if len(args.names) != 1:
        raise ValueError(f"names: --sweep runs one notebook, got {args.names or 'none'}")
    name, grid = args.names[0], parse_sweep(args.sweep)
    fixed = parse_parameters(args.parameter)
    runs = plan(name, args.profile, grid, parameters=fixed, out_dir=args.out_dir)
    if args.check:
        print(
            f"{name} [{args.profile}]: {len(runs)} runs checked: "
            + ", ".join(tag for tag, _, _ in runs)
        )
        return 0
    import sys

    result = sweep(
        name,
        args.profile,
        grid,
        parameters=fixed,
        out_dir=args.out_dir,
        progress=sys.stdout.isatty(),
    )
    print(result.runs.to_string(index=False))
    print(
        f"{len(result.values)} values of {len(result.runs) - len(result.failed)} runs -> "
        f"{shown(result.values_path)} (runs: {shown(result.runs_path)})"
    )
    return 1 if result.failed else 0
