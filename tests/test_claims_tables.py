"""Claims n1–n7 (Table 1a pairs), o1–o4 (Table 2 groups) and p4–p5 (CLID Table 3) on
hand-made frames whose verdicts are known; numbers re-derived with SciPy from the raw
codelengths and accuracies (not the study's rank tables)."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from mdlnb.research.claims import CONSISTENT, LARGER, REPLICATED, REVERSED, SMALLER, UNDETERMINED
from mdlnb.studies.encoder_grid import _clid_transfer as T
from mdlnb.studies.encoder_grid import _table_claims as TC

OBJ = ["supervised", "simclr", "byol", "dino", "mae", "autoencoder", "random"]
ENC = [f"{o}:vit_S:trained" for o in OBJ]
GROUPS = {
    "n1": "natural",
    "n2": "natural",
    "n3": "natural",
    "n4": "natural",
    "p1": "specialized",
    "p2": "specialized",
    "s1": "structured",
    "s2": "structured",
    "s3": "structured",
    "s4": "structured",
    "s5": "structured",
}


def _frame(codes, encoders=ENC, objectives=OBJ, archs=None, metric="codelength [nats]"):
    """codes: {task: one value per encoder}."""
    archs = archs or ["vit"] * len(encoders)
    rows = [
        dict(
            encoder=e,
            architecture=a,
            objective=o,
            size="S",
            task=t,
            group=GROUPS[t],
            metric=metric,
            value=float(v),
            seed=0,
        )
        for t, vals in codes.items()
        for e, o, a, v in zip(encoders, objectives, archs, vals)
    ]
    return pd.DataFrame(rows)


def _ranks(codes):
    """Per task, SciPy's ranks of the codelengths (1 = shortest, ties averaged)."""
    return {t: stats.rankdata(v) for t, v in codes.items()}


def _boot_mean(values, level=0.95, resamples=2000, seed=0):
    """Percentile bootstrap of the mean, written out with NumPy."""
    v = np.asarray(values, float)
    rng = np.random.default_rng(seed)
    draws = [v[rng.integers(0, len(v), len(v))].mean() for _ in range(resamples)]
    return v.mean(), *np.quantile(draws, [(1 - level) / 2, (1 + level) / 2])


# codelengths: DINO < BYOL < MAE < SimCLR < autoencoder < random < supervised on natural and
# specialized tasks; on structured tasks supervised moves to 2nd and MAE last; with a swap
# of DINO and BYOL on two tasks and SimCLR last on one
BASE = [70, 40, 20, 10, 30, 50, 60]  # order of OBJ
STRUCT = [15, 40, 20, 10, 80, 50, 60]


def _codes():
    c = {t: list(BASE if g != "structured" else STRUCT) for t, g in GROUPS.items()}
    c["n2"][2], c["n2"][3] = 10, 20
    c["s3"][2], c["s3"][3] = 10, 20
    c["s5"][1] = 90
    return c


def test_paper_effects_from_the_tables():
    # Table 1a MDL column: RN SUP 4.42, RN SimCLR 4.21, BYOL 2.53, DINO 1.89, MAE 3.79, ViT SUP 4.16
    assert [TC.paper_pair_effect(p) for p in TC.PAIRS] == pytest.approx(
        [4.42 - 2.53, 4.21 - 2.53, 4.16 - 1.89, 3.79 - 1.89, 4.42 - 4.21, 4.16 - 3.79, 2.53 - 1.89]
    )
    sup_st, ssl_st = (5.75 + 4.75) / 2, (2.63 + 2.13 + 2.38 + 3.38) / 4
    sup_nat, ssl_nat = (2.86 + 3.86) / 2, (1.57 + 2.71 + 5.71 + 4.29) / 4
    mae_nat = 5.71 - (1.57 + 2.71 + 2.86 + 4.29 + 3.86) / 5
    mae_sp = 3.25 - (1.00 + 3.00 + 3.25 + 5.75 + 4.75) / 5
    mae_st = 2.38 - (2.63 + 2.13 + 5.75 + 3.38 + 4.75) / 5
    assert TC.paper_group_effect("o1") == pytest.approx(sup_st - ssl_st)  # 2.62
    assert TC.paper_group_effect("o2") == pytest.approx(sup_st - ssl_st - (sup_nat - ssl_nat))
    assert TC.paper_group_effect("o3") == pytest.approx(mae_nat)  # 2.652
    assert TC.paper_group_effect("o4") == pytest.approx(mae_nat - (4 * mae_sp + 8 * mae_st) / 12)
    assert TC.rank_scale(7) == pytest.approx(6 / 5)
    with pytest.raises(ValueError, match="claim"):
        TC.paper_group_effect("o9")
    with pytest.raises(ValueError, match="k"):
        TC.rank_scale(1)


