"""The switching study's claims (b1, b2) and implementation checks (c1, c2).

Li, Bornschein & Hutter 2023, arXiv:2302.09579, App. A.6 and Fig. 5 compare
switching strategies on one (encoder, task) pair, ImageNet with a BYOL
ResNet-50, without numbers: the Bayesian and elementwise mixtures are worse
than fixed share "by a large margin", the switch distribution "very close".
Here the unit is the task (its (encoder, order) runs averaged), so the interval
is over independent tasks, and the qualitative sizes are taken as stated
below, fixed before the run:

* (b1) the mixtures' excess code over fixed share at n = N, relative to fixed
  share's codelength, ½·(Bayes + elementwise); "a large margin" taken as +10 %.
* (b2) the share of the closer mixture's excess that the switch distribution
  avoids, 1 − |L_SD − L_FS| / min(L_BM − L_FS, L_EW − L_FS) (1: exactly fixed
  share, 0: as far as the closer mixture); "very close" taken as 0.9.

c1 and c2 hold by construction (regret bounds of fixed share, App. A.1): they
are implementation checks, listed apart from the claims.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mdlnb.research import claims as C
from mdlnb.studies.switching_strategies._pair import PairResult, final_codelengths

#: The qualitative sizes, as taken (module docstring).
PAPER_EFFECTS = {"b1": 0.10, "b2": 0.9}
_A6 = "Li et al. 2023 App. A.6, Fig. 5"


def per_run(results: Sequence[PairResult]):
    """One row per (pair, seed): each strategy's codelength at n = N (nats), the
    pair's task and encoder, and the two effects of b1 and b2."""
    fin = (
        final_codelengths(results)
        .pivot_table(index=["pair", "seed"], columns="strategy", values="codelength [nats]")
        .reset_index()
    )
    fs = fin["fixed share"]
    bm, ew = fin["Bayesian mixture"] - fs, fin["elementwise mixture"] - fs
    sd = (fin["switch distribution"] - fs).abs()
    parts = fin["pair"].str.split("/", n=1)
    return fin.assign(
        encoder=parts.str[0],
        task=parts.str[-1],
        b1=(bm + ew) / 2 / fs,
        b2=1 - sd / np.minimum(bm, ew),
    )


def _units(runs) -> str:
    return (
        f"{runs['task'].nunique()} tasks ({', '.join(sorted(set(runs['task'])))}) × "
        f"{runs['encoder'].nunique()} encoders ({', '.join(sorted(set(runs['encoder'])))}) "
        f"× {runs['seed'].nunique()} orders"
    )


def claims(results: Sequence[PairResult]) -> list:
    """Claims b1, b2 and checks c1, c2 (module docstring)."""
    runs = per_run(results)
    task = runs.groupby("task", sort=True)[["b1", "b2"]].mean()
    units = _units(runs)
    d = C.t_effect(task["b1"], paper_effect=PAPER_EFFECTS["b1"], unit="tasks")
    b1 = C.Claim.decided(
        "b1",
        "Bayesian and elementwise mixtures code worse than fixed share.",
        _A6,
        "qualitative: worse 'by a large margin' (ImageNet, BYOL ResNet-50); taken as +10 % of "
        "fixed share's codelength",
        "per run, the mixtures' mean excess codelength over fixed share at n = N relative to "
        f"fixed share's, mean per task over its runs ({units}); t interval over tasks",
        d,
        effect="mixtures' excess over fixed share [fraction]",
        our_value=f"{d.detail}; per run {runs['b1'].min():.3g} to {runs['b1'].max():.3g}",
    )
    d = C.t_effect(task["b2"], paper_effect=PAPER_EFFECTS["b2"], unit="tasks")
    b2 = C.Claim.decided(
        "b2",
        "The switch distribution is close to fixed share.",
        _A6,
        "qualitative: 'very close'; taken as avoiding 90 % of the closer mixture's excess",
        "per run, 1 − |switch distribution − fixed share| / min(Bayes − fixed share, "
        f"elementwise − fixed share) at n = N, mean per task over its runs ({units}); t "
        "interval over tasks",
        d,
        effect="share of the mixtures' excess avoided by SD",
        our_value=f"{d.detail}; per run {runs['b2'].min():.3g} to {runs['b2'].max():.3g}",
    )
    ratio = [
        float(((r.bound["regret [nats]"] - 1e-4 * r.bound["n"]) / r.bound["bound [nats]"]).max())
        for r in results
    ]
    c1 = C.Claim.checked(
        "c1",
        "Switching (fixed share) is never much worse than the best single readout: its "
        "regret is at most the prior cost of never switching, O(log N).",
        "Li et al. 2023 Sec. 3.3, App. A.1 (Eq. 3–4)",
        "≤ −log p(ξ*) = O(log N)",
        "max over n of (regret to the best single expert − 1e-4·n float32 slack) / never-switch "
        f"cost < 1 on every run ({units})",
        passed=max(ratio) < 1,
        detail=f"max ratio per run {', '.join(f'{v:.3f}' for v in ratio)}",
    )
    excess = [
        float((r.sequence["regret [nats]"] - r.sequence["bound [nats]"]).iloc[-1]) for r in results
    ]
    c2 = C.Claim.checked(
        "c2",
        "Fixed share's regret to the best readout sequence with m − 1 switches is within "
        "the switching term of the A.1 bound.",
        "Li et al. 2023 Sec. 3.3, App. A.1",
        "m log K + (m − 1) log(N/(m − 1))",
        f"regret to the best ≤ (m − 1)-switch sequence − bound < 0 on every run ({units})",
        passed=max(excess) < 0,
        detail=f"regret − bound per run {', '.join(f'{v:.3g}' for v in excess)} nats",
    )
    return [b1, b2, c1, c2]
