"""Claims: what the paper says, what our runs measured, and a verdict decided by a rule.

Each experiment notebook tests a few qualitative claims of the papers in
``shared/papers/`` (the four papers beside the repository) and records one :class:`Claim` per claim: the paper's
statement and anchor (table/figure), the paper's value, ours, the rule that
decides the verdict, and the verdict itself — one of :data:`VERDICTS`. The
verdict is never typed by hand: it comes from a rule helper applied to data,

* :func:`sign_on_every` — a sign that must hold on every task/seed/order;
* :func:`interval_excludes` — a Student-t confidence interval of the mean over
  seeds/orders lies entirely on the claimed side of a value;
* :func:`paired_test` — a one-sided paired test (Wilcoxon signed-rank or the
  exact sign test) of ``a < b`` (or ``a > b``) at level ``alpha``;
* :func:`rank_sum_test` — the same for two independent samples (Mann–Whitney U);
* :func:`interval_side` — an interval computed elsewhere against a value;
  :func:`all_of` — several decisions that must all hold (e.g. one per N/K);

each returning a :class:`Decision` (verdict + the numbers behind it); the
rules live in :mod:`mdlnb._verdicts` and are re-exported here.
:func:`write_claims` stores a notebook's claims as
``paper_dir/claims/<notebook>.csv`` (atomically); :func:`merge_claims` merges
all of them into ``paper_dir/claims.md`` (sorted by claim id, then notebook;
deterministic), also runnable as ``python -m mdlnb.claims paper/``.
"""

from __future__ import annotations

import argparse
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Iterable, Sequence

from mdlnb._io import atomic_write_text
from mdlnb._verdicts import (FAILS, HOLDS, INCONCLUSIVE, ROUNDING, VERDICTS,  # noqa: F401
                             Decision, all_of, bootstrap_interval, effect_decision,
                             interval_excludes, interval_side, paired_test, rank_sum_test,
                             runs_to_decide, sign_on_every, t_effect, t_interval,
                             welch_effect)
from mdlnb.report import _check_name, to_markdown

# Imported inside the functions that use them, so that importing this module does not load
# them: pandas.

CLAIMS_SUBDIR = "claims"


@dataclass(frozen=True)
class Claim:
    """One qualitative claim and its verdict.

    id:          short key, e.g. ``"b"`` or ``"b1"`` (a letter per experiment, a digit per claim);
    statement:   the paper's claim in one sentence;
    anchor:      where the paper makes it, e.g. ``"App. A.6, Fig. 5"``;
    paper_value: the paper's number(s) or ``"qualitative"``;
    our_value:   our measurement (with its spread where averaged);
    rule:        the decision rule in words (the test, level, what must hold);
    verdict:     one of :data:`VERDICTS`.
    """

    id: str
    statement: str
    anchor: str
    paper_value: str
    our_value: str
    rule: str
    verdict: str

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if not isinstance(v, str) or (f.name != "paper_value" and not v.strip()):
                raise ValueError(f"{f.name}: must be a non-empty string, got {v!r}")
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict: must be one of {VERDICTS}, got {self.verdict!r}")

    @classmethod
    def decided(cls, id: str, statement: str, anchor: str, paper_value: str, rule: str,
                decision: Decision, *, our_value: str | None = None) -> "Claim":
        """A claim whose verdict (and, unless given, our value) come from ``decision``."""
        if not isinstance(decision, Decision):
            raise ValueError(f"decision: expected a Decision, got {type(decision).__name__}")
        return cls(id, statement, anchor, paper_value,
                   decision.detail if our_value is None else our_value, rule, decision.verdict)


# ----------------------------------------------------------------------------- files

COLUMNS = ("id", "notebook", "statement", "anchor", "paper_value", "our_value", "rule", "verdict")


def write_claims(claims: Iterable[Claim], paper_dir: str | Path, notebook: str) -> Path:
    """Write ``paper_dir/claims/<notebook>.csv`` atomically; returns its path."""
    import pandas as pd

    notebook = _check_name(notebook)
    claims = list(claims)
    if not claims or not all(isinstance(c, Claim) for c in claims):
        raise ValueError("claims: expected a non-empty sequence of Claim objects")
    ids = [c.id for c in claims]
    if len(set(ids)) != len(ids):
        raise ValueError(f"claims: repeated ids {ids}")
    df = pd.DataFrame([{**asdict(c), "notebook": notebook} for c in claims], columns=list(COLUMNS))
    return atomic_write_text(Path(paper_dir) / CLAIMS_SUBDIR / f"{notebook}.csv",
                             df.to_csv(index=False))


