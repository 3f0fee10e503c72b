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
# Here the encoder is a small ViT pretrained with labels on Fashion-MNIST
# training images. The **in-domain** task is Fashion-MNIST's *test* split: the
# same kind of images and classes as the pretraining data, never seen in it. The
# **out-of-domain** task is `sci_patches`: 32×32 RGB patches of scientific
# images (microscopy, astronomy …), converted to the encoder's grey 28×28 input
# — neither the image statistics nor the classes resemble clothing.

# %% tags=["parameters"]
profile = "default"          # "smoke" (CI, seconds), "default" (CPU, minutes), "full"
paper_dir = "paper"          # where tables, figures and claims are written
objective = "supervised"     # pretraining objective of the encoder
arch = "vit"
arch_size = "XS"
pretrain_task = "fashion_mnist"
pretrain_size = 4000         # pretraining images (train split)
pretrain_steps = 300
in_domain = "fashion_mnist"  # test split: the pretraining distribution, unseen images
out_of_domain = "sci_patches"
task_size = 2000             # examples per stream (stratified subsample)
mlp_layers = [1, 2, 3]       # deep MLP readouts on the frozen features
mlp_width = 64
learning_rates = [1e-4, 1e-3]        # fine-tuned and from-scratch encoders
probe_learning_rates = [1e-3, 3e-3]  # frozen readouts
replay_streams = 3
batch_size = 32
seeds = [0, 1]               # example orders; curves show their spread
early = 128                  # "early" sample size for claim (e)
points = 200

# %%
from mdlnb import runner

runner.interactive_profile(globals(), "data_efficiency")   # by hand: apply `profile`, write to build/lab

# %%
import math

import matplotlib.pyplot as plt
import pandas as pd

import mdlnb
from mdlnb import claims, manifest, plots, report
from mdlnb.encoders import pretrain
from mdlnb.studies import data_efficiency as study
from mdlnb.studies import switching as switching_study

# %% [markdown]
# ## The encoder and the two tasks

# %%
encoder = pretrain(objective, arch, arch_size,
                   mdlnb.data.load(pretrain_task, split="train", size=pretrain_size, seed=0),
                   pretrain_steps, 0, batch_size=64, learning_rate=3e-3)
tasks = {"in-domain": mdlnb.data.load(in_domain, split="test", size=task_size, seed=0),
         "out-of-domain": mdlnb.data.load(out_of_domain, split="train", size=task_size, seed=0)}
print(encoder.name, "features:", encoder.feature_dim)
for domain, t in tasks.items():
    print(f"{domain}: {t}; uniform code log C = {math.log(t.num_classes):.3f} nats/example")

# %% [markdown]
# ## Four codes per stream

# %%
runs = [(t.name, domain, s, study.per_step_losses(
            t, encoder, mlp_layers=mlp_layers, mlp_width=mlp_width, learning_rate=learning_rates,
            probe_learning_rate=probe_learning_rates, replay_streams=replay_streams,
            batch_size=batch_size, seed=s))
        for domain, t in tasks.items() for s in seeds]
frames = [study.regret_frames(p, task=name, domain=domain, seed=s, points=points)
          for name, domain, s, p in runs]
curves = pd.concat([c for c, _ in frames], ignore_index=True)
summary = pd.concat([s for _, s in frames], ignore_index=True)
report.save_table(summary, "data_efficiency_codelengths", paper_dir)
table = switching_study.spread(summary, ["domain", "task", "method"], "regret [nats]")
report.save_table(table, "data_efficiency_regret", paper_dir)
report.show(table)

# %% [markdown]
# ## Regret to training from scratch along n (Fig. 3)
#
# Lines: mean over orders; bands: min–max. A dot marks where a curve crosses
# zero for good (`zero_crossing`, per order).

# %%
spread = switching_study.spread(curves, ["domain", "method", "n"], "regret [nats]")
fig, axes = plt.subplots(1, 2, figsize=(11, 4))
for ax, (domain, g) in zip(axes, spread.groupby("domain")):
    for method in study.METHODS:
        h = g[g["method"] == method]
        line, = ax.plot(h["n"], h["mean"], label=method)
        ax.fill_between(h["n"], h["min"], h["max"], alpha=0.2, color=line.get_color())
        for x in summary.loc[(summary["domain"] == domain) & (summary["method"] == method),
                             "crossing n"].dropna():
            ax.plot([x], [0], "o", color=line.get_color())
    ax.axhline(0, color="k", lw=0.5)
    ax.set(xscale="log", xlabel="examples n", ylabel="cumulative loss − from scratch [nats]",
           title=f"{domain}: {plots.task_label(tasks[domain].name)}")
axes[0].legend()
report.save_figure(fig, "data_efficiency_regret", paper_dir)
plt.show()

# %%
for (domain, method), g in summary.groupby(["domain", "method"], sort=False):
    if method == study.SCRATCH:
        continue
    cross = g["crossing n"].dropna()
    where = (f"crosses zero at n = {', '.join(str(int(c)) for c in cross)}" if len(cross)
             else "never crosses zero")
    print(f"{domain:>13} {method:>12}: regret at N {g['regret [nats]'].mean():+.1f} ± "
          f"{g['regret [nats]'].std():.1f} nats over {len(g)} orders; {where}")

# %% [markdown]
# ## Claims

# %%
found = study.claims(runs, early=early)
claims.write_claims(found, paper_dir, "data_efficiency")
manifest.record(paper_dir, "data_efficiency", profile, pattern="data_efficiency_*")
print(claims.describe(found))

# %%
plt.close("all")
