"""The fine-tuning ground truth: the vmapped program against one optax AdamW loop per
model, resumption, the rate chosen on validation, McNemar's pairs, and the artifacts."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mdlnb.studies.transferability import _finetune as F


@pytest.fixture(scope="module")
def tiny():
    """Two ViT-XS initializations (seeds 0, 1) and digits images at their 28×28×1 input."""
    from mdlnb import data
    from mdlnb.encoders import _pretrain as P
    from mdlnb.encoders import archs
    from mdlnb.encoders.base import prepare_images

    cfg = archs.config("vit", "XS")
    encs = [
        P._encoder("random", cfg, P._init_encoder(cfg, s), {"steps": 0, "seed": s}) for s in (0, 1)
    ]
    task = data.load("digits", split="train")
    x = prepare_images(task.x[:120], (28, 28), 1)
    y = task.y[:120]
    return encs, (x[:80], y[:80]), (x[80:100], y[80:100]), (x[100:], y[100:])


def _reference(enc, train, lr, spec, num_classes):
    """One model: zero head, optax clip + AdamW, the same batches, plain Python loop."""
    import jax
    import jax.numpy as jnp
    import optax

    p = {
        "encoder": enc.params,
        "head": {"w": jnp.zeros((enc.feature_dim, num_classes)), "b": jnp.zeros(num_classes)},
    }
    tx = optax.chain(
        optax.clip_by_global_norm(spec.clip), optax.adamw(lr, weight_decay=spec.weight_decay)
    )
    st = tx.init(p)

    def loss(p, x, y):
        z = enc.apply(p["encoder"], x) @ p["head"]["w"] + p["head"]["b"]
        return -jnp.take_along_axis(jax.nn.log_softmax(z), y[:, None], 1).mean()

    for idx in F.batch_order(len(train[1]), spec.steps, spec.batch_size, spec.seed):
        g = jax.grad(loss)(p, jnp.asarray(train[0][idx]), jnp.asarray(train[1][idx]))
        u, st = tx.update(g, st, p)
        p = optax.apply_updates(p, u)
    return p, loss


def test_vmapped_program_equals_one_optax_loop_per_model(tiny):
    encs, train, val, test = tiny
    spec = F.FinetuneSpec(learning_rates=(1e-3, 3e-3), steps=4, batch_size=8, chunk=2)
    run = F.finetune(encs, train, val, test, num_classes=10, spec=spec)
    for m, enc in enumerate(encs):
        for j, lr in enumerate(spec.learning_rates):
            p, loss = _reference(enc, train, lr, spec, 10)
            vl = float(loss(p, val[0], val[1]))
            assert run.val_loss[m, j] == pytest.approx(vl, rel=2e-4, abs=2e-5)
        j = int(run.chosen[m])
        assert j == int(np.argmin(run.val_loss[m]))
        p, _ = _reference(enc, train, spec.learning_rates[j], spec, 10)
        z = enc.apply(p["encoder"], test[0]) @ p["head"]["w"] + p["head"]["b"]
        assert run.test_correct[m].tolist() == (np.asarray(z).argmax(1) == test[1]).tolist()
        assert run.test_accuracy[m] == pytest.approx(np.mean(run.test_correct[m]))


def test_an_interrupted_run_resumes_to_the_same_numbers(tiny, tmp_path, monkeypatch):
    from mdlnb.infra import _checkpoint

    encs, train, val, test = tiny
    spec = F.FinetuneSpec(learning_rates=(1e-3,), steps=6, batch_size=8, chunk=2)
    whole = F.finetune(encs, train, val, test, num_classes=10, spec=spec)
    saves = []
    real = _checkpoint.save

    def stop_after_first(*a, **k):
        real(*a, **k)
        saves.append(1)
        if len(saves) == 1:
            raise KeyboardInterrupt

    monkeypatch.setattr(F._checkpoint, "save", stop_after_first)
    state = tmp_path / "state.npz"
    with pytest.raises(KeyboardInterrupt):
        F.finetune(
            encs, train, val, test, num_classes=10, spec=spec, state_path=state, state_key="k"
        )
    resumed = F.finetune(
        encs, train, val, test, num_classes=10, spec=spec, state_path=state, state_key="k"
    )
    assert len(saves) == 1 + 2  # resumed at step 2 of 6
    np.testing.assert_array_equal(resumed.val_loss, whole.val_loss)
    np.testing.assert_array_equal(resumed.test_correct, whole.test_correct)


def test_batch_order_visits_every_example_once_per_epoch():
    order = F.batch_order(10, 7, 4, seed=3)
    assert order.shape == (7, 4)
    flat = order.ravel()
    assert sorted(flat[:10]) == list(range(10)) and sorted(flat[10:20]) == list(range(10))
    assert np.array_equal(order, F.batch_order(10, 7, 4, seed=3))
    with pytest.raises(ValueError, match="batch_size"):
        F.batch_order(3, 2, 4, seed=0)


def test_spec_rejects_bad_input():
    with pytest.raises(ValueError, match="learning_rates"):
        F.FinetuneSpec(learning_rates=(0.0,))
    with pytest.raises(ValueError, match="chunk"):
        F.FinetuneSpec(steps=10, chunk=3)
    with pytest.raises(ValueError, match="steps"):
        F.FinetuneSpec(steps=0)


def _mcnemar_p(b: int, c: int) -> float:
    """Exact two-sided McNemar p-value from binomial coefficients."""
    n, k = b + c, min(b, c)
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n)


def test_pairs_beyond_noise_is_mcnemar_on_every_pair():
    rng = np.random.default_rng(0)
    acc = [0.6, 0.62, 0.75, 0.9]
    c = np.stack([rng.random(400) < a for a in acc])
    sep, pairs = F.pairs_beyond_noise(c)
    expected = sum(
        _mcnemar_p(int(np.sum(c[i] & ~c[j])), int(np.sum(~c[i] & c[j]))) < 0.05
        for i in range(4)
        for j in range(i + 1, 4)
    )
    assert pairs == 6 and sep == expected
    same = np.stack([c[0], c[0]])
    assert F.pairs_beyond_noise(same) == (0, 1)


def test_ground_truth_artifact_round_trip_and_checksum(tmp_path, monkeypatch):
    from mdlnb.studies.pretraining import ChecksumError
    from mdlnb.studies.transferability import _groundtruth as G

    arrays = {
        "chosen": np.array([1, 0]),
        "test_correct": np.array([[True, False], [True, True]]),
        "val_loss": np.array([[0.5, 0.4], [0.3, 0.6]]),
    }
    blob = G.arrays_bytes(arrays)
    assert blob == G.arrays_bytes(dict(reversed(list(arrays.items()))))  # order-free bytes
    prov = G._write(tmp_path, "z-t", arrays, {"name": "z-t", "key": "k"})
    back = G._read(tmp_path / "z-t.npz", prov)
    for k, v in arrays.items():
        np.testing.assert_array_equal(back[k], v)
        assert back[k].dtype == v.dtype
    assert [p["name"] for p in G.verify(tmp_path)] == ["z-t"]
    bad = bytearray(blob)
    bad[len(bad) // 2] ^= 1
    (tmp_path / "z-t.npz").write_bytes(bytes(bad))
    with pytest.raises(ChecksumError, match="SHA-256"):
        G.verify(tmp_path)
