"""Transferability study: which score ranks encoders like their downstream accuracy?

Protocol (PACTran Sec. 4.1.4; CLID Sec. 3.5, Tables 1–3):

1. *Ground truth* per (encoder, task): test accuracy of the best readout
   trained on the (capped) full training split (:func:`ground_truth`, the
   probe protocol of :func:`mdlnb.probes.accuracy`). Fine-tuning the
   encoders is not part of it (unaffordable on a CPU).
2. *Scores* on few-shot subsamples: for each N/K in ``ratios`` the training
   split is subsampled ``repeats`` times, stratified, with
   N = max(ratio·K, min_n) examples — the same examples for every encoder
   (:func:`subsample_indices`). On each: every metric of
   :data:`mdlnb.transfer.METRICS`, PT-Gauss-grid and LINEAR-grid with their
   knob picked by Kendall τ against LINEAR-VALID across encoders, the
   MDL-switching codelength (nats per example) and the label-free CL, TwoNN
   ID, CLID (min–max across encoders) and RankMe (:func:`score_subsample`).
3. *Kendall τ* per (task, ratio, repeat) between each metric (turned
   higher-is-better) and the ground truth across encoders; mean ± standard
   deviation over repeats per task (PACTran Tables 4–6) and mean ± 95 %
   interval over tasks (PACTran Table 1; CLID Table 2) (:mod:`._kendall`).

Metrics needing a source classifier (LEEP, NCE, PT-Dir, PT-Gam) exist only
for encoders with one (the ImageNet EfficientNets); their τ is computed over
those encoders and the ``encoders`` column says over how many.

    config = TransferabilityConfig.from_overrides({"repeats": 2})
    result = run(config)                # cached per unit of work, resumable
    result.summary(); result.findings(); result.save("paper")

Modules: ``_config`` (TransferabilityConfig), ``_encoders`` and ``_features``
(what is scored), ``_subsamples``, ``_truth``, ``_scores``, ``_metrics``
(signs, order), ``_kendall`` (τ and spreads), ``_run`` (the driver),
``_result`` (TransferabilityResult).
"""

from mdlnb.studies.transferability._config import (
    TRUTH_READOUTS,
    TransferabilityConfig,
    readout_from_name,
)
from mdlnb.studies.transferability._encoders import (
    EncoderSpec,
    build_encoder,
    build_encoders,
    encoder_table,
    parse_encoder,
    source_probs,
)
from mdlnb.studies.transferability._features import FeatureSet, extract, load_tasks
from mdlnb.studies.transferability._kendall import (
    average_table,
    differences,
    kendall_per_repeat,
    kendall_table,
    mean_over_tasks,
    noise_summary,
    per_task_table,
)
from mdlnb.studies.transferability._metrics import (
    EXTRA_METRICS,
    GMM_METRICS,
    GRID_METRICS,
    LABEL_FREE,
    metric_order,
    metric_sign,
)
from mdlnb.studies.transferability._result import TransferabilityResult, display_name
from mdlnb.studies.transferability._run import (
    CACHE_VERSION,
    code_fingerprint,
    ground_truth_cached,
    run,
    score_subsamples,
)
from mdlnb.studies.transferability._scores import (
    add_clid,
    grid_scores,
    label_free_scores,
    mdl_score,
    nleep_kwargs,
    orient,
    registry_metrics,
    score_subsample,
    select_grid,
    zscore,
)
from mdlnb.studies.transferability._subsamples import (
    subsample_indices,
    subsample_seed,
    subsample_size,
)
from mdlnb.studies.transferability._truth import ground_truth, truth_rows

#: The study's config class, under the name every study package uses (mdlnb.studies).
Config = TransferabilityConfig

__all__ = [
    "CACHE_VERSION",
    "Config",
    "EXTRA_METRICS",
    "EncoderSpec",
    "FeatureSet",
    "GMM_METRICS",
    "GRID_METRICS",
    "LABEL_FREE",
    "TRUTH_READOUTS",
    "TransferabilityConfig",
    "TransferabilityResult",
    "add_clid",
    "average_table",
    "build_encoder",
    "build_encoders",
    "code_fingerprint",
    "differences",
    "display_name",
    "encoder_table",
    "extract",
    "grid_scores",
    "ground_truth",
    "ground_truth_cached",
    "kendall_per_repeat",
    "kendall_table",
    "label_free_scores",
    "load_tasks",
    "mdl_score",
    "mean_over_tasks",
    "metric_order",
    "metric_sign",
    "nleep_kwargs",
    "noise_summary",
    "orient",
    "parse_encoder",
    "per_task_table",
    "readout_from_name",
    "registry_metrics",
    "run",
    "score_subsample",
    "score_subsamples",
    "select_grid",
    "source_probs",
    "subsample_indices",
    "subsample_seed",
    "subsample_size",
    "truth_rows",
    "zscore",
]
