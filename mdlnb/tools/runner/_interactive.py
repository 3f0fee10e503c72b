"""Running a notebook by hand (JupyterLab, ``make lab``): the profile named in its
parameters cell applied to the kernel's values, checked before any work.

Every notebook calls :func:`interactive_profile` right after its parameters cell.
Under the runner (``MDLNB_RUNNER=1``) it does nothing: papermill injected the
profile's values already, checked by :func:`mdlnb.tools.runner.check_profile`. By hand it
works on **the cell as the kernel ran it**, never on the file on disk, which may
hold an older or newer version (saved or not):

1. the parameters cell is the last cell the kernel ran before this one that holds
   only assignments and sets ``profile`` or at least two of the notebook's
   parameters (IPython's input history); a name it sets that is not a parameter
   of the notebook — a misspelling, ``blockwise_epoch = 5`` — is a ValueError
   that names it and the closest parameter;
2. the values it set, as the kernel holds them, must have the parameters' types
   (:func:`mdlnb.tools.runner.parameter_types`: annotation, default, profiles) — a
   ValueError naming the parameter otherwise;
3. the ``profile`` set there (``"smoke"``, ``"default"``, ``"full"``) selects the
   entry of ``notebooks/profiles.yaml``, as ``--profile`` does for a batch run;
   its values replace the cell's, except those the cell changed from the
   notebook's defaults (the tracked ``notebooks/NAME.py``), which win — for
   ``overrides`` field by field;
4. ``paper_dir`` left at its default goes to ``build/lab/paper`` (a relative one
   is taken from the repository root), so a run by hand never writes into
   ``paper/`` or ``notebooks/``; one printed line says what was set.
"""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mdlnb.tools.runner import _notebooks, _params
from mdlnb.tools.runner._paths import LAB_DIR, PROFILES, ROOT, RUNNER_ENV, shown
from mdlnb.tools.runner._types import article, hint_text, matches


def ran_cell(declared: Mapping[str, Any]) -> str | None:
    """The source of the parameters cell as the kernel last ran it (step 1 of the
    module docstring), or None outside IPython or when no such cell ran."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None:
        return None
    history = list(shell.user_ns.get("In") or shell.history_manager.input_hist_raw)
    for source in reversed(history[:-1]):  # the last one is the calling cell
        names = _params.assigned_names(source or "")
        if names and ("profile" in names or len(set(names) & set(declared)) >= 2):
            return source
    return None


def _check_cell(
    name: str,
    namespace: Mapping[str, Any],
    declared: Mapping[str, Any],
    types: Mapping[str, tuple[Any, str]],
    cell: str | None,
) -> None:
    """Steps 1 and 2: names the cell sets, and the types of their values in ``namespace``."""
    assigned = _params.assigned_names(cell) if cell is not None else None
    for key in assigned or ():
        if key not in declared:
            near = difflib.get_close_matches(key, list(declared), n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise ValueError(
                f"parameters cell: {key!r} is not a parameter of {name}{hint}; "
                f"its parameters: {', '.join(declared)}"
            )
    for key in assigned if assigned is not None else [k for k in declared if k in namespace]:
        value = namespace.get(key)
        if key in types and value is not None and not matches(value, types[key][0]):
            hint, where = types[key]
            raise ValueError(
                f"parameters cell: {key} = {value!r} is "
                f"{article(type(value).__name__)}, but {name}'s {key} takes "
                f"{hint_text(hint)} ({where})"
            )


def interactive_profile(namespace: dict, name: str, *, cell: str | None = None) -> None:
    """Apply notebook ``name``'s profile to ``namespace`` when it runs by hand;
    nothing under the runner. See the module docstring for the steps.

    A notebook passes its own ``globals()``, right after its parameters cell::

        runner.interactive_profile(globals(), "quickstart")

    and the profile's values (and ``paper_dir``) are **assigned into that
    mapping** — the notebook's globals — so the cells after it read them as
    plain names; one printed line lists them. It returns None (so the call, the
    last line of its cell, displays nothing). ``cell``: the parameters cell's
    source as run (default: from the kernel's history)."""
    if os.environ.get(RUNNER_ENV) == "1":
        return
    declared = _notebooks._declared(name)
    defaults = {k: p.default for k, p in declared.items()}
    _check_cell(
        name,
        namespace,
        defaults,
        _notebooks.parameter_types(name),
        cell if cell is not None else ran_cell(defaults),
    )
    profile = namespace.get("profile", "default")
    if profile not in PROFILES:
        raise ValueError(f"profile: must be one of {PROFILES}, got {profile!r}")
    table = dict(_notebooks._profile_table().get(name, {}).get(profile, {}) or {})

    def edited(key: str) -> bool:
        p = declared.get(key)
        return key in namespace and p is not None and p.literal and namespace[key] != p.default

    applied: dict[str, Any] = {}
    for key, value in table.items():
        if key == "overrides" and isinstance(value, Mapping):
            own = declared.get("overrides")
            base = own.default if own is not None and own.literal else {}
            kept = {
                k: v
                for k, v in dict(namespace.get("overrides") or {}).items()
                if (base or {}).get(k, object()) != v
            }
            value = {**value, **kept}
        elif edited(key):
            continue
        applied[key] = value
    paper_dir = namespace.get("paper_dir")
    if "paper_dir" in declared:
        if paper_dir is None or paper_dir == defaults["paper_dir"]:
            applied["paper_dir"] = str(LAB_DIR / "paper")
        elif not Path(paper_dir).is_absolute():
            applied["paper_dir"] = str(ROOT / paper_dir)
    _notebooks.check_profile(
        name,
        profile,
        {k: v for k, v in applied.items() if k != "paper_dir"},
        source="interactive_profile",
    )
    namespace.update(applied)
    listed = ", ".join(
        f"{k}={v!r}" if k != "overrides" else f"overrides ({len(v)} fields)"
        for k, v in applied.items()
        if k != "paper_dir"
    )
    where = shown(Path(applied.get("paper_dir", paper_dir or ".")))
    print(
        f"interactive run of {name}, profile {profile!r}"
        f"{': ' + listed if listed else ' (the parameters cell as it is)'}; writing to {where}"
    )
