"""Switching strategies: priors p(ξ_1) and transitions p(ξ_t | ξ_{t-1}).

Every strategy is a frozen dataclass that defines a hidden Markov model over
an *expanded* state laid out as an (R, K) array: row r is an auxiliary state
(none for R = 1; unstable/stable for the switch distribution; the current run
length for the run-length model) and column k is the expert used. Inference
(``forward.py``) only needs three things from a strategy:

* ``num_rows`` — R;
* ``log_initial(K)`` — log p(state at t = 1), shape (R, K);
* ``params(K)`` — its numbers (log w, rates) as float32 arrays, so they
  are traced, not compiled in: changing α, m, θ or w does not recompile;
* ``skeleton()`` — the same strategy with canonical numbers: the static
  (hashable) part a compiled kernel is specialized on;
* ``transition(log_f, t, p)`` — maps the normalized log filtering
  distribution p(state_{t-1} | D_{<t}) to the log predictive distribution
  p(state_t | D_{<t}), in log space (natural log), for t ≥ 2, reading every
  number from ``p = params(K)``.

Time t is 1-indexed as in the paper: row t of the loss matrix is example t.
``weights`` is the distribution w(k) a new block draws its expert from
(uniform unless given); ``initial`` is p(ξ_1) (``weights`` unless given).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

import jax.numpy as jnp
import numpy as np
from jax.nn import logsumexp

from mdlnb.core._checks import check_int

Probs = tuple[float, ...] | None

_SUM_TOL = 1e-6

#: m of a bare ``FixedShare()`` (α_t = (m − 1)/t = 1/t): the default protocol's.
DEFAULT_M = 2.0


def _as_probs(p: Any, name: str) -> Probs:
    """Validate a probability vector; returns a hashable tuple (or None)."""
    if p is None:
        return None
    a = np.asarray(p, dtype=np.float64)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(
            f"{name}: expected a non-empty 1-D probability vector, got shape {a.shape}"
        )
    if not np.all(np.isfinite(a)) or np.any(a < 0):
        raise ValueError(f"{name}: entries must be finite and >= 0")
    if abs(a.sum() - 1.0) > _SUM_TOL:
        raise ValueError(f"{name}: must sum to 1, sums to {a.sum():.9g}")
    return tuple(float(v) for v in a / a.sum())


def _log_probs(p: Probs, num_experts: int, name: str) -> np.ndarray:
    """log of ``p`` (uniform if None) as a float64 (K,) array, length-checked."""
    if p is None:
        return np.full(num_experts, -math.log(num_experts))
    if len(p) != num_experts:
        raise ValueError(
            f"{name}: has {len(p)} entries but the losses have K = {num_experts} experts"
        )
    with np.errstate(divide="ignore"):
        return np.log(np.asarray(p, dtype=np.float64))


def _log(x):
    """Natural log that maps 0 to -inf without a warning (traced or not)."""
    return jnp.log(jnp.asarray(x, jnp.float32))


class _Strategy:
    """Shared helpers; subclasses are frozen dataclasses."""

    num_rows = 1
    # Whether the log-space kernel must carry compensated (double-float) log
    # weights: True where some probability mass is never mixed (no switching),
    # so float32 rounding would accumulate over N steps.
    compensated = True

    if TYPE_CHECKING:  # fields of every strategy (each a frozen dataclass)
        __dataclass_fields__: ClassVar[dict[str, Any]]
        initial: Probs

    def _check_common(self) -> None:
        object.__setattr__(self, "initial", _as_probs(self.initial, "initial"))
        if hasattr(self, "weights"):
            object.__setattr__(self, "weights", _as_probs(self.weights, "weights"))

    def log_weights(self, num_experts: int) -> np.ndarray:
        return _log_probs(getattr(self, "weights", None), num_experts, "weights")

    def log_first(self, num_experts: int) -> np.ndarray:
        """log p(ξ_1 = k), float64 (K,)."""
        if self.initial is not None:
            return _log_probs(self.initial, num_experts, "initial")
        return self.log_weights(num_experts)

    def log_initial(self, num_experts: int) -> np.ndarray:
        return self.log_first(num_experts)[None, :]

    def params(self, num_experts: int) -> dict:
        return {"log_w": jnp.asarray(self.log_weights(num_experts), jnp.float32)}

    def __repr__(self) -> str:
        """:func:`strategy_label`: the class and the fields that are set."""
        return strategy_label(self)

    @property
    def label(self) -> str:
        """:func:`strategy_label`: the one way a strategy is printed (reports, tables,
        protocols, CLI)."""
        return strategy_label(self)

    def skeleton(self):
        fields = {"initial": None}
        if hasattr(self, "weights"):
            fields["weights"] = None
        return replace(self, **fields)


def strategy_label(strategy: Any) -> str:
    """Short form, the same everywhere: the class and the fields that are set, e.g.
    ``FixedShare(m=11)``, ``BayesianMixture()``; vectors longer than 4 print as their
    length (``weights=<24 values>``). An object that is not a strategy of this module:
    its own ``label``, else its ``repr``."""
    if not isinstance(strategy, _Strategy):
        return str(getattr(strategy, "label", None) or repr(strategy))
    args = []
    for f in dataclasses.fields(strategy):
        v = getattr(strategy, f.name)
        if v is None:
            continue
        if isinstance(v, tuple):
            text = (
                f"<{len(v)} values>" if len(v) > 4 else "(" + ", ".join(f"{x:g}" for x in v) + ")"
            )
        elif isinstance(v, float):
            text = f"{v:g}"
        else:
            text = repr(v)
        args.append(f"{f.name}={text}")
    return f"{type(strategy).__name__}({', '.join(args)})"


@dataclass(frozen=True)
class BayesianMixture(_Strategy):
    """No switching: p(ξ_t | ξ_{t-1}) = 1[ξ_t = ξ_{t-1}].

    Codelength −log Σ_k p(ξ_1 = k) exp(−Σ_t L[t, k]) (nats).
    """

    initial: Probs = None

    def __post_init__(self):
        self._check_common()

    def transition(self, log_f, t, p):
        return log_f


@dataclass(frozen=True)
class ElementwiseMixture(_Strategy):
    """Independent draws: p(ξ_t | ξ_{t-1}) = w(ξ_t) for t ≥ 2 (paper App. A.6)."""

    weights: Probs = None
    initial: Probs = None

    compensated = False  # the transition forgets the past entirely

    def __post_init__(self):
        self._check_common()

    def transition(self, log_f, t, p):
        return jnp.broadcast_to(p["log_w"], log_f.shape)


@dataclass(frozen=True)
class FixedShare(_Strategy):
    """Fixed share (Herbster & Warmuth 1998), paper Eq. 2.

    p(ξ_t | ξ_{t-1}) = (1 − α_t)·1[ξ_t = ξ_{t-1}] + α_t·w(ξ_t), t ≥ 2, with
    either a constant rate α_t = ``alpha`` or the decreasing rate
    α_t = min(1, (m − 1)/t). With w uniform this is Eq. 2: stay with
    probability 1 − α_t(K − 1)/K, move to each other expert with α_t/K.

    Neither given: m = :data:`DEFAULT_M` = 2 (α_t = 1/t), the default
    protocol's (``mdlnb.protocol("default")``, chosen from measurements:
    docs/protocols.md, "Why m = 2"). The paper uses m = 2 on ImageNet (App. A.5.2,
    protocol ``"paper-imagenet"``) and m = 11, α_t = 10/t, on VTAB (Sec. 4,
    App. A.5.1, protocol ``"paper-vtab"``).
    """

    alpha: float | None = None
    m: float | None = None
    weights: Probs = None
    initial: Probs = None

    def __post_init__(self):
        self._check_common()
        if self.alpha is not None and self.m is not None:
            raise ValueError(
                "alpha, m: give a constant rate alpha or a decreasing-rate m, not both"
            )
        if self.alpha is None and self.m is None:
            object.__setattr__(self, "m", DEFAULT_M)
        if self.alpha is not None:
            a = float(self.alpha)
            if not (0.0 <= a <= 1.0):
                raise ValueError(f"alpha: must lie in [0, 1], got {self.alpha}")
            object.__setattr__(self, "alpha", a)
        else:
            m = float(self.m)
            if not (math.isfinite(m) and m >= 1.0):
                raise ValueError(f"m: must be a finite number >= 1, got {self.m}")
            object.__setattr__(self, "m", m)

    @property
    def rate(self) -> float:
        """α (constant rate) or m (decreasing rate)."""
        return self.alpha if self.alpha is not None else self.m  # type: ignore[return-value]

    def alpha_at(self, t, rate=None):
        """α_t for the transition into step t (t ≥ 2; array or scalar);
        ``rate`` (traced) overrides :attr:`rate`."""
        t = jnp.asarray(t, jnp.float32)
        rate = self.rate if rate is None else rate
        if self.alpha is not None:
            return jnp.full_like(t, rate)
        return jnp.minimum(1.0, (rate - 1.0) / t)

    def params(self, num_experts: int) -> dict:
        return {**super().params(num_experts), "rate": jnp.float32(self.rate)}

    def skeleton(self):
        return FixedShare(alpha=0.0) if self.alpha is not None else FixedShare(m=1.0)

    def min_alpha(self, horizon: int) -> float:
        """Smallest α_t over 2 ≤ t ≤ horizon."""
        if self.alpha is not None:
            return self.alpha
        return min(1.0, (self.m - 1.0) / max(horizon, 2))  # type: ignore[operator]

    def transition(self, log_f, t, p):
        a = self.alpha_at(t, p["rate"])
        return jnp.logaddexp(jnp.log1p(-a) + log_f, _log(a) + p["log_w"])


@dataclass(frozen=True)
class SwitchDistribution(_Strategy):
    """Switch distribution (van Erven, Grünwald & de Rooij 2012) as the HMM of
    Koolen & de Rooij (2008) with an unstable and a stable chain.

    Prior on expert sequences: the data are cut into blocks starting at
    t_1 = 1 < t_2 < …; block i uses expert k_i ~ w (k_1 ~ p(ξ_1)).
    * Switch times: π_T(t) = 1/(t(t − 1)) for t ≥ 2, conditioned on
      t_{i+1} > t_i, i.e. π_T(t | t > t_i) = t_i/(t(t − 1)). Its hazard is
      P(new block at t | none since t_i) = 1/t, independent of t_i, which is
      what makes the chain Markov.
    * Number of blocks: each block is the last one with probability
      ``stable`` (θ), so π_M(m) = (1 − θ)^{m−1} θ (geometric).
    Hidden state (row 0 = unstable, row 1 = stable, column = expert):
    from (u, k) a new block starts at t w.p. 1/t and is stable w.p. θ; (s, k)
    never leaves. Exact for this prior; log_posterior marginalizes the rows.
    """

    stable: float = 0.5
    weights: Probs = None
    initial: Probs = None

    num_rows = 2

    def __post_init__(self):
        self._check_common()
        s = float(self.stable)
        if not (0.0 <= s <= 1.0):
            raise ValueError(f"stable: must lie in [0, 1], got {self.stable}")
        object.__setattr__(self, "stable", s)

    def log_initial(self, num_experts: int) -> np.ndarray:
        with np.errstate(divide="ignore"):
            rows = np.log([1.0 - self.stable, self.stable])
        return rows[:, None] + self.log_first(num_experts)[None, :]

    def params(self, num_experts: int) -> dict:
        return {**super().params(num_experts), "stable": jnp.float32(self.stable)}

    def skeleton(self):
        return SwitchDistribution()

    def transition(self, log_f, t, p):
        h = 1.0 / jnp.asarray(t, jnp.float32)
        new = jnp.log(h) + logsumexp(log_f[0]) + p["log_w"]  # a block starts at t
        unstable = jnp.logaddexp(jnp.log1p(-h) + log_f[0], _log(1.0 - p["stable"]) + new)
        stable = jnp.logaddexp(log_f[1], _log(p["stable"]) + new)
        return jnp.stack([unstable, stable])


@dataclass(frozen=True)
class RunLength(_Strategy):
    """Run-length model (Koolen & de Rooij 2008): i.i.d. block lengths.

    Blocks have lengths ℓ ~ π_L, independently, and experts k ~ w (the first
    k ~ p(ξ_1)). π_L is the law of the absorption time of a small Markov
    chain over "run-length states" q = 0 … Q − 1 (a new block starts in
    q = 0); each step in state q the block ends w.p. h_q, else moves to q + 1
    w.p. a_q, else stays. With R = ``max_run`` and J = ``phases``:

    * exact states r = 1 … R − 1 (q = r − 1): h = 1/(r + 1), a = 1 — the
      power law π_L(r) = 1/(r(r + 1)) for r < R;
    * tail phases j = 0 … J − 1 for r ≥ R, with scale s_j = R·2^j:
      h = 1/(s_j + 1), a = 1/s_j (a = 0 in the last phase) — the hazard
      follows the power law's 1/(r + 1) at r ≈ s_j, and a run spends about s_j
      steps in phase j, so the tail decays like a power law up to
      ≈ R·2^{J−1} and geometrically (hazard 1/(R·2^{J−1} + 1)) beyond.

    J = 1 is the power law with a geometric tail of hazard 1/(R + 1):
    P(ℓ = r) = (1/R)·(1/(R + 1))·(R/(R + 1))^{r−R} for r ≥ R. The forward
    pass runs over (q, expert): (R − 1 + J)·K states, O(N·(R + J)·K) time,
    exact for this prior (no truncation: the chain *is* the prior).
    Default R = 8, J = 16: a power-law-like prior up to runs of ~2.6·10^5.
    """

    max_run: int = 8
    phases: int = 16
    weights: Probs = None
    initial: Probs = None

    def __post_init__(self):
        self._check_common()
        for name in ("max_run", "phases"):
            v = getattr(self, name)
            object.__setattr__(self, name, check_int(name, v, minimum=1, whole_floats=True))

    @property
    def num_rows(self) -> int:  # type: ignore[override]
        return self.max_run - 1 + self.phases

    compensated = False  # see transition

    def chain(self) -> tuple[np.ndarray, np.ndarray]:
        """(h, a): end and advance probabilities of the Q run-length states."""
        r = np.arange(1, self.max_run, dtype=np.float64)
        scale = self.max_run * 2.0 ** np.arange(self.phases)
        h = np.concatenate([1.0 / (r + 1.0), 1.0 / (scale + 1.0)])
        a = np.concatenate([np.ones(self.max_run - 1), 1.0 / scale])
        a[-1] = 0.0
        return h, a

    def log_initial(self, num_experts: int) -> np.ndarray:
        out = np.full((self.num_rows, num_experts), -np.inf)
        out[0] = self.log_first(num_experts)
        return out

    def transition(self, log_f, t, p):
        """In linear space relative to the largest state: one exp and one log
        per state. States below e^-87 (float32 range) of the largest drop to
        0; this is negligible, not an approximation that matters: every step
        a fresh block of each expert k gets weight E·w_k with E ≥ min_q h_q,
        and a dropped (old) run of expert k predicts exactly like that fresh
        one from then on, with a survival-ratio advantage of at most N. So a
        dropped state changes no probability by more than
        e^-87·N/(min_q h_q·w_k) (< 1e-20 relative for N·K ≤ 10^12 at the
        default R, J). For the same reason (mass re-enters every state each
        step) no compensated log weights are needed."""
        h, a = self.chain()
        f32 = lambda x: jnp.asarray(x, jnp.float32)
        top = jnp.max(log_f)
        e = jnp.exp(log_f - top)
        end = jnp.sum(f32(h)[:, None] * e)  # a block ends → q = 0
        stay = f32((1 - h) * (1 - a))[:, None] * e
        move = f32((1 - h) * a)[:, None] * e  # q → q + 1
        inflow = jnp.concatenate([(end * jnp.exp(p["log_w"]))[None], move[:-1]], axis=0)
        return jnp.log(stay + inflow) + top


# ``@dataclass`` writes a __repr__ listing every field into each class; print
# the short form of _Strategy.__repr__ instead, one way everywhere.
for _cls in (BayesianMixture, ElementwiseMixture, FixedShare, SwitchDistribution, RunLength):
    _cls.__repr__ = _Strategy.__repr__  # type: ignore[method-assign]
del _cls

_NAMES = {
    "bayes": BayesianMixture,
    "elementwise": ElementwiseMixture,
    "fixed-share": FixedShare,
    "switch": SwitchDistribution,
    "run-length": RunLength,
}

Strategy = Any  # one of the five dataclasses above


def names() -> list[str]:
    """Strategy names accepted by :func:`get_strategy`."""
    return list(_NAMES)


def get_strategy(name: Any, **kwargs) -> Strategy:
    """Strategy by name (``"bayes"``, ``"elementwise"``, ``"fixed-share"``,
    ``"switch"``, ``"run-length"``; ``_`` and case are ignored) with its
    keyword arguments; a strategy instance is returned unchanged."""
    if isinstance(name, tuple(_NAMES.values())):
        if kwargs:
            raise ValueError("strategy: keyword arguments given with a strategy instance")
        return name
    if not isinstance(name, str):
        raise ValueError(f"strategy: expected a name or a strategy, got {type(name).__name__}")
    key = name.strip().lower().replace("_", "-")
    if key not in _NAMES:
        raise ValueError(f"strategy: unknown strategy {name!r}; choose one of {names()}")
    try:
        return _NAMES[key](**kwargs)
    except TypeError as e:
        raise ValueError(f"strategy: bad options for {key!r} ({e})") from None
