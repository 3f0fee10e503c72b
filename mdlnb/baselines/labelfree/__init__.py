"""Label-free representation metrics: TwoNN ID, cluster learnability, CLID,
alignment/uniformity, MCR² coding-rate reduction, RankMe, α-ReQ, LiDAR.

One metric (or family) per private module, as in :mod:`mdlnb.baselines.transfer`:
``_inputs`` (shared validators), ``_kmeans``, ``_neighbours``, ``_twonn``,
``_clid`` (cluster learnability, CLID, W-CLID), ``_contrastive``
(alignment, uniformity), ``_mcr2``, ``_rankme``, ``_alphareq``, ``_lidar``.

Every metric takes feature arrays ``z`` of shape (N, D) (rows are examples)
and returns a Python float; the cross-model combinations (:func:`clid`,
:func:`wclid`) take one value per model and return one score per model.
Signs, as the papers use them as predictors of downstream performance
("better" = predicted to perform better):

- ``twonn_id``: intrinsic dimension (no unit); higher = more expressive.
- ``cluster_learnability``: k-NN accuracy on k-means pseudo-labels, in
  [0, 1]; higher = more learnable.
- ``clid``: min–max(CL) + min–max(ID) across models, in [0, 2]; higher.
  ``wclid``: w·[min–max(CL), min–max(ID)], w fitted on in-domain performance.
- ``alignment``: E‖ẑ − ẑ'‖^α over positive pairs; lower. ``uniformity``:
  log E exp(−t‖ẑ1 − ẑ2‖²), nats; lower. CLID's baseline predictor is
  −L_align − L_unif.
- ``coding_rate_reduction``: ΔR = R − R_c, nats; higher (the quantity MCR²
  maximizes; CLID Table 1 finds it *negatively* correlated with accuracy).
- ``rankme``: effective rank (no unit); higher.
- ``alpha_req``: power-law decay α of the covariance eigenspectrum (no unit);
  neither higher nor lower is better: the paper finds the best linear-probe
  accuracy for α near 1 (too small: noise spread over many directions; too
  large: collapse onto a few).
- ``lidar``: effective rank of the LDA matrix of surrogate classes (no unit);
  higher.

Conventions that public implementations disagree on, fixed here:

* **TwoNN** (Facco et al. 2017; CLID Sec. 2.2): μ_i = r_i2 / r_i1 with
  *Euclidean* distances; the slope of a line through the origin fitted to
  ``(log μ_(i), −log(1 − i/N))`` after discarding the largest
  ``discard_fraction`` of μ (the last point has −log 0 = ∞). Exact duplicate
  rows give r1 = 0; ``duplicates="unique"`` (default) keeps one copy of each
  distinct row before the neighbour search (as DADApy's
  ``remove_identical_points``); ``duplicates="drop"`` keeps every row in the
  neighbour search and leaves out of the fit each point whose nearest
  neighbour is at distance 0 — all copies — as scikit-dimension's ``TwoNN``
  does. With ``metric="cosine"`` rows are
  L2-normalized and the *chordal* distance √(2 − 2 cos) is used; CLID's
  footnote distance 2 − 2 cos is its square, and squaring every distance
  squares μ and so halves the estimate.
* **Cluster learnability** (CLID Sec. 2.2, 3.1): k-means (k = round(√N)
  by default) on all N points gives pseudo-labels; a seeded random split
  (``train_fraction``) trains a k-NN (1 neighbour by default) whose accuracy on
  the held-out part is CL. k-means is greedy k-means++ (scikit-learn's
  seeding) with ``n_init = 10`` restarts, keeping the lowest inertia. ``metric="cosine"`` (the paper's choice)
  normalizes rows first; k-means is then Euclidean k-means on the unit
  vectors (centroids are cluster means, not re-projected onto the sphere)
  and 1-NN by Euclidean distance equals 1-NN by cosine similarity.
* **Alignment / uniformity** (Wang & Isola 2020, α = t = 2): inputs are
  L2-normalized here, explicitly; uniformity averages over unordered pairs
  i < j (as ``torch.pdist``), in nats.
* **MCR²** (Yu et al. 2020, Eq. 6): R(Z, ε) = ½ logdet(I + D/(N ε²) ZᵀZ) and
  R_c = Σ_j (N_j / 2N) logdet(I + D/(N_j ε²) Z_jᵀZ_j), natural log (nats).
  The argument here is ``eps_sq`` = ε² (default 0.5): the ``eps`` of the
  reference code (``scalar = p / (m * self.eps)``, class default 0.01) is
  ε², not ε. Rows are L2-normalized first by default (CLID Sec. 3.2).
* **RankMe** (Garrido et al. 2023): p_k = σ_k / Σσ + ε over the singular
  values σ of the *uncentred* Z, RankMe = exp(−Σ p_k log p_k). It is defined
  on σ, not on the eigenvalues σ² of ZᵀZ (which gives a smaller value).
* **α-ReQ** (Agrawal et al. 2022): λ_1 ≥ λ_2 ≥ … the eigenvalues of the
  covariance of the centred Z; α is the slope of −log λ_i against log i, a
  weighted least-squares line (weights 1/i, after Stringer et al. 2019, as
  the authors' library ``reptrix`` fits it) over the ranks ``fit_range``
  (default 11…100, reptrix's ``np.arange(10, 100)``, clipped to the
  non-zero eigenvalues).
* **LiDAR** (Thilak et al. 2024): views ``e`` (n, q, D) of n surrogate
  classes (source samples) under q augmentations; μ_x the mean of sample x's
  views, μ their mean; Σ_b = 1/(n−1) Σ_x (μ_x − μ)(μ_x − μ)ᵀ,
  Σ_w = 1/(n(q−1)) Σ_x Σ_i (e_xi − μ_x)(e_xi − μ_x)ᵀ + δ I (δ = 1e-4);
  LiDAR = exp(−Σ p_k log p_k), p_k = λ_k/‖λ‖₁ + ε (ε = 1e-7), λ the
  eigenvalues of Σ_w^{−1/2} Σ_b Σ_w^{−1/2} — RankMe's smoothed entropy on the
  LDA matrix. (The normalisations and δ are the paper's as we recall them;
  its text was not available here. δ and ε are knobs; the 1/(n−1) and
  1/(q−1) normalisations only rescale λ relative to δ.) reptrix's
  ``get_lidar`` instead takes the PCA spectrum of the matrix's rows (about
  λ²), with unnormalised scatters and δ = 1e-6.
"""

