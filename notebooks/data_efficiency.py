# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Data efficiency: frozen readouts, fine-tuning and training from scratch
#
# MDL charges for every example a method fails to predict, so it measures
# *data efficiency* directly (Li et al., Sec. 4 "Data efficiency", Fig. 3;
# App. A.9, Fig. 10). On one stream of images we code the labels four ways,
# all with the same prequential protocol (same order, same batch size, nats):
#
# * a **linear probe** and **deep MLP** readouts on a *frozen* pretrained encoder,
# * the pretrained encoder **fine-tuned** end to end with a linear head,
# * the same architecture **trained from scratch** — the comparator.
#
# The curves are cumulative next-step loss minus the from-scratch one: below
# zero a method has spent fewer nats than training from scratch so far.
# The paper expects the frozen readouts to win early everywhere, and, on a task
# far from the pretraining data (PatchCamelyon for an ImageNet encoder), training
# from scratch to catch up with the linear probe as data grows.
#
# Here the encoders are two small ViTs pretrained on Fashion-MNIST training
# images, one with labels and one with SimCLR. The **in-domain** task is
# Fashion-MNIST's *test* split: the same kind of images and classes as the
# pretraining data, never seen in it. The **out-of-domain** tasks are
# `sci_patches` (32×32 RGB patches of scientific images: microscopy, astronomy …)
# and `textures` (grey texture patches), converted to the encoders' grey 28×28
# input — neither the image statistics nor the classes resemble clothing. Three
# tasks × two encoders let the claims take the task as their unit.

# %% tags=["parameters"]
profile = "default"          # "smoke" (CI, seconds), "default" (CPU, minutes), "full"
paper_dir = "paper"          # where tables, figures and claims are written
objectives = ["supervised", "simclr"]   # one encoder per pretraining objective
arch = "vit"
arch_size = "XS"
pretrain_task = "fashion_mnist"
pretrain_size = 4000         # pretraining images (train split)
pretrain_steps = 300
in_domain = "fashion_mnist"  # test split: the pretraining distribution, unseen images
out_of_domain = ["sci_patches", "textures"]
task_size = 2000             # examples per stream (stratified subsample)
mlp_layers = [1, 2, 3]       # deep MLP readouts on the frozen features
mlp_width = 64
learning_rates = [1e-4, 1e-3]        # fine-tuned and from-scratch encoders
probe_learning_rates = [1e-3, 3e-3]  # frozen readouts
replay_streams = 3
batch_size = 32
seeds = [0, 1, 2, 3, 4]      # example orders: curves show their spread; e2 a t interval over them
early = 128                  # "early" sample size for claim (e)
points = 200

# %%
from mdlnb.tools import runner

runner.interactive_profile(globals(), "data_efficiency")   # by hand: apply `profile`, write to build/lab

# %%
import matplotlib.pyplot as plt
from IPython.display import Markdown, display

from mdlnb.api import output
from mdlnb.studies import data_efficiency as study
from mdlnb.studies import finish

config = study.DataEfficiencyConfig.from_parameters(globals())

# %% [markdown]
# ## The encoders, the three tasks and four codes per stream

# %%
result = study.run(config)
paths = result.save(paper_dir)
display(Markdown(result.describe()))
output.show(result.tables()["regret"])

# %% [markdown]
# ## Regret to training from scratch along n (Fig. 3)
#
# Lines: mean over orders; bands: min–max. A dot marks where a curve crosses
# zero for good (`zero_crossing`, per order).

# %%
result.plot_regret()
plt.show()
display(Markdown(result.findings()))

# %% [markdown]
# ## Claims

# %%
print(finish("data_efficiency", paper_dir, profile, result.claims(), pattern="data_efficiency_*",
             setting=result.setting()))

# %%
plt.close("all")
