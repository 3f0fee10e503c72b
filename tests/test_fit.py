"""The package's AdamW (``mdlnb.core._fit.optimizer``, bias corrections written as
products) against a float64 NumPy AdamW written from Loshchilov & Hutter's
algorithm and against ``optax.adamw`` itself."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from mdlnb.core import _fit


def adamw_float64(p, grads, lr, b1, b2, eps, wd):
    """Decoupled-weight-decay Adam in float64: the parameters after each step."""
    m, v, out = np.zeros_like(p), np.zeros_like(p), []
    for t, g in enumerate(grads, start=1):
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        upd = (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps) + wd * p
        p = p - lr * upd
        out.append(p)
    return out


@pytest.mark.parametrize("b1, wd", [(0.9, 0.0), (0.8, 0.01)])
def test_optimizer_is_adamw(b1, wd):
    rng = np.random.default_rng(0)
    p0 = rng.standard_normal((7, 5))
    grads = [rng.standard_normal((7, 5)) for _ in range(30)]
    h = _fit.hyper(3e-3, b1=b1, weight_decay=wd)
    ours, ref = _fit.optimizer(h), optax.adamw(3e-3, b1=b1, b2=0.999, eps=1e-8, weight_decay=wd)
    p = q = jnp.asarray(p0, jnp.float32)
    s, r = ours.init(p), ref.init(q)
    assert jax.tree.structure(s) == jax.tree.structure(r)  # checkpoints keep optax's layout
    want = adamw_float64(p0, grads, 3e-3, b1, 0.999, 1e-8, wd)
    for g, w in zip(grads, want):
        g = jnp.asarray(g, jnp.float32)
        u, s = ours.update(g, s, p)
        p = optax.apply_updates(p, u)
        u, r = ref.update(g, r, q)
        q = optax.apply_updates(q, u)
        np.testing.assert_allclose(np.asarray(p), w, rtol=0, atol=1e-5)
    # float32 both: a few ulps apart after 30 steps (the product vs the division)
    np.testing.assert_allclose(np.asarray(p), np.asarray(q), rtol=0, atol=1e-6)
    assert int(s[0].count) == 30
