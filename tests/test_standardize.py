"""The one standardiser (mdlnb.core._standardize) against scikit-learn's StandardScaler,
its one zero-variance rule, the clip, and the shared checkpoint format."""

import jax.numpy as jnp
import numpy as np
import pytest
from sklearn.preprocessing import StandardScaler

from mdlnb.core import _fit, _standardize
from mdlnb.infra import _checkpoint


def _x(n=50, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)) * [1.0, 1e-3, 50.0, 1.0] + [0.0, 5.0, -3.0, 2.0]
    x[:, 3] = 2.0  # a constant feature
    return x


def test_fit_apply_matches_sklearn_standard_scaler():
    x = _x()
    ref = StandardScaler().fit(x)  # also centres-only a constant column
    z = _standardize.apply(x, _standardize.fit(x))
    np.testing.assert_allclose(z, ref.transform(x), rtol=1e-12, atol=1e-12)
    new = _x(seed=1) * 3.0
    np.testing.assert_allclose(
        _standardize.apply(new, _standardize.fit(x)), ref.transform(new), rtol=1e-12, atol=1e-12
    )
    assert _standardize.zscore(x).dtype == np.float32
    np.testing.assert_allclose(_standardize.zscore(x), ref.transform(x), atol=1e-6)


def test_clip_and_jax_and_mask():
    x = _x()
    mom = _standardize.fit(x[:10])
    far = x[10:] * 1e3
    z = _standardize.apply(far, mom, clip=10.0)
    np.testing.assert_array_equal(z, np.clip(_standardize.apply(far, mom), -10, 10))
    assert np.abs(z).max() == 10.0
    mask = np.arange(len(x)) < 10
    zj = _fit.masked_standardize(jnp.asarray(x, jnp.float32), jnp.asarray(mask), clip=10.0)
    np.testing.assert_allclose(np.asarray(zj), _standardize.apply(x, mom, clip=10.0), atol=5e-3)


def test_running_sums_agree_with_two_pass_and_the_zero_variance_rule():
    x = _x()
    x[:, 1] = 1e6  # constant but large: one-pass round-off
    s1, s2 = x.sum(0), (x * x).sum(0)
    one = _standardize.from_sums(s1, s2, len(x))
    two = _standardize.fit(x)
    np.testing.assert_allclose(one.mean, two.mean, rtol=1e-12)
    np.testing.assert_allclose(one.inv_std[[0, 2]], two.inv_std[[0, 2]], rtol=1e-9)
    assert one.inv_std[1] == two.inv_std[1] == 1.0  # constant → only centred
    assert one.inv_std[3] == two.inv_std[3] == 1.0


def test_checkpoint_roundtrip_and_refusals(tmp_path):
    tree = {"w": np.arange(6.0, dtype=np.float32).reshape(2, 3), "n": (np.int64(4),)}
    path = _checkpoint.save(
        tmp_path / "a.npz", tree, key="k1", meta={"steps": 4}, losses=np.ones(3)
    )
    ck = _checkpoint.load(path, tree, key="k1")
    np.testing.assert_array_equal(ck.tree["w"], tree["w"])
    assert int(ck.tree["n"][0]) == 4 and ck.meta == {"steps": 4}
    np.testing.assert_array_equal(ck.arrays["losses"], np.ones(3))
    assert _checkpoint.load(path, tree, key="other") is None  # another run's
    assert _checkpoint.load(path, tree, key=None) is not None  # key not checked
    bad = {"w": np.zeros((3, 2), np.float32), "n": (np.int64(0),)}
    assert _checkpoint.load(path, bad, key="k1") is None  # does not fit
    assert _checkpoint.load(tmp_path / "missing.npz", tree) is None
    with pytest.raises(ValueError, match="arrays"):
        _checkpoint.save(tmp_path / "b.npz", tree, meta={}, leaf0000=np.ones(1))
