# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Switching strategies: which prior over readout sequences codes best?
#
# Stage 2 of MDL with readout-model switching (Li et al., Sec. 3, App. A.6)
# mixes K readout experts with a hidden Markov prior over *which expert
# predicts example t*. This notebook compares the priors of App. A.6 on real
# loss matrices — the Bayesian mixture (never switch), the elementwise mixture
# (forget the past at every step), fixed share with α_t = (m − 1)/t (the
# paper's choice, Eq. 2), the switch distribution and the run-length model —
# and checks the regret bound of Theorem 1 (App. A.1) against what is measured.
#
# A loss matrix is only interesting for switching when the best expert changes
# with n, so the board is the paper's VTAB board (linear + MLPs with 1–7
# hidden layers) at a reduced hyperparameter grid.

# %% tags=["parameters"]
profile = "default"          # "smoke" (CI, seconds), "default" (CPU, minutes), "full"
paper_dir = "paper"          # where tables, figures and claims are written
# encoder/task pairs (3 tasks × 2 encoders: claims b1, b2 take the task as their unit);
# the encoder "pixels" is the raw input
pairs = ["pixels/digits", "lite0@32/digits", "pixels/fashion_mnist", "lite0@32/fashion_mnist",
         "pixels/textures", "lite0@32/textures"]
size = 1000                  # None: every example; else a stratified subsample
max_hidden_layers = 7        # linear + MLP 1..7 (the paper's VTAB board, Table 6)
width = 64                   # hidden units (paper: 256; smaller for CPU)
learning_rates = [1e-3, 3e-3]
emas = [1.0]
replay_streams = [3]
batch_size = 32              # the paper's B for frozen encoders (App. A.5.1)
seeds = [0, 1, 2]            # example orders; every number below is spread over them
m = 11                       # fixed share rate alpha_t: (m - 1)/t, the VTAB setting of the paper
ms = [2, 5, 11, 31, 101]     # sensitivity to m
alphas = [1e-4, 1e-3, 1e-2, 1e-1]   # sensitivity to a constant α
points = 200                 # sample sizes at which curves are stored

# %%
from mdlnb.tools import runner

runner.interactive_profile(globals(), "switching_strategies")   # by hand: apply `profile`, write to build/lab

# %%
import matplotlib.pyplot as plt
from IPython.display import Markdown, display

from mdlnb.api import output
from mdlnb.studies import finish
from mdlnb.studies import switching_strategies as study

config = study.SwitchingConfig.from_parameters(globals())

# %% [markdown]
# ## The board and the loss matrices

# %%
result = study.run(config)
paths = result.save(paper_dir)
display(Markdown(result.describe()))

# %% [markdown]
# ## Regret of each strategy relative to fixed share (Fig. 5)
#
# Cumulative codelength of each strategy minus that of fixed share along the
# stream: above zero the strategy is worse. The paper (ImageNet, BYOL
# ResNet-50) finds the Bayesian and elementwise mixtures worse by a large
# margin and the switch distribution very close to fixed share. Lines are
# means over orders, bands min–max.

# %%
result.plot_regret()
plt.show()
tables = result.tables()
display(Markdown(output.to_markdown(tables["final_regret"], digits=3)))
display(Markdown(result.regret_findings()))

# %% [markdown]
# ## Fixed share's sensitivity to m and to a constant α
#
# With α_t = (m − 1)/t the expected number of switches grows like
# (m − 1) log N; with a constant α it grows like αN, which over-switches on a
# long stream (a large α pays on every step) or under-switches on a short one.

# %%
result.plot_sensitivity()
plt.show()
display(Markdown(output.to_markdown(tables["sensitivity"], digits=3)))

# %% [markdown]
# ## The regret bound (App. A.1)
#
# The switching code sums over every expert sequence, so its codelength is at
# most that of any one sequence plus the sequence's prior cost −log p(ξ). For
# the best *single* expert that cost is exact and grows like (m − 1) log n
# (`mdlnb.switching.never_switch_curve`). Theorem 1's switching term bounds the regret to the
# best sequence with m − 1 switches by m log K + (m − 1) log(N/(m − 1)).

# %%
result.plot_bound()
plt.show()
display(Markdown(result.bound_findings()))

# %% [markdown]
# ## How often does the posterior change its mind?
#
# Changes of the readout with the most posterior mass p(ξ_t | D_<t) (summed
# over hyperparameters) along the stream, and the total-variation distance
# between consecutive posteriors (how much mass moves per step). When two
# readouts of neighbouring depth predict almost equally well the favourite can
# flip often while little mass moves; the TV distance tells the two apart.

# %%
display(Markdown(result.switching_findings()))
display(Markdown(output.to_markdown(tables["frequency"], digits=3)))

# %% [markdown]
# ## Claims
#
# Each verdict is decided by the rule next to it, on every (pair, order).

# %%
print(finish("switching_strategies", paper_dir, profile, result.claims(), pattern="switching_*",
             setting=result.setting()))

# %%
plt.close("all")
