"""Transferability study: which score picks the checkpoint that fine-tunes best?

PACTran's question (Ding et al. 2022, arXiv:2203.05126, Sec. 4, Tables 1 and 7,
Fig. 1) and CLID's (Lu et al. 2022, arXiv:2206.01251, Tables 1–2), asked of
zoos of checkpoints of one architecture and one feature size each:

* the **ViT-S zoo** (:mod:`mdlnb.studies.zoo`): 37 ViT-S checkpoints (64-d),
  the untrained initialization and six pretraining objectives on Fashion-MNIST
  at five steps along their runs plus their committed final encoders;
* the **Lite zoo**: EfficientNet-Lite0/1/2 with ImageNet weights (1,280-d).

Protocol:

1. *Ground truth* per (checkpoint, task): fine-tuned test accuracy — the whole
   encoder and a linear head trained at each rate of a small grid, the rate
   chosen on a validation split (:mod:`._finetune`, kept as committed artifacts
   by :mod:`._groundtruth`) — beside frozen-probe accuracy (:mod:`._truth`);
   test sets of up to 2,000 images, and the share of checkpoint pairs whose
   fine-tuned accuracies differ beyond binomial noise.
2. *Scores* on few-shot subsamples: for each N/K in ``ratios`` the training
   split is subsampled ``repeats`` times, stratified, N = max(ratio·K, min_n)
   (:func:`subsample_indices`), the same examples for every checkpoint. On each:
   every metric of :data:`mdlnb.baselines.transfer.METRICS` (LEEP, NCE, PT-Dir and PT-Gam
   through a source classifier, :mod:`._source`), PT-Gauss-grid and
   LINEAR-grid with their knob picked by Kendall τ against LINEAR-VALID, the
   MDL-switching codelength, the label-free CL, TwoNN ID, CLID, RankMe, and the
   static baselines (:mod:`._unit`; the softmax fits of LINEAR, LINEAR-VALID and
   PT-Gauss as one batched JAX program per unit).
3. *Kendall τ* per (zoo, task, ratio, repeat) between each metric (turned
   higher-is-better) and the ground truth across the zoo's checkpoints; mean
   over tasks with a two-stage bootstrap interval over tasks and subsamples
   (:mod:`._bootstrap`, sized by :mod:`._power`): PACTran Table 1 (= Table 7),
   CLID Tables 1–2, PACTran Fig. 1 (:mod:`._tables`, :mod:`._figures`).

    config = TransferabilityConfig.from_overrides({"repeats": 2})
    result = run(config)                # cached per unit of work, resumable
    result.summary(); result.findings(); result.save("paper")

Command line (the ground-truth artifacts): ``python -m
mdlnb.studies.transferability {finetune,verify}``.
"""

from mdlnb.studies.transferability._bootstrap import intervals, two_stage
from mdlnb.studies.transferability._config import (
    LITE_ZOO,
    TASKS,
    TRUTH_READOUTS,
    TRUTHS,
    TransferabilityConfig,
    readout_from_name,
    zoo_encoders,
)
from mdlnb.studies.transferability._encoders import (
    EncoderSpec,
    build_encoder,
    build_encoders,
    encoder_table,
    parse_encoder,
    source_probs,
    zoo_of,
)
from mdlnb.studies.transferability._features import (
    FeatureSet,
    Splits,
    extract,
    extract_splits,
    load_splits,
    load_tasks,
)
from mdlnb.studies.transferability._finetune import (
    FinetuneRun,
    FinetuneSpec,
    batch_order,
    finetune,
    pairs_beyond_noise,
)
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
    with_zoo,
)
from mdlnb.studies.transferability._result import TransferabilityResult, display_name
from mdlnb.studies.transferability._run import (
    CACHE_VERSION,
    code_fingerprint,
    ground_truth,
    run,
    score_units,
)
from mdlnb.studies.transferability._scores import (
    add_clid,
    add_combined,
    add_static,
    label_free_scores,
    mdl_score,
    nleep_kwargs,
    orient,
    registry_metrics,
    select_grid,
    zscore,
)
from mdlnb.studies.transferability._subsamples import (
    subsample_indices,
    subsample_seed,
    subsample_size,
)
from mdlnb.studies.transferability._tables import clid_table_1, clid_table_2, table_1
from mdlnb.studies.transferability._truth import best_rows, finetune_rows, probe_rows
from mdlnb.studies.transferability._unit import score_unit

#: The study's config class, under the name every study package uses (mdlnb.studies).
Config = TransferabilityConfig

__all__ = [
    "CACHE_VERSION",
    "Config",
    "EXTRA_METRICS",
    "EncoderSpec",
    "FeatureSet",
    "FinetuneRun",
    "FinetuneSpec",
    "GMM_METRICS",
    "GRID_METRICS",
    "LABEL_FREE",
    "LITE_ZOO",
    "Splits",
    "TASKS",
    "TRUTHS",
    "TRUTH_READOUTS",
    "TransferabilityConfig",
    "TransferabilityResult",
    "add_clid",
    "add_combined",
    "add_static",
    "average_table",
    "batch_order",
    "best_rows",
    "build_encoder",
    "build_encoders",
    "clid_table_1",
    "clid_table_2",
    "code_fingerprint",
    "differences",
    "display_name",
    "encoder_table",
    "extract",
    "extract_splits",
    "finetune",
    "finetune_rows",
    "ground_truth",
    "intervals",
    "kendall_per_repeat",
    "kendall_table",
    "label_free_scores",
    "load_splits",
    "load_tasks",
    "mdl_score",
    "mean_over_tasks",
    "metric_order",
    "metric_sign",
    "nleep_kwargs",
    "noise_summary",
    "orient",
    "pairs_beyond_noise",
    "parse_encoder",
    "per_task_table",
    "probe_rows",
    "readout_from_name",
    "registry_metrics",
    "run",
    "score_unit",
    "score_units",
    "select_grid",
    "source_probs",
    "subsample_indices",
    "subsample_seed",
    "subsample_size",
    "table_1",
    "two_stage",
    "with_zoo",
    "zoo_encoders",
    "zoo_of",
    "zscore",
]
