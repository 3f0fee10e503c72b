"""The data-efficiency study's claims (e1, e2) (paper Sec. 4 "Data efficiency", Fig. 3, App. A.9)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from mdlnb import claims as C
from mdlnb.studies.data_efficiency._measures import SCRATCH, regret_at


def claims(runs: Sequence[tuple[str, str, int, dict]], *, early: int) -> list:
    """Claim (e) as e1 (frozen readouts ahead of from scratch early, every task and
    order) and e2 (out of domain, from scratch or fine-tuning gains on the
    frozen linear probe over the last quarter of the stream, every order).

    ``runs``: (task, domain ∈ {"in-domain", "out-of-domain"}, seed, per_step)."""
    frozen = [regret_at(p, m, early) for _, _, _, p in runs for m in ("linear probe", "deep MLP")]
    e1 = C.Claim.decided(
        "e1", "Readouts on a frozen pretrained encoder code the first examples better than "
        "training the encoder from scratch.", "Sec. 4 'Data efficiency', Fig. 3, App. A.9 Fig. 10",
        "ImageNet and PCam: linear probe and MLPs below from scratch early",
        f"cumulative regret to from scratch at n = {early} < 0 for the linear probe and the deep "
        f"MLP on every (task, order): {len(runs)} runs",
        C.sign_on_every(frozen, sign="negative"))
    gains = []
    for _, domain, _, p in runs:
        if domain != "out-of-domain":
            continue
        n = p[SCRATCH].size
        q = n - n // 4
        late_probe = float(np.sum(p["linear probe"][q:]))
        late_best = min(float(np.sum(p[SCRATCH][q:])), float(np.sum(p["fine-tuned"][q:])))
        gains.append(late_probe - late_best)
    e2 = C.Claim.decided(
        "e2", "Out of domain, training from scratch or fine-tuning catches up with the frozen "
        "linear probe as data grows.", "Sec. 4 'Data efficiency', Fig. 3 (PCam)",
        "PCam: from scratch surpasses the linear probe after ~150k examples",
        "over the last quarter of the out-of-domain stream, the linear probe's loss minus the "
        "better of from scratch / fine-tuned > 0 on every order",
        C.sign_on_every(gains, sign="positive"))
    return [e1, e2]
