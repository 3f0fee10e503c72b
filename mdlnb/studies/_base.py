"""What every study's config dataclass has: construction from a notebook's overrides."""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping


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
            raise ValueError(f"overrides: unknown {cls.__name__} fields {unknown}; "
                             f"known: {sorted(known)}")
        return cls(**overrides)

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
            raise ValueError(f"config: expected {article} {cls.__name__}, "
                             f"got {type(config).__name__}")
        return config
