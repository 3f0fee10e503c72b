"""Cache management: location, size per kind, clearing (all, by kind, by date), CLI."""

import datetime as dt
import os

import numpy as np
import pytest

import mdlnb
from mdlnb import prequential
from mdlnb.board import readouts
from mdlnb.board.experts import Expert
from mdlnb.infra import _io
from mdlnb.prequential import _program
from mdlnb.tools import cache, cli

OLD = dt.datetime(2026, 1, 10, 12, 0).timestamp()
NEW = dt.datetime(2026, 3, 1, 12, 0).timestamp()


@pytest.fixture
def filled(monkeypatch, tmp_path):
    """A cache with 2 loss entries (old, new), 1 feature entry (old), 1 data entry (new),
    a write in flight and a held lock."""
    root = tmp_path / "cache"
    monkeypatch.setenv("MDLNB_CACHE", str(root))
    made = {}
    for kind, name, size, when in [
        ("losses", "a.npz", 100, OLD),
        ("losses", "b.npz", 3000, NEW),
        ("features", "f.npz", 20000, OLD),
        ("data", "d.npz", 10, NEW),
    ]:
        path = _io.atomic_savez(_io.cache_dir(kind) / name, x=np.zeros(size))
        os.utime(path, (when, when))
        made[(kind, name)] = os.path.getsize(path)
    (root / "losses" / ".b.npz.abc123.tmp").write_bytes(b"partial")  # a writer in flight
    (root / "losses" / ".c.npz.lock").write_bytes(b"")
    return root, made


def test_location_follows_the_environment(filled):
    root, _ = filled
    assert cache.location() == root


def test_usage_per_kind(filled):
    _, made = filled
    u = cache.usage().set_index("kind")
    assert u.loc["losses", "files"] == 2
    assert u.loc["losses", "bytes"] == made[("losses", "a.npz")] + made[("losses", "b.npz")]
    assert u.loc["features", "bytes"] == made[("features", "f.npz")] > 20000 * 8
    assert u.loc["data", "files"] == 1 and u.loc["checkpoints", "files"] == 0
    assert u.loc["losses", "oldest"] == dt.datetime.fromtimestamp(OLD)
    assert u.loc["losses", "newest"] == dt.datetime.fromtimestamp(NEW)
    assert list(cache.usage("features").kind) == ["features"]


def test_clear_by_kind_and_date(filled):
    root, made = filled
    gone = cache.clear(older_than="2026-02-01")
    assert sorted((e.kind, e.path.name) for e in gone) == [
        ("features", "f.npz"),
        ("losses", "a.npz"),
    ]
    assert sum(e.bytes for e in gone) == made[("features", "f.npz")] + made[("losses", "a.npz")]
    assert (root / "losses" / "b.npz").exists() and (root / "data" / "d.npz").exists()
    gone = cache.clear("losses")
    assert [e.path.name for e in gone] == ["b.npz"]
    assert (root / "data" / "d.npz").exists()
    assert (root / "losses" / ".b.npz.abc123.tmp").exists()  # in-flight writes untouched
    assert (root / "losses" / ".c.npz.lock").exists()
    assert [e.path.name for e in cache.clear()] == ["d.npz"]
    assert cache.entries() == []


def test_bad_arguments_name_themselves(filled):
    with pytest.raises(ValueError, match="kind: unknown cache kind 'nope'"):
        cache.usage("nope")
    with pytest.raises(ValueError, match="older_than: expected a date"):
        cache.clear(older_than="last week")
    assert cache.entries(older_than=dt.date(2026, 1, 1)) == []
    assert len(cache.entries(older_than=dt.datetime(2026, 1, 11))) == 2


def test_cli_lists_and_clears(filled, capsys):
    _, made = filled
    assert cli.main(["cache"]) == 0
    out = capsys.readouterr().out
    assert str(cache.location()) in out
    losses = made[("losses", "a.npz")] + made[("losses", "b.npz")]
    assert f"losses            2 files {cache.human_bytes(losses):>11}" in out
    assert cli.main(["cache", "--clear", "--kind", "features"]) == 0
    assert (
        f"removed 1 entries ({cache.human_bytes(made[('features', 'f.npz')])})"
        in capsys.readouterr().out
    )
    assert cli.main(["cache", "--clear", "--older-than", "2026-02-01"]) == 0
    assert "removed 1 entries" in capsys.readouterr().out  # losses/a.npz
    assert cli.main(["cache", "--kind", "nope"]) == 2
    assert "kind: unknown cache kind" in capsys.readouterr().err


def test_human_bytes():
    assert [cache.human_bytes(n) for n in (0, 1023, 1536, 5 * 2**20, 3 * 2**40)] == [
        "0 B",
        "1023 B",
        "1.5 KiB",
        "5.0 MiB",
        "3.0 TiB",
    ]


def test_cleared_loss_matrix_is_recomputed(monkeypatch, tmp_path):
    """A real stage-1 entry shows up under 'losses'; after --clear it is computed again."""
    monkeypatch.setenv("MDLNB_CACHE", str(tmp_path))
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 3)).astype(np.float32)
    task = mdlnb.Task.from_arrays(x, (x[:, 0] > 0).astype(int), name="toy")
    board = [Expert(readouts.linear(), 1e-2, replay_streams=1)]
    first = prequential.run(task, board, batch_size=16)
    assert cache.usage("losses").files.item() == 1
    calls = []
    original = _program._run_chunk
    monkeypatch.setattr(
        _program, "_run_chunk", lambda *a, **k: calls.append(1) or original(*a, **k)
    )
    prequential.run(task, board, batch_size=16)
    assert calls == []  # a hit: nothing ran
    assert cli.main(["cache", "--clear", "--kind", "losses"]) == 0
    again = prequential.run(task, board, batch_size=16)
    assert calls  # computed again
    np.testing.assert_array_equal(again.losses, first.losses)
    assert cache.usage("losses").files.item() == 1
