"""The parity toy's parameters: one frozen dataclass, the only place defaults live.

The notebook ``parity_toy`` has one parameter per field, of the same name and
default (``tests/test_studies_registry.py`` checks that they agree);
``notebooks/profiles.yaml`` changes them per profile and
:func:`mdlnb.tools.runner.check_profile` checks those changes against this class.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from mdlnb.baselines.curves import binary_entropy
from mdlnb.core._checks import check_int
from mdlnb.studies._base import StudyConfig


@dataclasses.dataclass(frozen=True)
class ParityConfig(StudyConfig):
    """Parameters of the parity toy (SDL paper Sec. 3.1, Fig. 1 right).

    A secret s ∈ {0,1}^d, inputs x uniform on {0,1}^d, label y = ⟨x, s⟩ mod 2;
    representation A is the noisy label y ⊕ e (e ~ Bernoulli(α)), B the raw bits.

    Attributes:
      d: length of the secret.
      n_examples: examples drawn; 20 % are held out to measure the loss.
      alpha: A's noise rate; its loss floor is H(α) nats.
      eps_fraction: ε = eps_fraction · H(α) for the tables and figures (below
        the floor: a predictor must beat the noisy label).
      g3_alpha, g3_eps_fraction: claim g3's noisy label (noise rate g3_alpha, on the
        same examples: the same uniform draws, thresholded lower) and its ε =
        g3_eps_fraction · H(g3_alpha). SDL (Alg. 1) calls its estimate tight only
        when the loss at the largest n is ≤ ε/2, so the noisy label's SDL is
        decided only for ε > 2 H(g3_alpha); the raw bits start at chance, log 2,
        so ε < log 2 for their surplus to count. Both hold only when
        2 H(g3_alpha) < log 2 (α < 0.11; at alpha = 0.1 the measured loss floor,
        0.36 nats, is already too high), hence a second noise rate: 0.05, with
        the fraction 2.5 inside (2, log 2 / H(0.05) = 3.49).
      seeds: permutations (nested prefixes) per curve.
      num_sizes: log-uniform sizes from 2 to the pool size.
      at: evaluation-set sizes at which VA and MDL are read (those above the pool
        size are dropped).
      mlp_width, mlp_steps, mlp_lr: the MLP probes (2 hidden layers), the same
        number of updates at every n.
      switching_lr: the switching board's learning rates (linear, MLP-1, MLP-2
        of ``mlp_width`` units × these, 10 replay streams).
      seed: draws the secret, the data and the noise.
    """

    d: int = 10
    n_examples: int = 2500
    alpha: float = 0.1
    eps_fraction: float = 0.5
    g3_alpha: float = 0.05
    g3_eps_fraction: float = 2.5
    seeds: int = 8
    num_sizes: int = 16
    at: Sequence[int] = (5, 10, 20, 50, 150, 500)
    mlp_width: int = 128
    mlp_steps: int = 1000
    mlp_lr: float = 3e-3
    switching_lr: Sequence[float] = (1e-3, 3e-3)
    seed: int = 0

    def __post_init__(self):
        for name in ("at", "switching_lr"):
            value = getattr(self, name)
            if isinstance(value, str) or not isinstance(value, Sequence) or not value:
                raise ValueError(f"{name}: expected a non-empty list, got {value!r}")
            object.__setattr__(self, name, tuple(value))
        for name in ("d", "n_examples", "seeds", "num_sizes", "mlp_width", "mlp_steps"):
            check_int(name, getattr(self, name), minimum=1)
        for n in self.at:
            check_int("at", n, minimum=1, what=f"sizes >= 1 (got {list(self.at)!r})")
        if not (
            isinstance(self.eps_fraction, (int, float))
            and 0.0 < self.eps_fraction
            and math.isfinite(self.eps_fraction)
        ):
            raise ValueError(
                f"eps_fraction: must be a finite number > 0, got {self.eps_fraction!r}"
            )
        if not 0.0 < self.alpha < 0.5:
            raise ValueError(f"alpha: must lie in (0, 0.5), got {self.alpha!r}")
        if not 0.0 < self.g3_alpha < 0.5:
            raise ValueError(f"g3_alpha: must lie in (0, 0.5), got {self.g3_alpha!r}")
        h = binary_entropy(self.g3_alpha)
        if not 2.0 < self.g3_eps_fraction < math.log(2) / h:
            raise ValueError(
                f"g3_eps_fraction: must lie in (2, log 2 / H(g3_alpha) = "
                f"{math.log(2) / h:.3g}) so that both representations' SDL can be "
                f"decided, got {self.g3_eps_fraction!r}"
            )
