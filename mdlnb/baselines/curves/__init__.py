"""Loss-data curves and the measures read off them (SDL paper: Whitney et al., "Evaluating
representations by the complexity of learning low-loss predictors").

* :func:`loss_data_curve` → :class:`LossDataCurve`: held-out loss (nats) of probes
  trained on nested prefixes, all sizes × seeds in one compiled, vmapped call.
* Measures (each takes a curve or plain ``(n, loss)`` arrays): :func:`va`,
  :func:`mi`, :func:`mdl`, :func:`sdl` (tight / lower bound, Alg. 1), :func:`esc`
  (or "> n_max"), :func:`esc_refine` (Alg. 2's recursive grid search);
  :func:`epsilon_from_probe` derives ε as Sec. 4.3 recommends.
* :func:`measure_table`, :func:`rankings`, :func:`plot`: tidy tables and Fig. 1/2.
* The parity toy (Sec. 3.1): :func:`parity_tasks`, :func:`algorithm_curve` with the
  ``"gf2"`` and ``"bernoulli"`` algorithms, :func:`binary_entropy`, :func:`gf2_rref`.
"""

from mdlnb.baselines.curves._curve import (
    LossDataCurve,
    log_grid,
    loss_data_curve,
    permutations,
    split_test,
)
from mdlnb.baselines.curves._measures import (
    Epsilon,
    Measure,
    SampleComplexity,
    esc,
    mdl,
    mi,
    sdl,
    va,
)
from mdlnb.baselines.curves._parity import (
    algorithm_curve,
    bernoulli_fit,
    binary_entropy,
    gf2_fit,
    gf2_rref,
    parity_tasks,
)
from mdlnb.baselines.curves._plot import plot, plot_measures
from mdlnb.baselines.curves._refine import RefinedSampleComplexity, epsilon_from_probe, esc_refine
from mdlnb.baselines.curves._table import measure_table, rankings, truncate, winner_changes

__all__ = [
    "LossDataCurve",
    "log_grid",
    "loss_data_curve",
    "permutations",
    "split_test",
    "Epsilon",
    "Measure",
    "SampleComplexity",
    "esc",
    "mdl",
    "mi",
    "sdl",
    "va",
    "RefinedSampleComplexity",
    "epsilon_from_probe",
    "esc_refine",
    "algorithm_curve",
    "bernoulli_fit",
    "binary_entropy",
    "gf2_fit",
    "gf2_rref",
    "parity_tasks",
    "measure_table",
    "rankings",
    "truncate",
    "winner_changes",
    "plot",
    "plot_measures",
]
