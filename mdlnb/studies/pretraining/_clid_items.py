"""CLID Fig. 1 and Fig. 2 on the committed encoders (claims p1–p3).

Lu et al. 2022 (arXiv:2206.01251) plot, for 28 ImageNet SSL checkpoints, cluster
learnability (CL) against TwoNN intrinsic dimension (ID) coloured by accuracy, and CLID
against accuracy (Fig. 1, Sec. 3.3), and the correlation of the predictor with accuracy
as CL's two hyperparameters vary: the k-NN learner's neighbours and the k-means cluster
count (Fig. 2, Sec. 3.4). Here the checkpoints are the committed encoders at their chosen
steps (every evaluated checkpoint in Fig. 1's left panel), accuracy is their linear probe
on the held-out Fashion-MNIST split, and CL and ID are computed, as during pretraining, on
the first 2,000 held-out images (cosine k-means, key 0). Rules and paper values fixed
before any run; the units are the encoders (percentile bootstrap over them, CLID's
min–max normalisation and W-CLID's fit redone in each resample):

* (p1) *CLID combines learnability and expressiveness better than either alone* (Fig. 1,
  Table 1): τ_b(CLID, accuracy) − max(τ_b(CL, accuracy), τ_b(ID, accuracy)). Paper
  (Table 1): 0.75 − 0.44 = 0.31.
* (p2) *fewer neighbours give a better predictor* (Fig. 2 left, Sec. 3.4): Pearson
  ρ(W-CLID, accuracy) with 1 neighbour minus with the grid's most (50), at √N clusters.
* (p3) *too few clusters make the predictor worse* (Fig. 2 right): ρ(W-CLID, accuracy)
  at √N clusters minus at the grid's fewest (2), with 1 neighbour.

Fig. 2's values are not in the paper's text; (p2) and (p3) take the paper's effect as
the fall from CLID's ρ = 0.92 (Sec. 3.3) to the rotation-prediction baseline's 0.61, the
level the paper judges its configurations against (Sec. 3.4: "still … higher … than the
rotation prediction for a wide range of the configurations"): 0.31.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from mdlnb import data
from mdlnb.baselines import labelfree
from mdlnb.baselines.labelfree._inputs import _as_key, _normalize_rows, features_matrix
from mdlnb.baselines.labelfree._kmeans import kmeans
from mdlnb.baselines.labelfree._neighbours import knn_accuracy
from mdlnb.infra._io import atomic_write_text, cache_dir, content_hash
from mdlnb.research import claims as C
from mdlnb.research import ranking
from mdlnb.studies.pretraining import _artifacts
from mdlnb.studies.pretraining._config import PretrainingConfig
from mdlnb.studies.pretraining._probe import ProbeMonitor, _features

#: Neighbours of the k-NN learner and k-means cluster counts of the robustness grid.
NEIGHBOURS = (1, 3, 5, 10, 20, 50)
CLUSTERS = (2, 5, 10, 20, 45, 100, 200)
#: CLID Table 1 (Kendall τ with ImageNet top-1) and Sec. 3.3–3.4's Pearson ρ.
TABLE_1_TAU = {"clid": 0.75, "cl": 0.44, "twonn_id": 0.09}
PEARSON_CLID, PEARSON_ROTATION = 0.92, 0.61
PAPER_EFFECTS = {
    "p1": TABLE_1_TAU["clid"] - TABLE_1_TAU["cl"],
    "p2": PEARSON_CLID - PEARSON_ROTATION,
    "p3": PEARSON_CLID - PEARSON_ROTATION,
}
CACHE_VERSION = 1


def cl_grid(
    z: Any,
    key: int = 0,
    *,
    neighbours: Sequence[int] = NEIGHBOURS,
    clusters: Sequence[int] = CLUSTERS,
) -> dict[tuple[int, int], float]:
    """Cluster learnability of features ``z`` at every (clusters, neighbours):
    :func:`mdlnb.baselines.labelfree.cluster_learnability` with ``key``, cosine, half the rows to
    train, one k-means per cluster count shared by the neighbour counts (the same
    pseudo-labels and split that function draws)."""
    import jax

    z = _normalize_rows(features_matrix(z, min_rows=2), "z")
    n = len(z)
    n_train = n // 2
    k_km, k_split = jax.random.split(_as_key(key))
    perm = np.asarray(jax.random.permutation(k_split, n))
    tr, te = perm[:n_train], perm[n_train:]
    out = {}
    for c in clusters:
        if not 1 <= c <= n:
            raise ValueError(f"clusters: each must lie in [1, N={n}], got {c}")
        labels = kmeans(z, int(c), k_km, max_iter=100, n_init=10).labels
        for k in neighbours:
            out[(int(c), int(k))] = knn_accuracy(
                z[tr], labels[tr], z[te], labels[te], n_neighbors=int(k)
            )
    return out


def _pearson(x, y) -> float:
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return float(np.corrcoef(x, y)[0, 1])


def predictors(cl, ident, acc) -> dict[str, np.ndarray]:
    """CLID and W-CLID (fitted to ``acc``) of models with CL ``cl`` and ID ``ident``."""
    cl, ident, acc = (np.asarray(v, float) for v in (cl, ident, acc))
    return {
        "CLID": labelfree.clid(cl, ident),
        "W-CLID": labelfree.wclid(cl, ident, acc).scores
        if len(acc) >= 3
        else np.full(len(acc), np.nan),
    }


def robustness_table(grid, across):
    """Fig. 2's numbers: per (clusters, neighbours), Pearson ρ and Kendall τ_b across the
    encoders between CLID / W-CLID and probe accuracy. ``grid``: long frame (encoder,
    clusters, neighbours, cl) of :func:`cl_grid` values; ``across``: the encoders'
    ``twonn_id`` and ``probe_accuracy`` (:meth:`PretrainingResult.across_models`)."""
    import pandas as pd

    a = across.set_index("encoder")
    rows = []
    for (c, k), g in grid.groupby(["clusters", "neighbours"], sort=True):
        g = g.set_index("encoder").loc[[e for e in a.index if e in set(g["encoder"])]]
        acc, ident = a.loc[g.index, "probe_accuracy"], a.loc[g.index, "twonn_id"]
        p = predictors(g["cl"], ident, acc)
        rows.append(
            {
                "clusters": int(c),
                "neighbours": int(k),
                "encoders": len(g),
                "clusters / N": float(c) / float(g["rows"].iloc[0]),
                "pearson CLID": _pearson(p["CLID"], acc),
                "pearson W-CLID": _pearson(p["W-CLID"], acc),
                "kendall CLID": (
                    float(ranking.kendall_tau(p["CLID"], acc))
                    if np.ptp(p["CLID"]) > 0
                    else float("nan")
                ),
            }
        )
    return pd.DataFrame(rows)


def _taus(rows) -> float:
    t = np.vstack(rows)
    cl, ident, acc = t[:, 0], t[:, 1], t[:, 2]
    if min(np.ptp(cl), np.ptp(ident), np.ptp(acc)) == 0:
        return float("nan")
    tau = [ranking.kendall_tau(v, acc) for v in (labelfree.clid(cl, ident), cl, ident)]
    return float(tau[0] - max(tau[1], tau[2]))


def _rho_difference(rows) -> float:
    """ρ(W-CLID at config A) − ρ(W-CLID at config B); rows (cl_A, cl_B, id, acc)."""
    t = np.vstack(rows)
    acc = t[:, 3]
    if len(acc) < 3:
        return float("nan")
    a, b = (_pearson(labelfree.wclid(t[:, i], t[:, 2], acc).scores, acc) for i in (0, 1))
    return a - b


def default_clusters(rows: int) -> int:
    """CL's default cluster count, round(√N) (CLID Sec. 3.1)."""
    return max(1, int(round(math.sqrt(rows))))


