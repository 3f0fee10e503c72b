"""The switching study's claims (b1, b2, c1, c2), decided on every (pair, order)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from mdlnb import claims as C
from mdlnb.studies.switching._pair import PairResult, final_regrets


def claims(results: Sequence[PairResult]) -> list:
    """Claims (b) and (c) (App. A.6, A.1), decided on every (pair, order)."""
    fin = final_regrets(results)
    bm, ew = fin["Bayesian mixture"].to_numpy(), fin["elementwise mixture"].to_numpy()
    sd = fin["switch distribution"].to_numpy()
    units = f"{len(fin)} (pair, order) units: {', '.join(sorted(set(fin['pair'])))}"
    b1 = C.Claim.decided(
        "b1", "Bayesian and elementwise mixtures code worse than fixed share.",
        "App. A.6, Fig. 5", "qualitative: worse 'by a large margin' (ImageNet, BYOL ResNet-50)",
        f"regret to fixed share at n = N > 0 for both mixtures on every one of {units}",
        C.sign_on_every(np.concatenate([bm, ew]), sign="positive"))
    b2 = C.Claim.decided(
        "b2", "The switch distribution is close to fixed share.", "App. A.6, Fig. 5",
        "qualitative: 'very close'",
        "|switch distribution − fixed share| < min(Bayes − fixed share, elementwise − fixed "
        f"share) at n = N on every one of {units}",
        C.sign_on_every(np.abs(sd) - np.minimum(bm, ew), sign="negative"))
    ratio = []
    for r in results:
        b = r.bound
        ratio.append(float(((b["regret [nats]"] - 1e-4 * b["n"]) / b["bound [nats]"]).max()))
    c1 = C.Claim.decided(
        "c1", "Switching (fixed share) is never much worse than the best single readout: its "
        "regret is at most the prior cost of never switching, O(log N).",
        "Sec. 3.3, App. A.1 (Eq. 3–4)", "≤ −log p(ξ*) = O(log N)",
        "max over n of (regret to the best single expert − 1e-4·n float32 slack) / never-switch "
        f"cost < 1 on every one of {units}",
        C.sign_on_every(np.asarray(ratio) - 1.0, sign="negative"),
        our_value=f"max ratio per unit {', '.join(f'{v:.3f}' for v in ratio)}")
    seq_excess = [float((r.sequence["regret [nats]"] - r.sequence["bound [nats]"]).iloc[-1])
                  for r in results]
    c2 = C.Claim.decided(
        "c2", "Fixed share's regret to the best readout sequence with m − 1 switches is within "
        "the switching term of the A.1 bound.", "Sec. 3.3, App. A.1",
        "m log K + (m − 1) log(N/(m − 1))",
        f"regret to the best ≤ (m − 1)-switch sequence − bound < 0 on every one of {units}",
        C.sign_on_every(seq_excess, sign="negative"))
    return [b1, b2, c1, c2]
