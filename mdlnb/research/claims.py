"""Claims: what the paper says, what our runs measured, and a two-part verdict.

Each experiment notebook tests a few claims of the four papers (Li, Bornschein &
Hutter 2023, arXiv:2302.09579; Whitney et al. 2020, arXiv:2009.07368; Ding et al.
2022, arXiv:2203.05126; Lu et al. 2022, arXiv:2206.01251) and records one
:class:`Claim` per claim: the statement and anchor (table/figure), the paper's
value, ours with its 95 % interval, and the verdict in two parts decided by that
one interval (:mod:`mdlnb.research._verdicts` decides, :mod:`mdlnb.research._effects` builds the
interval; both re-exported here):

* *direction*: replicated / reversed / undetermined — does the interval exclude
  the null on the claimed side, on the other side, or neither;
* *size*: smaller / consistent / larger than the paper's effect.

The verdict is never typed by hand: :meth:`Claim.decided` takes it from a
:class:`Decision` (:func:`effect_decision`, :func:`t_effect`,
:func:`welch_effect`, :func:`bootstrap_effect`, :func:`share_effect`), and the
rule printed beside it is the study's statistic followed by the decision's own
clause, written by the code that decided. Properties that hold by how the
method is built are :meth:`Claim.checked` rows (kind ``"check"``): listed apart
as implementation checks, never counted as claims.

:func:`write_claims` stores a notebook's rows as ``paper_dir/claims/<notebook>.csv``
and :func:`write_setting` its setting (the paper's against this run's) as
``paper_dir/setting/<notebook>.csv``, atomically; :func:`merge_claims` builds
``paper_dir/claims.md`` (setting, counts, forest plot ``claims_forest.png``, the
table) — also ``python -m mdlnb.research.claims paper/``.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from mdlnb.api.output import _check_name
from mdlnb.infra._io import atomic_write_text
from mdlnb.research import _claims_page, manifest
from mdlnb.research._claims_page import SETTING_SUBDIR, read_setting
from mdlnb.research._effects import (  # noqa: F401  (re-exported: the studies call claims.t_effect, ...)
    bootstrap_effect,
    bootstrap_interval,
    share_effect,
    t_effect,
    t_interval,
    welch_effect,
)
from mdlnb.research._verdicts import (  # noqa: F401
    CONSISTENT,
    DIRECTIONS,
    LARGER,
    REPLICATED,
    REVERSED,
    ROUNDING,
    SIZE_WORDS,
    SIZES,
    SMALLER,
    UNDETERMINED,
    Decision,
    effect_decision,
    rule_clause,
    runs_to_decide,
)

# pandas is imported inside the functions that use it, so that importing this module does
# not load it.

CLAIMS_SUBDIR = "claims"
KINDS = ("claim", "check")
#: An implementation check's outcome (its ``direction``; its ``size`` is ``"—"``).
PASSES, FAILS = "passes", "fails"

_NUMBERS = ("estimate", "ci_low", "ci_high", "paper_effect", "null", "settle_at")


@dataclass(frozen=True)
class Claim:
    """One claim of a paper (``kind="claim"``) or one implementation check
    (``kind="check"``) and its verdict.

    id:           short key, e.g. ``"b1"`` (a letter per experiment, a digit per claim);
    statement:    the paper's claim in one sentence;
    anchor:       where the paper makes it (authors' section, table, figure);
    paper_value:  the paper's number(s), or how a qualitative claim's size was taken;
    our_value:    our measurement in words (with its interval and context);
    rule:         the statistic, then the decision clause (generated);
    direction:    claims: one of :data:`DIRECTIONS`; checks: ``"passes"``/``"fails"``;
    size:         claims: one of :data:`SIZES`; checks: ``"—"``;
    effect:       what the number measures, with its unit (the forest plot's row label);
    estimate, ci_low, ci_high, paper_effect, null: the numbers on the effect's scale;
    n, unit:      the independent units the interval is over;
    settle_at:    units at which the same spread would settle an undetermined direction.
    """

    id: str
    statement: str
    anchor: str
    paper_value: str
    our_value: str
    rule: str
    direction: str
    size: str
    effect: str = ""
    estimate: float = math.nan
    ci_low: float = math.nan
    ci_high: float = math.nan
    paper_effect: float = math.nan
    null: float = 0.0
    n: int = 0
    unit: str = ""
    settle_at: float = math.nan
    kind: str = "claim"

    def __post_init__(self) -> None:
        for f in ("id", "statement", "anchor", "our_value", "rule"):
            v = getattr(self, f)
            if not isinstance(v, str) or not v.strip():
                raise ValueError(f"{f}: must be a non-empty string, got {v!r}")
        for f in ("paper_value", "effect", "unit"):
            if not isinstance(getattr(self, f), str):
                raise ValueError(f"{f}: must be a string, got {getattr(self, f)!r}")
        if self.kind not in KINDS:
            raise ValueError(f"kind: must be one of {KINDS}, got {self.kind!r}")
        directions, sizes = (
            (DIRECTIONS, SIZES) if self.kind == "claim" else ((PASSES, FAILS), ("—",))
        )
        if self.direction not in directions:
            raise ValueError(f"direction: must be one of {directions}, got {self.direction!r}")
        if self.size not in sizes:
            raise ValueError(f"size: must be one of {sizes}, got {self.size!r}")

    @classmethod
    def decided(
        cls,
        id: str,
        statement: str,
        anchor: str,
        paper_value: str,
        statistic: str,
        decision: Decision,
        *,
        effect: str = "",
        our_value: str | None = None,
    ) -> Claim:
        """A claim whose verdict, numbers and rule clause come from ``decision``;
        ``statistic``: what is measured, on which units, with which interval (the
        rule's first half); ``our_value`` defaults to the decision's detail."""
        if not isinstance(decision, Decision):
            raise ValueError(f"decision: expected a Decision, got {type(decision).__name__}")
        return cls(
            id,
            statement,
            anchor,
            paper_value,
            decision.detail if our_value is None else our_value,
            f"{statistic}; {decision.rule}",
            decision.direction,
            decision.size,
            effect=effect,
            estimate=decision.estimate,
            ci_low=decision.lo,
            ci_high=decision.hi,
            paper_effect=decision.paper_effect,
            null=decision.null,
            n=decision.n,
            unit=decision.unit,
            settle_at=decision.settle_at,
        )

    @classmethod
    def checked(
        cls,
        id: str,
        statement: str,
        anchor: str,
        paper_value: str,
        rule: str,
        *,
        passed: bool,
        detail: str,
    ) -> Claim:
        """An implementation check: a property the method guarantees by construction
        (so it can only fail through a bug), with the rule that checked it."""
        return cls(
            id,
            statement,
            anchor,
            paper_value,
            detail,
            rule,
            PASSES if passed else FAILS,
            "—",
            kind="check",
        )

    @property
    def standardized(self) -> tuple[float, float, float]:
        """(estimate, lo, hi) as fractions of the paper's effect (0: null, 1: paper's)."""
        scale = self.paper_effect - self.null
        return tuple((v - self.null) / scale for v in (self.estimate, self.ci_low, self.ci_high))


# ----------------------------------------------------------------------------- files

COLUMNS = (
    tuple(f.name for f in fields(Claim))[:1]
    + ("notebook",)
    + tuple(f.name for f in fields(Claim))[1:]
)


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
    return atomic_write_text(
        Path(paper_dir) / CLAIMS_SUBDIR / f"{notebook}.csv", df.to_csv(index=False)
    )


def describe(claims: Iterable[Claim]) -> str:
    """The claims as text, one block each: ``(id) DIRECTION, size SIZE: statement``,
    then our value and the rule that decided it (what a notebook prints)."""
    out = []
    for c in claims:
        head = (
            f"direction {c.direction}, size {SIZE_WORDS[c.size]}"
            if c.kind == "claim"
            else f"implementation check {c.direction}"
        )
        out.append(f"({c.id}) {head}: {c.statement}\n    ours: {c.our_value}\n    rule: {c.rule}")
    return "\n".join(out)


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
    df = df[list(COLUMNS)]
    for c in _NUMBERS:
        df[c] = pd.to_numeric(df[c].replace("", None), errors="raise").astype(float)
    df["n"] = pd.to_numeric(df["n"]).astype(int)
    claim = df["kind"] == "claim"
    bad = df.loc[
        (claim & ~df["direction"].isin(DIRECTIONS))
        | (claim & ~df["size"].isin(SIZES))
        | (~claim & ~df["direction"].isin([PASSES, FAILS])),
        "direction",
    ]
    if len(bad) or not df["kind"].isin(KINDS).all():
        raise ValueError(f"paper_dir: unknown verdicts or kinds in {sorted(set(bad))}")
    return df.sort_values(["id", "notebook"], kind="stable").reset_index(drop=True)


def write_setting(
    rows: Iterable[tuple[str, str, str]], paper_dir: str | Path, notebook: str
) -> Path:
    """Write a study's setting, rows of (aspect, the paper's, this run's), to
    ``paper_dir/setting/<notebook>.csv`` atomically (the claims page's first table)."""
    import pandas as pd

    notebook = _check_name(notebook)
    rows = [tuple(r) for r in rows]
    if not rows or not all(len(r) == 3 and all(isinstance(v, str) and v for v in r) for r in rows):
        raise ValueError("rows: expected non-empty (aspect, paper, this run) string triples")
    df = pd.DataFrame(rows, columns=["aspect", "paper", "this run"]).assign(study=notebook)
    return atomic_write_text(
        Path(paper_dir) / SETTING_SUBDIR / f"{notebook}.csv",
        df[["study", "aspect", "paper", "this run"]].to_csv(index=False),
    )


FINDINGS_SUBDIR = "findings"


def write_findings(text: str, paper_dir: str | Path, notebook: str) -> Path:
    """Write a study's findings beside its claims (what the run shows that no claim
    tests, with its numbers; Markdown) to ``paper_dir/findings/<notebook>.md``."""
    notebook = _check_name(notebook)
    if not isinstance(text, str) or not text.strip():
        raise ValueError("text: expected non-empty Markdown")
    return atomic_write_text(
        Path(paper_dir) / FINDINGS_SUBDIR / f"{notebook}.md", text.strip() + "\n"
    )


def read_findings(paper_dir: str | Path) -> dict[str, str]:
    """``{notebook: Markdown}`` of every ``paper_dir/findings/*.md``, sorted."""
    return {p.stem: p.read_text() for p in sorted((Path(paper_dir) / FINDINGS_SUBDIR).glob("*.md"))}


#: Rows that check the implementation, not the papers: properties that hold by how the
#: method is built, so they can only fail through a bug (their unit tests are named).
IMPLEMENTATION_CHECKS = {
    "c1": "fixed share's regret to any single expert is at most −log of the prior mass of "
    "never switching, by construction of the mixture (tests/test_switching.py)",
    "c2": "fixed share's regret to a sequence with m − 1 switches is within the prior mass of "
    "that sequence, by construction (tests/test_switching.py)",
    "g3": "once SDL or εSC names a winner (a representation reaches ε and the other provably "
    "cannot before it), the named winner cannot change as n grows, by the definition of "
    "the measures (tests/test_claims_parity.py)",
    "q3": "SDL and εSC on the loss-data curves of Fashion-MNIST never name two winners as n "
    "grows: once a representation's SDL is tight or its εSC found, more points of a "
    "curve that stays below ε cannot change it (tests/test_study_loss_data.py)",
}


def merge_claims(paper_dir: str | Path) -> Path:
    """Build ``paper_dir/claims.md`` (and ``claims_forest.png``) from every
    ``paper_dir/claims/*.csv`` and ``paper_dir/setting/*.csv``."""
    df, setting = read_claims(paper_dir), read_setting(paper_dir)
    _claims_page.forest(df[df["kind"] == "claim"], paper_dir)
    manifest.record(paper_dir, "claims", "merged", files=["claims_forest.png"])
    return atomic_write_text(
        Path(paper_dir) / "claims.md",
        _claims_page.page(df, setting, IMPLEMENTATION_CHECKS, read_findings(paper_dir)),
    )


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m mdlnb.research.claims",
        description="Merge paper/claims/*.csv and paper/setting/*.csv "
        "into paper/claims.md and paper/claims_forest.png",
    )
    ap.add_argument("paper_dir", nargs="?", default="paper")
    args = ap.parse_args(argv)
    print(merge_claims(args.paper_dir))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

__all__ = [
    "Claim",
    "Decision",
    "DIRECTIONS",
    "SIZES",
    "REPLICATED",
    "REVERSED",
    "UNDETERMINED",
    "SMALLER",
    "CONSISTENT",
    "LARGER",
    "PASSES",
    "FAILS",
    "effect_decision",
    "t_effect",
    "welch_effect",
    "bootstrap_effect",
    "bootstrap_interval",
    "share_effect",
    "t_interval",
    "runs_to_decide",
    "rule_clause",
    "write_claims",
    "write_setting",
    "write_findings",
    "read_findings",
    "describe",
    "read_claims",
    "read_setting",
    "merge_claims",
    "IMPLEMENTATION_CHECKS",
    "main",
]