def _config_rows(grid, across, a: tuple[int, int], b: tuple[int, int]) -> list:
    cl = grid.set_index(["encoder", "clusters", "neighbours"])["cl"]
    acc = across.set_index("encoder")
    return [
        np.array(
            [cl.loc[(e, *a)], cl.loc[(e, *b)], acc.loc[e, "twonn_id"], acc.loc[e, "probe_accuracy"]]
        )
        for e in acc.index
        if (e, *a) in cl.index and (e, *b) in cl.index
    ]


def clid_claims(across, grid, *, alpha: float = 0.05) -> list:
    """Claims (p1)–(p3) (module docstring): ``across`` the committed encoders at their
    chosen steps (:meth:`PretrainingResult.across_models`), ``grid`` the CL robustness grid
    (long: encoder, clusters, neighbours, rows, cl)."""
    level = 1 - alpha
    rows = list(across[["cluster_learnability", "twonn_id", "probe_accuracy"]].to_numpy(float))
    d = C.bootstrap_effect(
        rows, _taus, paper_effect=PAPER_EFFECTS["p1"], level=level, unit="encoders"
    )
    p1 = C.Claim.decided(
        "p1",
        "CLID, combining learnability (CL) and expressiveness (ID), ranks models by "
        "accuracy better than either part alone.",
        "Lu et al. 2022 Sec. 3.3, Fig. 1, Table 1",
        "Kendall τ with ImageNet top-1: CLID 0.75, CL 0.44, ID 0.09 (28 checkpoints): "
        f"0.75 − 0.44 = {PAPER_EFFECTS['p1']:.2f}",
        f"across the {len(rows)} committed encoders at their chosen steps, τ_b(CLID, probe "
        "accuracy) − max(τ_b(CL, ·), τ_b(ID, ·)) (CLID min–max normalised in each "
        "resample); percentile bootstrap over encoders",
        d,
        effect="Δτ(CLID − best part)",
    )
    n = int(grid["rows"].iloc[0]) if len(grid) else 0
    sq = default_clusters(n) if n else 0
    ks, cs = sorted(set(grid["neighbours"])), sorted(set(grid["clusters"]))
    out = [p1]
    labels = {
        "p2": f"Δρ(W-CLID): {ks[0] if ks else 1} − {ks[-1] if ks else 1} neighbours",
        "p3": f"Δρ(W-CLID): √N = {sq} − {cs[0] if cs else 1} clusters",
    }
    for cid, a, b, statement, what in (
        (
            "p2",
            (sq, ks[0] if ks else 1),
            (sq, ks[-1] if ks else 1),
            "Fewer neighbours in CL's k-NN learner give a better predictor.",
            f"{ks[0] if ks else 1} neighbour minus {ks[-1] if ks else 1} neighbours, at "
            f"√N = {sq} clusters",
        ),
        (
            "p3",
            (sq, 1),
            (cs[0] if cs else 1, 1),
            "Too few k-means clusters in CL make the predictor worse.",
            f"√N = {sq} clusters minus {cs[0] if cs else 1} clusters, with 1 neighbour",
        ),
    ):
        r = _config_rows(grid, across, a, b)
        d = C.bootstrap_effect(
            r, _rho_difference, paper_effect=PAPER_EFFECTS[cid], level=level, unit="encoders"
        )
        out.append(
            C.Claim.decided(
                cid,
                statement,
                "Lu et al. 2022 Sec. 3.4, Fig. 2",
                "qualitative (Fig. 2's values are not in the text); taken as the fall from "
                f"CLID's Pearson ρ {PEARSON_CLID} to the rotation baseline's {PEARSON_ROTATION}, "
                f"the paper's reference level: {PAPER_EFFECTS[cid]:.2f}",
                f"across the {len(r)} committed encoders, Pearson ρ(W-CLID, probe accuracy) at "
                f"{what} (CL on {n:,} held-out images; W-CLID refitted in each resample); "
                "percentile bootstrap over encoders",
                d,
                effect=labels[cid],
            )
        )
    return out


