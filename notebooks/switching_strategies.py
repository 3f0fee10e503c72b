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
pairs = ["pixels/digits", "lite0@32/digits"]   # encoder/task pairs; the encoder "pixels" is the raw input
size = None                  # None: every example; else a stratified subsample
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
from mdlnb import runner

runner.interactive_profile(globals(), "switching_strategies")   # by hand: apply `profile`, write to build/lab

# %%
import math

import matplotlib.pyplot as plt
from IPython.display import Markdown, display

from mdlnb import claims, experts, manifest, plots, readouts, report
from mdlnb.studies import switching as study

# %% [markdown]
# ## The board and the loss matrices

# %%
board = experts.expert_grid(readouts.board(max_hidden_layers, width), learning_rate=learning_rates,
                            ema=emas, replay_streams=replay_streams)
tasks = {pair: study.pair_task(*pair.split("/"), size=size) for pair in pairs}
results = [study.run_pair(pair, task, board, seed=s, m=m, batch_size=batch_size, points=points,
                          ms=ms, alphas=alphas)
           for pair, task in tasks.items() for s in seeds]
K, C = len(board), next(iter(tasks.values())).num_classes
print(f"{K} experts; pairs: " + ", ".join(f"{p} (N = {t.n}, D = {t.features.shape[1]})"
                                          for p, t in tasks.items()))
print(f"orders: {seeds}; uniform code log C = {math.log(C):.3f} nats per example")

# %% [markdown]
# ## Regret of each strategy relative to fixed share (Fig. 5)
#
# Cumulative codelength of each strategy minus that of fixed share along the
# stream: above zero the strategy is worse. The paper (ImageNet, BYOL
# ResNet-50) finds the Bayesian and elementwise mixtures worse by a large
# margin and the switch distribution very close to fixed share. Lines are
# means over orders, bands min–max.

# %%
regret = study.gather(results, "regret")
curves = study.spread(regret, ["pair", "strategy", "n"], "regret [nats]")
fig, axes = plt.subplots(1, len(tasks), figsize=(5.5 * len(tasks), 4), squeeze=False)
for ax, (pair, g) in zip(axes[0], curves.groupby("pair")):
    for strat, h in g.groupby("strategy", sort=False):
        ax.plot(h["n"], h["mean"], label=strat)
        ax.fill_between(h["n"], h["min"], h["max"], alpha=0.2)
    ax.set(xscale="log", xlabel="examples n", ylabel="regret to fixed share [nats]",
           title=plots.pair_label(pair))
    ax.axhline(0, color="k", lw=0.5)
axes[0][0].legend()
report.save_figure(fig, "switching_regret", paper_dir)
plt.show()

# %%
report.save_table(study.final_codelengths(results), "switching_codelengths", paper_dir)
final = study.final_regrets(results)
table = study.spread(final.melt(id_vars=["pair", "seed"], var_name="strategy",
                                value_name="regret [nats]"), ["pair", "strategy"], "regret [nats]")
report.save_table(table, "switching_final_regret", paper_dir)
display(Markdown(report.to_markdown(table, digits=3)))

# %%
bm = table[table["strategy"] == "Bayesian mixture"]
sd = table[table["strategy"] == "switch distribution"]
for (_, b), (_, s) in zip(bm.iterrows(), sd.iterrows()):
    print(f"{b['pair']}: Bayesian mixture {b['mean']:+.1f} ± {b['std']:.1f} nats behind fixed "
          f"share, switch distribution {s['mean']:+.1f} ± {s['std']:.1f} (mean ± std over "
          f"{int(b['count'])} orders)")

# %% [markdown]
# ## Fixed share's sensitivity to m and to a constant α
#
# With α_t = (m − 1)/t the expected number of switches grows like
# (m − 1) log N; with a constant α it grows like αN, which over-switches on a
# long stream (a large α pays on every step) or under-switches on a short one.

# %%
sens = study.spread(study.gather(results, "sensitivity"), ["pair", "rate", "value"],
                    "regret to best expert [nats]")