def test_pairwise_claims_recomputed_from_the_codelengths():
    codes = _codes()
    frame = _frame(codes)
    claims = TC.pairwise_claims(frame, ENC)
    assert [c.id for c in claims] == list(TC.PAIRS)
    r = _ranks(codes)
    i = {o: OBJ.index(o) for o in OBJ}
    by_id = {c.id: c for c in claims}
    for pid, a, b in (
        ("n1", "byol", "supervised"),
        ("n3", "dino", "supervised"),
        ("n4", "dino", "mae"),
        ("n7", "dino", "byol"),
    ):
        diffs = [r[t][i[b]] - r[t][i[a]] for t in codes]
        mean, lo, hi = _boot_mean(diffs)
        c = by_id[pid]
        assert (c.estimate, c.ci_low, c.ci_high) == pytest.approx((mean, lo, hi))
        assert c.paper_effect == pytest.approx(TC.paper_pair_effect(pid) * 6 / 5)
        assert c.n == len(codes) and c.unit == "tasks"
    # BYOL (rank 2; 1 on n2) beats supervised (7) off the structured tasks: +5 (+6 on n2);
    # on structured tasks supervised is 2nd, BYOL 3rd (1st on s3): −1 (+1 on s3)
    n1 = by_id["n1"]
    assert n1.direction == REPLICATED
    assert "ranks ahead of supervised:vit_S:trained on 7 of 11 tasks, behind on 4" in n1.our_value
    # DINO beats supervised everywhere: replicated; beside it the Nemenyi CD of (7, 11)
    cd = stats.studentized_range.ppf(0.9, 7, np.inf) / np.sqrt(2) * np.sqrt(7 * 8 / 66)
    assert by_id["n3"].direction == REPLICATED and f"{cd:.3f}" in by_id["n3"].our_value
    # MAE last on structured: DINO ahead of MAE everywhere
    assert by_id["n4"].direction == REPLICATED
    # SimCLR vs supervised (a "no significant difference" claim): SimCLR far ahead on the
    # natural and specialized tasks, behind on structured ones
    assert "the paper's claim is on the size" in by_id["n5"].rule
    assert "differ little" in by_id["n5"].statement


def test_pairwise_reversed_and_table():
    codes = {t: [10, 40, 70, 60, 30, 50, 20] for t in GROUPS}  # supervised best, BYOL worst
    frame = _frame(codes)
    by_id = {c.id: c for c in TC.pairwise_claims(frame, ENC)}
    assert (by_id["n1"].direction, by_id["n1"].size) == (REVERSED, SMALLER)
    assert by_id["n1"].estimate == pytest.approx(1 - 7) and by_id["n1"].ci_low == -6
    t = TC.pairwise_table(frame, ENC).set_index("id")
    assert t.loc["n1", "rank difference"] == -6 and t.loc["n1", "losses"] == len(GROUPS)
    assert t.loc["n1", "beyond CD"] and t.loc["n3", "paper difference"] == pytest.approx(2.27)
    cd = stats.studentized_range.ppf(0.9, 7, np.inf) / np.sqrt(2) * np.sqrt(7 * 8 / 66)
    assert t.loc["n1", "CD"] == pytest.approx(cd)


def test_pair_without_an_objective_has_no_interval():
    enc, obj = ENC[:3] + ENC[4:], OBJ[:3] + OBJ[4:]  # no DINO
    frame = _frame({t: [1, 2, 3, 4, 5, 6] for t in GROUPS}, enc, obj)
    by_id = {c.id: c for c in TC.pairwise_claims(frame, enc)}
    assert (by_id["n3"].direction, by_id["n3"].size) == (UNDETERMINED, UNDETERMINED)
    assert "no single encoder of objective DINO" in by_id["n3"].our_value
    # codelengths grow with the column: supervised 1st, BYOL 3rd on every task
    assert (by_id["n1"].direction, by_id["n1"].estimate) == (REVERSED, -2)


def test_resolve_prefers_the_papers_backbone():
    enc = ["supervised:resnet_M", "supervised:vit_M", "byol:resnet_M"]
    frame = _frame(
        {t: [1, 2, 3] for t in GROUPS},
        enc,
        ["supervised", "supervised", "byol"],
        archs=["resnet", "vit", "resnet"],
    )
    assert TC.resolve(frame, enc, "supervised", "vit") == "supervised:vit_M"
    assert TC.resolve(frame, enc, "supervised", "resnet") == "supervised:resnet_M"
    assert TC.resolve(frame, enc, "supervised", None) is None  # two, no backbone
    assert TC.resolve(frame, enc, "dino", "vit") is None