def _held_out_rows(prov: dict):
    """The held-out images the pretraining monitor scored CL and ID on: those its
    provenance names, else (artifacts written before the monitor was recorded) the stage's
    defaults, :class:`PretrainingConfig` and :class:`ProbeMonitor`."""
    cfg = PretrainingConfig()
    mon = prov.get("monitor") or {
        "probe_test": prov.get("data") or cfg.data,
        "probe_test_size": cfg.probe_test_size,
        "label_free_rows": ProbeMonitor.__dataclass_fields__["label_free_rows"].default,
    }
    test = data.load(
        mon["probe_test"], split="test", size=mon["probe_test_size"], seed=prov["seed"]
    )
    rows = min(int(mon["label_free_rows"]), len(test))
    return test.take(np.arange(rows)), rows


def encoder_grid(
    prov: dict,
    directory=None,
    *,
    neighbours: Sequence[int] = NEIGHBOURS,
    clusters: Sequence[int] = CLUSTERS,
    rows: int | None = None,
    cache: bool = True,
) -> list[dict]:
    """:func:`cl_grid` of one committed encoder (``prov``: its provenance) on the rows its
    monitor scored (the first ``rows`` of them if given), as records (clusters,
    neighbours, rows, cl); the default √N clusters are always among ``clusters``. Cached
    on disk under the artifact's SHA-256, the rows and the grid
    (``cache_dir("studies/pretraining")``)."""
    import json

    test, n = _held_out_rows(prov)
    if rows is not None:
        if not 2 <= int(rows) <= n:
            raise ValueError(f"rows: must lie in [2, {n}], got {rows}")
        test, n = test.take(np.arange(int(rows))), int(rows)
    rows = n
    clusters = sorted({int(c) for c in clusters} | {default_clusters(rows)})
    key = content_hash(
        CACHE_VERSION, prov["sha256"], test.x, list(neighbours), list(clusters), rows
    )
    path = cache_dir("studies/pretraining") / f"clgrid-{prov['name']}-{key[:16]}.json"
    if cache and path.exists():
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            pass
    enc = _artifacts.load_encoder(
        prov["objective"], prov["arch"], prov["size"], prov["seed"], directory=directory
    )
    z = _features(enc, test)
    g = cl_grid(z, 0, neighbours=neighbours, clusters=clusters)
    out = [{"clusters": c, "neighbours": k, "rows": len(z), "cl": v} for (c, k), v in g.items()]
    if cache:
        atomic_write_text(path, json.dumps(out))
    return out


