# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Readout preference: which readout does the representation ask for, and when?
#
# Readout-model switching keeps a posterior p(ξ_t = k | D_<t) over the
# board of readouts (linear, MLPs of increasing depth, each under a
# hyperparameter grid). Li et al. (Fig. 2) report, per encoder and VTAB
# task, the readout that most often has the highest posterior,
# argmax_k (1/T) Σ_t p(ξ_t = k | D_<t), and find that the **task group**
# decides it — structured tasks want deeper readouts — more than the
# pre-training objective does; switching is more frequent out of domain
# (Sec. 4), and the posterior moves from simple to deeper readouts as data
# grows (Fig. 9).
#
# Here the same statistics on the grid of `mdlnb.studies.encoder_grid` (shared
# with the `objectives` and `scaling` notebooks).

# %% tags=["parameters"]
profile = "default"          # "smoke" (CI, seconds), "default" (CPU), "full" (GPU, paper-shaped)
paper_dir = "paper"
overrides = {}               # fields of mdlnb.studies.encoder_grid.EncodersConfig (profiles.yaml)
posterior_pairs = [["dino:vit_S:trained", "digits"], ["byol:vit_S:trained", "sci_patches"],
                   ["supervised:vit_L:trained", "clevr_count"],
                   ["mae:vit_S:trained", "dsprites_location"]]

# %%
from mdlnb.tools import runner

runner.interactive_profile(globals(), "readout_preference")   # by hand: apply `profile`, write to build/lab

# %%
import matplotlib.pyplot as plt
from IPython.display import Markdown, display

from mdlnb.api import output
from mdlnb.studies import encoder_grid as st
from mdlnb.studies import finish

config = st.EncodersConfig.from_overrides(overrides)
result = st.run(config)  # a progress bar when run interactively
display(result.timing())

# %% [markdown]
# ## Preferred readout per (encoder, task) (Fig. 2)
#
# 0 = linear; h = MLP with h hidden layers; the most frequent choice over
# the data orders. Tasks are grouped natural | specialized | structured.

# %%
preferred = result.preferred_readouts(index=False)
ax_heat = result.plot_preferred_readouts()
plt.show()

# %% [markdown]
# ## Switching frequency and depth per task group
#
# Switches: how often the readout with the highest posterior changes along
# the stream, per 1,000 examples (± sd over encoders, tasks and orders).

# %%
switching = result.switching()
display(Markdown(output.to_markdown(switching, digits=2)))
ax_switch = result.plot_switching()
plt.show()

# %% [markdown]
# ## The posterior along the stream (Fig. 9)
#
# Averaged within log-spaced bins of t so that the early examples, where
# the posterior moves most, can be seen.

# %%
fig_post = result.plot_posteriors([tuple(p) for p in posterior_pairs])
plt.show()

# %% [markdown]
# ## What this run found, next to the paper

# %%
display(Markdown(result.readout_findings()))

# %% [markdown]
# The default board is the CPU one (linear and MLPs of 1–3 hidden layers,
# against the paper's linear to 7-layer MLPs and 4,608 experts on VTAB; the
# protocol is printed below) and the tasks are a few hundred examples long,
# where simple readouts are expected to win; the `full` profile uses the
# paper's board.

# %%
result.protocol_label

# %%
paths = result.save(paper_dir, prefix="readout_preference", parts={
    "preferred": preferred, "switching": switching, "heatmap": ax_heat,
    "switching_by_group": ax_switch, "posteriors": fig_post,
    "posterior": result.posteriors([tuple(p) for p in posterior_pairs])})
print(f"{len(paths)} files written to {paper_dir}")

# %% [markdown]
# ## Claims
#
# (d) the posterior moves to deeper readouts as data grows, and structured
# tasks want deeper readouts than natural ones; (k) readouts switch more often
# out of the pretraining domain than in it — each verdict decided by the rule
# written next to it (`mdlnb.studies.encoder_grid._claims`, `._more_claims`);
# "inconclusive" where the grid lacks a task group, an in-domain task, or
# the streams are too short.

# %%
print(finish("readout_preference", paper_dir, profile, result.readout_claims(),
             pattern="readout_preference_*", setting=result.setting()))

# %%
plt.close("all")
