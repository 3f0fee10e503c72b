"""The parity toy's claims (g1–g3): on the parity toy VA and MDL change their winner with n; SDL, εSC don't.

SDL paper (Whitney et al.) Sec. 3.1 and Fig. 1 (right): a representation that
learns quickly but not well (the noisy label, A) and one that is perfect in
the limit (the raw bits, B). Every verdict is read off :func:`rankings` of
:func:`measure_table` — the same winners the notebook prints — on every
seed's own curve (and, reported beside, on the seed-mean curve, the paper's
L̂_n); the seeds are the independent units:

* (g1, g2) VA resp. MDL prefers ``quick`` at the smallest evaluation size and
  ``limit`` at the largest (the flip the paper predicts for n ≪ d and n ≫ d);
  the effect is the share of seeds whose curve flips, with its exact
  Clopper–Pearson interval, against ½ (no better than chance) and the paper's
  statement taken as holding on every seed (share 1).
* (g3), an implementation check (not a claim: once SDL or εSC names a winner
  it cannot change as n grows, by the measures' definition): SDL and εSC never name two different winners as n grows, at an ε
  at which both representations' SDL can be decided: more than twice the
  noisy label's loss floor H(α) (pass it as ``floor``; Alg. 1 calls SDL tight
  only when the loss at the largest n is ≤ ε/2, so below 2 H(α) the noisy
  label's SDL stays a lower bound forever, and below H(α) only the raw bits
  can reach ε at all: one winner by construction); an "undetermined" verdict —
  all lower bounds — is not a winner; holds if on every curve each of them
  names exactly one representation, does not hold if any names two,
  inconclusive if some never names one (too little data for the tolerance).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mdlnb.baselines.curves import LossDataCurve, measure_table, rankings, winner_changes
from mdlnb.baselines.curves._measures import as_eps
from mdlnb.research import claims as C


def _seed_curve(c: LossDataCurve, r: int) -> LossDataCurve:
    return LossDataCurve(
        c.representation,
        c.sizes,
        c.loss[r : r + 1],
        c.accuracy[r : r + 1],
        (c.seeds[r],),
        c.num_classes,
        c.meta,
    )


def _curves(quick: LossDataCurve, limit: LossDataCurve) -> list[tuple[str, list]]:
    if quick.loss.shape[0] != limit.loss.shape[0]:
        raise ValueError(f"limit: has {limit.loss.shape[0]} seeds, quick {quick.loss.shape[0]}")
    out = [("seed mean", [quick, limit])]
    out += [
        (f"seed {quick.seeds[r]}", [_seed_curve(quick, r), _seed_curve(limit, r)])
        for r in range(quick.loss.shape[0])
    ]
    return out


def _share_of_seeds(ok: Sequence[bool]) -> str:
    """The share of seed curves on which a rule holds, with its exact (Clopper–Pearson)
    95 % interval (:func:`scipy.stats.binomtest`)."""
    from scipy import stats

    k, n = int(sum(bool(v) for v in ok)), len(ok)
    ci = stats.binomtest(k, n).proportion_ci(0.95, method="exact")
    return f"share of seeds {k}/{n}, 95% Clopper–Pearson interval [{ci.low:.3g}, {ci.high:.3g}]"


def _flip_claim(cid: str, m: str, ranks: dict, q: str, lim: str, lo: int, hi: int) -> C.Claim:
    """Claim g1 (VA) or g2 (MDL): the share of seeds on which ``m``'s winner is the quick
    representation ``q`` at n = ``lo`` and the limit-optimal ``lim`` at n = ``hi``."""
    flipped = []
    for r in ranks.values():
        g = r[r["measure"] == m].set_index("n")["prefers"]
        flipped.append(g.loc[lo] == q and g.loc[hi] == lim)
    mean_seq = winner_changes(ranks["seed mean"]).set_index("measure").loc[m, "sequence"]
    detail = (
        f"{q} at n={lo} → {lim} at n={hi} on {sum(flipped)}/{len(flipped)} curves "
        f"(seed mean and {len(flipped) - 1} seeds); seed mean as n grows: {mean_seq}"
    )
    d = C.share_effect(int(sum(flipped[1:])), len(flipped) - 1, unit="seeds")
    return C.Claim.decided(
        cid,
        f"{m} prefers the noisy label with little data and the raw bits with much: its "
        "ranking flips with the evaluation-set size n.",
        "Whitney et al. 2020 Sec. 3.1, Fig. 1 (right)",
        "qualitative: noisy label when n ≪ d, raw bits when n ≫ d; taken as a flip on every "
        "seed (share 1)",
        f"per seed, whether {m}'s winner (rankings of measure_table) is the noisy label at "
        f"n = {lo} and the raw bits at n = {hi}; the share of seeds, exact Clopper–Pearson "
        "interval, against ½",
        d,
        effect=f"share of seeds on which {m} flips",
        our_value=f"{detail}; {d.detail}",
    )


def _g3_check(ranks_g3: dict, eps: Any, floor: float | None) -> C.Claim:
    """Implementation check g3: SDL's and εSC's named winners over n are one
    representation on the seed-mean curve and on every seed's curve."""
    changed, undecided, one = [], [], []
    for name, r in ranks_g3.items():
        wc = winner_changes(r[r["measure"].isin(["SDL", "eSC"])])
        changed += [
            f"{name} {w.measure} ε={w.eps:.4g}: {w.winners}" for w in wc.itertuples() if w.changed
        ]
        undecided += [f"{name} {w.measure} ε={w.eps:.4g}" for w in wc.itertuples() if not w.winners]
        if name != "seed mean":
            one.append(all(w.winners and not w.changed for w in wc.itertuples()))
    mean = ranks_g3["seed mean"]
    mean_wc = winner_changes(mean[mean["measure"].isin(["SDL", "eSC"])])
    seqs = "; ".join(f"{w.measure} ε={w.eps:.4g}: {w.sequence}" for w in mean_wc.itertuples())
    detail = (
        f"changed: {', '.join(changed)}"
        if changed
        else f"never named a winner: {', '.join(undecided)}"
        if undecided
        else f"one winner each on all {len(ranks_g3)} curves"
    )
    detail += f"; seed mean as n grows: {seqs}; " + _share_of_seeds(one)
    return C.Claim.checked(
        "g3",
        "SDL and εSC do not change their ranking as n grows: they report a lower bound "
        "(undetermined) until the winner is final.",
        "Whitney et al. 2020 Sec. 3.1, Sec. 4, Fig. 1",
        "qualitative: independent of the dataset size",
        "for SDL and εSC at an ε both representations can reach"
        + (
            f" (ε = {as_eps(eps).value:.4g} nats > twice the noisy label's floor "
            f"{floor:.4g}: SDL tight at loss ≤ ε/2, Alg. 1)"
            if floor is not None
            else ""
        )
        + ", the named winners over n (undetermined verdicts skipped) are one representation, "
        "on the seed-mean curve and on every seed's curve; fails if one names two, or never "
        "names one",
        passed=not changed and not undecided,
        detail=detail,
    )


