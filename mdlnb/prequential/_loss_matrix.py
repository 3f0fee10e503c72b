"""The result of stage 1: :class:`LossMatrix`, the next-step log-losses (nats) of a board."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from mdlnb.board._protocol import Protocol
from mdlnb.board.experts import Expert
from mdlnb.core._units import per_example_bits
from mdlnb.infra import _aligned
from mdlnb.infra._io import atomic_savez, read_npz
from mdlnb.switching import diverged


@dataclasses.dataclass(frozen=True, eq=False)
class LossMatrix:
    """Next-step log-losses of K experts on an N-example stream.

    Attributes:
      losses: ``(N, K)`` float32, nats; ``losses[t, k]`` is expert ``k``'s loss
        on stream position ``t``, i.e. on task example ``order[t]``. A NaN
        (a diverged expert, see :meth:`diverged`) is stored as +inf.
      experts: the K experts, column order.
      order: ``(N,)`` int64, task index of each stream position.
      task_name, num_classes, seed, batch_size: provenance (``num_classes`` is 0
        for a regression task, whose ``meta["target"]`` describes its code).
      meta: free-form (cache key, code version, standardisation, timing).
      protocol: the :class:`mdlnb.Protocol` that produced it (its stage-1 part
        decides the losses; the strategy is the one ``evaluate`` was given).
    """

    losses: np.ndarray
    experts: tuple[Expert, ...]
    order: np.ndarray
    task_name: str
    num_classes: int
    seed: int
    batch_size: int
    meta: dict = dataclasses.field(default_factory=dict)
    protocol: Protocol | None = None

    def __post_init__(self) -> None:
        losses = np.asarray(self.losses)
        if losses.ndim != 2 or losses.shape[1] != len(self.experts):
            raise ValueError(f"losses: expected shape (N, {len(self.experts)}), got {losses.shape}")
        order = np.asarray(self.order, np.int64)
        if order.shape != (losses.shape[0],):
            raise ValueError(f"order: expected shape ({losses.shape[0]},), got {order.shape}")
        nan = np.isnan(losses) if losses.dtype.kind == "f" else None
        if losses.dtype != np.float32 or (nan is not None and nan.any()):
            # a new array anyway: an aligned one (stage 2 reads it in place, mdlnb.infra._aligned);
            # NaN (a diverged expert) becomes +inf: the label's probability is 0
            new = _aligned.empty(losses.shape)
            np.copyto(new, losses, casting="unsafe")
            if nan is not None:
                new[nan] = np.inf
            losses = new
        object.__setattr__(self, "losses", losses)
        object.__setattr__(self, "order", order)
        object.__setattr__(self, "experts", tuple(self.experts))

    @property
    def kind(self) -> str:
        """``"classification"`` or ``"regression"`` (``meta["target"]``): a regression
        matrix holds density codelengths (:mod:`mdlnb.core._targets`), defined up to the
        targets' quantisation, never to be mixed with classification codes."""
        return (self.meta.get("target") or {}).get("kind", "classification")

    @property
    def n(self) -> int:
        return int(self.losses.shape[0])

    @property
    def k(self) -> int:
        return int(self.losses.shape[1])

    @property
    def names(self) -> list[str]:
        return [e.name for e in self.experts]

    def totals(self):
        """Per-expert prequential codelength in nats (pandas Series, float64 sums)."""
        return pd.Series(
            self.losses.sum(axis=0, dtype=np.float64), index=self.names, name="codelength_nats"
        )

    def expert_codes(self) -> pd.DataFrame:
        """Each expert's own prequential code, shortest first: ``codelength [nats]``
        (:meth:`totals`) and ``per example [bits]`` (nats / N / ln 2), one row per expert."""
        totals = self.totals().sort_values()
        return totals.to_frame("codelength [nats]").assign(
            **{"per example [bits]": per_example_bits(totals, self.n)}
        )

    @property
    def pruned_at(self) -> np.ndarray:
        """(K,) int64: the stream position from which each expert was pruned (N: never;
        ``meta["prune"]``, :mod:`mdlnb.prequential._prune`); its losses there are +inf,
        not coded."""
        at = self.meta.get("prune", {}).get("pruned_at")
        return np.full(self.k, self.n, np.int64) if at is None else np.asarray(at, np.int64)

    def diverged(self) -> list[tuple[str, int]]:
        """``[(expert name, t), ...]``: experts whose loss became non-finite, with the
        first such stream step t (1-indexed); see :func:`mdlnb.switching.diverged`.
        A pruned expert's +inf after its pruning step is not a divergence."""
        at = self.pruned_at
        return [(self.experts[k].name, t) for k, t in diverged(self.losses) if t <= at[k]]

    def best_expert(self) -> tuple[int, float]:
        """``(index, total nats)`` of the expert with the shortest codelength."""
        tot = self.losses.sum(axis=0, dtype=np.float64)
        k = int(np.argmin(tot))
        return k, float(tot[k])

    def save(self, path: str | Path) -> Path:
        """Write an ``.npz`` atomically (no pickles)."""
        return atomic_savez(
            path,
            losses=self.losses,
            order=self.order,
            experts=np.array(json.dumps([e.config() for e in self.experts])),
            task_name=np.array(self.task_name),
            num_classes=np.int64(self.num_classes),
            seed=np.int64(self.seed),
            batch_size=np.int64(self.batch_size),
            meta=np.array(json.dumps(self.meta, default=str)),
            protocol=np.array(
                json.dumps(None if self.protocol is None else self.protocol.to_dict(), default=str)
            ),
        )

    @classmethod
    def load(cls, path: str | Path, experts: Sequence[Expert] | None = None) -> LossMatrix:
        """Read a file written by :meth:`save`.

        ``experts``: the board to attach, in column order, checked against the
        stored configs; needed for experts that cannot be rebuilt from their
        config (fine-tuned encoders hold parameters). ``None`` rebuilds them.
        """
        path = Path(path)
        if not path.is_file():
            raise ValueError(f"path: no such file {str(path)!r}")
        return cls._from_arrays(read_npz(path, require_checksum=False), experts, path.name)

    @classmethod
    def _from_arrays(cls, z: dict, experts: Sequence[Expert] | None, source: str) -> LossMatrix:
        configs = json.loads(str(z["experts"]))
        if experts is None:
            experts = tuple(Expert.from_config(c) for c in configs)
        elif [json.loads(json.dumps(e.config(), default=str)) for e in experts] != configs:
            raise ValueError(f"experts: do not match the experts stored in {source}")
        proto = json.loads(str(z["protocol"])) if "protocol" in z else None
        if proto is not None:
            proto = Protocol.from_dict(proto, experts=experts)
        return cls(
            losses=z["losses"],
            order=z["order"],
            experts=tuple(experts),
            task_name=str(z["task_name"]),
            num_classes=int(z["num_classes"]),
            seed=int(z["seed"]),
            batch_size=int(z["batch_size"]),
            meta=json.loads(str(z["meta"])),
            protocol=proto,
        )
