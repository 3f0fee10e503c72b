"""LEEP, N-LEEP and NCE: transferability from a source classifier's outputs.

All three score how well the target label ``y`` can be read off a source
label ``z`` through the empirical conditional ``p̂(y|z)`` (PACTran paper,
Sec. 2.1–2.2, Eq. 1–3). Values are in nats per example, always ``<= 0``;
higher is better transfer.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from scipy.special import log_softmax

from mdlnb.baselines.transfer import _validate as v

# Imported inside the functions that use them, so that importing this module does not load
# them: scikit-learn.


def source_probs_from_logits(logits: Any, temperature: float = 1.0) -> np.ndarray:
    """Softmax of source-classifier logits ``(N, Z)`` at ``temperature`` → ``(N, Z)`` float64."""
    z = v.features(logits, "logits")
    t = v.positive(temperature, "temperature")
    return np.exp(log_softmax(z / t, axis=1))


def source_probs_from_head(features: Any, weight: Any, bias: Any = None) -> np.ndarray:
    """Probabilities of a linear source head: ``softmax(features @ weight + bias)``.

    ``features`` (N, D), ``weight`` (D, Z), ``bias`` (Z,) or None — e.g. the
    ImageNet classifier of a pretrained encoder applied to its penultimate
    features.
    """
    f = v.features(features)
    w = v.features(weight, "weight")
    if w.shape[0] != f.shape[1]:
        raise ValueError(f"weight: expected {f.shape[1]} rows to match features, got {w.shape[0]}")
    logits = f @ w
    if bias is not None:
        b = np.asarray(bias, dtype=np.float64)
        if b.shape != (w.shape[1],):
            raise ValueError(f"bias: expected shape ({w.shape[1]},), got {b.shape}")
        v.features(b[None], "bias")
        logits = logits + b
    return source_probs_from_logits(logits)


def _leep_from_probs(theta: np.ndarray, y: np.ndarray, c: int) -> float:
    n = theta.shape[0]
    joint = np.zeros((c, theta.shape[1]))
    np.add.at(joint, y, theta)  # N · p̂(y, z), Eq. 1
    pz = joint.sum(axis=0)
    cond = np.divide(joint, pz, out=np.zeros_like(joint), where=pz > 0)  # p̂(y|z)
    eep = np.einsum("nz,nz->n", theta, cond[y])  # Eq. 2
    return float(np.log(eep).sum() / n)


def leep(source_probs: Any, labels: Any, *, num_classes: int | None = None) -> float:
    """LEEP (Nguyen et al. 2020; PACTran Eq. 2), nats per example, higher is better.

    ``(1/N) Σ_i log Σ_z p̂(y_i|z) θ_iz`` with ``θ = source_probs`` (N, Z),
    rows summing to 1, and ``p̂(y|z) ∝ Σ_i θ_iz [y_i = y]``. Equals 0 when the
    source prediction determines the target label; ``-H(Y)`` when it carries
    no information.
    """
    theta = v.probabilities(source_probs)
    y, c = v.labels(labels, theta.shape[0], num_classes, other="source_probs")
    return _leep_from_probs(theta, y, c)


def nce(source_labels: Any, labels: Any, *, num_classes: int | None = None) -> float:
    """Negative conditional entropy ``-H(Y|Z)`` (Tran et al. 2019), nats, higher is better.

    ``source_labels``: source hard labels (N,) or source probabilities (N, Z),
    reduced by argmax. ``-H(Y|Z) = Σ_{y,z} p̂(y,z) log p̂(y|z)`` from the
    empirical joint counts; 0 for a deterministic map ``z → y``, ``-H(Y)`` when
    ``Z`` and ``Y`` are empirically independent.
    """
    y, c = v.labels(
        labels,
        np.shape(source_labels)[0] if np.ndim(source_labels) else -1,
        num_classes,
        other="source_labels",
    )
    z = v.hard_labels(source_labels, len(y))
    _, zi = np.unique(z, return_inverse=True)
    joint = np.zeros((c, zi.max() + 1))
    np.add.at(joint, (y, zi), 1.0)
    pz = joint.sum(axis=0, keepdims=True)
    nz = joint > 0
    return float(np.sum(joint[nz] * np.log((joint / pz)[nz])) / len(y))


def gmm_posteriors(
    features: Any,
    n_components: int,
    *,
    variance: float = 0.8,
    covariance_type: str = "full",
    reg_covar: float = 1e-6,
    seed: int = 0,
) -> np.ndarray:
    """N-LEEP's cluster posteriors ``p(v|s(x))`` (PACTran Eq. 3), (N, n_components).

    ``s(x)``: PCA (sklearn, full SVD, centred, not whitened) keeping the
    smallest number of components whose explained variance reaches
    ``variance`` of the total; then a ``GaussianMixture`` with
    ``n_components`` components of ``covariance_type``, ``reg_covar`` added to
    the diagonals, k-means initialization seeded by ``seed``.
    """
    from sklearn.decomposition import PCA
    from sklearn.mixture import GaussianMixture

    f = v.features(features)
    frac = v.fraction(variance, "variance")
    if isinstance(n_components, bool) or int(n_components) != n_components or n_components < 1:
        raise ValueError(f"n_components: must be a positive integer, got {n_components!r}")
    if n_components > f.shape[0]:
        raise ValueError(
            f"n_components: {n_components} exceeds the number of examples {f.shape[0]}"
        )
    if covariance_type not in ("full", "tied", "diag", "spherical"):
        raise ValueError(f"covariance_type: unknown {covariance_type!r}")
    if f.shape[0] < 2:
        raise ValueError(
            f"features: a Gaussian mixture needs at least 2 examples, got {f.shape[0]}"
        )
    s = f - f.mean(axis=0)
    # features of extreme scale (1e30, 1e-30): a power of two brings their RMS near 1 (an
    # exact rescaling; at ordinary scales nothing changes) so the covariances neither
    # overflow nor drown in reg_covar
    rms = float(np.sqrt(np.mean(np.square(s / max(np.max(np.abs(s)), 1e-300)))) * np.max(np.abs(s)))
    if rms > 0 and not 2.0**-20 <= rms <= 2.0**20:
        s = s * 2.0 ** -round(np.log2(rms))
    if frac < 1.0 and np.any(s.std(axis=0) > 0):
        s = PCA(n_components=frac, svd_solver="full").fit_transform(s)
    gmm = GaussianMixture(
        n_components=int(n_components),
        covariance_type=covariance_type,
        reg_covar=reg_covar,
        random_state=seed,
    )
    try:
        return gmm.fit(s).predict_proba(s)
    except ValueError as e:  # sklearn's own words, e.g. an ill-defined covariance
        raise ValueError(
            f"features: the Gaussian mixture of N-LEEP could not be fitted ({e})"
        ) from None


COMPONENT_RULES = ("paper", "classes")


def nleep_components(rule: str | int, n: int, num_classes: int) -> int:
    """Number of GMM components of N-LEEP for ``n`` examples and ``num_classes`` classes.

    ``"paper"``: ``max(min(C, ⌊0.2N⌋), ⌊0.1N⌋)``, the rule of the PACTran
    paper's released code (``gmm_estimator`` in google-research/pactran_metrics,
    which produced its tables); at least 1. ``"classes"``: ``C``, the recipe
    PACTran Sec. 4.1.4 states in words (after Li et al. 2021). An int: that
    many. The rules agree for ``5C ≤ N ≤ 10C``; at ``N = 2C`` the paper's
    code fits ``0.4C`` components, for ``N > 10C`` it fits ``0.1N``.
    """
    if isinstance(rule, str):
        if rule == "paper":
            k = max(min(num_classes, int(n * 0.2)), int(n * 0.1))
        elif rule == "classes":
            k = num_classes
        else:
            raise ValueError(
                f"components: expected one of {COMPONENT_RULES} or an int, got {rule!r}"
            )
        return int(min(max(k, 1), n))
    if isinstance(rule, bool) or int(rule) != rule or rule < 1:
        raise ValueError(
            f"components: expected one of {COMPONENT_RULES} or a positive int, got {rule!r}"
        )
    return int(rule)


@dataclasses.dataclass(frozen=True)
class NLeepResult:
    """N-LEEP and the GMM it used: ``value`` (nats/example), ``n_components``,
    ``rule`` (the ``components`` argument), ``variance`` (PCA fraction kept)."""

    value: float
    n_components: int
    rule: str | int
    variance: float


def nleep_result(
    features: Any,
    labels: Any,
    *,
    num_classes: int | None = None,
    variance: float = 0.8,
    components: str | int = "paper",
    covariance_type: str = "full",
    seed: int = 0,
) -> NLeepResult:
    """N-LEEP with the component count it used; see :func:`nleep`."""
    f = v.features(features)
    y, c = v.labels(labels, f.shape[0], num_classes)
    k = nleep_components(components, f.shape[0], c)
    theta = gmm_posteriors(f, k, variance=variance, covariance_type=covariance_type, seed=seed)
    return NLeepResult(_leep_from_probs(theta, y, c), k, components, float(variance))


def nleep(
    features: Any,
    labels: Any,
    *,
    num_classes: int | None = None,
    variance: float = 0.8,
    components: str | int = "paper",
    covariance_type: str = "full",
    seed: int = 0,
) -> float:
    """N-LEEP (Li et al. 2021; PACTran Sec. 2.2), nats per example, higher is better.

    LEEP with the GMM posteriors of :func:`gmm_posteriors` in place of source
    probabilities: PCA keeping ``variance = 0.8`` of the variance (PACTran
    Sec. 4.1.4), then a GMM with :func:`nleep_components` ``(components, N, C)``
    components — by default the rule of the PACTran code (``"paper"``);
    ``"classes"`` gives C as the paper's text says. With the same count and
    seed this equals the PACTran code's ``calculate_nleep`` (to 1e-7).
    """
    return nleep_result(
        features,
        labels,
        num_classes=num_classes,
        variance=variance,
        components=components,
        covariance_type=covariance_type,
        seed=seed,
    ).value
