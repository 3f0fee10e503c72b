# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Pre-training the encoders: trained until the probe stops improving
#
# The objectives and scaling comparisons of Li et al. (Sec. 4, Table 1)
# rank *fully pretrained* encoders. Here the self-pretrained encoders are a
# small ViT trained on Fashion-MNIST's 60,000 training images under every
# objective of that table (supervised, SimCLR, BYOL, DINO, MAE, an
# autoencoder, and the untrained initialization they all start from), plus
# larger ViTs for scaling. How long is "fully"? Each encoder trains with a
# constant learning rate after a warmup, and every 500 steps a **linear
# probe** — a logistic regression on 10,000 labelled training images — is
# scored on the **held-out test split**. Training stops when that accuracy
# has not improved by half a percentage point in three evaluations; the
# encoder kept is the one at the last improvement (the *chosen step*).
#
# Training takes hours on a CPU, so it is a stage of its own
# (`make pretrain`, resumable) whose small outputs — the weights, their
# SHA-256 and provenance, and the probe curves — are committed under
# `artifacts/encoders/`. `make reproduce` checks the checksums and uses the
# weights; `make encoders RETRAIN=1` trains them all again from scratch and
# compares the bytes. This notebook only reads the artifacts.

# %% tags=["parameters"]
profile = "default"          # "smoke" (CI), "default" (CPU), "full": the artifacts are the same
paper_dir = "paper"          # where tables and figures are written
clid_grid = {}               # CLID Fig. 2's grid: neighbours, clusters, rows (default: all)

# %%
from mdlnb.tools import runner

runner.interactive_profile(globals(), "pretraining")   # by hand: apply `profile`, write to build/lab

# %%
import matplotlib.pyplot as plt
from IPython.display import Markdown, display

from mdlnb.api import output
from mdlnb.studies import finish, pretraining

result = pretraining.result()        # every artifact, checked against its SHA-256
display(Markdown(output.to_markdown(result.overview(), digits=4)))

# %% [markdown]
# ## The probe curves
#
# Probe accuracy on the held-out split against pretraining steps; the
# circle marks the chosen step. The step-0 point of every curve is the
# untrained encoder.

# %%
fig = result.plot_curves()
plt.show()

# %% [markdown]
# ## What the curves say

# %%
display(Markdown(result.findings()))

# %% [markdown]
# ## Do label-free scores track the probe along training?
#
# CLID's premise (CLID paper Sec. 3) is that a score computed without labels
# — here RankMe, TwoNN intrinsic dimension, cluster learnability, their
# combination CLID, and α-ReQ — ranks representations as their downstream
# accuracy does. Every checkpoint of the runs above is one representation:
# per encoder, Kendall τ over its checkpoints between each score and the
# probe accuracy. The same scores can be logged by any training loop:
# `mdlnb.encoders.train_until_plateau(..., monitor=...)` calls a monitor at
# every evaluation.

# %%
fig_tracking = result.plot_tracking()
plt.show()
display(Markdown(output.to_markdown(result.tracking(), digits=3)))

# %% [markdown]
# ## Across models: CLID Fig. 1 and Fig. 2
#
# CLID's own comparison is across models (Lu et al. 2022, Sec. 3.3–3.4): each
# committed encoder at its chosen step is one model. Fig. 1: cluster
# learnability (learnability) against TwoNN intrinsic dimension
# (expressiveness) at every evaluated checkpoint, coloured by probe accuracy —
# the paper finds its best checkpoints in the upper right — and CLID against
# accuracy. Fig. 2: how the predictor's correlation with accuracy changes with
# CL's two settings, the k-NN learner's neighbours and the k-means cluster
# count (the paper's heat map is of W-CLID, CLID's weighted form fitted to the
# accuracies).

# %%
display(Markdown(output.to_markdown(result.across_models(), digits=4)))
fig_landscape = result.plot_clid_landscape()
plt.show()
robustness = result.clid_robustness(**clid_grid)
display(Markdown(output.to_markdown(robustness, digits=3)))
fig_robustness = result.plot_clid_robustness(**clid_grid)
plt.show()

# %% [markdown]
# ## Files and claims
#
# (m) CLID correlates with accuracy across models (CLID Table 1); (p1) it does
# so better than either of its parts (Fig. 1, Table 1); (p2, p3) fewer
# neighbours and enough clusters make the better predictor (Fig. 2) — each
# decided by the rule printed with it.

# %%
paths = result.save(paper_dir, clid_grid=clid_grid)
print(f"{len(paths)} files written to {paper_dir}")
print(finish("pretraining", paper_dir, profile,
             [result.tracking_claim()] + result.clid_claims(**clid_grid),
             pattern="pretraining_*", setting=result.setting()))

# %%
plt.close("all")
