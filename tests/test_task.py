"""Task construction, validation, user-data loaders; cache keys and atomic IO."""

import os

import numpy as np
import pandas as pd
import pytest

import mdlnb
from mdlnb.core._checks import check_int, check_labels
from mdlnb.infra import _io


def _task(**kw):
    args = dict(
        name="t",
        x=np.arange(12, dtype=np.float32).reshape(6, 2),
        y=[0, 1, 2, 0, 1, 2],
        num_classes=3,
    )
    args.update(kw)
    return mdlnb.Task(**args)


def test_task_basic_views():
    t = _task()
    assert t.n == len(t) == 6
    np.testing.assert_array_equal(t.features, np.arange(12).reshape(6, 2))
    assert t.y.dtype == np.int32
    sub = t.take([4, 1])
    np.testing.assert_array_equal(sub.y, [1, 1])
    s = t.subsample(3, seed=1)
    assert s.n == 3 and s.meta["subsample"] == {"n": 3, "seed": 1}
    np.testing.assert_array_equal(s.x, t.subsample(3, seed=1).x)


@pytest.mark.parametrize(
    "kw, arg",
    [
        (dict(x=np.zeros((0, 2)), y=np.zeros(0, int)), "x"),
        (dict(x=np.array([[np.nan, 0]] * 6)), "x"),
        (dict(x=np.zeros(6)), "x"),
        (dict(y=[0, 1, 2, 0, 1, 3]), "y"),
        (dict(y=[0, 1, 2, 0, 1, -1]), "y"),
        (dict(y=[0.5, 1, 2, 0, 1, 2]), "y"),
        (dict(y=[0, 1, 2]), "x and y"),
        (dict(num_classes=1), "num_classes"),
        (dict(group="weird"), "group"),
        (dict(name=""), "name"),
    ],
)
def test_task_rejects_bad_input_naming_the_argument(kw, arg):
    with pytest.raises(ValueError, match=f"^{arg}"):
        _task(**kw)


def test_check_labels_accepts_integral_floats():
    np.testing.assert_array_equal(check_labels(np.array([0.0, 2.0]), 3), [0, 2])


def test_from_npz_and_parquet_roundtrip(tmp_path):
    t = _task()
    t.to_npz(tmp_path / "a.npz")
    back = mdlnb.Task.from_npz(tmp_path / "a.npz")
    np.testing.assert_array_equal(back.x, t.x)
    assert back.num_classes == 3 and back.name == "a"
    df = pd.DataFrame({"f0": t.x[:, 0], "f1": t.x[:, 1], "y": t.y})
    df.to_parquet(tmp_path / "b.parquet")
    back = mdlnb.Task.from_parquet(tmp_path / "b.parquet")
    np.testing.assert_array_equal(back.x, t.x)
    df2 = pd.DataFrame({"x": list(t.x), "y": t.y})
    df2.to_parquet(tmp_path / "c.parquet")
    np.testing.assert_array_equal(mdlnb.Task.from_parquet(tmp_path / "c.parquet").x, t.x)


def test_loaders_reject_missing_and_corrupt_files(tmp_path):
    with pytest.raises(ValueError, match="^path: no such file"):
        mdlnb.Task.from_npz(tmp_path / "missing.npz")
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="^path"):
        mdlnb.Task.from_npz(tmp_path / "bad.npz")
    np.savez(tmp_path / "nokey.npz", features=np.zeros((2, 2)))
    with pytest.raises(ValueError, match="^x_key"):
        mdlnb.Task.from_npz(tmp_path / "nokey.npz")
    (tmp_path / "bad.parquet").write_bytes(b"nope")
    with pytest.raises(ValueError, match="^path"):
        mdlnb.Task.from_parquet(tmp_path / "bad.parquet")


def test_content_hash_is_stable_and_sensitive():
    a = np.arange(5, dtype=np.float32)
    h = _io.content_hash(a, {"k": 1, "j": [1, 2]})
    assert h == _io.content_hash(a.copy(), {"j": [1, 2], "k": 1})
    assert h != _io.content_hash(a.astype(np.float64), {"k": 1, "j": [1, 2]})
    assert h != _io.content_hash(a, {"k": 2, "j": [1, 2]})
    b = a.copy()
    b[0] = 1
    assert h != _io.content_hash(b, {"k": 1, "j": [1, 2]})


