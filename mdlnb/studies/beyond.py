"""MDL beyond class labels and plain experts: real-valued targets, calibrated experts.

The logic behind ``notebooks/beyond_classification.py``: real-valued targets and calibrated experts.

**Regression.** A few representations of two regression tasks — ``diabetes``
(its 10 clinical features, their top-2 principal components, Gaussian noise of
the same width) and one dSprites factor (``dsprites_x_reg`` by default:
block-averaged pixels, EfficientNet-Lite features, noise) — each coded by
:func:`mdlnb.compare` (Gaussian readouts, stage 1 + switching) over the same
``S`` orders. The code is a *density* codelength, −Σ log p(y_t | …) in nats:
a codelength only up to the targets' quantisation (−log δ per example and
output, :mod:`mdlnb._targets`), so its numbers compare representations of the
same targets and nothing else. Beside it, LogME's regression evidence
(:func:`mdlnb.transfer.logme_regression`, nats/example, higher is better; on
z-scored features and centred targets) ranks the same representations by an
independent route (Bayesian linear regression's marginal likelihood).

**Calibration.** On the first ``calibration_size`` examples of a classification
task, as raw pixels and as EfficientNet-Lite features, the board of
``calibration_protocol`` is run without and with ``calibrate=True``
(:func:`mdlnb.protocol`; β_t fitted on the examples coded before batch t) per
order (:func:`mdlnb.evaluate`, one call per order and setting). Per
representation: the paired difference on − off of the switching code and of
the best single expert, mean with a 95 % t-interval over orders.

:class:`BeyondResult` turns both into tables (``tables()``), figures
(``figures()``), prose computed from them (``findings()``) and paper files
(``save()``). The papers make no claim about either, so there are none here.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

import mdlnb
from mdlnb._checks import check_int
from mdlnb._stages import Stages
from mdlnb.plots import log_spaced
from mdlnb.studies import _beyond_plots
from mdlnb.studies._base import StudyConfig, save_files

# Imported inside the functions that use them, so that importing this module does not load
# them: scikit-learn, SciPy, pandas, matplotlib; mdlnb.encoders (JAX, optax); mdlnb.transfer
# (SciPy, threadpoolctl).


@dataclasses.dataclass(frozen=True)
class BeyondConfig(StudyConfig):
    """Parameters of the study; the defaults are the CPU run of ``make reproduce``.

    Attributes:
      image_task: a dSprites regression task (:func:`mdlnb.data.names` with
        ``kind="regression"``); ``diabetes`` is always coded, whole.
      image_size: examples of ``image_task`` (a seeded subsample; None: all).
      pool: block-averaged pixels on a ``pool × pool`` grid (one representation).
      variant, resolution: the EfficientNet-Lite encoder (ImageNet weights) of
        both parts (input pixels; small is fast).
      layer: its layer whose mean-pooled features represent ``image_task``
        (:func:`mdlnb.encoders.layer_names`; ``"head"``: its own 1280 features).
        An intermediate stage by default: its width stays below N, where LogME's
        evidence is finite (with D ≥ N the features can fit the targets exactly).
      calibration_task: a classification task; its first ``calibration_size``
        examples (split ``all``; None: all) are coded.
      seeds: data orders, the same for every representation and setting (≥ 3).
      regression_protocol, calibration_protocol: protocol presets of the two parts
        (:func:`mdlnb.protocol`).
      points: log-spaced n of the codelength curves.
    """

    image_task: str = "dsprites_x_reg"
    image_size: int | None = 400
    pool: int = 8
    variant: int = 0
    resolution: int = 64
    layer: str = "stage5"
    calibration_task: str = "digits"
    calibration_size: int | None = 600
    seeds: Sequence[int] = (0, 1, 2)
    regression_protocol: str = "small"
    calibration_protocol: str = "default"
    points: int = 60

    def __post_init__(self):
        seeds = self.seeds
        if isinstance(seeds, str) or not isinstance(seeds, Sequence) or len(seeds) < 3:
            raise ValueError(f"seeds: expected a list of >= 3 orders, got {seeds!r}")
        object.__setattr__(self, "seeds", tuple(int(s) for s in seeds))
        object.__setattr__(self, "pool", check_int("pool", self.pool, minimum=1))
        for name in ("image_size", "calibration_size"):
            object.__setattr__(
                self, name, check_int(name, getattr(self, name), minimum=2, allow_none=True)
            )

    def encoder(self):
        """The EfficientNet-Lite encoder (real weights)."""
        from mdlnb.encoders import efficientnet_lite

        return efficientnet_lite(self.variant, resolution=self.resolution)

    @property
    def encoder_label(self) -> str:
        return f"lite{self.variant}@{self.resolution}"


# ---- representations ------------------------------------------------------------


def _noise(n: int, d: int) -> np.ndarray:
    return np.random.default_rng(0).normal(size=(n, d)).astype(np.float32)


def pooled_pixels(images: np.ndarray, grid: int) -> np.ndarray:
    """Images (N, H, W[, C]) averaged over blocks into a ``grid × grid`` map (channels
    averaged too), flattened to (N, grid²), scaled to [0, 1] for uint8 input."""
    x = np.asarray(images, np.float32)
    if x.ndim == 4:
        x = x.mean(-1)
    n, h, w = x.shape
    if h % grid or w % grid:
        raise ValueError(f"pool: {grid} does not divide the image size {h}×{w}")
    x = x.reshape(n, grid, h // grid, grid, w // grid).mean((2, 4)).reshape(n, -1)
    return x / 255.0 if np.asarray(images).dtype == np.uint8 else x


def regression_representations(
    config: BeyondConfig,
) -> dict[str, tuple[Any, dict[str, np.ndarray]]]:
    """``{task name: (task, {representation: features (N, D)})}`` of the regression part."""
    from sklearn.decomposition import PCA

    from mdlnb import data, encoders

    dia = data.load("diabetes", split="all")
    reps = {
        "features": dia.x.astype(np.float32),
        "pca2": PCA(2, random_state=0).fit_transform(dia.x).astype(np.float32),
        "noise": _noise(dia.n, dia.x.shape[1]),
    }
    img = data.load(config.image_task, size=config.image_size, seed=0)
    if img.kind != "regression":
        raise ValueError(f"image_task: {config.image_task!r} is not a regression task")
    (enc,) = encoders.layers(config.encoder(), [config.layer]).values()
    lite = encoders.features(enc, img).x
    px = pooled_pixels(img.x, config.pool)
    reps_img = {
        f"pixels{config.pool}x{config.pool}": px,
        f"{config.encoder_label}/{config.layer}": lite,
        "noise": _noise(img.n, px.shape[1]),
    }
    return {dia.name: (dia, reps), img.name: (img, reps_img)}


def logme(x: np.ndarray, y: np.ndarray) -> float:
    """LogME regression evidence (nats/example) of z-scored features and centred targets."""
    from mdlnb.transfer import logme_regression

    x = np.asarray(x, np.float64)
    sd = x.std(0)
    x = (x - x.mean(0)) / np.where(sd > 0, sd, 1.0)
    y = np.asarray(y, np.float64)
    return float(logme_regression(x, y - y.mean(0)))


def calibration_tasks(config: BeyondConfig) -> dict[str, Any]:
    """``{representation: Task}``: the first ``calibration_size`` examples of
    ``calibration_task`` as raw pixels and as the encoder's features (extracted on
    the whole split, then cut, so the features do not depend on the cut)."""
    from mdlnb import data, encoders

    t = data.load(config.calibration_task, split="all")
    if t.kind == "regression":
        raise ValueError(
            f"calibration_task: {config.calibration_task!r} is a regression task; "
            "calibration is of classifiers"
        )
    k = t.n if config.calibration_size is None else min(config.calibration_size, t.n)
    raw = t.x.reshape(t.n, -1).astype(np.float32)
    feats = encoders.features(config.encoder(), t).x
    return {
        name: mdlnb.Task(f"{t.name}|{name}", x[:k], t.y[:k], t.num_classes)
        for name, x in (("pixels", raw), (config.encoder_label, feats))
    }


def t_interval(d: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """Mean and the half-width of the two-sided ``level`` t-interval over ``d``."""
    from scipy import stats

    d = np.asarray(d, np.float64)
    half = stats.t.ppf(0.5 + level / 2, len(d) - 1) * d.std(ddof=1) / math.sqrt(len(d))
    return float(d.mean()), float(half)


# ---- result ----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class BeyondResult:
    """Both parts' measurements.

    Attributes:
      config: the :class:`BeyondConfig` run.
      comparisons: ``{regression task: mdlnb.Comparison}`` (density codes).
      logme: ``{(task, representation): LogME [nats/example]}``.
      feature_dims: ``{(task, representation): D}``.
      calibration_runs: tidy DataFrame, one row per (representation, order):
        ``n``, ``off [nats]``, ``on [nats]``, ``best expert off [nats]``,
        ``best expert on [nats]`` and ``experts shorter`` (of the board).
    """

    config: BeyondConfig
    comparisons: Mapping[str, Any]
    logme: Mapping[tuple[str, str], float]
    feature_dims: Mapping[tuple[str, str], int]
    calibration_runs: Any

    def regression(self):
        """One row per (task, representation), best first: density nats/example and total,
        mean and sd over orders, the paired difference to the best, rank, and LogME
        with its rank (1 = highest evidence)."""
        import pandas as pd

        rows = []
        for task, comp in self.comparisons.items():
            tab = comp.table()
            ev = {e: self.logme[(task, e)] for e in tab["encoder"]}
            order = sorted(ev, key=lambda e: -ev[e])
            for _, t in tab.iterrows():
                e = t["encoder"]
                rows.append(
                    {
                        "task": task,
                        "representation": e,
                        "feature dim": self.feature_dims[(task, e)],
                        "n": comp.n,
                        "orders": int(t["orders"]),
                        "per example [density nats]": t["per example [density nats]"],
                        "per example std [density nats]": t["per example std [density nats]"],
                        "total [nats]": t["total [nats]"],
                        "total std [nats]": t["total std [nats]"],
                        "vs best [nats]": t["vs best [nats]"],
                        "vs best std [nats]": t["vs best std [nats]"],
                        "rank": int(t["rank"]),
                        "orders ranked first": int(t["orders ranked first"]),
                        "LogME [nats/example]": ev[e],
                        "LogME rank": order.index(e) + 1,
                        "readout by data size": t["readout by data size"],
                        "linear or deeper": t["linear or deeper"],
                    }
                )
        return pd.DataFrame(rows)

    def regression_runs(self):
        """Tidy: task, representation, seed, ``total [nats]`` (density code of that order)."""
        import pandas as pd

        frames = []
        for task, comp in self.comparisons.items():
            r = comp.runs[["encoder", "seed", "total [nats]"]].rename(
                columns={"encoder": "representation"}
            )
            r.insert(0, "task", task)
            frames.append(r)
        return pd.concat(frames, ignore_index=True)

    def along_n(self):
        """Tidy: task, representation, n, the cumulative density code after n examples
        divided by n [density nats/example]: ``mean``, ``min``, ``max`` over orders, at
        ≤ ``config.points`` log-spaced n (n = N included)."""
        import pandas as pd

        frames = []
        for task, comp in self.comparisons.items():
            ns = np.unique(np.append(log_spaced(comp.n + 1, self.config.points, start=1), comp.n))
            for e in comp.encoders:
                c = (
                    np.stack(
                        [
                            np.cumsum(np.asarray(comp.per_step_nats[(e, s)], np.float64))
                            for s in comp.seeds
                        ]
                    )[:, ns - 1]
                    / ns
                )
                frames.append(
                    pd.DataFrame(
                        {
                            "task": task,
                            "representation": e,
                            "n": ns,
                            "mean": c.mean(0),
                            "min": c.min(0),
                            "max": c.max(0),
                        }
                    )
                )
        return pd.concat(frames, ignore_index=True)

    def calibration(self):
        """Per representation: the switching code without and with calibration (mean ± sd
        over orders), the paired difference on − off with its 95 % t-interval, in nats
        and bits/example, the same difference for the best single expert, and a verdict
        (``shorter``/``longer`` when the interval excludes 0, else ``no separation``)."""
        import pandas as pd

        rows = []
        for rep, g in self.calibration_runs.groupby("representation", sort=False):
            n = int(g["n"].iloc[0])
            d, h = t_interval(g["on [nats]"] - g["off [nats]"])
            db, hb = t_interval(g["best expert on [nats]"] - g["best expert off [nats]"])
            verdict = "shorter" if d + h < 0 else "longer" if d - h > 0 else "no separation"
            rows.append(
                {
                    "representation": rep,
                    "n": n,
                    "orders": len(g),
                    "off [nats]": g["off [nats]"].mean(),
                    "off std [nats]": g["off [nats]"].std(ddof=1),
                    "on [nats]": g["on [nats]"].mean(),
                    "on std [nats]": g["on [nats]"].std(ddof=1),
                    "on - off [nats]": d,
                    "on - off 95% half-width [nats]": h,
                    "on - off [bits/example]": d / math.log(2) / n,
                    "best expert on - off [nats]": db,
                    "best expert on - off 95% half-width [nats]": hb,
                    "experts shorter": g["experts shorter"].mean(),
                    "experts": int(g["experts"].iloc[0]),
                    "switching code": verdict,
                }
            )
        return pd.DataFrame(rows)

    def tables(self) -> dict[str, Any]:
        """``{name: DataFrame}`` of the paper files (``beyond_<name>``)."""
        return {
            "regression": self.regression(),
            "regression_summary": self.regression_summary(),
            "regression_runs": self.regression_runs(),
            "regression_along_n": self.along_n(),
            "calibration": self.calibration(),
            "calibration_runs": self.calibration_runs,
        }

    def plot_regression(self):
        """Per regression task: cumulative density nats per example along n, mean over
        orders (line) and min–max (band), per representation, log x
        (:func:`mdlnb.studies._beyond_plots.regression`)."""
        return _beyond_plots.regression(self)

    def plot_calibration(self):
        """Per representation: on − off per order (dots) and the mean with its 95 %
        t-interval (bar), for the switching code and for the best single expert."""
        return _beyond_plots.calibration(self)

    def regression_summary(self):
        """:meth:`regression` for reading: rounded ``mean ± sd`` cells, representations
        and units in words (:func:`mdlnb.studies._beyond_plots.summary`); the note under
        it is ``.attrs["note"]``."""
        return _beyond_plots.summary(self)

    def figures(self) -> dict[str, Any]:
        """``{name: Figure}`` of the paper files (``beyond_<name>.png``)."""
        return {
            "regression_codelengths": self.plot_regression(),
            "calibration": self.plot_calibration(),
        }

    def findings(self) -> str:
        """Markdown, computed from the tables: per regression task the MDL order with its
        spread and whether LogME orders the representations alike; per representation
        calibration's paired change with its interval."""
        from scipy import stats

        lines = []
        reg = self.regression()
        for task, g in reg.groupby("task", sort=False):
            g = g.sort_values("rank")
            order = " < ".join(
                f"{r.representation} ({r['per example [density nats]']:.3f} ± "
                f"{r['per example std [density nats]']:.3f})"
                for _, r in g.iterrows()
            )
            tau = stats.kendalltau(g["rank"], g["LogME rank"]).statistic
            same = list(g["representation"]) == list(g.sort_values("LogME rank")["representation"])
            b, s = g.iloc[0], g.iloc[1]
            evidence = ", ".join(
                f"{r.representation} {r['LogME [nats/example]']:+.3f}"
                for _, r in g.sort_values("LogME rank").iterrows()
            )
            unbounded = [
                r.representation
                for _, r in g.iterrows()
                if not np.isfinite(r["LogME [nats/example]"])
            ]
            if unbounded:
                evidence += (
                    f"; unbounded for {', '.join(unbounded)}: its features fit the "
                    "targets exactly, LogME cannot rank it"
                )
            lines.append(
                f"* **{task}** (N = {int(b['n'])}, {int(b['orders'])} orders), density "
                f"nats/example, mean ± sd over orders: {order}. {b['representation']} is "
                f"shortest in {int(b['orders ranked first'])}/{int(b['orders'])} orders, "
                f"{s['vs best [nats]']:.1f} ± {s['vs best std [nats]']:.1f} nats ahead of "
                f"{s['representation']} (paired). LogME's regression evidence "
                + (
                    "orders them the same way"
                    if same
                    else f"orders them differently (Kendall τ = {tau:+.2f})"
                )
                + f" ({evidence} nats/example)."
            )
        cal = self.calibration()
        for _, r in cal.iterrows():
            word = {
                "shorter": "the interval excludes zero: shorter",
                "longer": "the interval excludes zero: longer",
                "no separation": "the interval includes zero",
            }[r["switching code"]]
            lines.append(
                f"* **Calibration, {self.config.calibration_task} {r['representation']}** (N = "
                f"{int(r['n'])}, {int(r['orders'])} orders, `{self.config.calibration_protocol}` "
                f"board): `calibrate=True` changed the switching code by "
                f"{r['on - off [nats]']:+.1f} ± {r['on - off 95% half-width [nats]']:.1f} nats "
                f"(on − off, mean ± 95 % t half-width; {r['on - off [bits/example]']:+.4f} "
                f"bits/example; {word}), the best single expert's by "
                f"{r['best expert on - off [nats]']:+.1f} ± "
                f"{r['best expert on - off 95% half-width [nats]']:.1f} nats; "
                f"{r['experts shorter']:.1f} of {int(r['experts'])} experts shorter on average."
            )
        helps = (cal["switching code"] == "shorter").sum()
        hurts = (cal["switching code"] == "longer").sum()
        lines.append(
            f"* Calibration shortened the switching code significantly on {helps} of "
            f"{len(cal)} representations and lengthened it on {hurts}"
            + (
                ": it helps here."
                if helps and not hurts
                else ": it does not help consistently here."
                if helps or hurts
                else ": no separation from zero here."
            )
        )
        return "\n".join(lines)

    def save(self, paper_dir: Any, prefix: str = "beyond") -> list:
        """The tables (CSV + Markdown) and figures (PNG) as ``<prefix>_<name>``."""
        return save_files(paper_dir, prefix, self.tables(), self.figures())


