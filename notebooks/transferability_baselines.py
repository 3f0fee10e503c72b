# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Transferability: which score picks the checkpoint that fine-tunes best?
#
# PACTran's question (Ding et al. 2022, arXiv:2203.05126, Sec. 4): given many
# pretrained checkpoints of one architecture and a few labelled examples of a
# target task (N/K = 2, 5, 10 per class), which *transferability metric* ranks the
# checkpoints like their accuracy after fine-tuning on the task? This notebook puts
# the MDL-switching codelength beside every metric of the registry — LEEP, N-LEEP,
# NCE, H-score and its Ledoit–Wolf version, LogME, PACTran-Dirichlet/-Gamma and
# their N- variants, PACTran-Gaussian fixed and grid, LINEAR, LINEAR-VALID, SFDA,
# GBC, PARC, TransRate, NCTI, ETran — the label-free predictors of the CLID paper
# (Lu et al. 2022, arXiv:2206.01251: cluster learnability CL, TwoNN intrinsic
# dimension ID, CLID, and RankMe) and static baselines (parameter count, source
# accuracy).
#
# **Two zoos, never mixed.** PACTran's Table 7 insists on one feature size, because
# several metrics scale with D. The *ViT-S zoo* (`mdlnb.studies.zoo`, committed
# artifacts) holds 31 checkpoints of one ViT-S (64-d): the untrained
# initialization, six pretraining objectives on Fashion-MNIST (supervised, MAE,
# autoencoder, SimCLR, DINO, BYOL) at steps 100, 200, 300 and 500 of their runs,
# and their final encoders. The *Lite zoo* holds EfficientNet-Lite0/1/2 at 32 px with
# ImageNet weights (1,280-d). τ is computed within each zoo.
#
# **Ground truth: fine-tuning** (PACTran Sec. 4.1.3, App. B.3): the whole encoder
# and a linear head trained on the task's training split at each rate of a small
# grid, the rate chosen on a validation split, top-1 accuracy on a test split of up
# to 2,000 images. It takes hours on a CPU, so it is a committed artifact like the
# encoders (`python -m mdlnb.studies.transferability finetune`, checked by
# `make encoders`). Frozen-probe accuracy (logistic regression on the frozen
# features, β chosen on validation) is reported beside it.
#
# **Protocol** (PACTran Sec. 4.1.4): for each N/K the training split is subsampled
# (stratified, the same examples for every checkpoint); every metric is computed
# on every subsample; per (zoo, task, N/K, subsample) Kendall τ between the metric
# (turned higher-is-better) and the ground truth across the zoo's checkpoints.
# Means over tasks get a 95 % **two-stage bootstrap** interval: tasks resampled,
# then each task's subsamples — the task-to-task variation is part of the
# uncertainty. The number of subsamples per setting came from a power analysis of
# the previous run's spreads (`mdlnb.studies.transferability._power`).
#
# All logic lives in `mdlnb.studies.transferability`; this notebook only sets
# parameters, calls it, and shows and saves what it returns.

# %% tags=["parameters"]
profile = "default"          # "smoke" (CI, minutes), "default" (CPU), "full" (GPU)
paper_dir = "paper"          # where tables and the figure are written
study = "transferability"    # mdlnb.studies.<study> holds the defaults (runner checks overrides)
overrides = {}               # {field: value} changes to those defaults (profiles.yaml)

# %%
from mdlnb.tools import runner

runner.interactive_profile(globals(), "transferability_baselines")   # by hand: apply `profile`, write to build/lab

# %% [markdown]
# The study's parameters live in one place, `TransferabilityConfig` (see its
# docstring for each field): this notebook's default run *is* the library's
# default config, and the `smoke`/`full` profiles in `notebooks/profiles.yaml`
# list only the fields they change. Encoders are named `"zoo:<family>@<step>"`
# (a checkpoint of the ViT-S zoo), `"zoo:<family>@final"`, `"zoo:random"`, or
# `"lite<v>@<px>"` (ImageNet EfficientNet-Lite<v> at <px> pixels).

# %%
import matplotlib.pyplot as plt
from IPython.display import Markdown, display

from mdlnb.api import output
from mdlnb.studies import finish
from mdlnb.studies import transferability as tr

config = tr.TransferabilityConfig.from_overrides(overrides)
config

# %% [markdown]
# ## Run the study
#
# The zoos are loaded (checked against their SHA-256), features of every
# (checkpoint, task) extracted (cached on disk), the ground truth read from its
# artifacts (computed, resumably, where none matches), then every metric on every
# subsample. Each finished unit of work (a zoo's probes on a task, a zoo's scores
# on a (task, N/K)) is cached on disk, so an interrupted run resumes where it
# stopped and a rerun takes seconds.

# %%
result = tr.run(config)
result.seconds

# %% [markdown]
# ## The checkpoints and the ground truth
#
# The ViT-S checkpoints keep no classifier head, so LEEP, NCE, PT-Dir and PT-Gam
# use a source classifier fitted on each checkpoint's features of Fashion-MNIST
# (its pretraining data; `mdlnb.studies.transferability._source`); the Lite
# checkpoints keep their ImageNet head. `source_accuracy` is the Fashion-MNIST
# probe accuracy recorded with each ViT checkpoint, the published ImageNet top-1
# for Lite.

