"""The reproduction's judgement: claims and their verdict rules, effects and their
intervals, findings in words, rankings, and the manifest of ``paper/``.

- :mod:`.claims` — every claim of the four papers with its rule, effect and verdict;
  ``python -m mdlnb.research.claims paper`` writes ``paper/claims.md`` (:mod:`._claims_page`
  lays it out; :mod:`._verdicts` holds the two-part rules, :mod:`._effects` the intervals).
- :mod:`.findings` — the sentences a notebook prints under its numbers.
- :mod:`.ranking` — average ranks, Friedman and Nemenyi, Kendall τ.
- :mod:`.manifest` — ``paper/README.md``: every table and figure, its protocol, its
  caption (:mod:`._captions`) and checksum; :mod:`._paperdiff` — a regenerated ``paper/``
  against the committed one.

Imports :mod:`mdlnb.api` (its writers) and the floor; nothing imports it but the studies
and the tools.
"""