def parity_claims(
    quick: LossDataCurve,
    limit: LossDataCurve,
    eps: Any,
    *,
    at: Sequence[int],
    floor: float | None = None,
    g3_quick: LossDataCurve | None = None,
) -> list:
    """Claims (g1–g3) (module docstring) for the curves of the quick-learning
    representation ``quick`` and the limit-optimal ``limit``, at the
    evaluation-set sizes ``at`` (≥ 2 of them, each ≤ both curves' largest size).
    ``floor``: the quick representation's loss floor (nats/example, H(α) for the
    noisy label); g3's ``eps`` must exceed twice it, so both representations' SDL can be
    tight (Alg. 1: loss ≤ ε/2 at the largest n). ``g3_quick``: the quick representation
    g3 is judged on (default ``quick``; ``floor`` is then its floor), e.g. a noisy label
    whose SDL can be tight where ``quick``'s cannot; g1 and g2 (VA, MDL) do not read
    ``eps``."""
    g3_quick = quick if g3_quick is None else g3_quick
    if not all(isinstance(c, LossDataCurve) for c in (quick, limit, g3_quick)):
        raise ValueError("quick, limit, g3_quick: must be LossDataCurve objects")
    if floor is not None and not as_eps(eps).value > 2 * floor:
        raise ValueError(
            f"eps: {as_eps(eps).value:.4g} nats is not above twice the quick "
            f"representation's floor {floor:.4g}: its SDL can never be tight "
            "(Alg. 1: loss <= eps/2)"
        )
    at = sorted({int(n) for n in at})
    if len(at) < 2:
        raise ValueError(f"at: need at least 2 evaluation sizes, got {at}")
    lo, hi = at[0], at[-1]

    def ranks_of(q_curve):
        return {
            name: rankings(measure_table(cs, eps, at=at)) for name, cs in _curves(q_curve, limit)
        }

    ranks = ranks_of(quick)
    ranks_g3 = ranks if g3_quick is quick else ranks_of(g3_quick)
    q, lim = quick.representation, limit.representation
    out = [_flip_claim(cid, m, ranks, q, lim, lo, hi) for cid, m in (("g1", "VA"), ("g2", "MDL"))]
    out.append(_g3_check(ranks_g3, eps, floor))
    return out
