# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Loss-data curves of three representations of Fashion-MNIST
#
# Whitney et al., *Evaluating representations by the complexity of learning
# low-loss predictors* (the SDL paper), Fig. 2 and its table, at CPU scale.
#
# A **loss-data curve** plots the held-out loss `L(A_φ, n)` (nats per example)
# of a probe trained on `n` examples of representation `φ` against `n`. Four
# measures of representation quality are read off it:
#
# | measure | reads the curve | depends on |
# |---|---|---|
# | VA | the loss at n (a vertical slice) | the evaluation-set size n |
# | MDL | the area under the curve up to n (the block-wise code of n labels, Eq. 7) | n |
# | SDL | the area between the curve and `y = ε` (Eq. 11) | the tolerance ε |
# | εSC | the first n with `L ≤ ε` (a horizontal slice, Eq. 12) | ε |
#
# The question of this notebook is the paper's: as the evaluation set grows,
# **which measures change their ranking of the representations?** VA and MDL
# describe a dataset of size n, so they may; SDL and εSC describe the
# predictor one wants (loss ≤ ε), so once they are *tight* they do not — and
# before that they say "lower bound" instead of ranking.
#
# Representations (all of the same Fashion-MNIST images, from the Debian
# package):
#
# * **raw pixels** (784-d);
# * **EfficientNet-Lite0** features (1280-d) with its real ImageNet weights, on
#   images upsampled to a small resolution (`lite0@64`);
# * a small convolutional **autoencoder** pretrained by `mdlnb.encoders` on
#   unlabelled Fashion-MNIST images (the paper uses a VAE).

# %% tags=["parameters"]
profile = "default"          # "smoke" (CI, seconds), "default" (CPU, minutes), "full"
paper_dir = "paper"          # where the figures and tables are written
train_size = 6000            # evaluation pool (official train split, stratified subsample)
test_size = 2000             # held-out examples that estimate the population loss (official test split)
representations = ["pixels", "lite0@64", "autoencoder:resnet_XS:300"]
pretrain_size = 5000         # unlabelled images the autoencoder trains on
num_sizes = 10               # log-uniform evaluation-set sizes from 10 to train_size
seeds = 4                    # permutation + initialisation + minibatches per seed
probe_width = 128            # MLP probe with 2 hidden layers (paper: 512)
steps = 600                  # Adam updates per probe, the same at every n (App. C)
batch_size = 64
learning_rate = 1e-3         # paper: 1e-4 with a 2x512 probe, on a GPU
early_stopping = 0.1         # fraction of each prefix held out to pick the checkpoint (0: off)
evals = 10                   # checkpoints (plus the initial parameters)
eps_width = 256              # ε (Sec. 4.3): a larger probe on raw pixels, all of the pool
eps_steps = 2000
eps_scales = [1.0, 2.0, 3.0] # SDL / εSC at ε × these; figures use the last
refine_rounds = 1            # App. C.2: recursive grid-search rounds of εSC (0: none)
seed = 0                     # subsamples and the autoencoder

# %%
from mdlnb import runner

runner.interactive_profile(globals(), "loss_data")   # by hand: apply `profile`, write to build/lab

# %%
import time

import matplotlib.pyplot as plt
import pandas as pd

from mdlnb import curves, data, encoders, manifest, readouts, report
from mdlnb.studies.transferability import build_encoder, parse_encoder

# %% [markdown]
# ## Data and representations
#
# The pool (the evaluation set, up to `train_size` examples) comes from the
# official training split; the loss is measured on examples of the official
# test split, which no probe trains on. The autoencoder pretrains on other
# training images, without labels.

# %%
pool = data.load("fashion_mnist", split="train", size=train_size, seed=seed)
test = data.load("fashion_mnist", split="test", size=test_size, seed=seed)
unlabelled = data.load("fashion_mnist", split="train", size=pretrain_size, seed=seed + 1)
print(pool, test, sep="\n")

tasks, cost = {}, {}
for spec in representations:
    t0 = time.perf_counter()
    if spec == "pixels":
        tasks[spec] = (pool, test)
    else:
        enc = build_encoder(parse_encoder(spec), unlabelled)
        tasks[spec] = (encoders.features(enc, pool), encoders.features(enc, test))
    cost[spec] = time.perf_counter() - t0
report.show(pd.DataFrame({"representation": list(tasks),
                          "dim": [t[0].features.shape[1] for t in tasks.values()],
                          "seconds to build (features cached on disk)": [cost[s] for s in tasks]}),
            digits=2)

# %% [markdown]
# ## The tolerance ε (Sec. 4.3)
#
# The paper recommends setting ε to the held-out loss of a *large* probe trained
# on the *raw* representation with *all* the data: a loss known to be
# achievable, so that a good representation has a finite SDL. Here: an MLP
# with two hidden layers of `eps_width` units, `eps_steps` updates, on all of
# the pool's raw pixels. A probe of the curves' own (smaller) size cannot be
# expected to reach that loss, let alone the ε/2 that makes SDL tight (Alg. 1),
# so we also report looser tolerances, multiples of it; the figures use the
# loosest.

# %%
eps0 = curves.epsilon_from_probe(pool, readouts.mlp(2, eps_width), test=test, seeds=2,
                                 steps=eps_steps, batch_size=batch_size,
                                 learning_rate=learning_rate, early_stopping=early_stopping,
                                 evals=evals)
