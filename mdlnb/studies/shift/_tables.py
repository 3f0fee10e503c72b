"""The shift study's tables: the runs, paired by (task, draw, encoder), as differences
against the reshuffled split, per independent unit, and as rankings.

A *unit* is one (task, draw): an independent procedural draw (:func:`._split.data_seed`)
coded by every encoder, so units are the independent observations of every interval.
Codelengths are nats per example throughout. The original split's codelength is the
mean over the two ways of naming the splits (A as the train split, ``original``; B,
``swapped``): which half of the factor VTAB's authors would have called "train" is
arbitrary here, and its expectation over that choice is what the paper's shifted tasks
sample.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from mdlnb.research.claims import bootstrap_interval, t_interval

KEYS = ["task", "factor", "seed", "encoder"]
#: Versions compared with the reshuffled split: column of :func:`per_example` → what it is.
VERSIONS = {
    "original (both splits)": "the original train split, the mean of A and of B as the train split",
    "original": "split A (below the factor's median) as the train split",
    "swapped": "split B (above the median) as the train split",
    "train then test": "the reshuffled split's examples, those of A first",
}
#: Versions whose ranking is compared with the reshuffled split's.
RANKED = ("original (both splits)", "train then test")


def per_example(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (task, factor, seed, encoder): the codelength per example [nats] of every
    stream and of ``original (both splits)``."""
    wide = runs.pivot_table(
        index=KEYS, columns="stream", values="per example [nats]", sort=False
    ).reset_index()
    wide.columns.name = None
    wide["original (both splits)"] = (wide["original"] + wide["swapped"]) / 2
    return wide


def differences(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (task, factor, seed, encoder, version): ``version − reshuffled``, nats
    per example, and whether it exceeds Table 11's colour threshold (|Δ| > 0.01)."""
    wide = per_example(runs)
    out = wide[KEYS + list(VERSIONS)].melt(
        id_vars=KEYS, var_name="version", value_name="per example [nats]"
    )
    base = np.tile(wide["reshuffled"].to_numpy(), len(VERSIONS))
    out["reshuffled [nats]"] = base
    out["minus reshuffled [nats]"] = out["per example [nats]"] - base
    out["beyond 0.01"] = out["minus reshuffled [nats]"].abs() > 0.01
    return out


def units(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (unit, version): the mean over encoders of ``version − reshuffled``
    (nats per example) and the share of encoders beyond 0.01."""
    d = differences(runs)
    g = d.groupby(["task", "factor", "seed", "version"], sort=False)
    return g.agg(
        **{
            "minus reshuffled [nats]": ("minus reshuffled [nats]", "mean"),
            "encoders beyond 0.01": ("beyond 0.01", "mean"),
        }
    ).reset_index()


def unit_matrices(runs: pd.DataFrame, version: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per unit, (reshuffled, ``version``) codelengths per example over the encoders (the
    same encoder order in every unit): what the rank statistic resamples."""
    wide = per_example(runs)
    encs = list(dict.fromkeys(wide["encoder"]))
    out = []
    for _, g in wide.groupby(["task", "seed"], sort=False):
        g = g.set_index("encoder").loc[encs]
        out.append((g["reshuffled"].to_numpy(), g[version].to_numpy()))
    return out


def average_ranks(values: Sequence[np.ndarray]) -> np.ndarray:
    """Average rank (1 = shortest code; ties share) of each encoder over the units."""
    from scipy.stats import rankdata

    return np.mean([rankdata(v) for v in values], axis=0)


def rank_tau(groups: Sequence[tuple[np.ndarray, np.ndarray]]) -> float:
    """Kendall τ-b between the encoders' average-rank orders under the two versions of
    ``groups`` (units of :func:`unit_matrices`); 1 when both orders are all ties."""
    from scipy.stats import kendalltau

    a = average_ranks([g[0] for g in groups])
    b = average_ranks([g[1] for g in groups])
    if np.ptp(a) == 0 and np.ptp(b) == 0:
        return 1.0
    return float(kendalltau(a, b).statistic)


def ranks(runs: pd.DataFrame) -> pd.DataFrame:
    """Per encoder: its average rank over the units under the reshuffled split and under
    each ranked version, and its mean codelength per example under each."""
    wide = per_example(runs)
    encs = list(dict.fromkeys(wide["encoder"]))
    out = pd.DataFrame({"encoder": encs})
    for v in ("reshuffled", *RANKED):
        groups = [
            g.set_index("encoder").loc[encs, v].to_numpy()
            for _, g in wide.groupby(["task", "seed"], sort=False)
        ]
        out[f"{v} rank"] = average_ranks(groups)
        out[f"{v} [nats/example]"] = wide.groupby("encoder")[v].mean().loc[encs].to_numpy()
    return out


def summary(runs: pd.DataFrame, *, resamples: int = 2000) -> pd.DataFrame:
    """Per version: the mean over units of ``version − reshuffled`` with its 95 % t
    interval over units, the share of (unit, encoder) cells beyond 0.01, and (ranked
    versions) Kendall τ between the average-rank orders with its 95 % bootstrap
    interval over units."""
    u = units(runs)
    d = differences(runs)
    rows = []
    for v in VERSIONS:
        x = u.loc[u["version"] == v, "minus reshuffled [nats]"].to_numpy()
        mean, lo, hi = t_interval(x) if len(x) > 1 else (float(x.mean()), np.nan, np.nan)
        row = {
            "version": v,
            "units": len(x),
            "minus reshuffled [nats]": mean,
            "ci low": lo,
            "ci high": hi,
            "cells beyond 0.01": float(d.loc[d["version"] == v, "beyond 0.01"].mean()),
            "tau": np.nan,
            "tau low": np.nan,
            "tau high": np.nan,
        }
        if v in RANKED:
            groups = unit_matrices(runs, v)
            if len(groups) > 1:
                row["tau"], row["tau low"], row["tau high"] = bootstrap_interval(
                    groups, rank_tau, resamples=resamples
                )
            else:
                row["tau"] = rank_tau(groups)
        rows.append(row)
    return pd.DataFrame(rows)


def along_n(curves: pd.DataFrame) -> pd.DataFrame:
    """Per (task, version, n): the cumulative codelength minus the reshuffled split's
    at the same n (nats), mean and min–max over draws × encoders."""
    wide = curves.pivot_table(
        index=["task", "seed", "encoder", "n"], columns="stream", values="cumulative [nats]"
    ).reset_index()
    wide["original (both splits)"] = (wide["original"] + wide["swapped"]) / 2
    rows = []
    for v in ("original (both splits)", "train then test"):
        diff = wide[v] - wide["reshuffled"]
        g = wide.assign(d=diff).groupby(["task", "n"], sort=False)["d"]
        part = g.agg(["mean", "min", "max"]).reset_index()
        rows.append(part.assign(version=v))
    return pd.concat(rows, ignore_index=True)[["task", "version", "n", "mean", "min", "max"]]
