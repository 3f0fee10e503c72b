"""Exact Bayesian linear regression prequential codes, NumPy float64: the independent
reference of tests/test_regression_bayes.py (issue 28)."""

import math

import numpy as np
from scipy.special import gammaln

LOG_2PI = math.log(2 * math.pi)


def nig_prequential(X, y, *, lam=1.0, a0=1.0, b0=1.0, batch_size=1):
    """Per-example -log predictive (Student-t) of the conjugate Normal-Inverse-Gamma model
    w | s2 ~ N(0, s2/lam I), s2 ~ IG(a0, b0), y | x, w, s2 ~ N(x.w, s2); each batch of
    ``batch_size`` coded with the posterior of the batches before it."""
    n, d = X.shape
    P = lam * np.eye(d)  # posterior precision (in units of 1/s2)
    Pm = np.zeros(d)  # P @ m
    a, b = a0, b0
    yy = 0.0  # for b: b = b0 + (yy - m'Pm)/2
    out = np.empty(n)
    for lo in range(0, n, batch_size):
        hi = min(lo + batch_size, n)
        m = np.linalg.solve(P, Pm)
        Xb, yb = X[lo:hi], y[lo:hi]
        scale2 = (b / a) * (1.0 + np.einsum("ij,ij->i", Xb, np.linalg.solve(P, Xb.T).T))
        nu = 2 * a
        r2 = (yb - Xb @ m) ** 2 / scale2
        out[lo:hi] = -(
            gammaln((nu + 1) / 2)
            - gammaln(nu / 2)
            - 0.5 * np.log(nu * math.pi * scale2)
            - (nu + 1) / 2 * np.log1p(r2 / nu)
        )
        P = P + Xb.T @ Xb
        Pm = Pm + Xb.T @ yb
        yy += yb @ yb
        a = a0 + hi / 2
        m = np.linalg.solve(P, Pm)
        b = b0 + 0.5 * (yy - m @ Pm)
    return out


def nig_log_evidence(X, y, *, lam=1.0, a0=1.0, b0=1.0):
    """log p(y | X) of the same model in closed form."""
    n, d = X.shape
    P = lam * np.eye(d) + X.T @ X
    m = np.linalg.solve(P, X.T @ y)
    an = a0 + n / 2
    bn = b0 + 0.5 * (y @ y - m @ P @ m)
    return (
        -n / 2 * LOG_2PI
        + 0.5 * (d * math.log(lam) - np.linalg.slogdet(P)[1])
        + a0 * math.log(b0)
        - an * math.log(bn)
        + gammaln(an)
        - gammaln(a0)
    )


def known_noise_prequential(X, y, *, tau2, sigma2):
    """Per-example -log N(y_t; m_{t-1}.x_t, sigma2 + x_t' S_{t-1} x_t): prior w ~ N(0, tau2 I)."""
    n, d = X.shape
    Sinv = np.eye(d) / tau2
    h = np.zeros(d)
    out = np.empty(n)
    for t in range(n):
        S = np.linalg.inv(Sinv)
        m = S @ h
        v = sigma2 + X[t] @ S @ X[t]
        out[t] = 0.5 * (LOG_2PI + math.log(v) + (y[t] - X[t] @ m) ** 2 / v)
        Sinv += np.outer(X[t], X[t]) / sigma2
        h += X[t] * y[t] / sigma2
    return out