# ---- run -------------------------------------------------------------------------


def run(
    config: BeyondConfig | None = None, *, progress: bool | None = None, cache: bool = True
) -> BeyondResult:
    """Both parts of the study under ``config`` (default: the CPU run). The library's
    per-run warnings (grid edges, codes above the baseline) are kept in each
    Comparison's/Report's ``warnings`` and not printed. ``progress``: one bar over the
    study's stages (a regression task, a calibrated representation) where someone
    watches (:mod:`mdlnb._stages`; ``None``, the package's default)."""
    import pandas as pd

    config = config or BeyondConfig()
    if not isinstance(config, BeyondConfig):
        raise ValueError(f"config: expected a BeyondConfig, got {type(config).__name__}")
    comps, ev, dims, rows = {}, {}, {}, []
    stages = Stages(
        (
            "representations",
            "diabetes",
            config.image_task,
            "calibration tasks",
            "pixels",
            config.encoder_label,
        ),
        desc="beyond",
        progress=progress,
    )
    with warnings.catch_warnings(), stages:
        warnings.simplefilter("ignore")
        stages.start("representations")
        for name, (task, reps) in regression_representations(config).items():
            stages.start(name)
            comps[name] = mdlnb.compare(
                reps,
                task,
                protocol=config.regression_protocol,
                seeds=config.seeds,
                progress=False,
                cache=cache,
            )
            for e, x in reps.items():
                ev[(name, e)] = logme(x, task.y)
                dims[(name, e)] = int(x.shape[1])
        stages.start("calibration tasks")
        for rep, task in calibration_tasks(config).items():
            stages.start(rep)
            for s in config.seeds:
                r = {
                    cal: mdlnb.evaluate(
                        task,
                        protocol=mdlnb.protocol(config.calibration_protocol, calibrate=cal),
                        seed=s,
                        progress=False,
                        cache=cache,
                    )
                    for cal in (False, True)
                }
                per = {cal: np.asarray(r[cal].losses.losses, np.float64).sum(0) for cal in r}
                rows.append(
                    {
                        "representation": rep,
                        "seed": s,
                        "n": task.n,
                        "off [nats]": r[False].total_nats,
                        "on [nats]": r[True].total_nats,
                        "best expert off [nats]": r[False].best_expert_nats,
                        "best expert on [nats]": r[True].best_expert_nats,
                        "experts shorter": int((per[True] < per[False]).sum()),
                        "experts": len(per[False]),
                    }
                )
    return BeyondResult(
        config=config,
        comparisons=comps,
        logme=ev,
        feature_dims=dims,
        calibration_runs=pd.DataFrame(rows),
    )


#: The study's config class, under the name every study package uses (mdlnb.studies).
Config = BeyondConfig