# %%
display(result.encoders)
display(Markdown(output.to_markdown(result.truth_table(), digits=3)))

# %% [markdown]
# Can the test sets tell the checkpoints apart? Per (zoo, task), the share of
# checkpoint pairs whose fine-tuned accuracies differ beyond binomial noise
# (McNemar's exact test on the paired test predictions, 5 %). τ counts every pair;
# pairs within noise add noise to it.

# %%
display(Markdown(output.to_markdown(result.noise, digits=3)))

# %% [markdown]
# ## Kendall τ, averaged over tasks (PACTran Table 1, and Table 7)
#
# Each cell is the mean over tasks of the per-task mean over subsamples; `lo` and
# `hi` are its 95 % two-stage bootstrap interval. Each zoo has one feature size, so
# this is also PACTran's Table 7. Two metrics whose intervals overlap are not
# ranked apart by this run.

# %%
display(Markdown(output.to_markdown(result.summary(), digits=3)))

# %%
fig = result.plot()
plt.show()

# %% [markdown]
# ## PACTran Fig. 1: each metric against the fine-tuned test error
#
# One task (the one whose fine-tuned accuracies spread the most across the ViT-S
# checkpoints), the largest N/K, each metric's value averaged over the subsamples,
# one point per checkpoint, coloured by pretraining objective.

# %%
fig = result.figure_1()
plt.show()

# %% [markdown]
# ## CLID Tables 1 and 2
#
# Table 1: the label-free predictors computed on held-out Fashion-MNIST images (the
# ViT zoo's pretraining data) against each checkpoint's source (probe) accuracy,
# Pearson ρ and Kendall τ across checkpoints. Table 2: per task, Kendall τ between
# each predictor computed on the task's whole training split (no labels) and the
# fine-tuned accuracy, and its average.

# %%
display(Markdown(output.to_markdown(result.clid_table_1(), digits=3)))
display(Markdown(output.to_markdown(result.clid_table_2(), digits=3)))

# %% [markdown]
# ## Per task (PACTran Tables 4–6)
#
# Mean τ over the subsamples of each task, and its standard deviation (`sd`).

# %%
display(Markdown(output.to_markdown(result.per_task(), digits=3)))

# %% [markdown]
# Which knob the grid metrics chose (per zoo, task, N/K and subsample):

# %%
result.grid_choices()

# %% [markdown]
# ## Reading the numbers
#
# * **Resolution.** Over m checkpoints one swapped pair moves τ by 4/(m(m−1)):
#   0.004 in the ViT-S zoo (31), 0.67 in the Lite zoo (3). The Lite zoo is kept
#   because PACTran ranks ImageNet checkpoints, but its τ says little per subsample.
# * **Fine-tuning vs probe.** Fine-tuning can close gaps that a frozen probe shows
#   (a weak checkpoint recovers by training its encoder), so metrics computed on
#   frozen features predict the probe more easily than fine-tuning.
# * **MDL.** The MDL codelength is computed with `config.mdl_protocol()` (a small
#   board, B = 4, fixed share) on the subsample's z-scored features: a prequential
#   code of the labels, like LINEAR-VALID a measure of generalisation from the few
#   examples rather than of fit.
# * **Comparison with the papers.** PACTran Table 1 reports average τ of
#   0.08–0.13 for LEEP, 0.15–0.23 for LogME, 0.40–0.50 for N-LEEP and 0.64–0.67 for
#   PT-Gauss; CLID Table 2 reports 0.70 for CLID against fine-tuned accuracy. This
#   zoo is small and trained on 28×28 grey images, and its tasks are embedded
#   miniatures of VTAB: the claims below say where the direction and the size of
#   the papers' effects hold.

# %% [markdown]
# ## What this run found
#
# Computed from `result` (`result.findings()`), so it describes whichever
# profile ran — `paper/transferability_kendall.md` holds the default run's.

# %%
display(Markdown(result.findings()))

# %% [markdown]
# ## Is a difference from an earlier run real?
#
# On one machine the whole study is deterministic: a rerun writes byte-identical
# files. Another machine can differ (XLA's vector code changes the order of
# floating-point sums). Here this run's means are compared with the table already in
# `paper_dir` (`transferability_kendall_noise.csv`: subsample noise only, tasks
# fixed), before it is overwritten: a difference counts as beyond noise when it
# exceeds the two 95 % half-widths combined.

# %%
diff = result.compare_saved(paper_dir)
display(Markdown(tr.noise_summary(diff)))
output.show(diff) if hasattr(diff, "columns") else diff

# %%
paths = result.save(paper_dir)
print(f"{len(paths)} files written to {paper_dir}")

# %% [markdown]
# ## Claims
#
# (h) PT-Gauss and N-LEEP beat LEEP and LogME at small N/K (PACTran Table 1) and
# (i) CLID correlates with accuracy and beats its parts (CLID Tables 1–2), each with
# the two-part verdict of the claims page (direction against no effect, size
# against the paper's) on the ViT-S zoo, n = the number of tasks
# (`mdlnb.studies.transferability._claims`; the rule is written next to each
# verdict).

# %%
print(finish("transferability_baselines", paper_dir, profile, result.claims(),
             pattern="transferability_*", setting=result.setting()))

# %%
plt.close("all")
