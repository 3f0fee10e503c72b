"""What a user calls and reads: evaluate and compare, the Report and the Comparison,
readout preference, the figures and the writers of tables and figures.

- :mod:`.evaluation` — :func:`~mdlnb.evaluate` (one encoder's features and labels → a
  :class:`~mdlnb.Report`) and its tidy posterior; :mod:`._compare` —
  :func:`~mdlnb.compare` (several encoders, one protocol → a :class:`~mdlnb.Comparison`),
  with :mod:`._compare_inputs` the one reader of the input forms both accept.
- :mod:`._report`, :mod:`._report_views`, :mod:`._diagnostics` — the Report, its tables
  and figures, the checks it runs; :mod:`._comparison`, :mod:`._comparison_views`.
- :mod:`.preference` — which readout the posterior prefers per data-size bin
  (:mod:`._depth`: linear or deeper?).
- :mod:`.plots` — seaborn figures (:mod:`._labels`: readers' names for what they show);
  :mod:`.output` — tables and figures shown in a notebook and written to ``paper/``
  (``show``, ``to_markdown``, ``save_table``, ``save_figure``).

Imports the stages below it (:mod:`mdlnb.prequential`, :mod:`mdlnb.board`,
:mod:`mdlnb.switching`, :mod:`mdlnb.encoders`, :mod:`mdlnb.core`, :mod:`mdlnb.infra`).
"""

from typing import TYPE_CHECKING

from mdlnb.infra._lazy import submodule_getattr

if TYPE_CHECKING:
    from mdlnb.api import evaluation, output, plots, preference

__all__ = ["evaluation", "output", "plots", "preference"]


# each imported when first used: mdlnb.api.output (pandas) must not pull JAX in with
# mdlnb.api.evaluation, or the command line's no-JAX start would be lost
__getattr__ = submodule_getattr(__name__, __all__)
