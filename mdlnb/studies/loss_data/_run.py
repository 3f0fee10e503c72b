"""The loss-data study's driver: representations, ε, one curve per representation,
and Alg. 2's refinement of εSC."""

from __future__ import annotations

import time

import pandas as pd

from mdlnb import data, encoders
from mdlnb.baselines import curves
from mdlnb.board import readouts
from mdlnb.studies.loss_data._config import LossDataConfig
from mdlnb.studies.loss_data._result import LossDataResult
from mdlnb.studies.transferability import build_encoder, parse_encoder


def _representations(c: LossDataConfig):
    pool = data.load("fashion_mnist", split="train", size=c.train_size, seed=c.seed)
    test = data.load("fashion_mnist", split="test", size=c.test_size, seed=c.seed)
    unlabelled = data.load("fashion_mnist", split="train", size=c.pretrain_size, seed=c.seed + 1)
    tasks, cost = {}, {}
    for spec in c.representations:
        t0 = time.perf_counter()
        if spec == "pixels":
            tasks[spec] = (pool, test)
        else:
            enc = build_encoder(parse_encoder(spec), unlabelled)
            tasks[spec] = (encoders.features(enc, pool), encoders.features(enc, test))
        cost[spec] = time.perf_counter() - t0
    return pool, test, tasks, cost


def _refine(c: LossDataConfig, curve, eps, pool, test, probe) -> dict:
    """One row of the refinement table: εSC on the grid and after Alg. 2 (when the
    curve reaches ε within the pool and ``refine_rounds`` > 0)."""
    first = curves.esc(curve, eps)
    row = {
        "representation": curve.representation,
        "eps": eps.value,
        "grid eSC": str(first),
        "bracket": str(first.bracket),
    }
    if c.refine_rounds and not first.exceeded:
        r = curves.esc_refine(
            pool,
            eps,
            curve=curve,
            test=test,
            rounds=c.refine_rounds,
            readout=probe,
            seeds=c.seeds,
            steps=c.steps,
            batch_size=c.batch_size,
            learning_rate=c.learning_rate,
            early_stopping=c.early_stopping,
            evals=c.evals,
        )
        return {
            **row,
            "refined eSC": str(r),
            "refined bracket": str(r.bracket),
            "new sizes trained": r.new_sizes,
        }
    return {**row, "refined eSC": str(first), "refined bracket": "", "new sizes trained": 0}


def run(config: LossDataConfig | None = None) -> LossDataResult:
    """Build each representation of the pool and the test examples (features cached on
    disk), derive ε from a large probe on the raw pixels (Sec. 4.3), train one
    loss-data curve per representation (all sizes × seeds in one compiled call),
    and refine εSC where a curve crosses the loosest ε (Alg. 2)."""
    config = config or LossDataConfig()
    if not isinstance(config, LossDataConfig):
        raise ValueError(f"config: expected a LossDataConfig, got {type(config).__name__}")
    c = config
    pool, test, tasks, build_seconds = _representations(c)
    eps0 = curves.epsilon_from_probe(
        pool,
        readouts.mlp(2, c.eps_width),
        test=test,
        seeds=2,
        steps=c.eps_steps,
        batch_size=c.batch_size,
        learning_rate=c.learning_rate,
        early_stopping=c.early_stopping,
        evals=c.evals,
    )
    eps_list = tuple(curves.Epsilon(eps0.value * s, f"{s} x ({eps0.source})") for s in c.eps_scales)
    grid = curves.log_grid(pool.n, c.num_sizes)
    probe = readouts.mlp(2, c.probe_width)
    curve_list, seconds = [], {}
    for spec, (p, t) in tasks.items():
        t0 = time.perf_counter()
        curve_list.append(
            curves.loss_data_curve(
                p,
                probe,
                test=t,
                sizes=grid,
                seeds=c.seeds,
                steps=c.steps,
                batch_size=c.batch_size,
                learning_rate=c.learning_rate,
                early_stopping=c.early_stopping,
                evals=c.evals,
                representation=spec,
            )
        )
        seconds[spec] = time.perf_counter() - t0
    refined = pd.DataFrame(
        [_refine(c, cv, eps_list[-1], *tasks[cv.representation], probe) for cv in curve_list]
    )
    return LossDataResult(
        config,
        str(pool),
        str(test),
        {s: int(p.features.shape[1]) for s, (p, _) in tasks.items()},
        build_seconds,
        seconds,
        eps0,
        eps_list,
        grid,
        tuple(curve_list),
        refined,
    )