def describe(claims: Iterable[Claim]) -> str:
    """The claims as text, one block each: ``(id) VERDICT: statement``, then our
    value and the rule that decided it (what a notebook prints under its claims)."""
    return "\n".join(f"({c.id}) {c.verdict.upper()}: {c.statement}\n    ours: {c.our_value}"
                     f"\n    rule: {c.rule}" for c in claims)


def read_claims(paper_dir: str | Path):
    """All ``paper_dir/claims/*.csv`` as one DataFrame sorted by (id, notebook)."""
    import pandas as pd

    files = sorted((Path(paper_dir) / CLAIMS_SUBDIR).glob("*.csv"))
    frames = [pd.read_csv(f, dtype=str, keep_default_na=False) for f in files]
    if not frames:
        return pd.DataFrame(columns=list(COLUMNS))
    df = pd.concat(frames, ignore_index=True)
    missing = set(COLUMNS) - set(df.columns)
    if missing:
        raise ValueError(f"paper_dir: claims files lack columns {sorted(missing)}")
    bad = df.loc[~df["verdict"].isin(VERDICTS), "verdict"]
    if len(bad):
        raise ValueError(f"paper_dir: unknown verdicts {sorted(set(bad))}")
    return df[list(COLUMNS)].sort_values(["id", "notebook"], kind="stable").reset_index(drop=True)


#: Rows that check the implementation, not the papers: properties that hold by how
#: the method is built, so they can only fail through a bug (their tests are in
#: tests/). claims.md lists them apart and leaves them out of the verdict count.
IMPLEMENTATION_CHECKS = {
    "c1": "fixed share's regret to any single expert is at most −log of the prior mass of "
          "never switching, by construction of the mixture (tests/test_switching.py)",
    "c2": "fixed share's regret to a sequence with m − 1 switches is within the prior mass of "
          "that sequence, by construction (tests/test_switching.py)",
}


def merge_claims(paper_dir: str | Path) -> Path:
    """Build ``paper_dir/claims.md`` from every ``paper_dir/claims/*.csv``: the papers'
    claims with the verdict count, then (apart) the :data:`IMPLEMENTATION_CHECKS`."""
    df = read_claims(paper_dir)
    checks = df["id"].isin(list(IMPLEMENTATION_CHECKS))
    papers, impl = df[~checks], df[checks]
    counts = {v: int((papers["verdict"] == v).sum()) for v in VERDICTS}
    head = ("# Claims of the papers, checked by this package's runs\n\n"
            "Generated by `python -m mdlnb.claims paper/` from `paper/claims/*.csv`; each row is "
            "written by the notebook that tests it, its verdict decided by the rule next to it.\n\n"
            + ", ".join(f"{n} {v}" for v, n in counts.items()) + ".\n\n")
    text = head + to_markdown(papers)
    if len(impl):
        text += ("\n\n## Implementation checks\n\nThese hold by how the method is built, so "
                 "they test this package, not the papers (they are also unit tests); they are "
                 "not counted above.\n\n" + to_markdown(impl.assign(
                     why=impl["id"].map(IMPLEMENTATION_CHECKS))))
    return atomic_write_text(Path(paper_dir) / "claims.md", text)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m mdlnb.claims",
                                 description="Merge paper/claims/*.csv into paper/claims.md")
    ap.add_argument("paper_dir", nargs="?", default="paper")
    args = ap.parse_args(argv)
    print(merge_claims(args.paper_dir))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

__all__ = ["Claim", "Decision", "VERDICTS", "HOLDS", "FAILS", "INCONCLUSIVE", "sign_on_every",
           "t_interval", "interval_excludes", "interval_side", "paired_test", "rank_sum_test",
           "all_of", "write_claims", "describe", "read_claims",
           "merge_claims", "main"]
