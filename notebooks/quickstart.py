# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Quickstart: evaluating a representation by its description length
#
# *How many nats does it take to transmit the labels of a dataset, given the
# representation?* That is the question MDL asks (Li et al., *Evaluating
# representations with readout model switching*, Sec. 2–3). A representation is
# good for a task when the labels can be **compressed** well given it — and
# compressing well requires predicting well *from little data*, so model
# complexity and sample efficiency are paid for automatically.
#
# This notebook walks through the two stages on one real task, the 8×8
# handwritten digits of scikit-learn, with raw pixels as the representation:
#
# 1. **Stage 1 — the prequential code.** Examples arrive one mini-batch at a
#    time. Each readout *expert* (a linear layer or an MLP, under some
#    hyperparameters) first predicts the labels of the new batch, paying
#    `−log p(y_t | x_t)` nats per example, then trains on everything seen so far.
#    The first batch is sent with the uniform code, `log C` nats each.
#    The result is a loss matrix `L[t, k]`.
# 2. **Stage 2 — switching.** Instead of betting on one expert, an HMM over
#    "which expert predicts now" mixes them (paper Eq. 1); fixed share with a
#    decreasing switching rate α_t = (m − 1)/t (Eq. 2) lets the code move from
#    a simple readout early on to a more flexible one once there is enough data.

# %% tags=["parameters"]
profile = "default"          # "smoke" (CI, seconds), "default" (CPU, minutes), "full"
paper_dir = "paper"          # where the figure and the table are written
task_name = "digits"         # any name in mdlnb.data.names()
split = "all"                # the whole dataset is one stream to compress
size: int | None = None      # None: every example; else a stratified subsample
protocol = "default"         # board, B, switching m, standardisation: "small", "default",
                             # "paper-vtab" (Table 6, B 32, m 11), "paper-imagenet" (Table 9, B 512, m 2)
seed = 0                     # example order, initialisations, replay samples
blockwise_epochs = 100       # epochs per block of the block-wise code (Voita & Titov)

# %%
from mdlnb.tools import runner

runner.interactive_profile(globals(), "quickstart")   # by hand: apply `profile`, write to build/lab

# %%
import math

import matplotlib.pyplot as plt
from IPython.display import Markdown, display

import mdlnb
from mdlnb.api import output, plots
from mdlnb.baselines import blockwise
from mdlnb.research import findings
from mdlnb.studies import finish

# %% [markdown]
# ## The task, the protocol and the board of readouts
#
# A *protocol* fixes everything besides the data that decides the codelength:
# the board of readout experts, the batch size B, the switching strategy and
# its m, and whether inputs are standardised online. Codelengths are
# comparable only under the same protocol; every result records its own.

# %%
task = mdlnb.data.load(task_name, split=split, size=size, seed=seed)
proto = mdlnb.protocol(protocol, seed=seed)
board = proto.experts()
print(task)
print(proto)
print(f"{len(board)} experts, e.g. {board[0].name} … {board[-1].name}")
print(f"uniform code: log C = {math.log(task.num_classes):.3f} nats per example")

# %% [markdown]
# ## One call: `mdlnb.evaluate`
#
# `evaluate` runs stage 1 (cached on disk, keyed by the inputs) and stage 2 and
# returns a `Report`. The codelength is in nats; bits are nats / ln 2.

# %%
rep = mdlnb.evaluate(task, protocol=proto)
print(rep.protocol)
print(rep)
rep.summary().round(3)

# %% [markdown]
# ## Stage 1: the loss matrix
#
# `rep.losses.losses[t, k]` is the next-step log-loss (nats) of expert `k` on
# the `t`-th example of the stream. Summing a column gives that expert's own
# prequential codelength. Typically small readouts learn fast but saturate,
# while large ones start slowly and end better, so no single column is best
# at every data size.

# %%
print("loss matrix:", rep.losses.losses.shape, "(examples × experts), nats")
totals = rep.losses.totals().sort_values()
print(f"the {min(10, len(totals))} shortest of {len(totals)} experts' own codes:")
rep.losses.expert_codes().head(10).round(3)   # nats, and bits per example

# %%
ax = plots.codelengths(totals, n=task.n, top=12,
                       reference={f"switching (m={rep.protocol.m:g})": rep.total_nats, "uniform": rep.uniform_nats})
ax.set_title("per-expert prequential codes vs the switching code")
plt.show()

# %% [markdown]
# ## Stage 2: switching versus the best single expert
#
# The same loss matrix under different switching strategies (paper App. A.6);
# the last column says how each one codes. The Bayesian mixture pays at most
# `log K` over the best expert but cannot follow the best expert as it changes
# with data size (the "catch-up phenomenon"); fixed share, the switch
# distribution and run-length models can, and come out *below* the best single
# expert (a negative `vs best expert`).
#
# **Why the elementwise mixture is so long.** It codes every example with the
# plain average of all K experts' predicted probabilities, with weights that
# never learn. Many experts of the board are poorly suited to the task at a
# given n (too high or too low a learning rate, a readout too small or too
# large; the bar chart above shows their own codes), and each of them drags
# every prediction towards its own: the
# elementwise mixture never pays more than log K nats for any one example,
# but it pays a little on *every* example, so its excess over the best
# expert grows with N instead of staying bounded, as the other mixtures' does.

# %%
table = rep.codelength_table()
output.save_table(table.drop(columns="how it codes"), "quickstart_codelengths", paper_dir)
output.show(table, rows=None)   # the numbers saved, and how each code codes

# %% [markdown]
# The regret of the switching code relative to the best single expert, as the
# stream is coded (below zero: switching is ahead).

# %%
ax = rep.plot_regret()
plt.show()

# %% [markdown]
# ## Which readout does the data prefer, and when? (paper Fig. 1)
#
# The posterior `p(ξ_t | D_<t)` summed over each readout's hyperparameters.
# Until the first batch has been trained on it is the uniform prior; after
# that it follows whichever readout has recently predicted best. The paper
# (Fig. 1, Fig. 9) finds the simple readouts ahead with little data and deeper
# ones taking over as data grows; how early that happens depends on the task
# and the representation. Where this run's posterior went, per data-size bin,
# is the table below the figure.

# %%
ax = rep.plot_posterior(by="readout")
output.save_figure(ax, "quickstart_posterior", paper_dir)
plt.show()
rep.readout_preference()   # one order: which readout per data-size bin, not yet a stable fact

# %% [markdown]
# ## The same idea with fewer updates: the block-wise code
#
# Voita & Titov (2020) send the data in blocks of doubling size (0.1 %, 0.2 %,
# … 100 % of N): the first block uniformly, each later block with a model
# trained from scratch on all previous blocks. It updates the model only ~10
# times, so it is cheaper; one expects it to code less tightly than the online
# code of the same expert, which is updated after every batch — but each block's
# model trains for many epochs from scratch, so it can also come out shorter.
# Which one it was on this run is printed below the table, and so is how to read
# the table: why its first blocks cost *more* than the uniform code, and what
# the `best epoch` column is.

# %%
best = rep.expert()
block = blockwise.blockwise(task, best, order=rep.losses.order, seed=seed, epochs=blockwise_epochs)
print(block)
print(f"online code of the same expert: {rep.best_expert_nats:,.1f} nats")
display(output.show(block.to_frame(), rows=None))
display(Markdown(block.notes(task)))
display(Markdown(findings.blockwise_vs_online(block.total_nats, rep.best_expert_nats, task.n,
                                              expert=best.name)))

# %%
finish("quickstart", paper_dir, profile, pattern="quickstart_*")
plt.close("all")
