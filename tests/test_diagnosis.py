"""The encoder diagnosis (mdlnb.studies.encoder_grid._diagnosis): class separation, image
statistics and their decodability against closed forms and plain-NumPy re-derivations on
real inputs (the digits pixels, Fashion-MNIST images, the committed ViT-S encoders)."""

import types

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_digits

from mdlnb import data
from mdlnb.baselines.labelfree import rankme
from mdlnb.encoders import features
from mdlnb.studies import encoder_grid as st
from mdlnb.studies.encoder_grid import _diagnosis as dg


@pytest.fixture(scope="module")
def digits():
    x, y = load_digits(return_X_y=True)
    return x[:400].astype(np.float64), y[:400]


def _zscore(x):
    sd = x.std(axis=0)
    return (x - x.mean(axis=0)) / np.where(sd > 0, sd, 1.0)


def _separation_by_loops(x, y):
    """Σ_W and Σ_B summed example by example and class by class; NC1 through an
    eigendecomposition of Σ_B (the pseudo-inverse by hand)."""
    n, d = x.shape
    mu = x.mean(axis=0)
    sw, sb = np.zeros((d, d)), np.zeros((d, d))
    classes = sorted(set(y.tolist()))
    for c in classes:
        rows = x[y == c]
        mc = rows.mean(axis=0)
        for r in rows:
            sw += np.outer(r - mc, r - mc) / n
        sb += len(rows) / n * np.outer(mc - mu, mc - mu)
    w, v = np.linalg.eigh(sb)
    keep = w > 1e-10 * w.max()
    pinv = (v[:, keep] / w[keep]) @ v[:, keep].T
    return np.trace(sw), np.trace(sb), np.trace(sw @ pinv) / len(classes)


def test_class_separation_matches_loops_on_digits(digits):
    x, y = digits
    z = _zscore(x)
    got = dg.class_separation(z, y)
    within, between, nc1 = _separation_by_loops(z, y)
    assert got["within"] == pytest.approx(within, rel=1e-10)
    assert got["between"] == pytest.approx(between, rel=1e-10)
    assert got["ratio"] == pytest.approx(within / between, rel=1e-10)
    assert got["nc1"] == pytest.approx(nc1, rel=1e-8)
    # law of total variance: the two traces add up to the total (ddof 0)
    assert got["within"] + got["between"] == pytest.approx(np.var(z, axis=0).sum(), rel=1e-12)


def test_class_separation_closed_forms():
    # two classes at ±m with spread ±s inside each: tr Σ_W = s², tr Σ_B = m², NC1 = s²/m²/2
    m, s = 3.0, 0.5
    x = np.array([[m - s], [m + s], [-m - s], [-m + s]])
    got = dg.class_separation(x, [0, 0, 1, 1])
    assert got["within"] == pytest.approx(s**2)
    assert got["between"] == pytest.approx(m**2)
    assert got["nc1"] == pytest.approx(s**2 / m**2 / 2)
    # full collapse onto the class means: no within-class scatter at all
    got = dg.class_separation(np.array([[1.0, 2.0], [1.0, 2.0], [4.0, 0.0]]), [1, 1, 0])
    assert got["within"] == 0 and got["nc1"] == 0 and got["ratio"] == 0
    # class means that coincide: no between-class scatter, the ratio is infinite
    assert dg.class_separation(np.array([[0.0], [2.0], [1.0], [1.0]]), [0, 0, 1, 1])[
        "ratio"
    ] == float("inf")


def test_class_separation_rejects_bad_input():
    with pytest.raises(ValueError, match="y: needs at least 2 classes"):
        dg.class_separation(np.ones((3, 2)), [0, 0, 0])
    with pytest.raises(ValueError, match="x"):
        dg.class_separation(np.ones((3, 2)), [0, 1])
    with pytest.raises(ValueError, match="x: contains NaN"):
        dg.class_separation(np.array([[np.nan], [1.0]]), [0, 1])


def test_image_statistics_closed_form():
    img = np.array([[[0, 255], [255, 51]], [[0, 0], [0, 0]]], np.uint8)
    s = dg.image_statistics(img)
    v = np.array([0, 1, 1, 0.2])
    assert s["mean intensity"] == pytest.approx([v.mean(), 0.0])
    assert s["contrast"] == pytest.approx([v.std(), 0.0])
    assert s["area"] == pytest.approx([0.5, 0.0])  # 0.2 itself is not above the threshold
    rgb = np.stack([img / 255.0] * 3, axis=-1)  # grey repeated: the same statistics
    assert dg.image_statistics(rgb)["contrast"] == pytest.approx(s["contrast"])
    with pytest.raises(ValueError, match="images: float images must lie in"):
        dg.image_statistics(img * 2.0)


