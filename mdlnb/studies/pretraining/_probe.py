"""The monitor of the pretraining stage: a linear probe on the held-out split, and RankMe.

``ProbeMonitor(train, test)(step, encoder)`` extracts features of the probe's
training images and of the held-out images, standardizes them with the
training features' mean and standard deviation, fits a multinomial logistic
regression (scikit-learn, L-BFGS, L2 with C = 1 on standardized features) and
returns its top-1 accuracy on the held-out images (``probe_accuracy``, a
fraction), its mean held-out log-loss (``probe_nll_nats``, nats/example) and
label-free scores of the held-out features: RankMe (``rankme``, effective
rank; Garrido et al. 2023) on all of them, and on the first
``label_free_rows`` (2,000): TwoNN intrinsic dimension (``twonn_id``),
cluster learnability (``cluster_learnability``, key 0; CLID combines the two
across checkpoints) and α-ReQ (``alpha_req``, the eigenspectrum's decay);
and LiDAR (``lidar``; Thilak et al. 2024) over ``lidar_views`` augmented
views of the first ``lidar_samples`` held-out images, each image its own
surrogate class, the views drawn by the pretraining pipeline's own
augmentation (:func:`mdlnb.encoders.augment.augment`, keys 0 … q − 1).
Feature extraction is not cached on disk (every checkpoint differs).
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import numpy as np

from mdlnb._task import Task


def _features(encoder: Any, task: Task) -> np.ndarray:
    from mdlnb.encoders.base import features

    return np.asarray(features(encoder, task, batch_size=500, cache=False).x, np.float64)


@dataclasses.dataclass(frozen=True, eq=False)
class ProbeMonitor:
    """Linear-probe accuracy on ``test`` after fitting on ``train`` (both image Tasks)."""

    train: Task
    test: Task
    C: float = 1.0
    max_iter: int = 1000
    label_free_rows: int = 2000
    lidar_samples: int = 200
    lidar_views: int = 8

    def __call__(self, step: int, encoder: Any) -> dict[str, float]:
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.linear_model import LogisticRegression
        from sklearn.metrics import log_loss

        from mdlnb import labelfree

        f_train, f_test = _features(encoder, self.train), _features(encoder, self.test)
        mu, sd = f_train.mean(0), f_train.std(0)
        sd = np.where(sd > 0, sd, 1.0)
        a, b = (f_train - mu) / sd, (f_test - mu) / sd
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            clf = LogisticRegression(C=self.C, max_iter=self.max_iter).fit(a, self.train.y)
        p = clf.predict_proba(b)
        out = {"probe_accuracy": float(np.mean(clf.classes_[p.argmax(1)] == self.test.y)),
               "probe_nll_nats": float(log_loss(self.test.y, p, labels=clf.classes_))}
        if not np.any(f_test):        # a collapsed encoder: no spectrum, no neighbours
            return {**out, "rankme": 1.0, "twonn_id": np.nan, "cluster_learnability": np.nan,
                    "alpha_req": np.nan, "lidar": np.nan}
        z = f_test[: self.label_free_rows]
        return {**out, "rankme": labelfree.rankme(f_test), "twonn_id": labelfree.twonn_id(z),
                "cluster_learnability": labelfree.cluster_learnability(z, 0),
                "alpha_req": labelfree.alpha_req(z), "lidar": self.lidar(encoder)}

    def lidar(self, encoder: Any) -> float:
        """LiDAR of ``encoder`` on augmented views of the first held-out images."""
        import jax

        from mdlnb import labelfree
        from mdlnb.encoders.augment import augment
        from mdlnb.encoders.base import _jitted, prepare_images

        x = prepare_images(self.test.x[: self.lidar_samples], encoder.input_size,
                           encoder.channels)
        fn = _jitted(encoder.apply)
        views = [np.asarray(fn(encoder.params, augment(jax.random.PRNGKey(v), x)), np.float64)
                 for v in range(self.lidar_views)]
        return labelfree.lidar(np.stack(views, axis=1))
