"""The parity toy's parameters: one frozen dataclass, the only place defaults live.

The notebook ``parity_toy`` has one parameter per field, of the same name and
default (``tests/test_studies_registry.py`` checks that they agree);
``notebooks/profiles.yaml`` changes them per profile and
:func:`mdlnb.runner.check_profile` checks those changes against this class.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

from mdlnb._checks import check_int
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
      g3_eps_fraction: claim g3's ε (above H(α) and below log 2: both can reach it).
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
    g3_eps_fraction: float = 1.5
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
        if not 0.0 < self.alpha < 0.5:
            raise ValueError(f"alpha: must lie in (0, 0.5), got {self.alpha!r}")