def test_group_claims_recomputed_with_scipy():
    codes = _codes()
    frame = _frame(codes)
    o1, o2, o3, o4 = TC.group_claims(frame, ENC)
    r = _ranks(codes)
    i = {o: OBJ.index(o) for o in OBJ}
    ssl = [i[o] for o in ("simclr", "byol", "dino", "mae")]
    rest = [i[o] for o in ("supervised", "simclr", "byol", "dino")]
    sup = {t: r[t][i["supervised"]] - np.mean(r[t][ssl]) for t in codes}
    mae = {t: r[t][i["mae"]] - np.mean(r[t][rest]) for t in codes}
    st = [sup[t] for t in codes if GROUPS[t] == "structured"]
    nat = [sup[t] for t in codes if GROUPS[t] == "natural"]
    m, s = np.mean(st), stats.sem(st)
    assert (o1.estimate, o1.ci_low, o1.ci_high) == pytest.approx(
        (m, *stats.t.interval(0.95, len(st) - 1, m, s))
    )
    ci = stats.ttest_ind(st, nat, equal_var=False).confidence_interval(0.95)
    assert (o2.estimate, o2.ci_low, o2.ci_high) == pytest.approx(
        (np.mean(st) - np.mean(nat), ci.low, ci.high)
    )
    # supervised 2nd on structured tasks, last elsewhere: o1 reversed, o2 reversed
    assert o1.direction == REVERSED and o2.direction == REVERSED
    # MAE: 3rd on natural tasks (behind DINO and BYOL only), last on structured tasks
    nat_mae = [mae[t] for t in codes if GROUPS[t] == "natural"]
    shifted = [mae[t] for t in codes if GROUPS[t] != "natural"]
    assert o3.estimate == pytest.approx(np.mean(nat_mae))
    assert o4.estimate == pytest.approx(np.mean(nat_mae) - np.mean(shifted))
    assert o4.direction == REVERSED and o4.n == len(codes)
    assert o1.paper_effect == pytest.approx(TC.paper_group_effect("o1") * 6 / 5)
    assert "Welch interval" in o4.rule and "t interval" in o3.rule


def test_group_claims_replicate_when_the_papers_pattern_is_built_in():
    # supervised last on structured tasks and 2nd on natural ones; MAE last on natural, 1st
    # on shifted tasks
    nat = [20, 40, 30, 10, 70, 50, 60]
    shifted = [70, 40, 30, 20, 10, 50, 60]
    codes = {t: list(nat if g == "natural" else shifted) for t, g in GROUPS.items()}
    codes["s2"][1], codes["s2"][2] = 30, 40  # some spread within the groups
    codes["n3"][0], codes["n3"][1] = 40, 20
    o1, o2, o3, o4 = TC.group_claims(_frame(codes), ENC)
    assert o1.direction == REPLICATED and o2.direction == REPLICATED
    assert o3.direction == REPLICATED and o4.direction == REPLICATED
    # MAE: rank 7 vs the others' mean on natural tasks 2.5 → +4.5 ≥ the paper's 2.65 × 1.2
    assert o3.estimate == pytest.approx(7 - np.mean([2, 3, 4, 1])) and o3.size == LARGER


def test_group_claims_without_an_objective():
    enc, obj = ENC[1:], OBJ[1:]  # no supervised encoder
    frame = _frame({t: [1, 2, 3, 4, 5, 6] for t in GROUPS}, enc, obj)
    o1, o2, o3, o4 = TC.group_claims(frame, enc)
    assert (o1.direction, o1.size) == (UNDETERMINED, UNDETERMINED)
    assert "has no encoder here: no interval" in o1.our_value
    # o3 needs no supervised encoder: MAE 4th against SimCLR, BYOL, DINO (1–3) on every
    # natural task: +2, below the paper's 2.65 restated for k = 6 (× 5/5)
    assert (o3.direction, o3.size, o3.estimate) == (REPLICATED, SMALLER, 2)


# ----------------------------------------------------------------------------- CLID Table 3


TRANSFER = ["t_in", "n1", "n2", "p1", "s1", "s2"]


def _transfer_frame(acc):
    """acc: {task: linear accuracy per encoder of ACROSS}; plus a grid-only encoder."""
    rows = []
    for t, vals in acc.items():
        g = "natural" if t == "t_in" else GROUPS[t]
        for e, v in zip(list(ACROSS["encoder"]) + ["lite0"], list(vals) + [0.99]):
            rows.append(
                dict(
                    encoder=e + (T.TRAINED if e != "lite0" else ""),
                    task=t,
                    group=g,
                    metric="linear accuracy",
                    value=float(v),
                    seed=0,
                    architecture="vit",
                    objective="o",
                    size="S",
                )
            )
    return pd.DataFrame(rows)


ACROSS = pd.DataFrame(
    {
        "encoder": ["a:vit_S", "b:vit_S", "c:vit_S", "d:vit_S", "e:vit_S"],
        "probe_accuracy": [0.9, 0.8, 0.7, 0.6, 0.5],
        "cluster_learnability": [0.5, 0.9, 0.7, 0.8, 0.6],
        "twonn_id": [10.0, 14.0, 12.0, 8.0, 9.0],
    }
)