from __future__ import annotations

from mdlnb.baselines.labelfree._alphareq import (
    AlphaReQ,
    alpha_req,
    alpha_req_result,
    covariance_spectrum,
)
from mdlnb.baselines.labelfree._clid import WClid, clid, cluster_learnability, wclid
from mdlnb.baselines.labelfree._contrastive import alignment, uniformity
from mdlnb.baselines.labelfree._inputs import features_matrix
from mdlnb.baselines.labelfree._kmeans import KMeansResult, kmeans
from mdlnb.baselines.labelfree._lidar import effective_rank, lidar, lidar_matrix
from mdlnb.baselines.labelfree._mcr2 import class_coding_rate, coding_rate, coding_rate_reduction
from mdlnb.baselines.labelfree._neighbours import knn_accuracy
from mdlnb.baselines.labelfree._rankme import rankme, singular_values
from mdlnb.baselines.labelfree._twonn import twonn_id, twonn_ratios

__all__ = [
    "KMeansResult",
    "WClid",
    "features_matrix",
    "kmeans",
    "knn_accuracy",
    "twonn_ratios",
    "twonn_id",
    "cluster_learnability",
    "clid",
    "wclid",
    "alignment",
    "uniformity",
    "coding_rate",
    "class_coding_rate",
    "coding_rate_reduction",
    "singular_values",
    "rankme",
    "covariance_spectrum",
    "AlphaReQ",
    "alpha_req_result",
    "alpha_req",
    "lidar_matrix",
    "effective_rank",
    "lidar",
]