def test_atomic_write_leaves_no_partial_file(tmp_path, monkeypatch):
    path = tmp_path / "x.npz"
    _io.atomic_savez(path, a=np.ones(3))
    np.testing.assert_array_equal(np.load(path)["a"], np.ones(3))

    def boom(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(KeyboardInterrupt):
        _io.atomic_savez(path, a=np.zeros(3))
    np.testing.assert_array_equal(np.load(path)["a"], np.ones(3))  # old file intact
    assert [p.name for p in tmp_path.iterdir()] == ["x.npz"]  # no temp left over


def test_cache_dir_honours_env(tmp_path, monkeypatch):
    monkeypatch.setenv("MDLNB_CACHE", str(tmp_path / "c"))
    assert _io.cache_dir("losses") == tmp_path / "c" / "losses"
    assert (tmp_path / "c" / "losses").is_dir()


def test_lazy_top_level_api():
    assert "switching" in dir(mdlnb)
    with pytest.raises(AttributeError):
        mdlnb.does_not_exist  # noqa: B018 - the access raises


# --------------------------------------------------------------------------- issue 15: silent mistakes


def test_labels_one_to_ten_warn_and_say_how_to_pass_num_classes():
    import warnings

    from sklearn.datasets import load_digits

    from mdlnb.api.evaluation import as_task

    d = load_digits()
    with pytest.warns(
        UserWarning, match=r"1 of the C = max\(y\) \+ 1 = 11 classes never occur"
    ) as rec:
        t = mdlnb.Task.from_arrays(d.data, d.target + 1)
    msg = str(rec[0].message)
    assert "[0]" in msg and "y - 1" in msg and "num_classes" in msg and "--num-classes" in msg
    # the cost of the mistake: the uniform code grows from N log 10 to N log 11
    assert t.num_classes == 11 and len(t) * np.log(11) - len(t) * np.log(10) > 170
    with pytest.warns(UserWarning, match="never occur"):
        as_task((d.data, d.target + 1))  # evaluate's input path
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mdlnb.Task.from_arrays(d.data, d.target)  # 0..9: all present
        mdlnb.Task.from_arrays(d.data, d.target + 1, num_classes=11)  # explicit: no guess
        as_task({"x": d.data, "y": d.target + 1, "num_classes": 11})


def test_arrays_and_features_are_named_after_the_representation():
    import jax.numpy as jnp

    from mdlnb.api.evaluation import as_task
    from mdlnb.encoders import Encoder, features

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(20, 3)), np.arange(20) % 2
    a, b = as_task((x, y)), as_task((x + 1, y))
    assert a.name.startswith("arrays-") and a.name != b.name != "user"
    assert as_task((x, y)).name == a.name  # a fingerprint: reproducible
    assert as_task({"x": x, "y": y, "name": "mine|pca"}).name == "mine|pca"
    task = mdlnb.Task(
        "digits", rng.uniform(size=(6, 8, 8, 1)).astype(np.float32), np.arange(6) % 2, 2
    )
    enc = Encoder(
        name="meanpool",
        params={},
        apply=lambda p, im: jnp.mean(im, axis=(1, 2)),
        input_size=(8, 8),
        channels=1,
        feature_dim=1,
    )
    f = features(enc, task, cache=False)
    assert f.name == "digits|meanpool" and f.meta["source_task"] == "digits"
    np.testing.assert_allclose(f.x[:, 0], task.x.mean(axis=(1, 2, 3)), rtol=1e-6)


@pytest.mark.parametrize(
    "value, kw, message",
    [
        (True, {"minimum": 1}, "n: must be an integer >= 1, got True"),  # not a count
        (0, {"minimum": 1}, "n: must be an integer >= 1, got 0"),
        (3.0, {"minimum": 1}, "n: must be an integer >= 1, got 3.0"),
        (2.5, {"minimum": 1, "whole_floats": True}, "n: must be an integer >= 1, got 2.5"),
        (float("inf"), {"minimum": 1, "whole_floats": True}, "n: must be an integer >= 1, got inf"),
        ("3", {}, "n: must be an integer, got '3'"),
        (None, {"minimum": 2}, "n: must be an integer >= 2, got None"),
        (-1, {"minimum": 0, "allow_none": True}, "n: must be an integer >= 0 or None, got -1"),
        (
            np.int64(5),
            {"minimum": 1, "maximum": 4},
            "n: must be an integer in [1, 4], got np.int64(5)",
        ),
        (
            0,
            {"minimum": 1, "what": "an int >= 1 or 'auto'"},
            "n: must be an int >= 1 or 'auto', got 0",
        ),
    ],
)
def test_check_int_rejects_with_the_argument_name(value, kw, message):
    with pytest.raises(ValueError) as err:
        check_int("n", value, **kw)
    assert str(err.value) == message


def test_check_int_returns_a_python_int():
    for value, kw in [
        (np.int32(7), {}),
        (7, {"minimum": 7, "maximum": 7}),
        (7.0, {"whole_floats": True}),
        (np.float32(7.0), {"whole_floats": True}),
    ]:
        out = check_int("n", value, **kw)
        assert out == 7 and type(out) is int
    assert check_int("n", None, allow_none=True) is None
