"""A notebook's parameters: the names, defaults and types of its first ``parameters``
cell, read from source text — the tracked ``notebooks/NAME.py`` for the runner's
checks, or the cell as a kernel ran it (:mod:`mdlnb.tools.runner._interactive`).

The type a value must have (:func:`parameter_types`), in this order:

* an annotation in the cell, ``size: int | None = None`` (built-in types, ``|``,
  ``list[...]``/``tuple[...]``/``dict[...]``, ``None``);
* else the type of a literal default (:func:`mdlnb.tools.runner._types.type_of_default`:
  a number default takes an int or a float, ...);
* else, for a ``None`` default, the types ``notebooks/profiles.yaml`` gives the
  parameter (``size: 300`` in a profile: an int, or None); else anything.
"""

from __future__ import annotations

import ast
import builtins
import re
import typing
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from mdlnb.tools.runner._types import type_of_default

# jupytext and yaml are imported inside the functions that use them.

#: The names an annotation may use: built-in types and None.
_ANNOTATION_NAMES = {
    n: getattr(builtins, n) for n in ("int", "float", "str", "bool", "list", "tuple", "dict")
}
_ANNOTATION_NAMES.update({"None": None, "Any": Any})


class Parameter(NamedTuple):
    """One parameter of a cell: its default (the value of a literal, else its source
    text), whether the default is a literal, and its annotation (a type, or None)."""

    default: Any
    literal: bool
    annotation: Any


def annotation_type(text: str) -> Any:
    """The type an annotation's source text names (:data:`_ANNOTATION_NAMES` only), or
    ValueError."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as e:
        raise ValueError(f"annotation: {text!r} is not an expression ({e.msg})") from None
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    unknown = names - set(_ANNOTATION_NAMES)
    if unknown or any(isinstance(n, (ast.Call, ast.Attribute, ast.Lambda)) for n in ast.walk(tree)):
        raise ValueError(
            f"annotation: {text!r} may use only {sorted(_ANNOTATION_NAMES)}, | and [...]"
        )
    return eval(compile(tree, "<annotation>", "eval"), {"__builtins__": {}}, _ANNOTATION_NAMES)


def cell_parameters(source: str) -> dict[str, Parameter]:
    """The top-level ``name = value`` and ``name: type = value`` assignments of a cell."""
    out: dict[str, Parameter] = {}
    for node in ast.parse(source).body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            target, value, note = node.targets[0].id, node.value, None
        elif (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.value is not None
        ):
            target, value = node.target.id, node.value
            note = annotation_type(ast.get_source_segment(source, node.annotation))
        else:
            continue
        try:
            out[target] = Parameter(ast.literal_eval(value), True, note)
        except ValueError:
            out[target] = Parameter(ast.get_source_segment(source, value), False, note)
    return out


def assigned_names(source: str) -> list[str] | None:
    """The names a cell assigns when it holds only assignments (and comments), in order;
    None when it holds anything else (it is then no parameters cell)."""
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return None
    names = []
    for node in body:
        if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
            names += [t.id for t in node.targets]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
        else:
            return None
    return names


def parameters_source(path) -> str | None:
    """The source of the first ``parameters``-tagged code cell of the notebook at
    ``path`` (None when it has none)."""
    import jupytext

    nb = jupytext.read(path)
    cell = next(
        (
            c
            for c in nb.cells
            if c.cell_type == "code" and "parameters" in c.get("metadata", {}).get("tags", [])
        ),
        None,
    )
    return None if cell is None else cell.source


def profile_types(table: Mapping[str, Any], name: str) -> dict[str, set[type]]:
    """The types of the values ``profiles.yaml`` (``table``) gives each parameter of
    notebook ``name``, over its profiles."""
    out: dict[str, set[type]] = {}
    for entry in (table.get(name) or {}).values():
        for key, value in (entry or {}).items():
            if value is not None:
                out.setdefault(key, set()).add(type(value))
    return out


def parameter_types(
    params: Mapping[str, Parameter], seen: Mapping[str, set[type]]
) -> dict[str, tuple[Any, str]]:
    """``{name: (type, where it comes from)}`` for every parameter whose type is known
    (see the module docstring; ``seen``: :func:`profile_types`)."""
    out: dict[str, tuple[Any, str]] = {}
    for key, p in params.items():
        if p.annotation is not None:
            out[key] = (p.annotation, "its annotation")
        elif p.literal and p.default is not None:
            out[key] = (type_of_default(p.default), f"its default ({p.default!r})")
        elif p.literal and key in seen:
            kinds = tuple(sorted(seen[key], key=lambda t: t.__name__))
            out[key] = (
                typing.Union[(*kinds, type(None))],
                "the values notebooks/profiles.yaml gives it, or None",
            )
    return out


def parse_parameters(items: Sequence[str]) -> dict[str, Any]:
    """``["seed=1", "size=400", "overrides.train_size=100"]`` → parameters: each value
    parsed as YAML (``1`` an int, ``0.5`` a float, ``true`` a bool, ``null`` None,
    ``[a, b]`` a list, anything else a string); ``overrides.FIELD=VALUE`` sets one field
    of a study notebook's ``overrides``."""
    import yaml  # here, not at the top: --help starts without it

    out: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"parameter: expected KEY=VALUE, got {item!r}")
        try:
            value = yaml.safe_load(text) if text.strip() else ""
        except yaml.YAMLError as err:
            raise ValueError(f"parameter: {key}: {text!r} is not valid YAML ({err})") from None
        if isinstance(value, str) and re.fullmatch(
            r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+", value.strip()
        ):
            value = float(value)  # 1e-3: a float (YAML 1.1 wants 1.0e-3)
        if key.startswith("overrides."):
            field = key.split(".", 1)[1]
            if not field:
                raise ValueError(f"parameter: expected overrides.FIELD=VALUE, got {item!r}")
            out.setdefault("overrides", {})[field] = value
        else:
            out[key] = value
    return out
