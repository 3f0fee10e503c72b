"""What every study shares: its config dataclass's construction from a notebook's
overrides or parameters (:class:`StudyConfig`), writing a result's files
(:func:`save_files`), and the notebook's last step (:func:`finish`)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mdlnb.api import output
from mdlnb.core._checks import check_int
from mdlnb.research import claims, manifest

# Imported inside the functions that use them, so that importing this module does not load
# them: matplotlib.


def _is_rate(name: str) -> bool:
    return name in ("lr", "learning_rate", "learning_rates") or name.endswith(
        ("_lr", "_learning_rate", "_learning_rates")
    )


def check_common_fields(config: Any) -> Any:
    """What every study's fields of these names must be, checked by name (a ValueError
    naming the field): ``seed``/``*_seed`` an integer >= 0 (NumPy's generators take no
    negative seed), each of a sequence ``seeds`` too; a learning rate (``lr``,
    ``*_lr``, ``learning_rate(s)``, ``*_learning_rate(s)``; one or a sequence) a finite
    number > 0. Returns ``config``."""
    for f in dataclasses.fields(config):
        v = getattr(config, f.name)
        if v is None:
            continue
        if f.name == "seed" or f.name.endswith("_seed"):
            check_int(f.name, v, minimum=0)
        elif f.name == "seeds" and isinstance(v, (list, tuple)):
            for x in v:
                check_int(f.name, x, minimum=0, what=f"integers >= 0 (got {list(v)!r})")
        elif _is_rate(f.name):
            for x in v if isinstance(v, (list, tuple)) else [v]:
                if (
                    isinstance(x, bool)
                    or not isinstance(x, (int, float))
                    or not math.isfinite(x)
                    or x <= 0
                ):
                    raise ValueError(
                        f"{f.name}: must be a finite number > 0 (or a list of them), got {v!r}"
                    )
    return config


class StudyConfig:
    """Mixin for a study's frozen config dataclass (``<Name>Config``)."""

    @classmethod
    def from_overrides(cls, overrides: Mapping[str, Any] | None = None):
        """The default config with ``overrides`` applied; an unknown field is a
        ValueError naming it (a typo in profiles.yaml fails instead of being ignored)."""
        overrides = dict(overrides or {})
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ValueError(
                f"overrides: unknown {cls.__name__} fields {unknown}; known: {sorted(known)}"
            )
        return check_common_fields(cls(**overrides))

    @classmethod
    def from_parameters(cls, namespace: Mapping[str, Any]):
        """The config of a notebook whose parameters are this config's fields, of the
        same names: every field read from ``namespace`` (the notebook's ``globals()``,
        after papermill set them); other names are ignored, a missing field is a
        ValueError naming it."""
        names = [f.name for f in dataclasses.fields(cls)]
        missing = [n for n in names if n not in namespace]
        if missing:
            raise ValueError(f"namespace: has no parameters {missing} of {cls.__name__}")
        return check_common_fields(cls(**{n: namespace[n] for n in names}))

    def replace(self, **changes: Any):
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def checked(cls, config: Any = None):
        """``config`` for a study's ``run``: the default config when None, else a
        ``cls``; anything else is a ValueError naming the argument."""
        config = cls() if config is None else config
        if not isinstance(config, cls):
            article = "an" if cls.__name__[0] in "AEIOU" else "a"
            raise ValueError(
                f"config: expected {article} {cls.__name__}, got {type(config).__name__}"
            )
        return config


def finish(
    notebook: str,
    paper_dir: str | Path,
    profile: str,
    found: Sequence[Any] = (),
    *,
    pattern: str,
    setting: Sequence[tuple[str, str, str]] = (),
    findings: str = "",
) -> str:
    """A notebook's last step: write its claims (``paper_dir/claims/<notebook>.csv``,
    :func:`mdlnb.research.claims.write_claims`; none when ``found`` is empty) and its setting
    (``paper_dir/setting/<notebook>.csv``, rows of (aspect, the paper's, this run's),
    :func:`mdlnb.research.claims.write_setting`; none when empty) and its findings beside the
    claims (``paper_dir/findings/<notebook>.md``, Markdown; none when empty), record the
    manifest of every
    table and figure matching ``pattern`` (:func:`mdlnb.research.manifest.record`) and return the
    claims as text (:func:`mdlnb.research.claims.describe`; "" without claims)."""
    found = list(found)
    if found:
        claims.write_claims(found, paper_dir, notebook)
    if setting:
        claims.write_setting(setting, paper_dir, notebook)
    if findings:
        claims.write_findings(findings, paper_dir, notebook)
    manifest.record(paper_dir, notebook, profile, pattern=pattern)
    return claims.describe(found)


def save_files(
    paper_dir: str | Path, prefix: str, tables: Mapping[str, Any], figures: Mapping[str, Any]
) -> list[Path]:
    """Write a result's ``tables`` (``{name: DataFrame}``, csv + md) and ``figures``
    (``{name: Figure | Axes}``, png, then closed) as ``<prefix>_<name>`` in
    ``paper_dir``, atomically (:mod:`mdlnb.api.output`); returns the paths."""
    import matplotlib.pyplot as plt  # here: pyplot costs a second, and only saving needs it

    paths: list[Path] = []
    for name, df in tables.items():
        paths += output.save_table(df, f"{prefix}_{name}", paper_dir)
    for name, fig in figures.items():
        paths.append(output.save_figure(fig, f"{prefix}_{name}", paper_dir))
        plt.close(getattr(fig, "figure", fig))
    return paths