def _ridge_r2_numpy(x, t, folds, alpha):
    """Ridge with intercept in closed form, (XcᵀXc + αI)⁻¹ Xcᵀ tc, over contiguous folds."""
    sd = x.std(axis=0)
    z = (x - x.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    edges = np.cumsum([0] + [len(t) // folds + (i < len(t) % folds) for i in range(folds)])
    out = []
    for a, b in zip(edges[:-1], edges[1:]):
        te = np.zeros(len(t), bool)
        te[a:b] = True
        xm, tm = z[~te].mean(axis=0), t[~te].mean()
        xc, tc = z[~te] - xm, t[~te] - tm
        w = np.linalg.solve(xc.T @ xc + alpha * np.eye(z.shape[1]), xc.T @ tc)
        pred = (z[te] - xm) @ w + tm
        out.append(1 - np.sum((t[te] - pred) ** 2) / np.sum((t[te] - t[te].mean()) ** 2))
    return float(np.mean(out))


def test_decodability_matches_closed_form_ridge(digits):
    x, _ = digits
    t = dg.image_statistics(x.reshape(-1, 8, 8) / 16.0)["area"]
    for folds, alpha in ((5, 1.0), (3, 30.0)):
        got = dg.decodability(x[:, ::3], t, folds=folds, alpha=alpha)  # 22 of the 64 pixels
        assert got == pytest.approx(_ridge_r2_numpy(x[:, ::3], t, folds, alpha), abs=1e-9)
    # a target linear in the features is decoded almost exactly; a shuffled one is not
    lin = x[:, 10] - 0.5 * x[:, 20]
    assert dg.decodability(x, lin, alpha=1e-6) == pytest.approx(1.0, abs=1e-6)
    assert dg.decodability(x, np.random.default_rng(0).permutation(t)) < 0.1
    with pytest.raises(ValueError, match="folds"):
        dg.decodability(x, t, folds=1)
    with pytest.raises(ValueError, match="target"):
        dg.decodability(x, t[:-1])


@pytest.fixture(scope="module")
def fashion_features():
    """Committed supervised and untrained ViT-S features of 300 Fashion-MNIST test images."""
    from mdlnb.studies import pretraining

    task = data.subsample(data.load("fashion_mnist", split="test"), 300, 0)
    out = {
        o: features(pretraining.load_encoder(o, "vit", "S", 0), task).x
        for o in ("supervised", "random")
    }
    return task, out


def test_feature_diagnosis_on_committed_encoders(fashion_features):
    task, f = fashion_features
    d = {o: dg.feature_diagnosis(x, task.y, task.x) for o, x in f.items()}
    for o, x in f.items():
        z = _zscore(x.astype(np.float64))
        assert d[o]["RankMe (raw)"] == pytest.approx(rankme(x))
        assert d[o]["RankMe (standardised)"] == pytest.approx(rankme(z), rel=1e-5)
        within, between, nc1 = _separation_by_loops(z, task.y)
        assert d[o]["within/between variance"] == pytest.approx(within / between, rel=1e-8)
        assert d[o]["NC1"] == pytest.approx(nc1, rel=1e-6)
        assert set(d[o]) == set(dg.METRICS) - {"linear accuracy", "codelength [bits/example]"}
    # trained on these 10 classes, the supervised features separate them far better than
    # the initialization they started from, and keep less of the images' mean intensity
    sup, rnd = d["supervised"], d["random"]
    assert sup["within/between variance"] < 0.5 * rnd["within/between variance"]
    assert sup["R² mean intensity"] < rnd["R² mean intensity"]


def test_supervised_diagnosis_rows_and_contrast():
    """The study's plumbing on a small real grid: features rebuilt from the config, grid
    metrics averaged over orders from the frame, one row per (encoder, task, metric)."""
    cfg = st.EncodersConfig(
        encoders=("random:vit_XS", "random:resnet_XS"),
        tasks=("digits", "lfw_faces"),
        train_size=80,
        test_size=40,
    )
    frame = pd.DataFrame(
        [
            {"encoder": e, "task": t, "metric": m, "value": v + s, "seed": s}
            for e, base in (("random:vit_XS", 0.5), ("random:resnet_XS", 0.7))
            for t in cfg.tasks
            for s in (0, 1)
            for m, v in (("linear accuracy", base), ("codelength [bits/example]", 2 * base))
        ]
    )
    result = types.SimpleNamespace(config=cfg, frame=frame)
    diag = dg.supervised_diagnosis(result, encoders=["random:vit_XS", "random:resnet_XS"])
    assert len(diag) == 2 * 2 * len(dg.METRICS)
    assert set(diag["group"]) == {"natural", "specialized"}
    row = diag.set_index(["encoder", "task", "metric"])["value"]
    assert row[("random:vit_XS", "digits", "linear accuracy")] == pytest.approx(1.0)
    assert row[("random:resnet_XS", "lfw_faces", "codelength [bits/example]")] == pytest.approx(1.9)
    from mdlnb.studies.transferability._features import prepare

    fs = next(
        f
        for f in prepare(cfg, progress=False, feature_progress=False).features
        if (f.encoder, f.task) == ("random:vit_XS", "lfw_faces")
    )
    direct = dg.feature_diagnosis(fs.train.x, fs.train.y)
    assert row[("random:vit_XS", "lfw_faces", "NC1")] == pytest.approx(direct["NC1"])
    assert row[("random:vit_XS", "lfw_faces", "RankMe (raw)")] == pytest.approx(
        direct["RankMe (raw)"]
    )

    c = dg.contrast(diag, "random:vit_XS", "random:resnet_XS").set_index("metric")
    assert list(c.index) == list(dg.METRICS)
    assert c.loc["linear accuracy", "random:vit_XS"] == pytest.approx(1.0)
    assert c.loc["linear accuracy", "tasks random:vit_XS lower"] == 2
    wide = diag[diag.metric == "NC1"].pivot(index="task", columns="encoder", values="value")
    assert c.loc["NC1", "random:resnet_XS"] == pytest.approx(wide["random:resnet_XS"].median())
    assert c.loc["NC1", "tasks random:vit_XS lower"] == int(
        (wide["random:vit_XS"] < wide["random:resnet_XS"]).sum()
    )
    with pytest.raises(ValueError, match="encoders: not in the study"):
        dg.supervised_diagnosis(result, encoders=["byol:vit_S:trained"])
    with pytest.raises(ValueError, match="reference"):
        dg.contrast(diag, "random:vit_XS", "dino:vit_S:trained")
