# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Beyond class labels: real-valued targets and calibrated experts
#
# Two extensions of MDL with readout switching, each on a few small
# representations:
#
# 1. **Real-valued targets.** A regression task's readouts predict a Gaussian
#    (a mean and a learned log-variance per target); the prequential loss is
#    the negative log *density* of the target, in nats. Stage 2 is unchanged:
#    it switches over log-losses, whatever they are losses of.
# 2. **Calibrated experts** (forward calibration, Bornschein et al. 2022): an
#    expert codes batch t with `softmax(β_t · logits)`, where the temperature
#    β_t is fitted to the examples coded *before* batch t, each under the
#    logits it was coded with. The batch being coded never enters its own β_t,
#    so no label is used before it is paid for: the code stays a code.
#
# The papers make no claim about either on these tasks: what follows are
# findings with their spread, computed from the tables.

# %% tags=["parameters"]
profile = "default"          # "smoke" (CI, seconds), "default" (CPU, minutes), "full"
paper_dir = "paper"          # where tables and figures are written
image_task = "dsprites_x_reg"  # a dSprites regression task (see mdlnb.data.names)
image_size = 400             # its examples (seeded subsample); diabetes is always whole (442)
pool = 8                     # block-averaged pixels on a pool × pool grid
variant = 0                  # EfficientNet-Lite variant of both parts
resolution = 64              # its input pixels (native 224; small is fast)
layer = "stage5"             # its layer for the dSprites task ("head": its own features)
calibration_task = "digits"  # a classification task; its first calibration_size examples
calibration_size = 600
seeds = [0, 1, 2]            # data orders, the same for every representation (paired)
regression_protocol = "small"     # board, B, switching of the regression part
calibration_protocol = "default"  # the board run without and with calibration
points = 60                  # log-spaced n of the curves

# %%
from mdlnb.tools import runner

# by hand: apply `profile`, write to build/lab
runner.interactive_profile(globals(), "beyond_classification")

# %%
import matplotlib.pyplot as plt
from IPython.display import Markdown, display

import mdlnb
from mdlnb.api import output
from mdlnb.studies import beyond as study
from mdlnb.studies import finish

config = study.BeyondConfig.from_parameters(globals())
print("regression tasks:", mdlnb.data.names(kind="regression"))

# %% [markdown]
# ## Part 1 — regression: density codelengths of a few representations
#
# For `diabetes` (442 patients, 10 clinical features; the target is a disease
# progression score) the representations are the features, their top-2
# principal components and Gaussian noise of the same width; for the dSprites
# factor, block-averaged pixels, the mean-pooled features of one
# EfficientNet-Lite0 stage (`mdlnb.encoders.layers`; narrower than N, so that
# LogME's evidence is finite) and noise. Each is
# coded by `mdlnb.compare` over the same orders (paired).
#
# **The quantisation caveat.** A density is not a probability: coding a
# real target to precision δ costs −log p(y) − log δ nats, and rescaling y by
# a shifts every number by log a per example. The numbers below — nats of a
# density, "density nats" in the tables' column names — are therefore
# comparable *between representations of the same targets* (one task, one
# panel of the figure), which is what a ranking needs, and never with
# classification codes or across tasks (negative values are possible).
#
# Beside each MDL number, LogME's regression evidence
# (`mdlnb.baselines.transfer.logme_regression`, nats/example, higher is better; here on
# z-scored features and centred targets): the marginal likelihood of Bayesian
# linear regression, an independent route to a ranking.

# %%
result = study.run(config)   # a bar names the stage it is in (about 3 minutes on a 2-core CPU)
result.save(paper_dir)
summary = result.regression_summary()
display(Markdown(summary.attrs["note"]))
output.show(summary, rows=None)   # every number, unrounded: beyond_regression.csv

# %% [markdown]
# The cumulative density code divided by n, along the stream (mean over
# orders; band: min–max), one panel per task; the legend names each
# representation and its LogME evidence. Where two curves separate, one
# representation is paying fewer nats per target than the other from that n
# on. The first batch (32 examples) is coded alike for every representation
# (the targets' own Gaussian), so the curves start together.

# %%
fig = result.plot_regression()

# %% [markdown]
# ## Part 2 — calibrated experts
#
# The same board (`mdlnb.protocol(calibration_protocol)`), run per order with
# `calibrate=False` and with `calibrate=True`
# (`mdlnb.protocol(..., calibrate=True)`). A calibrated expert trains exactly
# as its plain twin from the same initialisation; only its code differs, so
# the difference on − off of the same order is paired. Shown: the switching
# code's difference and the best single expert's, each with a 95 % t-interval
# over orders (a small number of orders: a wide interval).

# %%
output.show(result.calibration(), rows=None)

# %%
fig = result.plot_calibration()

# %% [markdown]
# ## Findings

# %%
Markdown(result.findings())

# %%
finish("beyond_classification", paper_dir, profile, pattern="beyond_*")
plt.close("all")
