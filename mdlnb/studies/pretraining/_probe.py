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
augmentation (:func:`mdlnb.encoders.augment.augment`, keys 0 … q − 1);
``label_free=False`` keeps RankMe only (the checkpoint zoo's record).
With ``mdl_task`` set, it also codes that downstream task (its training
split, in its own pretraining-independent domain) online with readout
switching (:func:`mdlnb.evaluate` under ``mdl_protocol``, data order
``mdl_seed``) and returns the codelength per example
(``mdl_nats_per_example``, nats/example; lower is better).
Feature extraction is not cached on disk (every checkpoint differs).
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import numpy as np

from mdlnb.api.evaluation import evaluate
from mdlnb.baselines import labelfree
from mdlnb.core._task import Task
from mdlnb.encoders.augment import augment
from mdlnb.encoders.base import _jitted, features, prepare_images

# scikit-learn is imported inside the method that fits the probe.


def _features(encoder: Any, task: Task) -> np.ndarray:
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
    mdl_task: Task | None = None
    mdl_protocol: str = "default"
    mdl_seed: int = 0
    label_free: bool = True

    def describe(self) -> dict[str, Any]:
        """What the monitor measures, for the artifacts' provenance."""
        return {
            "probe": "logistic regression (scikit-learn L-BFGS, L2, standardized)",
            "C": self.C,
            "probe_train": self.train.name,
            "probe_train_size": len(self.train.y),
            "probe_test": self.test.name,
            "probe_test_size": len(self.test.y),
            "label_free_rows": self.label_free_rows,
            "lidar_samples": self.lidar_samples,
            "lidar_views": self.lidar_views,
            "mdl_task": None if self.mdl_task is None else self.mdl_task.name,
            "mdl_size": None if self.mdl_task is None else len(self.mdl_task.y),
            "mdl_protocol": self.mdl_protocol,
            "mdl_seed": self.mdl_seed,
            "label_free": self.label_free,
        }

    def __call__(self, step: int, encoder: Any) -> dict[str, float]:
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.linear_model import LogisticRegression
        from sklearn.metrics import log_loss

        f_train, f_test = _features(encoder, self.train), _features(encoder, self.test)
        mu, sd = f_train.mean(0), f_train.std(0)
        sd = np.where(sd > 0, sd, 1.0)
        a, b = (f_train - mu) / sd, (f_test - mu) / sd
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            clf = LogisticRegression(C=self.C, max_iter=self.max_iter).fit(a, self.train.y)
        p = clf.predict_proba(b)
        out = {
            "probe_accuracy": float(np.mean(clf.classes_[p.argmax(1)] == self.test.y)),
            "probe_nll_nats": float(log_loss(self.test.y, p, labels=clf.classes_)),
        }
        if self.mdl_task is not None:
            out["mdl_nats_per_example"] = self.mdl(encoder)
        if not self.label_free:
            return {**out, "rankme": labelfree.rankme(f_test)}
        if not np.any(f_test):  # a collapsed encoder: no spectrum, no neighbours
            return {
                **out,
                "rankme": 1.0,
                "twonn_id": np.nan,
                "cluster_learnability": np.nan,
                "alpha_req": np.nan,
                "lidar": np.nan,
            }
        z = f_test[: self.label_free_rows]
        return {
            **out,
            "rankme": labelfree.rankme(f_test),
            "twonn_id": labelfree.twonn_id(z),
            "cluster_learnability": labelfree.cluster_learnability(z, 0),
            "alpha_req": labelfree.alpha_req(z),
            "lidar": self.lidar(encoder),
        }

    def mdl(self, encoder: Any) -> float:
        """Codelength of ``mdl_task``'s labels given ``encoder``'s features, nats per
        example (readout switching under ``mdl_protocol``; not cached on disk)."""
        f = _features(encoder, self.mdl_task)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # grid-edge notes: the protocol is fixed here
            rep = evaluate(
                f,
                self.mdl_task.y,
                protocol=self.mdl_protocol,
                seed=self.mdl_seed,
                num_classes=self.mdl_task.num_classes,
                progress=False,
                cache=False,
            )
        return float(rep.total_nats) / len(self.mdl_task.y)

    def lidar(self, encoder: Any) -> float:
        """LiDAR of ``encoder`` on augmented views of the first held-out images."""
        import jax

        x = prepare_images(self.test.x[: self.lidar_samples], encoder.input_size, encoder.channels)
        fn = _jitted(encoder.apply)
        views = [
            np.asarray(fn(encoder.params, augment(jax.random.PRNGKey(v), x)), np.float64)
            for v in range(self.lidar_views)
        ]
        return labelfree.lidar(np.stack(views, axis=1))
