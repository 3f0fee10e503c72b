"""The driver: regression comparisons and calibration runs over the configured orders."""

from __future__ import annotations

import warnings

import numpy as np

import mdlnb
from mdlnb.infra._stages import Stages
from mdlnb.studies.beyond._config import BeyondConfig
from mdlnb.studies.beyond._data import calibration_tasks, logme, regression_representations
from mdlnb.studies.beyond._result import BeyondResult

# Imported inside the functions that use them, so that importing this module does not load
# them: scikit-learn, SciPy, pandas, matplotlib; mdlnb.encoders (JAX, optax); mdlnb.baselines.transfer
# (SciPy, threadpoolctl).


def run(
    config: BeyondConfig | None = None, *, progress: bool | None = None, cache: bool = True
) -> BeyondResult:
    """Both parts of the study under ``config`` (default: the CPU run). The library's
    per-run warnings (grid edges, codes above the baseline) are kept in each
    Comparison's/Report's ``warnings`` and not printed. ``progress``: one bar over the
    study's stages (a regression task, a calibrated representation) where someone
    watches (:mod:`mdlnb.infra._stages`; ``None``, the package's default)."""
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