eps_list = [curves.Epsilon(eps0.value * s, f"{s} x ({eps0.source})") for s in eps_scales]
print(f"eps = {eps0.value:.4f} nats: {eps0.source}")
print("tolerances used:", [round(e.value, 4) for e in eps_list])

# %% [markdown]
# ## The curves
#
# Each seed is one permutation of the pool; the probe at size n trains on its
# first n examples (nested prefixes), for the same `steps` updates at every n.
# All sizes × seeds of one representation train in one compiled, vmapped call.
# The last `early_stopping` fraction of each prefix is held out to pick the
# checkpoint (among `evals` of them and the initial, uniform-code parameters):
# without it a probe trained for hundreds of updates on ten examples is wildly
# over-confident, its held-out loss far above the `log 10 = 2.30` nats of a
# uniform guess, and the left end of every curve measures over-fitting rather
# than the representation. (The paper found early stopping made no difference
# with its smaller learning rate.)

# %%
grid = curves.log_grid(pool.n, num_sizes)
probe = readouts.mlp(2, probe_width)
curve_list, seconds = [], {}
for spec, (p, t) in tasks.items():
    t0 = time.perf_counter()
    curve_list.append(curves.loss_data_curve(p, probe, test=t, sizes=grid, seeds=seeds,
                                             steps=steps, batch_size=batch_size,
                                             learning_rate=learning_rate,
                                             early_stopping=early_stopping, evals=evals,
                                             representation=spec))
    seconds[spec] = time.perf_counter() - t0
for c in curve_list:
    print(c, f"({len(c.sizes) * len(c.seeds)} probes in {seconds[c.representation]:.0f} s)")
report.save_table(pd.concat([c.frame() for c in curve_list]), "loss_data_curves", paper_dir)
ax = curves.plot(curve_list, eps_list[-1],
                 title=f"Fashion-MNIST, MLP 2x{probe_width} probe (±1 sd over {seeds} seeds)")
report.save_figure(ax, "loss_data_curves", paper_dir)
plt.show()

# %% [markdown]
# ## Every measure as the evaluation set grows (Fig. 2)
#
# At each size n, each measure uses only what an evaluator holding n examples
# could measure (the curve up to n). SDL and εSC are drawn hollow while they
# are only lower bounds.

# %%
table = curves.measure_table(curve_list, eps_list, at=grid)
ranks = curves.rankings(table, spread=True)   # a VA/MDL winner must beat the seed spread
report.save_table(table, "loss_data_measures", paper_dir)
report.save_table(ranks, "loss_data_rankings", paper_dir)
axes = curves.plot_measures(table, eps=eps_list[-1].value)
report.save_figure(axes[0].figure, "loss_data_measures", paper_dir)
plt.show()
report.show(ranks)

# %%
changes = curves.winner_changes(ranks)
report.save_table(changes, "loss_data_winner_changes", paper_dir)
report.show(changes)

# %% [markdown]
# Reading the table above: each row lists, in order of growing n, the
# verdicts of one measure (an arrow marks a change). VA and MDL name a
# winner at any n where the representations differ by more than their seed
# spread ("tie" where they do not); when their line has more than one
# representation in it, a smaller or larger evaluation set would have named
# another. SDL and εSC say "undetermined" while the values they would
# compare are only lower bounds (no representation, or not the leading one,
# has reached ε yet) and name a winner once it is final; "tie" means the
# grid of sizes is too coarse to separate the εSC values (see the refinement
# below).

# %%
flipped = changes[changes["changed"]]
print("measures whose named winner changed as n grew:",
      [f"{m}" + ("" if pd.isna(e) else f" (eps {e:.3g})") for m, e in zip(flipped["measure"],
                                                                        flipped["eps"])] or "none")

# %% [markdown]
# The values at the largest n, with their spread over seeds:

# %%
final = table[table["n"] == grid[-1]][["representation", "measure", "eps", "shown", "status",
                                      "seed mean", "seed std", "exceeded"]]
report.save_table(final, "loss_data_final", paper_dir)
report.show(final)

# %% [markdown]
# ## Refining εSC where the curve crosses ε (Alg. 2, App. C.2)
#
# The grid above places εSC only within a factor of the grid's spacing. The
# recursive grid search of Alg. 2 trains new probes only inside the interval
# where the mean curve crosses ε, in `refine_rounds` rounds of 10 sizes.

# %%
rows = []
for c in curve_list:
    first = curves.esc(c, eps_list[-1])
    if refine_rounds and not first.exceeded:
        p, t = tasks[c.representation]
        r = curves.esc_refine(p, eps_list[-1], curve=c, test=t, rounds=refine_rounds,
                              readout=probe, seeds=seeds, steps=steps, batch_size=batch_size,
                              learning_rate=learning_rate, early_stopping=early_stopping,
                              evals=evals)
        rows.append({"representation": c.representation, "eps": eps_list[-1].value,
                     "grid eSC": str(first), "bracket": str(first.bracket),
                     "refined eSC": str(r), "refined bracket": str(r.bracket),
                     "new sizes trained": r.new_sizes})
    else:
        rows.append({"representation": c.representation, "eps": eps_list[-1].value,
                     "grid eSC": str(first), "bracket": str(first.bracket),
                     "refined eSC": str(first), "refined bracket": "", "new sizes trained": 0})
refined = pd.DataFrame(rows)
report.save_table(refined, "loss_data_esc_refined", paper_dir)
report.show(refined)

# %%
manifest.record(paper_dir, "loss_data", profile, pattern="loss_data_*")
plt.close("all")