report.save_table(sens, "switching_sensitivity", paper_dir)
fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
for ax, (rate, g) in zip(axes, sens.groupby("rate", sort=False)):
    for pair, h in g.groupby("pair"):
        ax.errorbar(h["value"], h["mean"], yerr=h["std"].fillna(0), marker="o",
                    label=plots.pair_label(pair))
    ax.set(xscale="log", xlabel=rate, ylabel="regret to best single expert [nats]")
    ax.axhline(0, color="k", lw=0.5)
axes[0].legend()
report.save_figure(fig, "switching_sensitivity", paper_dir)
plt.show()
display(Markdown(report.to_markdown(sens, digits=3)))

# %% [markdown]
# ## The regret bound (App. A.1)
#
# The switching code sums over every expert sequence, so its codelength is at
# most that of any one sequence plus the sequence's prior cost −log p(ξ). For
# the best *single* expert that cost is exact and grows like (m − 1) log n
# (`mdlnb.switching.never_switch_curve`). Theorem 1's switching term bounds the regret to the
# best sequence with m − 1 switches by m log K + (m − 1) log(N/(m − 1)).

# %%
bound = study.spread(study.gather(results, "bound"), ["pair", "n"], "regret [nats]")
limit = study.gather(results, "bound").groupby(["pair", "n"])["bound [nats]"].first().reset_index()
fig, axes = plt.subplots(1, len(tasks), figsize=(5.5 * len(tasks), 4), squeeze=False)
for ax, (pair, g) in zip(axes[0], bound.groupby("pair")):
    ax.plot(g["n"], g["mean"], label="fixed share − best single expert")
    ax.fill_between(g["n"], g["min"], g["max"], alpha=0.2)
    lim = limit[limit["pair"] == pair]
    ax.plot(lim["n"], lim["bound [nats]"], "k--", label="never-switch cost (bound)")
    ax.set(xscale="log", xlabel="examples n", ylabel="nats", title=plots.pair_label(pair))
    ax.axhline(0, color="k", lw=0.5)
axes[0][0].legend()
report.save_figure(fig, "switching_bound", paper_dir)
plt.show()

# %%
seq = study.gather(results, "sequence")
seq_last = seq[seq["switches"] == seq["switches"].max()]
report.save_table(seq, "switching_sequence", paper_dir)
s = study.spread(seq_last, ["pair"], "regret [nats]")
for _, r in s.iterrows():
    print(f"{r['pair']}: regret to the best ≤{int(m) - 1}-switch sequence {r['mean']:.1f} ± "
          f"{r['std']:.1f} nats vs bound {seq_last['bound [nats]'].iloc[0]:.1f} nats")

# %% [markdown]
# ## How often does the posterior change its mind?
#
# Changes of the readout with the most posterior mass p(ξ_t | D_<t) (summed
# over hyperparameters) along the stream, and the total-variation distance
# between consecutive posteriors (how much mass moves per step). When two
# readouts of neighbouring depth predict almost equally well the favourite can
# flip often while little mass moves; the TV distance tells the two apart.

# %%
sw = study.gather(results, "switches")
last = sw[sw["n"] == sw.groupby(["pair", "seed"])["n"].transform("max")]
freq = study.spread(last, ["pair"], "map switches")
report.save_table(freq, "switching_frequency", paper_dir)
tv = study.spread(sw, ["pair"], "tv")
for (_, f), (_, t) in zip(freq.iterrows(), tv.iterrows()):
    print(f"{f['pair']}: the favourite readout changes {f['mean']:.0f} ± {f['std']:.0f} times "
          f"over N = {results[0].n}; mean TV between consecutive posteriors {t['mean']:.3f} "
          f"(max {t['max']:.3f})")
display(Markdown(report.to_markdown(freq, digits=3)))

# %% [markdown]
# ## Claims
#
# Each verdict is decided by the rule next to it, on every (pair, order).

# %%
found = study.claims(results)
claims.write_claims(found, paper_dir, "switching_strategies")
manifest.record(paper_dir, "switching_strategies", profile, pattern="switching_*")
print(claims.describe(found))

# %%
plt.close("all")
