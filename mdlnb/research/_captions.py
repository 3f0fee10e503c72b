"""Captions of the figures in ``paper/``: what is plotted and what to read from it.

:func:`mdlnb.research.manifest.merge` prints each figure of ``paper/README.md`` with its
caption from :data:`CAPTIONS` (keyed by file name); a figure without one is listed
with "(no caption)", which ``tests/test_manifest.py`` refuses for the committed
``paper/``.
"""

from __future__ import annotations

CAPTIONS = {
    "claims_forest.png": "Every claim of the claims page as one row: our effect (marker) and its 95 % interval "
    "(bar) as a fraction of the paper's effect, so claims in τ, nats and hidden layers "
    "share one axis — 0 (black line) is no effect, 1 (dashed blue) the paper's. Colour: "
    "direction (green replicated, red reversed, grey undetermined); marker: size (◀ "
    "smaller than the paper's, ● consistent, ▶ larger). Arrows mark intervals beyond the "
    "axis. Read: which of the papers' effects show at this scale, and how their sizes "
    "compare.",
    "beyond_calibration.png": "Forward calibration on against off, per representation: each order's difference in "
    "codelength (dots) and the mean with its 95 % t interval (bar), for the switching code "
    "and for the best single expert. Below 0, calibration shortens the code.",
    "beyond_regression_codelengths.png": "Regression targets: cumulative density codelength per example (nats, −log p(y) of "
    "the real-valued target) along n, mean over orders (line) and min–max (band), one line "
    "per representation. Lower is better; the order of the lines at the right is the "
    "ranking.",
    "data_efficiency_regret.png": "Data efficiency (Li et al. 2023 Fig. 3): per (encoder, task), each method's "
    "cumulative next-step loss minus training from scratch's along n (line: mean over "
    "orders; band: min–max; dot: where an order's curve crosses zero for good). Below 0 "
    "a method has spent fewer nats than from scratch so far; the frozen readouts start "
    "far below, and a crossing of the linear probe by from scratch or fine-tuning would "
    "show as those curves dropping below the probe's.",
    "layers_codelengths.png": "EfficientNet-Lite0's layers as representations: per task (row), bits per example of "
    "each layer's features (mean ± sd over orders, left) and each layer's cumulative "
    "codelength minus the reference layer's along n (right; line: mean, band: min–max "
    "over orders). The lowest layer on the left codes the task best.",
    "layers_vit_codelengths.png": "The same for the committed ViT's blocks: which block's features code each task in "
    "the fewest bits, and from which n on.",
    "loss_data_curves.png": "Loss-data curves (Whitney et al. 2020 Fig. 2) of three representations of "
    "Fashion-MNIST: held-out loss of a probe trained on n examples (mean over seeds, band: "
    "spread over seeds), with the tolerance ε marked. VA reads the curve at one n, MDL "
    "integrates it, SDL and εSC measure the area and the n above ε. The curves start "
    "above the uniform code's log 10 = 2.30 nats because at n = 10 the probe's checkpoint "
    "is chosen on one held-out example, and on about half the seeds a trained, "
    "over-confident checkpoint wins (loss_data_first_point.csv): the loss of what the "
    "algorithm returns, as L(A, n) is defined.",
    "loss_data_measures.png": "Every loss-data measure against the evaluation-set size n: VA, MDL, SDL, εSC (hollow "
    "markers while SDL and εSC are only lower bounds). A winner change along n shows as "
    "lines crossing.",
    "objectives_cd_diagrams.png": "Nemenyi critical-difference diagrams (Li et al. 2023 Fig. 6/7, corrected q) of the "
    "ViT-S encoders' average ranks over tasks, one per evaluation (linear accuracy, "
    "best-MLP accuracy, MDL codelength). Encoders joined by a bar are not significantly "
    "different at α = 0.10.",
    "objectives_rank_boxes.png": "Per-task ranks of each ViT-S encoder (box: quartiles; red dot: the mean, its average "
    "rank), per evaluation method. Wide boxes: the ranking changes from task to task.",
    "parity_curves.png": "The parity toy (Whitney et al. 2020 Fig. 1): loss-data curves of the exact "
    "algorithms on the noisy label (A, counting) and the raw bits (B, GF(2) elimination), "
    "±1 sd over seeds (band). A learns at once but stays at its noise floor; B is at "
    "chance until it has seen about d examples, then perfect. Dashed: the tolerance ε; "
    "hatched: SDL, the area above ε; dotted: εSC, the first n with loss ≤ ε; dash-dot: "
    "the n where VA and MDL are read. VA's and MDL's winner flips where the curves "
    "cross; SDL and εSC name B once it reaches ε.",
    "parity_mlp_curves.png": "The same toy with MLP probes instead of the exact algorithms: the curves the "
    "readout board would see.",
    "parity_switching_posterior.png": "Readout switching on the toy: the posterior over readouts along the stream, for A "
    "and for B — which readout the code trusts at each n.",
    "pretraining_probe_curves.png": "Pretraining of the committed encoders: held-out linear-probe accuracy on "
    "Fashion-MNIST against steps, one line per encoder, the chosen (plateau) step marked.",
    "pretraining_tracking.png": "Label-free scores along each encoder's pretraining, one panel per score (CLID among "
    "them), each min–max scaled per encoder, against the probe accuracy. A score that "
    "tracks representation quality rises with the probe; CLID's claim (m) is across "
    "models and is on the claims page.",
    "pretraining_clid_landscape.png": "CLID Fig. 1 (Lu et al. 2022) on the committed encoders. Left: cluster learnability "
    "against TwoNN intrinsic dimension at every evaluated checkpoint of every encoder, "
    "coloured by held-out probe accuracy (red high, blue low), the chosen checkpoints "
    "ringed and named; the paper finds its best checkpoints in the upper right (learnable "
    "and expressive). Right: CLID (min–max of each part across the encoders, summed) "
    "against probe accuracy at the chosen checkpoints, with Pearson ρ and Kendall τ "
    "(paper: 0.92, 0.75 over 28 ImageNet checkpoints); claims m and p1.",
    "pretraining_clid_robustness.png": "CLID Fig. 2 (Lu et al. 2022) on the committed encoders: CL recomputed on the first "
    "2,000 held-out images with each k-NN neighbour count and k-means cluster count. "
    "Left: Pearson ρ between W-CLID (CLID's parts weighted by a least-squares fit to the "
    "accuracies) and probe accuracy across the encoders, per setting. Right: ρ of W-CLID "
    "and CLID against clusters / N with one neighbour; dashed green: √N clusters, CLID's "
    "default; dotted: the paper's rotation baseline (ρ 0.61). Claims p2 (fewer "
    "neighbours better) and p3 (too few clusters worse).",
    "quickstart_posterior.png": "The quickstart: the posterior over readouts along the stream — linear readouts first, "
    "deeper ones as data grows.",
    "readout_preference_heatmap.png": "Li et al. 2023 Fig. 2 at this scale: per (encoder, task), the preferred readout depth "
    "(hidden layers; 0 = linear), the argmax of the time-averaged posterior, averaged over "
    "data orders (the per-cell statistic of claim d2); the title gives the share of cells "
    "whose orders all agree. Tasks grouped natural / specialized / structured.",
    "readout_preference_posteriors.png": "Li et al. 2023 Fig. 9 at this scale: the posterior over readouts along t (log-spaced "
    "bins) for a few (encoder, task) pairs — where the mass moves from linear to deeper "
    "readouts.",
    "readout_preference_switching_by_group.png": "MAP-readout switches per 1,000 examples by task group (a dot per encoder × task × "
    "order): claim k compares the pretraining domain's tasks with the rest.",
    "scaling_codelength_vs_parameters.png": "Li et al. 2023 Fig. 8 / Table 1b at this scale: codelength against parameter count, "
    "one line per (architecture, objective) family. A falling line: larger encoders code "
    "the labels in fewer bits.",
    "scaling_regret.png": "The larger encoder's cumulative codelength minus the smaller's along n (left: "
    "supervised ViT-L − ViT-S; right: MAE ViT-L − ViT-S), one thin line per task coloured "
    "by its group, a thick line per group (the mean), one y scale. Below 0 the larger "
    "encoder has coded the labels so far in fewer nats.",
    "shift_along_n.png": "The train/test shift along the stream (Li et al. 2023 App. A.2, A.7): per task, the "
    "cumulative codelength of the original split (mean of either half as the train split) "
    "and of the train-then-test stream minus the reshuffled split's, mean over draws × "
    "encoders (line) and min–max (band); the dotted line is n = N/2, where the "
    "train-then-test stream turns from one half of the factor to the other. Below 0 a "
    "version has coded its examples in fewer nats so far.",
    "shift_effects.png": "Table 11 at this scale: per encoder, each (task, draw)'s codelength per example of "
    "the original split (left) and of the train-then-test stream (right) minus the "
    "reshuffled split's, one colour per task; grey band: Table 11's ±0.01, dashed line: "
    "the paper's mean on its four shifted tasks (−0.028). Points below 0: the version "
    "codes shorter than the reshuffled split.",
    "shift_ranks.png": "The encoders' average ranks (1 = shortest code) over the (task, draw) units under the "
    "reshuffled split, the original split and the train-then-test stream; lines that "
    "cross are rank changes (claim r2's Kendall τ compares the first two columns).",
    "switching_bound.png": "Fixed share's regret to the best single readout along n against the never-switch "
    "cost of App. A.1 (the bound): the regret stays below it.",
    "switching_regret.png": "Li et al. 2023 Fig. 5 at this scale: each switching strategy's cumulative codelength "
    "minus fixed share's along n, one panel per (encoder, task) pair. The Bayesian and "
    "elementwise mixtures climb above 0 (worse), the switch distribution stays close.",
    "switching_sensitivity.png": "Fixed share's regret to the best single readout against its m (α_t = (m − 1)/t) and "
    "against a constant α: how much the choice of the switching rate matters.",
    "transferability_figure1.png": "PACTran Fig. 1 at this scale: on one task of the ViT-S zoo at the largest N/K, each "
    "metric's value (mean over the subsamples, its own sign) against every checkpoint's "
    "fine-tuned test error, one point per checkpoint, coloured by pretraining objective, "
    "τ in each panel's title. A metric that ranks checkpoints well draws a falling cloud "
    "(higher score, lower error).",
    "transferability_kendall.png": "Kendall τ between each transferability metric's ranking of the checkpoints of one zoo "
    "and their fine-tuned test accuracy (PACTran Table 1), mean over the tasks per N/K "
    "with two-stage bootstrap 95 % intervals (tasks resampled, then subsamples); the "
    "ViT-S zoo (31 checkpoints, 64-d) and the EfficientNet-Lite zoo (3, 1,280-d) apart.",
}
