"""The pretraining stage's results: the committed encoders' provenance and probe curves
as tidy tables, the label-free scores tracked along training, CLID across models, and
the figures and claims for ``paper/`` (:class:`PretrainingResult`, read back by
:func:`mdlnb.studies.pretraining.result`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mdlnb.api import output
from mdlnb.baselines import labelfree
from mdlnb.research import claims as C
from mdlnb.research import ranking
from mdlnb.studies import _setting
from mdlnb.studies.pretraining import _artifacts, _clid_items

# matplotlib and seaborn are imported inside the functions that draw.

#: The label-free scores and the downstream MDL code whose agreement with the probe
#: along training :meth:`PretrainingResult.tracking` measures (``neg_mdl``: the MDL
#: codelength negated; ``alpha_req_near_1``: −|α − 1|).
TRACKED = (
    "rankme",
    "lidar",
    "twonn_id",
    "cluster_learnability",
    "clid",
    "alpha_req",
    "alpha_req_near_1",
    "neg_mdl",
)


def _derived(g):
    """One encoder's curve with the derived scores: ``clid`` across its own checkpoints
    (min–max of CL plus min–max of TwoNN ID, :func:`mdlnb.baselines.labelfree.clid`),
    ``alpha_req_near_1`` and ``neg_mdl`` (see :meth:`PretrainingResult.tracking`)."""
    g = g.copy()
    ok = (
        g[["cluster_learnability", "twonn_id"]].notna().all(axis=1)
        if {"cluster_learnability", "twonn_id"} <= set(g)
        else g["step"] < 0
    )
    if ok.sum() >= 2:
        g.loc[ok, "clid"] = labelfree.clid(
            g.loc[ok, "cluster_learnability"].to_numpy(), g.loc[ok, "twonn_id"].to_numpy()
        )
    if "alpha_req" in g:
        g["alpha_req_near_1"] = -(g["alpha_req"] - 1.0).abs()
    if "mdl_nats_per_example" in g:
        g["neg_mdl"] = -g["mdl_nats_per_example"]
    return g


#: The columns of :meth:`PretrainingResult.overview`.
OVERVIEW = (
    "encoder",
    "param_count",
    "chosen_step",
    "trained_steps",
    "stop_reason",
    "probe_accuracy",
    "rankme",
)


@dataclasses.dataclass(frozen=True, eq=False)
class PretrainingResult:
    """The committed encoders: ``encoders`` (one row per artifact: provenance,
    probe accuracy at the chosen step) and ``curves`` (one row per evaluation)."""

    encoders: Any
    curves: Any
    directory: Any = None

    def overview(self):
        """One row per committed encoder: its size, the chosen and the trained steps, why
        training stopped, probe accuracy and RankMe at the chosen step (columns of
        ``encoders``)."""
        return self.encoders[list(OVERVIEW)]

    def plot_curves(self):
        """Probe accuracy against pretraining steps, one line per encoder, the chosen
        step marked."""
        import matplotlib.pyplot as plt
        import seaborn as sns

        df = self.curves
        fig, ax = plt.subplots(figsize=(7, 4))
        sns.lineplot(
            data=df, x="step", y="probe_accuracy", hue="encoder", marker="o", markersize=3, ax=ax
        )
        chosen = self.encoders.set_index("encoder")["chosen_step"]
        for enc, g in df.groupby("encoder"):
            row = g[g["step"] == chosen.get(enc, -1)]
            ax.scatter(
                row["step"],
                row["probe_accuracy"],
                s=60,
                facecolors="none",
                edgecolors="black",
                zorder=5,
            )
        ax.set_xlabel("pretraining steps")
        ax.set_ylabel("linear-probe accuracy (held-out split)")
        ax.set_title("Pretraining until the probe stops improving (circle: chosen step)")
        ax.legend(fontsize=7, ncol=2)
        fig.tight_layout()
        return fig

    def findings(self) -> str:
        """Markdown: per encoder the chosen step, why training stopped, and the probe
        accuracy against the untrained encoder's (numbers from the artifacts)."""
        e = self.encoders
        if e.empty:
            return "No encoder artifacts are committed yet (`make pretrain` trains them)."
        rand = e.loc[e["objective"] == "random", "probe_accuracy"]
        base = float(rand.iloc[0]) if len(rand) else float("nan")
        lines = [
            f"{len(e)} encoders are committed; the untrained ViT-S scores "
            f"{base:.1%} on the held-out split."
            if len(rand)
            else f"{len(e)} encoders are committed."
        ]
        for _, r in e[e["objective"] != "random"].iterrows():
            lines.append(
                f"- **{r['encoder']}** ({r['param_count']:,} parameters): "
                f"{r['probe_accuracy']:.1%} at step {r['chosen_step']:,} of "
                f"{r['trained_steps']:,} trained ({r['stop_reason']}; "
                f"{r['probe_accuracy'] - base:+.1%} over untrained)."
            )
        return "\n".join(lines)

    def tracking(self):
        """Per trained encoder and label-free score, Kendall τ_b over its checkpoints
        between the score and the probe accuracy (does the score track representation
        quality along training?). CLID is computed across each encoder's own
        checkpoints (min–max of CL plus min–max of TwoNN ID, :func:`mdlnb.baselines.labelfree.clid`).
        α-ReQ has no better direction (α ≈ 1 is the paper's sweet spot): its τ is given
        as measured and for −|α − 1|. Checkpoints where a score is missing are left out;
        τ needs 3 checkpoints. The downstream MDL codelength (``mdl_nats_per_example``,
        lower is better) enters negated, as ``neg_mdl``, so that for every score a
        positive τ means "moves with the probe"."""
        import pandas as pd

        rows = []
        for enc, g in self.curves.groupby("encoder", sort=True):
            g = _derived(g)
            for score in TRACKED:
                if score not in g:
                    continue
                h = g[["probe_accuracy", score]].dropna()
                if len(h) < 3 or np.ptp(h[score]) == 0 or np.ptp(h["probe_accuracy"]) == 0:
                    continue
                rows.append(
                    {
                        "encoder": enc,
                        "score": score,
                        "checkpoints": len(h),
                        "kendall tau": float(ranking.kendall_tau(h[score], h["probe_accuracy"])),
                    }
                )
        return pd.DataFrame(rows, columns=["encoder", "score", "checkpoints", "kendall tau"])

    def tracking_summary(self, *, level: float = 0.95):
        """Per score, Kendall τ (:meth:`tracking`) summarised over the trained encoders:
        their number, mean τ, its ``level`` t interval over encoders (NaN with fewer
        than 2) and the smallest and largest τ."""
        import pandas as pd

        rows = []
        t = self.tracking()
        for score in [s for s in TRACKED if s in set(t["score"])]:
            taus = t.loc[t["score"] == score, "kendall tau"].to_numpy(float)
            n, mean = len(taus), float(np.mean(taus))
            lo, hi = C.t_interval(taus, level=level)[1:] if n >= 2 else (float("nan"), float("nan"))
            rows.append(
                {
                    "score": score,
                    "encoders": n,
                    "mean tau": mean,
                    f"{level:.0%} low": lo,
                    f"{level:.0%} high": hi,
                    "min tau": float(taus.min()),
                    "max tau": float(taus.max()),
                }
            )
        return pd.DataFrame(
            rows,
            columns=[
                "score",
                "encoders",
                "mean tau",
                f"{level:.0%} low",
                f"{level:.0%} high",
                "min tau",
                "max tau",
            ],
        )

    def across_models(self):
        """The committed encoders as CLID compares models (Lu et al. 2022,
        arXiv:2206.01251, Tables 1–2): one row per encoder at its chosen checkpoint,
        ``probe_accuracy``, ``cluster_learnability``, ``twonn_id`` and ``clid``
        (min–max normalised across these encoders)."""
        chosen = self.encoders.set_index("encoder")["chosen_step"]
        c = self.curves[self.curves["step"] == self.curves["encoder"].map(chosen)]
        c = c[["encoder", "probe_accuracy", "cluster_learnability", "twonn_id"]].dropna()
        c = c.sort_values("encoder").reset_index(drop=True)
        return c.assign(
            clid=labelfree.clid(c["cluster_learnability"].to_numpy(), c["twonn_id"].to_numpy())
        )

    def setting(self) -> list[tuple[str, str, str]]:
        """CLID's setting (Lu et al. 2022, Sec. 3) against this run's committed encoders."""
        e = self.encoders
        return [
            (
                "checkpoints",
                "28 ImageNet SSL checkpoints (ResNet-18/50, ViTs; SimCLR, BYOL, "
                "MoCo, SwAV, DINO, ...)",
                f"{len(e)} committed encoders ({_setting.fmt_range(e['param_count'], 'parameters')}"
                f"), pretrained on Fashion-MNIST for {_setting.fmt_range(e['chosen_step'], 'steps')}",
            ),
            (
                "accuracy",
                "ImageNet top-1 (k-NN / linear)",
                "held-out linear-probe accuracy on Fashion-MNIST",
            ),
        ]

    def tracking_claim(self, *, alpha: float = 0.05):
        """Claim (m), CLID's claim: across models, CLID correlates with accuracy. Kendall
        τ_b between CLID and probe accuracy over the committed encoders at their chosen
        checkpoints, CLID normalised across the encoders of each resample; percentile
        bootstrap over encoders; paper (CLID Table 1, 28 ImageNet checkpoints): τ = 0.75.
        The along-training tracking (:meth:`tracking`) is reported as a finding."""
        m = self.across_models()

        def tau(rows) -> float:
            t = np.vstack(rows)
            cl, ident, acc = t[:, 0], t[:, 1], t[:, 2]
            if np.ptp(cl) == 0 or np.ptp(ident) == 0 or np.ptp(acc) == 0:
                return float("nan")
            return float(ranking.kendall_tau(labelfree.clid(cl, ident), acc))

        rows = list(m[["cluster_learnability", "twonn_id", "probe_accuracy"]].to_numpy(float))
        d = C.bootstrap_effect(rows, tau, paper_effect=0.75, level=1 - alpha, unit="encoders")
        along = self.tracking_summary(level=1 - alpha).set_index("score")
        extra = (
            f"; along each encoder's own pretraining (a finding, not this claim): mean τ "
            f"{along.loc['clid', 'mean tau']:.3g} over {int(along.loc['clid', 'encoders'])}"
            " encoders"
            if "clid" in along.index
            else ""
        )
        return C.Claim.decided(
            "m",
            "The label-free CLID score correlates with downstream accuracy across models.",
            "Lu et al. 2022 Sec. 3.3, Table 1",
            "Kendall τ 0.75 between CLID and ImageNet top-1 across 28 SSL checkpoints (Table 1)",
            f"Kendall τ_b between CLID and the held-out linear-probe accuracy on the pretraining "
            f"task across the {len(m)} committed encoders at their chosen checkpoints (CLID "
            "min–max normalised across the encoders of each resample); percentile bootstrap "
            "over encoders",
            d,
            effect="τ(CLID, probe accuracy) across encoders",
            our_value=d.detail + extra,
        )

    def clid_grid(
        self,
        *,
        neighbours: Sequence[int] = _clid_items.NEIGHBOURS,
        clusters: Sequence[int] = _clid_items.CLUSTERS,
        rows: int | None = None,
        cache: bool = True,
    ):
        """Cluster learnability of every committed encoder at its chosen step over CLID
        Fig. 2's grid of k-NN ``neighbours`` × k-means ``clusters`` (√N always among
        them), on the held-out rows its monitor scored (the first ``rows``;
        :func:`._clid_items.encoder_grid`, one cached unit per encoder): long frame
        (encoder, clusters, neighbours, rows, cl)."""
        import pandas as pd

        out = []
        for _, r in self.encoders.iterrows():
            prov = _artifacts.check(r["name"], directory=self.directory)
            out += [
                {"encoder": r["encoder"], **g}
                for g in _clid_items.encoder_grid(
                    prov,
                    self.directory,
                    neighbours=neighbours,
                    clusters=clusters,
                    rows=rows,
                    cache=cache,
                )
            ]
        return pd.DataFrame(out, columns=["encoder", "clusters", "neighbours", "rows", "cl"])

    def clid_robustness(self, **grid: Any):
        """CLID Fig. 2's numbers: per (clusters, neighbours), Pearson ρ and Kendall τ
        between CLID / W-CLID and probe accuracy across the committed encoders
        (``grid``: the settings of :meth:`clid_grid`)."""
        return _clid_items.robustness_table(self.clid_grid(**grid), self.across_models())

    def clid_claims(self, *, alpha: float = 0.05, **grid: Any) -> list:
        """Claims (p1)–(p3) (:mod:`._clid_items`): CLID Fig. 1 / Table 1 and Fig. 2 across
        the committed encoders (``grid``: the settings of :meth:`clid_grid`)."""
        return _clid_items.clid_claims(self.across_models(), self.clid_grid(**grid), alpha=alpha)

    def plot_clid_landscape(self):
        """CLID Fig. 1: CL against TwoNN ID at every checkpoint, CLID against accuracy."""
        return _clid_items.plot_landscape(self.curves, self.across_models())

    def plot_clid_robustness(self, **grid: Any):
        """CLID Fig. 2: the predictor's correlation over neighbours × clusters."""
        return _clid_items.plot_robustness(self.clid_robustness(**grid))

    def plot_tracking(self):
        """Each label-free score — CLID among them, as claim m tests it — against the
        probe accuracy along training: one panel per score, one line per trained encoder,
        each score min–max scaled per encoder to [0, 1] (its own checkpoints), so panels
        share one axis; the claim's across-model τ is on the claims page."""
        import matplotlib.pyplot as plt

        names = {
            "rankme": "RankMe",
            "lidar": "LiDAR",
            "twonn_id": "TwoNN ID",
            "cluster_learnability": "cluster learnability",
            "clid": "CLID",
            "alpha_req": "α-ReQ",
            "neg_mdl": "−MDL (nats/example)",
        }
        derived = [
            _derived(g)
            for _, g in self.curves[self.curves["objective"] != "random"].groupby("encoder")
        ]
        scores = [s for s in names if any(s in g and g[s].notna().sum() >= 2 for g in derived)]
        fig, axes = plt.subplots(
            1,
            len(scores),
            figsize=(3.0 * len(scores), 3.3),
            sharey=True,
            sharex=True,
            squeeze=False,
        )
        for ax, score in zip(axes[0], scores):
            for g in derived:
                h = g[["probe_accuracy", score]].dropna() if score in g else g.iloc[:0]
                if len(h) >= 2 and np.ptp(h[score]) > 0:
                    x = (h[score] - h[score].min()) / np.ptp(h[score])
                    ax.plot(
                        x, h["probe_accuracy"], marker="o", markersize=3, label=g["encoder"].iloc[0]
                    )
            ax.set_title(names[score], fontsize=10)
            ax.set_xlabel("score, min–max per encoder")
        axes[0][0].set_ylabel("probe accuracy (held-out)")
        handles = {}
        for ax in axes[0]:  # one legend for all panels: an encoder may miss a score
            for h, lab in zip(*ax.get_legend_handles_labels()):
                handles.setdefault(lab, h)
        fig.suptitle(
            "Label-free scores along pretraining (one point per checkpoint; a score "
            "that tracks quality rises with the probe)"
        )
        fig.tight_layout(rect=(0, 0, 0.88, 1))
        fig.legend(handles.values(), handles.keys(), loc="center right", fontsize=7)
        return fig

    def save(self, paper_dir: str | Path = "paper", *, clid_grid: dict | None = None) -> list[Path]:
        """Write the tables and figures of the notebook (``clid_grid``: the settings of
        :meth:`clid_grid` for CLID Fig. 2)."""
        import matplotlib.pyplot as plt

        grid = dict(clid_grid or {})

        cols = [
            "encoder",
            "objective",
            "arch",
            "size",
            "param_count",
            "chosen_step",
            "trained_steps",
            "stop_reason",
            "probe_accuracy",
            "probe_nll_nats",
            "rankme",
            "final_loss",
            "sha256",
        ]
        paths = list(output.save_table(self.encoders[cols], "pretraining_encoders", paper_dir))
        paths += output.save_table(
            self.curves.drop(columns=["train_seconds"]),
            "pretraining_probe_curves",
            paper_dir,
            digits=4,
        )
        fig = self.plot_curves()
        paths.append(output.save_figure(fig, "pretraining_probe_curves", paper_dir))
        plt.close(fig)
        paths += list(output.save_table(self.tracking(), "pretraining_tracking", paper_dir))
        paths += list(
            output.save_table(self.tracking_summary(), "pretraining_tracking_summary", paper_dir)
        )
        fig = self.plot_tracking()
        paths.append(output.save_figure(fig, "pretraining_tracking", paper_dir))
        plt.close(fig)
        paths += list(
            output.save_table(self.across_models(), "pretraining_across_models", paper_dir)
        )
        robust = self.clid_robustness(**grid)
        paths += list(output.save_table(robust, "pretraining_clid_robustness", paper_dir, digits=3))
        for name, fig in (
            ("clid_landscape", self.plot_clid_landscape()),
            ("clid_robustness", _clid_items.plot_robustness(robust)),
        ):
            paths.append(output.save_figure(fig, f"pretraining_{name}", paper_dir))
            plt.close(fig)
        return paths
