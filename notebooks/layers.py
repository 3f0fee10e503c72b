# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Which layer of my encoder? Codelength per layer, from how many examples on
#
# Users of probing tools ask which layer of a pretrained encoder to read out
# (before or after the projection, which block, which pooling). The ImageNet
# head of a CNN is trained for ImageNet's classes; an earlier stage may keep
# what a downstream task needs (position, count, stroke) in a form a small
# readout learns from fewer examples. MDL answers per task, and *along n*:
# the codelength of the labels counts every example a readout fails to
# predict, so the layer that is ahead after n examples is the better choice for
# a dataset of that size.
#
# Here two encoders, on one task of each mini-VTAB group (natural,
# specialized, structured):
#
# * ImageNet EfficientNet-Lite0 at a small resolution, a few of its layers
#   (`mdlnb.encoders.layers`: the output of MBConv stages and the 1280-channel
#   head, each globally average-pooled);
# * a self-pretrained ViT, the committed artifact of the pretraining notebook
#   (`artifacts/encoders/`: supervised on Fashion-MNIST, ViT-S), its patch
#   embedding and each transformer block (final LayerNorm applied, mean over
#   patch tokens).
#
# Every layer is coded with readout switching under one protocol over the same
# data orders (`mdlnb.compare`, paired), so the differences between layers are
# measured on the same streams. The papers state no expectation about layers of
# these encoders: what follows are findings with their spread, not claims.

# %% tags=["parameters"]
profile = "default"          # "smoke" (CI, seconds), "default" (CPU, minutes), "full"
paper_dir = "paper"          # where tables and the figure are written
variant = 0                  # EfficientNet-Lite variant (0, 1, 2)
resolution = 64              # input pixels (native 224; small is fast, see efficientnet.py)
task_names = ["digits", "sci_patches", "dsprites_location"]   # natural, specialized, structured
size = 800                   # examples per task (stratified subsample)
which = ["stage2", "stage4", "stage6", "head"]  # layers, input to output (see layer_names)
pooling = "mean"             # "mean" or "max" over positions
seeds = [0, 1, 2]            # data orders, the same for every layer (paired)
protocol = "small"           # board, B, switching: "small", "default", "paper-vtab"
points = 60                  # log-spaced n of the curves
vit = "supervised:vit_S:trained"             # committed self-pretrained ViT (None: skip it)
vit_which = ["embed", "block0", "block1"]    # its layers, input to output

# %%
from mdlnb.tools import runner

runner.interactive_profile(globals(), "layers")   # by hand: apply `profile`, write to build/lab

# %%
import matplotlib.pyplot as plt
from IPython.display import Markdown, display

import mdlnb
from mdlnb.studies import finish
from mdlnb.studies import layers as study

config = study.LayersConfig.from_parameters(globals())

# %% [markdown]
# ## The encoder, its layers and the tasks

# %%
encoder = config.encoder()
print(encoder.name, "layers:", mdlnb.encoders.layer_names(encoder))
tasks = config.tasks()
for t in tasks:
    print(t)

# %% [markdown]
# ## One comparison per task
#
# `mdlnb.compare(mdlnb.encoders.layers(encoder, which), task)` for each task:
# features of each layer are extracted (and cached), then stage 1 and stage 2
# run per (layer, order). The table gives bits per example (mean ± sd over
# orders), the paired difference to the encoder's own features (its last layer,
# the head) and to the best layer, and how many orders rank each layer first.

# %%
runs = study.run(config)   # the Lite0's layers, then the ViT's (none in a profile without one)
result, vit_result = runs.lite, runs.vit
result.save(paper_dir, points=points)
result.table()

# %% [markdown]
# ## From how many examples on? (paired difference along n)
#
# Cumulative codelength of each layer minus the head's on the same stream:
# below zero a layer has spent fewer nats than the head so far. Lines: mean
# over orders; bands: min–max. The first batch is coded uniformly by every
# layer, so all curves start at zero.

# %%
fig = result.plot(points)

# %%
result.leaders(points)

# %% [markdown]
# ## Findings: EfficientNet-Lite0

# %%
Markdown(result.findings())

# %% [markdown]
# ## The self-pretrained ViT: the same question, the same tasks and orders
#
# `mdlnb.encoders.layers(vit, ...)`: the patch embedding (with positions) and
# each block's output, mean-pooled over patch tokens; the last block is the
# ViT's own features. It saw 28×28 grey Fashion-MNIST in pretraining; every
# task's images are resized and converted to grey as for its own features.
# Files: `layers_vit_*` beside the Lite0 ones.

# %%
vit_encoder = config.vit_encoder()
if vit_encoder is not None:
    print(vit_encoder.name, "layers:", mdlnb.encoders.layer_names(vit_encoder))
    vit_result.save(paper_dir, prefix="layers_vit", points=points)
    display(vit_result.table())
    fig_vit = vit_result.plot(points)
    display(vit_result.leaders(points))

# %% [markdown]
# ## Findings: the ViT

# %%
Markdown(vit_result.findings() if vit_encoder is not None else "No ViT in this profile.")

# %%
finish("layers", paper_dir, profile, pattern="layers_*")
plt.close("all")
