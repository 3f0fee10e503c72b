"""The study's result: one tidy frame, compact traces, and the views the notebooks use.

:class:`EncodersResult` holds the frames; its methods are thin views over them,
each delegating to the module of its concern: tables (:mod:`._tables`), claims
(:mod:`._claims`, :mod:`._more_claims`, :mod:`._table_claims`,
:mod:`._clid_transfer`), figures (:mod:`._plots`) and findings in words
(:mod:`._findings`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mdlnb import data
from mdlnb.api import output
from mdlnb.board._arguments import resolve_protocol
from mdlnb.studies import _setting
from mdlnb.studies.encoder_grid import (
    _claims,
    _clid_transfer,
    _diagnosis,
    _findings,
    _more_claims,
    _paper,
    _plots,
    _significance,
    _table_claims,
    _tables,
)


@dataclasses.dataclass(frozen=True, eq=False)
class EncodersResult:
    """Output of :func:`mdlnb.studies.encoder_grid.run`.

    Attributes:
      config: the :class:`EncodersConfig`.
      frame: tidy (encoder, architecture, objective, size, task, group, metric,
        value, seed); metrics in :data:`._pair.METRICS` (codelengths in nats
        or bits/example, as named; accuracies top-1 in [0, 1]).
      posterior: mean readout posterior per log-spaced bin of t (encoder, task,
        group, seed, t_start, t_end, readout, probability).
      curves: cumulative switching codelength at each bin end (encoder, task,
        seed, n, cumulative [nats]).
      encoders: per encoder architecture, objective, size, parameters,
        feature_dim, pretraining steps and final loss.
      sizes: training examples (stream length N) per task.
      cached_pairs: pairs read from disk rather than computed.
      seconds: wall time per stage of this call, and the recorded computing
        time of all pairs (``mdl (recorded)``, ``accuracy (recorded)``).
    """

    config: Any
    frame: Any
    posterior: Any
    curves: Any
    encoders: Any
    sizes: Mapping[str, int]
    cached_pairs: int
    seconds: Mapping[str, float]

    # -- selections ----------------------------------------------------------
    def select(
        self,
        *,
        architecture: str | Sequence[str] | None = None,
        objective: str | Sequence[str] | None = None,
        size: str | Sequence[str] | None = None,
    ) -> list[str]:
        """Encoder strings matching every given field (a value or a list), in config order."""
        t = self.encoders
        for col, v in (("architecture", architecture), ("objective", objective), ("size", size)):
            if v is not None:
                t = t[t[col].isin([v] if isinstance(v, str) else list(v))]
        if t.empty:
            raise ValueError("select: no encoder matches")
        return list(t["encoder"])

    def encoder_rows(self, encoders: Sequence[str]):
        """The rows of :attr:`encoders` (architecture, objective, size, parameters, ...) of
        the given encoder strings, in config order."""
        return self.encoders[self.encoders["encoder"].isin(list(encoders))]

    @property
    def protocol_label(self) -> str:
        """The stage 1 + 2 protocol the grid ran (board size, B, strategy)."""
        return repr(resolve_protocol(self.config.protocol))

    @property
    def groups(self) -> dict[str, str]:
        return self.frame.drop_duplicates("task").set_index("task")["group"].to_dict()

    # -- tables (see _tables) ------------------------------------------------
    def scores(self, metric: str = "codelength [bits/example]", encoders=None):
        return _tables.scores(self.frame, metric, encoders=encoders)

    def average_ranks(self, encoders: Sequence[str], *, group: str | None = None):
        return _tables.average_rank_table(self.frame, encoders, group=group)

    def group_ranks(self, encoders: Sequence[str], *, method: str = "mdl"):
        return _tables.group_rank_table(self.frame, encoders, method=method)

    def friedman(self, encoders: Sequence[str]):
        return _significance.friedman_table(self.frame, encoders)

    def critical_differences(
        self, encoders: Sequence[str], *, alpha: float = 0.10, paper: str = "objectives"
    ):
        return _significance.cd_table(self.frame, encoders, alpha=alpha, paper=paper)

    def permutation_variance(self, encoders: Sequence[str]):
        return _significance.permutation_variance(self.frame, encoders)

    def permutation_summary(self, encoders: Sequence[str]):
        return _significance.permutation_summary(self.permutation_variance(encoders))

    def ranking_agreement(self, encoders: Sequence[str]):
        """Kendall τ between methods' orderings, this run beside the paper's Table 1a."""
        ours = _tables.ranking_agreement(self.frame, encoders)
        return ours.rename(columns={"kendall tau": "this run"}).assign(
            **{"paper Table 1a": _paper.kendall_between_methods()["kendall tau"].to_numpy()}
        )

    def scaling(self, encoders: Sequence[str]):
        return _tables.scaling_table(self.frame, self.encoders, encoders)

    def scaling_differences(self, encoders: Sequence[str]):
        """Per encoder its paired difference to its family's smallest (bits/example,
        mean and sd over orders): :func:`._tables.scaling_differences`."""
        return _tables.scaling_differences(self.frame, self.encoders, encoders)

    def regret(self, larger: str, smaller: str):
        return _tables.regret_along_n(self.curves, larger, smaller)

    def preferred_readouts(self, encoders: Sequence[str] | None = None, *, index: bool = True):
        """Preferred readout per (encoder, task), encoders as the index (``index=False``:
        as the first column, the table as ``save`` writes it)."""
        table = _tables.preferred_readout_table(self.frame, encoders)
        return table if index else table.reset_index()

    def switching(self, encoders: Sequence[str] | None = None):
        return _tables.switching_by_group(self.frame, dict(self.sizes), encoders)

    def posteriors(self, pairs: Sequence[tuple[str, str]]):
        """The stored posterior rows (every order, every log-spaced bin of t) of the
        (encoder, task) ``pairs``: the data behind :meth:`plot_posteriors`."""
        import pandas as pd

        post = self.posterior
        keep = (
            pd.Series(list(zip(post["encoder"], post["task"])))
            .isin([tuple(p) for p in pairs])
            .to_numpy()
        )
        missing = {tuple(p) for p in pairs} - set(zip(post["encoder"][keep], post["task"][keep]))
        if missing:
            raise ValueError(f"pairs: not in the grid: {sorted(missing)}")
        return post[keep].reset_index(drop=True)

    def timing(self):
        """Seconds per stage (this call's wall time, and recorded pair compute time)."""
        import pandas as pd

        return pd.DataFrame([{"stage": k, "seconds": v} for k, v in self.seconds.items()])

    # -- claims (see _claims, _more_claims) -----------------------------------
    def objectives_claims(self, encoders: Sequence[str], *, alpha: float = 0.05) -> list:
        """Claims (a1), (a2), (f) (:mod:`._claims`) and (l) (:mod:`._more_claims`)."""
        return _claims.objectives_claims(self, encoders, alpha=alpha) + [
            _more_claims.aggregation_claim(self, encoders, alpha=alpha)
        ]

    def readout_claims(self, encoders: Sequence[str] | None = None, *, alpha: float = 0.05) -> list:
        """Claims (d1), (d2), (d3) (:mod:`._claims`) and (k) (:mod:`._more_claims`: the
        in-domain tasks are those on the pretraining data's images, :meth:`in_domain`)."""
        return _claims.readout_claims(self, encoders, alpha=alpha) + [
            _more_claims.domain_claim(self, self.in_domain(), encoders, alpha=alpha)
        ]

    def table_claims(self, encoders: Sequence[str], *, alpha: float = 0.05) -> list:
        """Table 1a's pairwise claims (n1)–(n7) and Table 2's group claims (o1)–(o4)
        (:mod:`._table_claims`) on the MDL ranks among ``encoders``."""
        return _table_claims.table_claims(self.frame, encoders, alpha=alpha)

    def pairwise_ranks(self, encoders: Sequence[str], *, alpha: float = 0.10):
        """Table 1a's pairs on this run: average-rank differences, tasks won, Nemenyi CD
        (:func:`._table_claims.pairwise_table`)."""
        return _table_claims.pairwise_table(self.frame, encoders, alpha=alpha)

    def group_contrasts(self, encoders: Sequence[str]):
        """Per task, Table 2's contrasts supervised − self-supervised and MAE − others
        (:func:`._table_claims.group_contrasts`)."""
        return _table_claims.group_contrasts(self.frame, encoders)

    def clid_transfer(self, pretraining: Any):
        """CLID Table 3 on the grid: per out-of-domain task, Kendall τ of in-domain
        accuracy, CLID and their rank product with transfer accuracy across the committed
        encoders; ``pretraining``: :func:`mdlnb.studies.pretraining.result`
        (:func:`._clid_transfer.transfer_table`)."""
        return _clid_transfer.transfer_table(
            self.frame, pretraining.across_models(), in_domain=self.in_domain()
        )

    def clid_transfer_claims(self, pretraining: Any, *, alpha: float = 0.05) -> list:
        """Claims (p4), (p5) (:mod:`._clid_transfer`): CLID Table 3 across the committed
        encoders, the grid's out-of-domain tasks as transfer tasks."""
        return _clid_transfer.transfer_claims(
            self.frame, pretraining.across_models(), in_domain=self.in_domain(), alpha=alpha
        )

    def in_domain(self) -> list[str]:
        """The grid's tasks in the pretraining domain: those whose images come from the same
        source as ``config.pretrain_data`` (registry ``source``; e.g. ``fashion_mnist`` and
        ``fashion_mnist_category``)."""
        source, known = data.spec(self.config.pretrain_data).source, set(data.names())
        return [t for t in self.sizes if t in known and data.spec(t).source == source]

    def scaling_claims(
        self, mae: Sequence[str], supervised: Sequence[str], *, alpha: float = 0.05
    ) -> list:
        """Claims (j1), (j2) (:mod:`._more_claims`); ``mae`` and ``supervised`` are each
        [smallest, largest] encoder."""
        return _more_claims.scaling_claims(self, mae, supervised, alpha=alpha)

    def setting(self, encoders: Sequence[str] | None = None) -> list[tuple[str, str, str]]:
        """The paper's setting against this grid's (``encoders``: those the notebook
        compares, default all), rows for the claims page (:mod:`mdlnb.studies._setting`)."""
        e = (
            self.encoders
            if encoders is None
            else self.encoders[self.encoders["encoder"].isin(list(encoders))]
        )
        groups = self.frame.drop_duplicates("task")["group"].value_counts()
        trained = e.loc[e["pretrain_steps"] > 0, "pretrain_steps"]
        ours = {
            "encoders": f"{len(e)} ({', '.join(e['encoder'])}): "
            f"{_setting.fmt_range(e['parameters'], 'parameters')}, pretrained on "
            f"{self.config.pretrain_data} for "
            f"{_setting.fmt_range(trained, 'steps')}",
            "tasks": f"{len(self.sizes)} embedded tasks ("
            + ", ".join(f"{groups.get(g, 0)} {g}" for g in ("natural", "specialized", "structured"))
            + ")",
            "examples per task (N)": _setting.fmt_range(self.sizes.values()),
            "readouts": _setting.board_text(self.config.protocol),
            "orders": f"{len(self.config.seeds)} orders per (encoder, task)",
        }
        return _setting.rows("readout", ours)

    def diagnosis(self, encoders: Sequence[str] | None = None):
        """Why an encoder ranks where it does: effective rank, class separation and the
        decodability of image statistics per (encoder, task) (:mod:`._diagnosis`)."""
        return _diagnosis.supervised_diagnosis(self, encoders=encoders)

    def diagnosis_findings(
        self,
        diagnosis,
        *,
        encoder: str = "supervised:vit_S:trained",
        reference: str = "random:vit_S:trained",
    ) -> str:
        """:meth:`diagnosis` in words (Markdown), ``encoder`` against ``reference``, after
        the two encoders' average ranks over the diagnosed encoders."""
        return _findings.diagnosis_findings(self, diagnosis, encoder=encoder, reference=reference)

    # -- figures (see _plots) ------------------------------------------------
    def plot_cd(self, encoders: Sequence[str], *, alpha: float = 0.10, group: str | None = None):
        return _plots.cd_diagrams(self.frame, encoders, alpha=alpha, group=group)

    def plot_rank_boxes(self, encoders: Sequence[str], *, group: str | None = None):
        return _plots.rank_boxes(self.frame, encoders, group=group)

    def plot_scaling(self, encoders: Sequence[str]):
        return _plots.scaling(self.scaling(encoders), self.scaling_differences(encoders))

    def plot_regret(self, larger: str, smaller: str, *, ax: Any = None):
        return _plots.regret(self.regret(larger, smaller), groups=self.groups, ax=ax)

    def plot_regrets(self, pairs: Sequence[Sequence[str]]):
        """:meth:`plot_regret` of each [larger, smaller] pair side by side, one y scale."""
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(
            1,
            len(pairs),
            figsize=(6 * len(pairs), 4.0),
            sharey=True,
            squeeze=False,
            layout="constrained",
        )
        for ax, (larger, smaller) in zip(axes[0], pairs):
            self.plot_regret(larger, smaller, ax=ax)
        return fig

    def plot_preferred_readouts(self, encoders: Sequence[str] | None = None):
        return _plots.preference_heatmap(
            self.preferred_readouts(encoders),
            self.groups,
            orders=len(self.config.seeds),
            agreement=_tables.preference_agreement(self.frame, encoders),
        )

    def plot_posteriors(self, pairs: Sequence[tuple[str, str]], *, seed: int | None = None):
        return _plots.posteriors(
            self.posterior, pairs, seed=self.config.seeds[0] if seed is None else seed
        )

    def plot_switching(self, encoders: Sequence[str] | None = None):
        f = self.frame if encoders is None else self.frame[self.frame["encoder"].isin(encoders)]
        return _plots.switching(f, dict(self.sizes))

    # -- prose (see _findings) -------------------------------------------------
    def objectives_findings(self, encoders: Sequence[str], *, alpha: float = 0.10) -> str:
        """What the objectives run found, beside Table 1a / Table 2 / App. A.7 (Markdown)."""
        return _findings.objectives_findings(self, encoders, alpha=alpha)

    def group_findings(self, encoders: Sequence[str]) -> str:
        """Supervised vs self-supervised average MDL rank per task group (paper Table 2, Fig. 7)."""
        return _findings.group_findings(self, encoders)

    def scaling_findings(self, encoders: Sequence[str]) -> str:
        """Does a larger encoder of one family code shorter? (paper Table 1b, Fig. 8)."""
        return _findings.scaling_findings(self, encoders)

    def regret_findings(self, larger: str, smaller: str) -> str:
        return _findings.regret_findings(self, larger, smaller)

    def readout_findings(self, encoders: Sequence[str] | None = None) -> str:
        """Preferred depth and switching frequency per task group (paper Fig. 2, Sec. 4)."""
        return _findings.readout_findings(self, encoders)

    # -- files ---------------------------------------------------------------
    def save(
        self,
        paper_dir: str | Path = "paper",
        *,
        prefix: str = "encoders",
        parts: Mapping[str, Any] | None = None,
        frame: bool = False,
    ) -> list[Path]:
        """Write the encoder table (csv + md) atomically, the tidy frame too if
        ``frame``, plus ``parts``: ``{name: DataFrame | Figure | Axes}`` as
        ``<prefix>_<name>``. Timings (:meth:`timing`) are not written: the same
        run must regenerate identical files."""
        import matplotlib.pyplot as plt
        import pandas as pd

        paths = []
        base = {"encoders": (self.encoders, 4), **({"frame": (self.frame, 5)} if frame else {})}
        for name, (df, digits) in base.items():
            paths += output.save_table(df, f"{prefix}_{name}", paper_dir, digits=digits)
        for name, obj in (parts or {}).items():
            if isinstance(obj, pd.DataFrame):
                paths += output.save_table(obj, f"{prefix}_{name}", paper_dir, digits=3)
            else:
                paths.append(output.save_figure(obj, f"{prefix}_{name}", paper_dir))
                plt.close(getattr(obj, "figure", obj))
        return paths
