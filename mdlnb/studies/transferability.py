"""Transferability study: which score ranks encoders like their downstream accuracy?

Protocol (PACTran Sec. 4.1.4; CLID Sec. 3.5, Tables 1–3):

1. *Ground truth* per (encoder, task): test accuracy of the best readout
   trained on the (capped) full training split, under the probe protocol of
   :func:`mdlnb.probes.accuracy` (90/10 train/validation, the readout and its
   hyperparameters chosen on validation loss). Rows are kept per readout
   family (``"linear"``, ``"mlp"``) and for the overall winner (``"best"``).
   Fine-tuning the encoders is not part of it (unaffordable on a CPU).
2. *Scores* on few-shot subsamples: for each ratio N/K in ``ratios`` the
   training split is subsampled ``repeats`` times, stratified, with
   N = max(ratio·K, min_n) examples — the same examples for every encoder.
   On each subsample: every registered transferability metric
   (:data:`mdlnb.transfer.METRICS`), PT-Gauss-grid and LINEAR with their
   hyperparameters picked by Kendall τ against LINEAR-VALID across encoders,
   the MDL-switching codelength (nats per example, :func:`mdlnb.evaluate`),
   and the label-free cluster learnability, TwoNN ID, their CLID
   combination (min–max across encoders) and RankMe.
3. *Kendall τ* per (task, ratio, repeat) between each metric (turned
   higher-is-better) and the ground-truth accuracy across encoders; averaged
   over repeats per task (PACTran Tables 4–6) and over tasks (Table 1; CLID
   Tables 2–3).

Metrics needing a source classifier (LEEP, NCE, PT-Dir, PT-Gam) exist only
for encoders with one (the ImageNet EfficientNets); their τ is computed over
those encoders and the ``encoders`` column says over how many.
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from mdlnb._task import Task

#: Scores computed here besides :data:`mdlnb.transfer.METRICS`: name → (sign, unit).
EXTRA_METRICS: dict[str, tuple[int, str]] = {
    "pactran_gaussian_grid": (-1, "nats/example"),
    "linear_grid": (-1, "nats/example"),
    "mdl": (-1, "nats/example"),
    "cl": (+1, "accuracy"),
    "twonn_id": (+1, "dimensions"),
    "clid": (+1, "dimensionless"),
    "rankme": (+1, "dimensions"),
}
LABEL_FREE = ("cl", "twonn_id", "clid", "rankme")
GRID_METRICS = ("pactran_gaussian_grid", "linear_grid")
TRUTH_READOUTS = ("best", "linear", "mlp")
_TRUTH_GRID = {"learning_rate": (1e-3, 3e-3), "weight_decay": (0.0, 1e-4), "ema": (1.0,)}


def metric_sign(name: str) -> int:
    """+1 if ``name`` is higher-is-better, −1 if lower-is-better."""
    from mdlnb import transfer

    if name in transfer.METRICS:
        return transfer.METRICS[name].sign
    if name in EXTRA_METRICS:
        return EXTRA_METRICS[name][0]
    raise ValueError(f"name: unknown metric {name!r}")


# ----------------------------------------------------------------------------- encoders


@dataclasses.dataclass(frozen=True)
class EncoderSpec:
    """How to build one encoder.

    ``family == "efficientnet"``: ImageNet EfficientNet-Lite``variant`` at
    ``resolution`` px (has a source classifier). Otherwise ``family`` is a
    pretraining objective of :mod:`mdlnb.encoders.pretrain` and ``arch``,
    ``size``, ``steps``, ``seed`` are its arguments.
    """

    family: str
    variant: int = 0
    resolution: int = 64
    arch: str = "resnet"
    size: str = "S"
    steps: int = 0
    seed: int = 0

    @property
    def has_source_classifier(self) -> bool:
        return self.family == "efficientnet"


def parse_encoder(text: str) -> EncoderSpec:
    """Parse ``"lite0@64"`` (EfficientNet-Lite0 at 64 px) or
    ``"objective:arch_size[:steps[:seed]]"`` (e.g. ``"simclr:resnet_S:300"``,
    ``"random:resnet_S"``)."""
    from mdlnb.encoders import OBJECTIVES

    if not isinstance(text, str) or not text:
        raise ValueError(f"encoders: expected a non-empty string, got {text!r}")
    if text.startswith("lite"):
        head, _, res = text.partition("@")
        try:
            variant = int(head[4:])
            resolution = int(res) if res else {0: 224, 1: 240, 2: 260}[variant]
        except (ValueError, KeyError):
            raise ValueError(f"encoders: cannot parse {text!r}; expected e.g. 'lite0@64'") from None
        return EncoderSpec("efficientnet", variant=variant, resolution=resolution)
    parts = text.split(":")
    if len(parts) < 2 or parts[0] not in OBJECTIVES or "_" not in parts[1]:
        raise ValueError(f"encoders: cannot parse {text!r}; expected 'lite<v>@<px>' or "
                         f"'<objective>:<arch>_<size>[:steps[:seed]]' with objective in "
                         f"{OBJECTIVES}")
    arch, size = parts[1].split("_", 1)
    try:
        steps = int(parts[2]) if len(parts) > 2 else 0
        seed = int(parts[3]) if len(parts) > 3 else 0
    except ValueError:
        raise ValueError(f"encoders: steps and seed must be integers in {text!r}") from None
    return EncoderSpec(parts[0], arch=arch, size=size, steps=steps, seed=seed)


def build_encoder(spec: EncoderSpec, pretrain_data: Task | None = None, *,
                  batch_size: int = 64, progress: bool = False) -> Any:
    """The :class:`mdlnb.encoders.Encoder` of ``spec`` (self-pretrained ones are
    trained on ``pretrain_data``, or loaded from the encoder cache)."""
    from mdlnb import encoders

    if spec.family == "efficientnet":
        return encoders.efficientnet_lite(spec.variant, resolution=spec.resolution)
    from mdlnb.encoders import pretrain

    if pretrain_data is None:
        raise ValueError(f"pretrain_data: needed to build the {spec.family!r} encoder")
    return pretrain(spec.family, spec.arch, spec.size, pretrain_data, spec.steps, spec.seed,
                    batch_size=min(int(batch_size), pretrain_data.n), progress=progress)


def source_probs(encoder: Any, features: np.ndarray) -> np.ndarray | None:
    """ImageNet class probabilities (N, 1000) from penultimate features, or None
    for an encoder without a source classifier."""
    from mdlnb.transfer import source_probs_from_head

    head = encoder.params.get("classifier") if isinstance(encoder.params, Mapping) else None
    if head is None:
        return None
    return source_probs_from_head(features, np.asarray(head["w"]), np.asarray(head["b"]))


# ----------------------------------------------------------------------------- config


@dataclasses.dataclass(frozen=True)
class TransferabilityConfig:
    """Parameters of the study (see the module docstring for the protocol).

    Attributes:
      encoders: encoder strings for :func:`parse_encoder`.
      tasks: task names of :func:`mdlnb.data.names`.
      train_size, test_size: caps on the training/test split (stratified
        subsample; None = the whole split). Ground truth uses all of it.
      ratios: N/K settings; repeats: subsamples per setting; min_n: N ≥ min_n.
      metrics: names in :data:`mdlnb.transfer.METRICS` (None = all).
      grid_metrics: add PT-Gauss-grid and LINEAR selected by τ vs LINEAR-VALID.
      label_free: add CL, TwoNN ID, CLID and RankMe.
      mdl: add the MDL-switching codelength; ``mdl_experts`` names a preset
        of :func:`mdlnb.experts.preset`, ``mdl_batch_size`` its batch size
        (small: the first batch is coded uniformly); ``mdl_standardize``:
        ``"subsample"`` or ``"online"`` (see :func:`mdl_score`).
      pretrain_data, pretrain_size: data the self-pretrained encoders train on;
        pretrain_batch_size: their batch size.
      truth_readouts: readouts of the ground-truth probe (``"linear"``,
        ``"mlp<layers>x<width>"``); truth_grid/steps/batch_size: its search.
      truth: which ground-truth row τ is computed against: ``"best"``,
        ``"linear"`` or ``"mlp"``.
      seed: subsampling, metrics, probes.
    """

    encoders: tuple[str, ...] = ("lite0@64", "lite1@64", "lite2@64", "random:resnet_S",
                                 "supervised:resnet_S:300", "simclr:resnet_S:300")
    tasks: tuple[str, ...] = ("digits", "textures", "sci_patches")
    train_size: int | None = 1000
    test_size: int | None = 400
    ratios: tuple[int, ...] = (2, 5, 10)
    repeats: int = 5
    min_n: int = 20
    metrics: tuple[str, ...] | None = None
    grid_metrics: bool = True
    label_free: bool = True
    mdl: bool = True
    mdl_experts: str = "small"
    mdl_batch_size: int = 4
    mdl_standardize: str = "subsample"
    pretrain_data: str = "fashion_mnist"
    pretrain_size: int | None = 5000
    pretrain_batch_size: int = 64
    truth_readouts: tuple[str, ...] = ("linear", "mlp1x64")
    truth_grid: Mapping[str, Sequence[float]] = dataclasses.field(
        default_factory=lambda: dict(_TRUTH_GRID))
    truth_steps: int = 500
    truth_batch_size: int = 256
    truth: str = "best"
    seed: int = 0

    def __post_init__(self) -> None:
        from mdlnb import transfer

        for name in ("encoders", "tasks", "ratios"):
            value = tuple(getattr(self, name))
            if not value:
                raise ValueError(f"{name}: must not be empty")
            object.__setattr__(self, name, value)
        if len(set(self.encoders)) != len(self.encoders):
            raise ValueError(f"encoders: repeated entries in {self.encoders}")
        if len(self.encoders) < 2:
            raise ValueError("encoders: Kendall τ needs at least 2 encoders")
        for e in self.encoders:
            parse_encoder(e)
        if any(not isinstance(r, (int, np.integer)) or r < 1 for r in self.ratios):
            raise ValueError(f"ratios: must be integers >= 1, got {self.ratios}")
        for name in ("repeats", "min_n", "mdl_batch_size", "truth_steps", "truth_batch_size",
                     "pretrain_batch_size"):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{name}: must be an integer >= 1, got {v!r}")
        for name in ("train_size", "test_size", "pretrain_size"):
            v = getattr(self, name)
            if v is not None and (not isinstance(v, (int, np.integer)) or v < 2):
                raise ValueError(f"{name}: must be None or an integer >= 2, got {v!r}")
        if self.metrics is not None:
            object.__setattr__(self, "metrics", tuple(self.metrics))
            unknown = [m for m in self.metrics if m not in transfer.METRICS]
            if unknown:
                raise ValueError(f"metrics: unknown {unknown}; known: {sorted(transfer.METRICS)}")
        if self.mdl_standardize not in ("subsample", "online"):
            raise ValueError(f"mdl_standardize: must be 'subsample' or 'online', "
                             f"got {self.mdl_standardize!r}")
        if self.truth not in TRUTH_READOUTS:
            raise ValueError(f"truth: must be one of {TRUTH_READOUTS}, got {self.truth!r}")
        object.__setattr__(self, "truth_readouts", tuple(self.truth_readouts))
        for r in self.truth_readouts:
            readout_from_name(r)
        object.__setattr__(self, "truth_grid", dict(self.truth_grid))

    def replace(self, **changes: Any) -> "TransferabilityConfig":
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def readout_from_name(name: str) -> Any:
    """``"linear"`` → linear readout; ``"mlp<L>x<W>"`` (e.g. ``"mlp1x64"``) → MLP."""
    from mdlnb import readouts

    if name == "linear":
        return readouts.linear()
    if isinstance(name, str) and name.startswith("mlp") and "x" in name:
        layers, _, width = name[3:].partition("x")
        if layers.isdigit() and width.isdigit():
            return readouts.mlp(int(layers), int(width))
    raise ValueError(f"truth_readouts: cannot parse {name!r}; use 'linear' or 'mlp<L>x<W>'")


# ----------------------------------------------------------------------------- subsamples


def subsample_size(ratio: int, num_classes: int, min_n: int = 20) -> int:
    """N = max(ratio · K, min_n) (PACTran Sec. 4.1.4)."""
    for name, v in (("ratio", ratio), ("num_classes", num_classes), ("min_n", min_n)):
        if not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name}: must be an integer >= 1, got {v!r}")
    return max(int(ratio) * int(num_classes), int(min_n))


def subsample_seed(seed: int, ratio: int, repeat: int) -> int:
    """A 32-bit seed for subsample ``repeat`` of setting ``ratio`` (independent streams)."""
    return int(np.random.SeedSequence([int(seed), int(ratio), int(repeat)]).generate_state(1)[0])


def subsample_indices(labels: Any, ratio: int, num_classes: int, *, min_n: int = 20,
                      seed: int = 0, repeat: int = 0) -> np.ndarray:
    """Sorted indices of one stratified subsample of N = max(ratio·K, min_n) examples.

    Depends only on the labels and seeds, so every encoder sees the same examples.
    """
    from mdlnb.data import stratified_indices

    y = np.asarray(labels)
    n = subsample_size(ratio, num_classes, min_n)
    if n > len(y):
        raise ValueError(f"ratio: N = {n} examples exceed the {len(y)} of the training split")
    return stratified_indices(y, n, subsample_seed(seed, ratio, repeat))


# ----------------------------------------------------------------------------- features


@dataclasses.dataclass(frozen=True, eq=False)
class FeatureSet:
    """Features of one (encoder, task): ``train``/``test`` are Tasks of (N, D)
    float32 features; ``source_probs`` (N_train, Z) or None."""

    encoder: str
    task: str
    train: Task
    test: Task
    source_probs: np.ndarray | None = None
    encoder_meta: Mapping[str, Any] = dataclasses.field(default_factory=dict)


def load_tasks(names: Sequence[str], *, train_size: int | None = None,
               test_size: int | None = None, seed: int = 0) -> dict[str, tuple[Task, Task]]:
    """``{name: (train, test)}`` image tasks, each split capped (stratified) at its size."""
    from mdlnb import data

    out = {}
    for name in names:
        tr, te = data.load(name, split="train", seed=seed), data.load(name, split="test", seed=seed)
        if train_size is not None and tr.n > train_size:
            tr = data.subsample(tr, int(train_size), seed)
        if test_size is not None and te.n > test_size:
            te = data.subsample(te, int(test_size), seed)
        out[name] = (tr, te)
    return out


def extract(encoders: Mapping[str, Any], tasks: Mapping[str, tuple[Task, Task]], *,
            progress: bool = False) -> list[FeatureSet]:
    """Features (disk-cached by :func:`mdlnb.encoders.features`) of every
    (encoder, task), train and test, plus source-classifier probabilities."""
    from mdlnb.encoders import features

    pairs = [(e, t) for e in encoders for t in tasks]
    it = pairs
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(pairs, desc="features", unit="pair")
    out = []
    for ename, tname in it:
        enc = encoders[ename]
        tr, te = (features(enc, s) for s in tasks[tname])
        out.append(FeatureSet(ename, tname, tr, te, source_probs(enc, tr.x),
                              dict(getattr(enc, "meta", {}))))
    return out


# ----------------------------------------------------------------------------- ground truth


def ground_truth(featuresets: Sequence[FeatureSet], *, readouts: Sequence[str] = ("linear",),
                 grid: Mapping[str, Sequence[float]] | None = None, steps: int = 500,
                 batch_size: int = 256, seed: int = 0, progress: bool = False):
    """Best-readout test accuracy on the full training split, per (encoder, task).

    Tidy DataFrame: ``encoder``, ``task``, ``readout`` (family, or ``"best"``:
    the family with the lowest validation loss), ``model`` (readout name),
    ``accuracy`` (test top-1), ``val_loss [nats]``.
    """
    import pandas as pd

    from mdlnb import probes

    ros = [readout_from_name(r) for r in readouts]
    it = featuresets
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(featuresets, desc="ground truth", unit="pair")
    rows = []
    for fs in it:
        table = probes.accuracy(fs.train, ros, grid, test=fs.test, seed=seed, steps=steps,
                                batch_size=batch_size)
        for rec in table.to_dict("records"):
            rows.append({"encoder": fs.encoder, "task": fs.task, "readout": rec["family"],
                         "model": rec["readout"], "accuracy": float(rec["test_accuracy"]),
                         "val_loss [nats]": float(rec["val_loss [nats]"])})
        best = table.loc[table["val_loss [nats]"].idxmin()]
        rows.append({"encoder": fs.encoder, "task": fs.task, "readout": "best",
                     "model": best["readout"], "accuracy": float(best["test_accuracy"]),
                     "val_loss [nats]": float(best["val_loss [nats]"])})
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- scores


def grid_scores(features: Any, labels: Any, num_classes: int) -> dict[tuple[str, str], float]:
    """PT-Gauss over its (β, σ0²) grid and LINEAR over its β grid (PACTran Sec. 4.1.4).

    Returns ``{(metric, knob): value}``, lower is better, nats/example.
    """
    from mdlnb import transfer
    from mdlnb.transfer.linear import BETA_FACTORS

    out = {}
    for (bf, sf), v in transfer.pactran_gaussian_grid(features, labels,
                                                      num_classes=num_classes).items():
        out[("pactran_gaussian_grid", f"beta={bf:g}N,sigma0^2={sf:g}/D")] = float(v)
    for bf in BETA_FACTORS:
        out[("linear_grid", f"beta={bf:g}N")] = float(
            transfer.linear(features, labels, num_classes=num_classes, beta_factor=bf))
    return out


def label_free_scores(features: Any, *, seed: int = 0) -> dict[str, float]:
    """Cluster learnability (k-means √N clusters, 1-NN, cosine), TwoNN ID and RankMe."""
    from mdlnb import labelfree

    return {"cl": float(labelfree.cluster_learnability(features, int(seed))),
            "twonn_id": float(labelfree.twonn_id(features)),
            "rankme": float(labelfree.rankme(features))}


def zscore(features: Any) -> np.ndarray:
    """Per-feature (x − mean) / std over the rows given, float32; a constant
    feature is only centred."""
    f = np.asarray(features, np.float64)
    sd = f.std(axis=0)
    return ((f - f.mean(axis=0)) / np.where(sd > 0, sd, 1.0)).astype(np.float32)


def mdl_score(features: Any, labels: Any, num_classes: int, *, experts: str = "small",
              batch_size: int = 4, seed: int = 0, standardize: str = "subsample") -> float:
    """MDL-switching codelength (fixed share, α_t = 10/t) in nats per example.

    ``standardize="subsample"`` z-scores the features with the statistics of
    all N inputs before coding (the code is for the labels given the inputs,
    which sender and receiver both hold); ``"online"`` leaves it to
    :func:`mdlnb.prequential.run`'s running statistics, which at N ≈ 20–160
    with near-constant features (EfficientNet's 1280-d ReLU6 means) can blow
    up the first predictions to tens of nats per example.
    """
    from mdlnb import experts as _experts
    from mdlnb import prequential
    from mdlnb.evaluation import Report

    if standardize not in ("subsample", "online"):
        raise ValueError(f"standardize: must be 'subsample' or 'online', got {standardize!r}")
    x = zscore(features) if standardize == "subsample" else np.asarray(features, np.float32)
    task = Task("subsample", x, np.asarray(labels), num_classes)
    lm = prequential.run(task, _experts.preset(experts), batch_size=int(batch_size),
                         seed=int(seed), standardize=standardize == "online", progress=False)
    return float(Report.from_losses(lm, m=11.0).total_nats) / task.n


def score_subsample(fs: FeatureSet, idx: np.ndarray, config: TransferabilityConfig, *,
                    seed: int = 0) -> tuple[dict[str, float], dict[tuple[str, str], float]]:
    """All scores of ``config`` on rows ``idx`` of ``fs.train``: ``({metric: value},
    {(grid metric, knob): value})``, each value with its metric's own sign."""
    from mdlnb import transfer

    f, y, k = fs.train.x[idx], fs.train.y[idx], fs.train.num_classes
    sp = None if fs.source_probs is None else fs.source_probs[idx]
    names = list(transfer.METRICS) if config.metrics is None else list(config.metrics)
    if config.grid_metrics and "linear_valid" not in names:
        names.append("linear_valid")
    names = [m for m in names if sp is not None or "source_probs" not in transfer.METRICS[m].needs]
    out = transfer.score_all(f, y, sp, num_classes=k, metrics=names, seed=seed)
    grid = grid_scores(f, y, k) if config.grid_metrics else {}
    if config.label_free:
        out.update(label_free_scores(f, seed=seed))
    if config.mdl:
        out["mdl"] = mdl_score(f, y, k, experts=config.mdl_experts,
                               batch_size=config.mdl_batch_size, seed=seed,
                               standardize=config.mdl_standardize)
    return out, grid


def score_subsamples(featuresets: Sequence[FeatureSet], config: TransferabilityConfig, *,
                     progress: bool = False):
    """Score every (encoder, task) on every subsample of the protocol.

    Returns ``(scores, grid)``: tidy DataFrames with columns ``encoder``,
    ``task``, ``ratio``, ``n``, ``repeat``, ``metric``, ``value`` (and ``knob``
    in ``grid``). Subsample indices come from :func:`subsample_indices`, the
    same for every encoder of a task.
    """
    import pandas as pd

    jobs = [(fs, r, rep) for fs in featuresets for r in config.ratios
            for rep in range(config.repeats)]
    it = jobs
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(jobs, desc="scores", unit="subsample")
    rows, grows = [], []
    for fs, ratio, rep in it:
        idx = subsample_indices(fs.train.y, ratio, fs.train.num_classes, min_n=config.min_n,
                                seed=config.seed, repeat=rep)
        key = dict(encoder=fs.encoder, task=fs.task, ratio=int(ratio), n=len(idx), repeat=rep)
        vals, grid = score_subsample(fs, idx, config, seed=subsample_seed(config.seed, ratio, rep))
        rows += [{**key, "metric": m, "value": v} for m, v in vals.items()]
        grows += [{**key, "metric": m, "knob": kn, "value": v} for (m, kn), v in grid.items()]
    cols = ["encoder", "task", "ratio", "n", "repeat", "metric"]
    return (pd.DataFrame(rows, columns=cols + ["value"]),
            pd.DataFrame(grows, columns=cols + ["knob", "value"]))


_GROUP = ["task", "ratio", "repeat"]


def select_grid(grid, scores, reference: str = "linear_valid"):
    """Per (task, ratio, repeat), each grid metric at the knob whose values have the
    highest Kendall τ with ``reference`` across encoders (PACTran Sec. 4.1.4).

    Returns ``(rows, chosen)``: score rows (as in ``scores``) for the grid
    metrics, and a table of the knob chosen per group.
    """
    import pandas as pd

    from mdlnb.transfer import select_by_kendall

    ref = scores[scores["metric"] == reference].set_index([*_GROUP, "encoder"])["value"]
    rows, chosen = [], []
    for (metric, *gkey), g in grid.groupby(["metric", *_GROUP], sort=True):
        table = {e: dict(zip(h["knob"], h["value"])) for e, h in g.groupby("encoder")}
        refmap = {e: float(ref[(*gkey, e)]) for e in table if (*gkey, e) in ref.index}
        if len(refmap) < 2:
            raise ValueError(f"scores: need {reference!r} for >= 2 encoders of {tuple(gkey)}")
        knob = select_by_kendall(table, refmap)
        sel = g[g["knob"] == knob]
        rows += sel.drop(columns="knob").to_dict("records")
        chosen.append(dict(zip(_GROUP, gkey), metric=metric, knob=knob))
    return pd.DataFrame(rows, columns=list(scores.columns)), pd.DataFrame(chosen)


def add_clid(scores):
    """Append CLID = min–max(CL) + min–max(ID) across the encoders of each
    (task, ratio, repeat) (:func:`mdlnb.labelfree.clid`)."""
    import pandas as pd

    from mdlnb import labelfree

    part = scores[scores["metric"].isin(["cl", "twonn_id"])]
    if part.empty:
        return scores
    wide = part.pivot_table(index=[*_GROUP, "encoder", "n"], columns="metric", values="value")
    rows = []
    for gkey, g in wide.groupby(level=_GROUP, sort=True):
        values = labelfree.clid(g["cl"].to_numpy(), g["twonn_id"].to_numpy())
        for (task, ratio, repeat, enc, n), v in zip(g.index, values):
            rows.append(dict(encoder=enc, task=task, ratio=ratio, n=n, repeat=repeat,
                             metric="clid", value=float(v)))
    return pd.concat([scores, pd.DataFrame(rows, columns=scores.columns)], ignore_index=True)


def orient(scores):
    """``scores`` with a column ``oriented`` = sign · value (higher-is-better)."""
    signs = {m: metric_sign(m) for m in scores["metric"].unique()}
    return scores.assign(oriented=scores["value"] * scores["metric"].map(signs).astype(float))


# ----------------------------------------------------------------------------- Kendall τ


def kendall_table(scores, truth, *, readout: str = "best"):
    """Kendall τ between each metric and the ground-truth accuracy, per task and ratio.

    τ is computed across encoders for every (task, ratio, repeat, metric)
    with :func:`mdlnb.ranking.kendall_tau` (τ_b) on the oriented values; a
    metric constant across encoders gets τ = 0 (PACTran's definition:
    sign(0) = 0 in every pair). Non-finite values (a metric that failed on an
    encoder) are left out of that τ. Then averaged over repeats.

    Returns a DataFrame with ``task``, ``ratio``, ``metric``, ``tau`` (mean
    over repeats), ``tau_std`` (over repeats, ddof 0), ``repeats``,
    ``encoders`` (the fewest encoders any of its τ is over), ``nonfinite``
    (metric values left out as NaN/inf, summed over repeats).
    """
    import pandas as pd

    from mdlnb.ranking import kendall_tau

    if readout not in set(truth["readout"]):
        raise ValueError(f"readout: {readout!r} not in truth; has {sorted(set(truth['readout']))}")
    if "oriented" not in scores:
        scores = orient(scores)
    acc = truth[truth["readout"] == readout].set_index(["task", "encoder"])["accuracy"]
    per_rep = []
    for (task, ratio, metric, repeat), g in scores.groupby(["task", "ratio", "metric", "repeat"],
                                                           sort=True):
        g = g[np.array([(task, e) in acc.index for e in g["encoder"]], bool)]
        finite = np.isfinite(g["oriented"].to_numpy(float))
        nonfinite, g = int((~finite).sum()), g[finite]
        if len(g) < 2:
            continue
        x = g["oriented"].to_numpy(float)
        y = np.array([acc[(task, e)] for e in g["encoder"]], float)
        tau = 0.0 if np.ptp(x) == 0 or np.ptp(y) == 0 else kendall_tau(x, y)
        per_rep.append(dict(task=task, ratio=ratio, metric=metric, repeat=repeat, tau=tau,
                            encoders=len(g), nonfinite=nonfinite))
    per_rep = pd.DataFrame(per_rep, columns=["task", "ratio", "metric", "repeat", "tau",
                                             "encoders", "nonfinite"])
    agg = per_rep.groupby(["task", "ratio", "metric"], sort=True).agg(
        tau=("tau", "mean"), tau_std=("tau", lambda s: float(np.std(s))),
        repeats=("tau", "size"), encoders=("encoders", "min"),
        nonfinite=("nonfinite", "sum"))
    return agg.reset_index()


def average_table(tau, *, metrics: Sequence[str] | None = None):
    """Mean τ over tasks: one row per metric, one column ``N/K=<ratio>`` per
    ratio, plus ``encoders`` (the fewest any τ was over) and ``nonfinite``
    (values left out as NaN/inf, summed) — PACTran Table 1's
    "Average" column, CLID Table 2's "Avg" row."""
    wide = tau.pivot_table(index="metric", columns="ratio", values="tau", aggfunc="mean")
    wide = wide.round(12) + 0.0   # means of multiples of 2/(m(m−1)): drop 1e-17 residues, −0
    wide.columns = [f"N/K={c}" for c in wide.columns]
    wide["encoders"] = tau.groupby("metric")["encoders"].min()
    if "nonfinite" in tau:
        wide["nonfinite"] = tau.groupby("metric")["nonfinite"].sum()
    order = list(metrics) if metrics is not None else metric_order(wide.index)
    return wide.loc[[m for m in order if m in wide.index]].reset_index()


def per_task_table(tau):
    """τ per task (columns) for each (ratio, metric) — PACTran Tables 4–6."""
    wide = tau.pivot_table(index=["ratio", "metric"], columns="task", values="tau")
    order = {m: i for i, m in enumerate(metric_order(tau["metric"].unique()))}
    wide = wide.reset_index()
    wide = wide.assign(_o=wide["metric"].map(order)).sort_values(["ratio", "_o"])
    return wide.drop(columns="_o").reset_index(drop=True)


def metric_order(names: Any) -> list[str]:
    """Registry order, then the grid metrics, MDL, and the label-free ones."""
    from mdlnb import transfer

    ref = list(transfer.METRICS) + list(EXTRA_METRICS)
    names = list(names)
    return [m for m in ref if m in names] + sorted(m for m in names if m not in ref)


def plot_kendall(tau, *, ax: Any = None, title: str | None = None):
    """Mean Kendall τ over tasks per metric (bars) for each N/K (hue); error bars:
    standard deviation over tasks. Returns the Axes."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    order = metric_order(tau["metric"].unique())
    if ax is None:
        _, ax = plt.subplots(figsize=(max(6.0, 0.55 * len(order)), 3.8))
    data = tau.assign(**{"N/K": tau["ratio"].astype(str)})
    sns.barplot(data=data, x="metric", y="tau", hue="N/K", order=order, errorbar="sd", ax=ax,
                palette="viridis")
    ax.axhline(0.0, color="0.3", lw=0.8)
    ax.set_ylim(-1.05, 1.05)
    ax.set_ylabel("Kendall τ vs accuracy")
    ax.set_xlabel("")
    ax.tick_params(axis="x", rotation=60)
    for t in ax.get_xticklabels():
        t.set_ha("right")
    if title:
        ax.set_title(title)
    return ax


# ----------------------------------------------------------------------------- run


@dataclasses.dataclass(frozen=True)
class TransferabilityResult:
    """Output of :func:`run`.

    Attributes:
      config: the configuration.
      scores: tidy scores (encoder, task, ratio, n, repeat, metric, value, oriented).
      grid_choice: knob chosen for each grid metric per (task, ratio, repeat).
      truth: ground truth (encoder, task, readout, model, accuracy, val_loss [nats]).
      tau: Kendall τ per (task, ratio, metric), see :func:`kendall_table`.
      encoders: per encoder its provenance (meta) and whether it has a source classifier.
      seconds: wall-clock time per stage.
    """

    config: TransferabilityConfig
    scores: Any
    grid_choice: Any
    truth: Any
    tau: Any
    encoders: Any
    seconds: Mapping[str, float]

    def summary(self):
        """Mean τ over tasks, metric × N/K (:func:`average_table`)."""
        return average_table(self.tau)

    def per_task(self):
        return per_task_table(self.tau)

    def truth_table(self):
        """Ground-truth accuracy, encoder × task, for ``config.truth``."""
        t = self.truth[self.truth["readout"] == self.config.truth]
        return t.pivot_table(index="encoder", columns="task", values="accuracy").reset_index()

    def save(self, paper_dir: str | Path = "paper", *, prefix: str = "transferability"
             ) -> list[Path]:
        """Write tables (csv + md) and the τ figure to ``paper_dir`` atomically."""
        import matplotlib.pyplot as plt

        from mdlnb import report

        paths = []
        for name, df, digits in (("kendall", self.summary(), 3),
                                 ("kendall_per_task", self.per_task(), 3),
                                 ("kendall_tidy", self.tau, 4),
                                 ("truth", self.truth_table(), 4),
                                 ("encoders", self.encoders, 4),
                                 ("scores", self.scores, 5)):
            paths += report.save_table(df, f"{prefix}_{name}", paper_dir, digits=digits)
        ax = plot_kendall(self.tau, title=f"{len(self.config.encoders)} encoders, "
                                          f"{len(self.config.tasks)} tasks, ground truth: "
                                          f"{self.config.truth} readout")
        paths.append(report.save_figure(ax.figure, f"{prefix}_kendall", paper_dir))
        plt.close(ax.figure)
        return paths


def encoder_table(specs: Mapping[str, EncoderSpec], built: Mapping[str, Any]):
    """One row per encoder: name, family, source classifier, feature dim, provenance."""
    import pandas as pd

    rows = []
    for key, spec in specs.items():
        enc = built[key]
        m = dict(enc.meta)
        rows.append({"encoder": key, "name": enc.name, "family": spec.family,
                     "source_classifier": spec.has_source_classifier,
                     "feature_dim": int(enc.feature_dim),
                     "input": f"{enc.input_size[0]}x{enc.input_size[1]}x{enc.channels}",
                     "pretrain_steps": m.get("steps", 0 if spec.has_source_classifier else None),
                     "final_loss": m.get("final_loss")})
    return pd.DataFrame(rows)


def run(config: TransferabilityConfig | None = None, *, progress: bool = True
        ) -> TransferabilityResult:
    """Build encoders, extract features, compute ground truth and scores, and τ
    (``config`` defaults to ``TransferabilityConfig()``)."""
    import pandas as pd

    from mdlnb import data

    config = TransferabilityConfig() if config is None else config
    if not isinstance(config, TransferabilityConfig):
        raise ValueError(f"config: expected a TransferabilityConfig, got {type(config).__name__}")
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    specs = {e: parse_encoder(e) for e in config.encoders}
    pre = None
    if any(not s.has_source_classifier for s in specs.values()):
        pre = data.load(config.pretrain_data, split="train", size=config.pretrain_size,
                        seed=config.seed)
    built = {k: build_encoder(s, pre, batch_size=config.pretrain_batch_size, progress=progress)
             for k, s in specs.items()}
    seconds["encoders"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    tasks = load_tasks(config.tasks, train_size=config.train_size, test_size=config.test_size,
                       seed=config.seed)
    feats = extract(built, tasks, progress=progress)
    seconds["features"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    truth = ground_truth(feats, readouts=config.truth_readouts, grid=config.truth_grid,
                         steps=config.truth_steps, batch_size=config.truth_batch_size,
                         seed=config.seed, progress=progress)
    seconds["ground_truth"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    scores, grid = score_subsamples(feats, config, progress=progress)
    choice = None
    if config.grid_metrics:
        extra, choice = select_grid(grid, scores)
        scores = pd.concat([scores, extra], ignore_index=True)
    if config.label_free:
        scores = add_clid(scores)
    scores = orient(scores)
    seconds["scores"] = time.perf_counter() - t0

    tau = kendall_table(scores, truth, readout=config.truth)
    return TransferabilityResult(config=config, scores=scores, grid_choice=choice, truth=truth,
                                 tau=tau, encoders=encoder_table(specs, built),
                                 seconds={k: round(v, 2) for k, v in seconds.items()})