def test_transfer_table_recomputed_with_scipy():
    acc = {
        "t_in": [0.9, 0.8, 0.7, 0.6, 0.5],
        "n1": [0.5, 0.6, 0.7, 0.9, 0.8],
        "n2": [0.9, 0.7, 0.8, 0.6, 0.5],
        "p1": [0.8, 0.9, 0.6, 0.7, 0.5],
        "s1": [0.6, 0.9, 0.8, 0.7, 0.5],
        "s2": [0.7, 0.7, 0.7, 0.7, 0.7],
    }
    frame = _transfer_frame(acc)
    t = T.transfer_table(frame, ACROSS, in_domain=["t_in"]).set_index("task")
    assert list(t.index) == ["n1", "n2", "p1", "s1", "s2"] and (t["encoders"] == 5).all()
    cl, ident = ACROSS["cluster_learnability"], ACROSS["twonn_id"]
    clid = (
        (cl - cl.min()) / (cl.max() - cl.min())
        + (ident - ident.min()) / (ident.max() - ident.min())
    ).to_numpy()
    r_clid = stats.rankdata(-clid)
    r_acc = stats.rankdata(-ACROSS["probe_accuracy"].to_numpy())
    joint = -np.sqrt(r_clid * r_acc)
    for task in ("n1", "n2", "p1", "s1"):
        y = acc[task]
        assert t.loc[task, "in-domain accuracy"] == pytest.approx(
            stats.kendalltau(ACROSS["probe_accuracy"], y).statistic
        )
        assert t.loc[task, "CLID"] == pytest.approx(stats.kendalltau(clid, y).statistic)
        assert t.loc[task, "joint"] == pytest.approx(stats.kendalltau(joint, y).statistic)
    assert np.isnan(t.loc["s2", "in-domain accuracy"])  # tied on every encoder
    p4, p5 = T.transfer_claims(frame, ACROSS, in_domain=["t_in"])
    taus = t["in-domain accuracy"].dropna().to_numpy()
    assert (p4.estimate, p4.ci_low, p4.ci_high) == pytest.approx(_boot_mean(taus))
    assert p4.n == 4 and "1 task(s) without τ" in p4.our_value and p4.paper_effect == 0.71
    d = t["joint − in-domain"].dropna().to_numpy()
    assert (p5.estimate, p5.ci_low, p5.ci_high) == pytest.approx(_boot_mean(d))
    assert p5.paper_effect == pytest.approx(0.03)


def test_transfer_claims_replicate_when_in_domain_accuracy_orders_every_task():
    acc = {t: [0.9, 0.8, 0.7, 0.6, 0.5] for t in TRANSFER}
    acc["n2"] = [0.9, 0.8, 0.7, 0.5, 0.6]
    p4, p5 = T.transfer_claims(_transfer_frame(acc), ACROSS, in_domain=["t_in"])
    assert (p4.direction, p4.size) == (REPLICATED, LARGER) and p4.n == 5
    # the rank product with CLID (ranks differ from accuracy's) can only lose here
    assert p5.direction == REVERSED


def test_transfer_without_matching_encoders():
    frame = _transfer_frame({t: [0.9, 0.8, 0.7, 0.6, 0.5] for t in TRANSFER})
    other = ACROSS.assign(encoder=ACROSS["encoder"] + "x")
    empty = T.transfer_table(frame, other, in_domain=["t_in"])
    assert list(empty["task"]) == ["n1", "n2", "p1", "s1", "s2"] and (empty["encoders"] == 0).all()
    assert empty["in-domain accuracy"].isna().all()
    p4, p5 = T.transfer_claims(frame, other, in_domain=["t_in"])
    assert (p4.direction, p4.size) == (UNDETERMINED, UNDETERMINED) and p4.n == 0
    with pytest.raises(ValueError, match="across"):
        T.matched(frame, ACROSS.drop(columns="twonn_id"))


def test_consistent_size_is_reachable():
    # a spread of τ around the paper's 0.71 gives an interval containing it
    acc = {
        "t_in": [0.9, 0.8, 0.7, 0.6, 0.5],
        "n1": [0.9, 0.8, 0.7, 0.6, 0.5],
        "n2": [0.8, 0.9, 0.7, 0.6, 0.5],
        "p1": [0.9, 0.7, 0.8, 0.5, 0.6],
        "s1": [0.9, 0.8, 0.6, 0.7, 0.5],
        "s2": [0.7, 0.9, 0.8, 0.6, 0.5],
    }
    p4, _ = T.transfer_claims(_transfer_frame(acc), ACROSS, in_domain=["t_in"])
    assert (p4.direction, p4.size) == (REPLICATED, CONSISTENT)
