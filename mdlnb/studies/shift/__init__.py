"""Train/test-shift study: does coding a task's original (shifted) split instead of a reshuffled one change codelengths and the encoders' ranking? (Li et al. 2023, App. A.2, A.7, Table 11).

Li, Bornschein & Hutter 2023 (arXiv:2302.09579) found a distribution shift between
the train and test splits of some VTAB tasks (App. A.2, Fig. 4), reshuffled every
task for the main results, and report the original splits' codelengths beside
(App. A.7, Table 11): they change (by more than 1e-2 per example on the shifted
tasks), "however, the overall rank of the pre-training method doesn't seem to be
affected". Here the shift is built and controlled: procedural tasks whose two
splits come from the two halves of a nuisance factor (:mod:`._split`), coded by
the committed encoders as the original split, the other split, the reshuffled
split, and the reshuffled examples in train-then-test order.

    config = ShiftConfig.from_overrides({"tasks": ["dsprites_shape:scale"], "size": 300})
    result = run(config)          # one unit of work per (task, draw, encoder), cached
    result.tables(); result.plot_effects(); result.claims(); result.save("paper")

Modules: ``_split`` (the shifted splits and the streams), ``_config``
(ShiftConfig), ``_run`` (the driver), ``_paper`` (Tables 10 and 11 of the paper),
``_tables`` and ``_plots``, ``_claims`` (r1, r2), ``_result`` (ShiftResult).
"""

from mdlnb.studies.shift._claims import claims
from mdlnb.studies.shift._config import DEFAULT_TASKS, ShiftConfig
from mdlnb.studies.shift._result import ShiftResult
from mdlnb.studies.shift._run import CACHE_VERSION, RUN_COLUMNS, run
from mdlnb.studies.shift._split import (
    STREAMS,
    data_seed,
    in_stream_order,
    nuisance,
    parse_shift,
    reshuffled_indices,
    shifted_split,
    streams,
)

#: The study's config class, under the name every study package uses (mdlnb.studies).
Config = ShiftConfig

__all__ = [
    "CACHE_VERSION",
    "Config",
    "DEFAULT_TASKS",
    "RUN_COLUMNS",
    "STREAMS",
    "ShiftConfig",
    "ShiftResult",
    "claims",
    "data_seed",
    "in_stream_order",
    "nuisance",
    "parse_shift",
    "reshuffled_indices",
    "run",
    "shifted_split",
    "streams",
]
