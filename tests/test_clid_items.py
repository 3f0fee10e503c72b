"""CLID Fig. 1–2 items (claims p1–p3) of the pretraining study: the CL grid against
:func:`mdlnb.baselines.labelfree.cluster_learnability` on real images, the robustness table and the
claims against SciPy/NumPy re-derivations on hand-made encoder tables."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from mdlnb import data
from mdlnb.baselines import labelfree
from mdlnb.research.claims import CONSISTENT, REPLICATED, REVERSED, UNDETERMINED
from mdlnb.studies.pretraining import _clid_items as CI


def test_cl_grid_matches_cluster_learnability_on_digits():
    z = data.load("digits").x.reshape(-1, 64)[:240].astype(np.float64)
    g = CI.cl_grid(z, 3, neighbours=(1, 4), clusters=(2, 15))
    assert set(g) == {(2, 1), (2, 4), (15, 1), (15, 4)}
    for (c, k), v in g.items():
        assert v == labelfree.cluster_learnability(z, 3, n_clusters=c, n_neighbors=k)
    with pytest.raises(ValueError, match="clusters"):
        CI.cl_grid(z, 0, clusters=(241,))


ACC = np.round(np.linspace(0.95, 0.40, 12), 3)
ID = np.array([9, 12, 6, 10, 7.5, 11, 8, 9.5, 10.5, 7, 11.5, 8.5])  # τ with ACC ≈ 0
ENCS = [f"e{i}:vit_S" for i in range(len(ACC))]


def _across(cl):
    return pd.DataFrame(
        {"encoder": ENCS, "probe_accuracy": ACC, "cluster_learnability": cl, "twonn_id": ID}
    )


def _grid(cl_by_config, rows=400):
    """cl_by_config: {(clusters, neighbours): CL per encoder}."""
    return pd.DataFrame(
        [
            {"encoder": e, "clusters": c, "neighbours": k, "rows": rows, "cl": v}
            for (c, k), vals in cl_by_config.items()
            for e, v in zip(ENCS, vals)
        ]
    )


def _wclid_r(cl, ident, acc):
    """Pearson ρ of the least-squares fit of acc on [minmax CL, minmax ID, 1] (NumPy)."""
    mm = lambda v: (v - v.min()) / (v.max() - v.min())  # noqa: E731
    X = np.stack([mm(cl), mm(ident), np.ones_like(cl)], 1)
    w, *_ = np.linalg.lstsq(X, acc, rcond=None)
    return stats.pearsonr(X[:, :2] @ w[:2], acc).statistic


GOOD = ACC + np.array(
    [0.01, -0.02, 0.0, 0.02, -0.01, 0.0, 0.01, -0.02, 0.015, -0.005, 0.0, 0.01]
)  # tracks accuracy
BAD = np.array([0.5, 0.9, 0.6, 0.8, 0.55, 0.7, 0.85, 0.75, 0.65, 0.95, 0.45, 0.72])  # does not


def test_robustness_table_recomputed_with_numpy():
    grid = _grid({(20, 1): GOOD, (20, 50): BAD, (2, 1): BAD})
    t = CI.robustness_table(grid, _across(GOOD)).set_index(["clusters", "neighbours"])
    assert t.loc[(20, 1), "clusters / N"] == pytest.approx(20 / 400)
    mm = lambda v: (v - v.min()) / (v.max() - v.min())  # noqa: E731
    for cfg, cl in (((20, 1), GOOD), ((20, 50), BAD), ((2, 1), BAD)):
        clid = mm(cl) + mm(ID)
        assert t.loc[cfg, "pearson CLID"] == pytest.approx(stats.pearsonr(clid, ACC).statistic)
        assert t.loc[cfg, "kendall CLID"] == pytest.approx(stats.kendalltau(clid, ACC).statistic)
        assert t.loc[cfg, "pearson W-CLID"] == pytest.approx(_wclid_r(cl, ID, ACC))
    assert (t["encoders"] == 12).all()


def _boot(rows, statistic, resamples=2000, seed=0):
    rng = np.random.default_rng(seed)
    rows = list(rows)
    draws = np.array(
        [
            statistic([rows[i] for i in rng.integers(0, len(rows), len(rows))])
            for _ in range(resamples)
        ]
    )
    draws = draws[np.isfinite(draws)]
    return statistic(rows), *np.quantile(draws, [0.025, 0.975])


def test_claims_recomputed_and_decided():
    grid = _grid({(20, 1): GOOD, (20, 50): BAD, (2, 1): BAD, (2, 50): BAD})
    p1, p2, p3 = CI.clid_claims(_across(GOOD), grid)
    mm = lambda v: (v - v.min()) / (v.max() - v.min())  # noqa: E731
    tau = lambda x: stats.kendalltau(x, ACC).statistic  # noqa: E731
    assert p1.estimate == pytest.approx(tau(mm(GOOD) + mm(ID)) - max(tau(GOOD), tau(ID)))
    assert p1.paper_effect == pytest.approx(0.75 - 0.44) and p1.unit == "encoders"

    def diff(rows):
        t = np.vstack(rows)
        if min(np.ptp(t[:, 0]), np.ptp(t[:, 1]), np.ptp(t[:, 2]), np.ptp(t[:, 3])) == 0:
            return np.nan
        return _wclid_r(t[:, 0], t[:, 2], t[:, 3]) - _wclid_r(t[:, 1], t[:, 2], t[:, 3])

    rows = [np.array([g, b, i, a]) for g, b, i, a in zip(GOOD, BAD, ID, ACC)]
    est, lo, hi = _boot(rows, diff)
    # √400 = 20 clusters; p2: 1 against 50 neighbours, p3: 20 against 2 clusters
    for c in (p2, p3):
        assert c.estimate == pytest.approx(est)
        assert (c.ci_low, c.ci_high) == pytest.approx((lo, hi), abs=1e-9)
        assert c.paper_effect == pytest.approx(0.92 - 0.61)
    assert p2.direction == REPLICATED and p3.direction == REPLICATED
    assert "1 neighbour minus 50 neighbours, at √N = 20 clusters" in p2.rule
    assert "√N = 20 clusters minus 2 clusters, with 1 neighbour" in p3.rule


def test_claims_reverse_when_the_grid_is_turned_round():
    grid = _grid({(20, 1): BAD, (20, 50): GOOD, (2, 1): GOOD})
    p1, p2, p3 = CI.clid_claims(_across(BAD), grid)
    assert p2.direction == REVERSED and p3.direction == REVERSED
    assert p2.estimate == pytest.approx(_wclid_r(BAD, ID, ACC) - _wclid_r(GOOD, ID, ACC))
    # CL that tracks accuracy no better than chance: CLID no better than ID alone
    assert p1.direction in (UNDETERMINED, REVERSED) and p1.size in ("smaller", CONSISTENT)
    # the same CL in both settings: no difference in any resample
    rows = [np.array([g, g, i, a]) for g, i, a in zip(GOOD, ID, ACC)]
    assert CI._rho_difference(rows) == 0
    assert np.isnan(CI._rho_difference(rows[:2]))


def test_plots_draw_the_papers_panels():
    grid = _grid({(c, k): GOOD if c == 20 else BAD for c in (2, 20, 100) for k in (1, 5)})
    table = CI.robustness_table(grid, _across(GOOD))
    fig = CI.plot_robustness(table)
    heat, line = fig.axes[0], fig.axes[1]
    assert heat.get_xlabel() == "k-means clusters" and len(line.get_lines()) >= 3
    across = _across(GOOD).assign(clid=labelfree.clid(GOOD, ID))
    curves = across.assign(step=1000).rename(columns={})
    fig1 = CI.plot_landscape(curves, across)
    assert "Pearson ρ" in fig1.axes[1].get_title()
    import matplotlib.pyplot as plt

    plt.close("all")


@pytest.mark.slow
def test_encoder_grid_reproduces_the_recorded_cl_of_an_artifact():
    """The committed untrained ViT-S: CL at CLID's defaults (√N clusters, 1 neighbour) on
    the rows its monitor scored, against the value recorded with its artifact (computed on
    another machine: features agree to float rounding, CL to a few of 2,000 rows)."""
    from mdlnb.studies import pretraining
    from mdlnb.studies.pretraining import _artifacts

    prov = _artifacts.check("random-vit_S-s0")
    g = CI.encoder_grid(prov, neighbours=(1,), clusters=(45,), cache=False)
    assert [(r["clusters"], r["neighbours"], r["rows"]) for r in g] == [(45, 1, 2000)]
    recorded = pretraining.result().across_models().set_index("encoder")
    assert g[0]["cl"] == pytest.approx(
        recorded.loc["random:vit_S", "cluster_learnability"], abs=0.01
    )