def plot_landscape(curves, across):
    """CLID Fig. 1 on the committed encoders. Left: CL against TwoNN ID at every
    evaluated checkpoint, coloured by probe accuracy (the chosen ones ringed and named).
    Right: CLID (min–max across the encoders at their chosen steps) against probe
    accuracy, with Pearson ρ and Kendall τ_b."""
    import matplotlib.pyplot as plt

    c = curves.dropna(subset=["cluster_learnability", "twonn_id", "probe_accuracy"])
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.4))
    sc = ax.scatter(
        c["twonn_id"],
        c["cluster_learnability"],
        c=c["probe_accuracy"],
        cmap="coolwarm",
        s=14,
        alpha=0.75,
    )
    ax.scatter(
        across["twonn_id"],
        across["cluster_learnability"],
        c=across["probe_accuracy"],
        cmap="coolwarm",
        s=70,
        edgecolors="black",
        linewidths=1.2,
        vmin=c["probe_accuracy"].min(),
        vmax=c["probe_accuracy"].max(),
    )
    for _, r in across.iterrows():
        ax.annotate(
            r["encoder"],
            (r["twonn_id"], r["cluster_learnability"]),
            fontsize=6,
            xytext=(3, 3),
            textcoords="offset points",
        )
    fig.colorbar(sc, ax=ax, label="probe accuracy (held-out)")
    ax.set_xlabel("TwoNN intrinsic dimension (expressiveness)")
    ax.set_ylabel("cluster learnability (learnability)")
    ax.set_title("Every evaluated checkpoint (ringed: chosen step)", fontsize=9)
    bx.scatter(across["clid"], across["probe_accuracy"], c="black", s=24)
    for _, r in across.iterrows():
        bx.annotate(
            r["encoder"],
            (r["clid"], r["probe_accuracy"]),
            fontsize=6,
            xytext=(3, 3),
            textcoords="offset points",
        )
    rho = _pearson(across["clid"], across["probe_accuracy"])
    tau = (
        ranking.kendall_tau(across["clid"], across["probe_accuracy"])
        if len(across) >= 2 and np.ptp(across["clid"]) > 0
        else float("nan")
    )
    bx.set_xlabel("CLID = minmax(CL) + minmax(ID) across the encoders")
    bx.set_ylabel("probe accuracy (held-out)")
    bx.set_title(
        f"Chosen checkpoints: Pearson ρ {rho:.2f}, Kendall τ {tau:.2f} (paper: 0.92, 0.75)",
        fontsize=9,
    )
    fig.suptitle("CLID Fig. 1 on the committed encoders")
    fig.tight_layout()
    return fig


def plot_robustness(table):
    """CLID Fig. 2 on the committed encoders. Left: Pearson ρ(W-CLID, probe accuracy) over
    neighbours × clusters. Right: ρ of W-CLID and CLID against clusters / N with 1
    neighbour; dashed: √N clusters."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.2))
    heat = table.pivot(index="neighbours", columns="clusters", values="pearson W-CLID")
    sns.heatmap(
        heat,
        annot=True,
        fmt=".2f",
        cmap="viridis",
        vmin=-1,
        vmax=1,
        ax=ax,
        cbar_kws={"label": "Pearson ρ(W-CLID, probe accuracy)"},
        annot_kws={"size": 7},
    )
    ax.set_xlabel("k-means clusters")
    ax.set_ylabel("k-NN neighbours")
    ax.set_title("W-CLID across neighbours and clusters", fontsize=9)
    one = table[table["neighbours"] == table["neighbours"].min()].sort_values("clusters")
    for col, style in (("pearson W-CLID", "o-"), ("pearson CLID", "s--")):
        bx.plot(one["clusters / N"], one[col], style, label=col.replace("pearson ", ""))
    if len(table):
        rows = round(float(one["clusters"].iloc[0] / one["clusters / N"].iloc[0]))
        bx.axvline(
            default_clusters(rows) / rows,
            color="green",
            ls="--",
            lw=1,
            label=f"√N / N (N = {rows:,})",
        )
    bx.axhline(
        PEARSON_ROTATION,
        color="grey",
        ls=":",
        lw=1,
        label=f"paper's rotation baseline ρ {PEARSON_ROTATION}",
    )
    bx.set_xscale("log")
    bx.set_xticks(
        one["clusters / N"].to_numpy(), [f"{v:.3g}" for v in one["clusters / N"]], fontsize=7
    )
    bx.minorticks_off()
    bx.set_xlabel("clusters / N (1 neighbour)")
    bx.set_ylabel("Pearson ρ with probe accuracy")
    bx.set_ylim(-1.05, 1.05)
    bx.legend(fontsize=7)
    bx.set_title("Against the cluster ratio", fontsize=9)
    fig.suptitle("CLID Fig. 2 on the committed encoders: robustness to CL's settings")
    fig.tight_layout()
    return fig
