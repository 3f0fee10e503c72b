"""``mdlnb.Protocol``: the presets pinned to the paper's tables value by value, one
default for fixed share everywhere, and every entry point (``evaluate``,
``prequential.run``, the CLI, the cache, ``Report``) honouring and recording it."""

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

import mdlnb
from mdlnb import prequential, switching
from mdlnb.board import readouts
from mdlnb.board.experts import Expert
from mdlnb.tools import cli

N, D, C, B = 120, 5, 3, 16  # one shape and board for most runs: stage 1 compiles few times


@pytest.fixture(autouse=True, scope="module")
def _cache(tmp_path_factory):
    """A private cache: repeated identical stage-1 runs below are cache hits."""
    mp = pytest.MonkeyPatch()
    mp.setenv("MDLNB_CACHE", str(tmp_path_factory.mktemp("cache")))
    yield
    mp.undo()


def _task(n=N, name="toy"):
    rng = np.random.default_rng(0)
    y = rng.integers(0, C, n)
    x = (rng.normal(size=(C, D)) * 3)[y] + rng.normal(size=(n, D))
    return mdlnb.Task(name, x.astype(np.float32), y, C)


def _small():
    return [Expert(readouts.linear(), 1e-2, replay_streams=2)]


# ----------------------------------------------------------------- presets


def test_paper_vtab_is_table6_and_app_a51():
    p = mdlnb.protocol("paper-vtab")
    assert p.batch_size == 32  # App. A.5.1
    assert isinstance(p.strategy, switching.FixedShare) and p.m == 11.0  # alpha_t = 10/t
    assert p.standardize == "none" and p.clip is None  # the paper does not standardise
    board = p.experts()
    assert len(board) == 8 * 4 * 4 * 3 * 4 * 3 == 4608  # Table 6
    assert sorted({e.learning_rate for e in board}) == [1e-4, 3e-4, 1e-3, 3e-3]
    assert sorted({e.replay_streams for e in board}) == [3, 10, 30, 100]
    assert sorted({e.readout.hidden_layers for e in board}) == list(range(8))


def test_paper_imagenet_is_table9_and_app_a52():
    p = mdlnb.protocol("paper-imagenet")
    assert p.batch_size == 512  # Table 9
    assert p.m == 2.0  # alpha_t = 1/t
    assert p.standardize == "none" and p.clip is None
    board = p.experts()
    assert len(board) == 4 * 3 * 4 * 2 * 2 * 2 == 384
    assert sorted({e.learning_rate for e in board}) == [3e-5, 1e-4, 3e-4, 1e-3]
    assert sorted({e.replay_streams for e in board}) == [10, 30, 50]
    assert sorted({e.b1 for e in board}) == [0.5, 0.7]


def _docs_table() -> dict[str, tuple]:
    """docs/protocols.md's table of presets, as (board, B, m, standardize, clip, K) rows."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "protocols.md").read_text()
    table = text[text.index("| protocol | entry points |") :].split("\n\n")[0]
    rows = {}
    for line in table.splitlines()[2:]:
        name, _, board, b, strategy, std = [c.strip() for c in line.strip("|").split("|")]
        board_name, k = re.match(r"`([\w-]+)` \(([\d,]+)\)", board).groups()
        m = float(re.match(r"fixed share, m = (\d+)", strategy)[1])
        clip = re.fullmatch(r"`(\w+)`(?:, clip ±(\d+))?", std)
        rows[name.strip("`")] = (
            board_name,
            int(b),
            m,
            clip[1],
            float(clip[2]) if clip[2] else None,
            int(k.replace(",", "")),
        )
    return rows


def test_default_table():
    """docs/protocols.md's table of presets, one row per protocol, read from the page."""
    rows = {
        n: (p.board, p.batch_size, p.m, p.standardize, p.clip, len(p.experts()))
        for n in mdlnb.board._protocol.names()
        for p in [mdlnb.protocol(n)]
    }
    assert rows == {
        "default": ("default", 32, 2.0, "prefix", 10.0, 40),
        "deep": ("deep", 32, 2.0, "prefix", 10.0, 50),
        "small": ("small", 32, 2.0, "prefix", 10.0, 4),
        "paper-vtab": ("vtab", 32, 11.0, "none", None, 4608),
        "paper-imagenet": ("imagenet", 512, 2.0, "none", None, 384),
    }
    assert _docs_table() == rows


def test_one_fixed_share_default_everywhere():
    m = mdlnb.protocol("default").m
    assert switching.FixedShare().m == m == switching.DEFAULT_M == mdlnb.api.evaluation.DEFAULT_M
    L = np.random.default_rng(1).exponential(size=(64, 5)).astype(np.float32)
    want = switching.codelength(L, switching.FixedShare(m=m)).total_nats
    assert switching.codelength(L).total_nats == want
    assert switching.codelength_chunked([L[:40], L[40:]]).total_nats == pytest.approx(
        want, rel=1e-6
    )
    # and it is not the other paper setting: the comparison is not vacuous
    assert switching.codelength(L, switching.FixedShare(m=11)).total_nats != want


def test_repr_dict_roundtrip_and_replace():
    p = mdlnb.protocol("default")
    assert repr(p) == (
        "Protocol('default', board='default', batch_size=32, "
        "strategy=FixedShare(m=2), standardize='prefix (clip ±10)', seed=0)"
    )
    for q in (
        p,
        mdlnb.protocol("paper-imagenet"),
        mdlnb.Protocol(
            board=_small(), strategy="bayes", standardize=False, seed=3, replay_streams=1
        ),
    ):
        d = json.loads(json.dumps(q.to_dict()))
        assert mdlnb.Protocol.from_dict(d) == q
    q = p.replace(batch_size=64)
    assert q.name == "default (modified)" and q.batch_size == 64
    assert p.resolve(batch_size=None, seed=None) is p
    assert mdlnb.protocol("paper-vtab", standardize="prefix").clip == 10.0  # prefix brings its clip
    assert mdlnb.Protocol.preset("small") == mdlnb.protocol("small")


@pytest.mark.parametrize(
    "kwargs, arg",
    [
        (dict(name="nope"), "protocol"),
        (dict(name="default", standardize="zscore"), "standardize"),
        (dict(name="default", batch_size=0), "batch_size"),
        (dict(name="default", board="nope"), "board"),
        (dict(name="default", board=["linear"]), "board"),
        (dict(name="default", seed=-1), "seed"),
        (dict(name="default", clip=-1.0), "clip"),
        (dict(name="default", strategy="nope"), "strategy"),
    ],
)
def test_bad_fields_name_the_argument(kwargs, arg):
    with pytest.raises(ValueError, match=arg):
        mdlnb.protocol(kwargs.pop("name"), **kwargs)


def test_one_resolution_and_one_strategy_label():
    """evaluate, compare, prequential.run and the studies resolve a protocol with one
    function; the old public name warns and gives the same; a strategy prints one way."""
    from mdlnb.board._arguments import resolve_protocol

    p = resolve_protocol({"experts": "small", "m": 11}, None, batch_size=8, seed=None)
    assert (p.board, p.batch_size, p.strategy.m, p.name) == ("small", 8, 11.0, "default (modified)")
    q = resolve_protocol("small", _small(), strategy="bayes", standardize="none")
    assert (len(q.experts()), type(q.strategy).__name__, q.clip) == (1, "BayesianMixture", None)
    assert resolve_protocol("default", m=3).strategy == switching.FixedShare(m=3)
    with pytest.raises(ValueError, match="m: the protocol's strategy BayesianMixture has no m"):
        resolve_protocol({"strategy": "bayes"}, m=3)
    with pytest.raises(ValueError, match="experts: must contain"):
        resolve_protocol("small", [])
    with pytest.raises(ValueError, match="^protocol: expected None, a preset name"):
        resolve_protocol(3)
    with pytest.warns(DeprecationWarning, match="prequential.resolve_protocol"):
        old = prequential.resolve_protocol("small", None, batch_size=8)
    assert old == resolve_protocol("small", batch_size=8)
    s = switching.FixedShare(m=3, weights=(0.5, 0.5))
    label = "FixedShare(m=3, weights=(0.5, 0.5))"
    assert repr(s) == s.label == mdlnb.api.evaluation.strategy_label(s) == label
    assert f"strategy={label}" in repr(mdlnb.protocol("small", strategy=s))


# ----------------------------------------------------------------- entry points


def test_prequential_run_honours_the_protocol_and_arguments_override_it():
    task = _task()
    p = mdlnb.Protocol(board=_small(), batch_size=B, seed=2)
    lm = prequential.run(task, protocol=p, cache=False)
    assert (lm.batch_size, lm.seed, lm.protocol) == (B, 2, p)
    assert np.all(lm.losses[:B] == np.float32(math.log(C)))  # the first batch is B = 16
    assert not np.all(lm.losses[B : 2 * B] == np.float32(math.log(C)))
    same = prequential.run(task, _small(), B, 2, cache=False)
    np.testing.assert_array_equal(same.losses, lm.losses)
    over = prequential.run(task, protocol=p, seed=3, cache=False)
    assert over.seed == 3 and over.protocol.seed == 3 and over.protocol.batch_size == B
    assert not np.array_equal(over.order, lm.order)


def test_preset_batch_size_is_applied():
    """``paper-imagenet`` runs B = 512: the first 512 examples are coded uniformly."""
    task = _task(n=600)
    rep = mdlnb.evaluate(task, experts=_small(), protocol="paper-imagenet", cache=False)
    assert rep.losses.batch_size == 512 and rep.protocol.batch_size == 512
    assert np.all(rep.losses.losses[:512] == np.float32(math.log(C)))
    assert rep.losses.losses[512:].mean() < 0.9 * math.log(C)


def test_cache_key_holds_the_stage1_protocol(tmp_path, monkeypatch):
    monkeypatch.setenv("MDLNB_CACHE", str(tmp_path))
    task = _task(name="keys")
    key = lambda **kw: prequential.run(
        task,
        protocol=mdlnb.Protocol(  # noqa: E731
            board=_small(), batch_size=B, **kw
        ),
    ).meta["cache_key"]
    base = key()
    assert key(standardize="none") != base
    assert key(seed=1) != base
    assert key(replay_streams=1) != base
    assert key(strategy="bayes") == base  # stage 2 only: the same loss matrix
    files = list((tmp_path / "losses").glob("*.npz"))
    assert len(files) == 4
    lm = prequential.LossMatrix.load(files[0])
    assert isinstance(lm.protocol, mdlnb.Protocol) and lm.protocol.batch_size == B


def test_report_records_the_protocol_and_evaluate_accepts_x_y():
    task = _task()
    rep = mdlnb.evaluate(task.x, task.y, experts=_small(), protocol="small", batch_size=B, m=5)
    assert rep.protocol.name == "small (modified)"
    assert rep.protocol.m == 5.0 and rep.strategy == switching.FixedShare(m=5)
    assert rep.protocol.experts() == _small() and rep.protocol.batch_size == B
    direct = switching.codelength(rep.losses.losses, switching.FixedShare(m=5)).total_nats
    assert rep.total_nats == pytest.approx(direct, rel=1e-12)
    tup = mdlnb.evaluate((task.x, task.y), experts=_small(), protocol="small", batch_size=B, m=5)
    assert tup.total_nats == rep.total_nats
    bayes = rep.with_strategy("bayes")
    assert isinstance(bayes.protocol.strategy, switching.BayesianMixture)
    # a loss matrix scored again uses its protocol's strategy by default
    again = mdlnb.Report.from_losses(rep.losses)
    assert again.strategy == switching.FixedShare(m=5)


def test_cli_evaluate_takes_a_protocol(tmp_path, capsys):
    task = _task()
    path = tmp_path / "f.npz"
    np.savez(path, x=task.x, y=task.y)
    code = cli.main(
        [
            "evaluate",
            str(path),
            "--protocol",
            "small",
            "--batch-size",
            "16",
            "--standardize",
            "none",
            "--m",
            "3",
            "--quiet",
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert (
        "Protocol('small (modified)', board='small', batch_size=16, "
        "strategy=FixedShare(m=3), standardize='none', seed=0)" in out
    )
    rep = mdlnb.evaluate((task.x, task.y), protocol="small", batch_size=16, standardize="none", m=3)
    assert f"{rep.total_nats:,.1f} nats" in out
    with pytest.raises(SystemExit):
        cli.main(["evaluate", str(path), "--protocol", "nope"])


def test_cli_switch_without_m_uses_the_default_protocols_m(tmp_path, capsys):
    L = np.random.default_rng(2).exponential(size=(80, 4)).astype(np.float32)
    np.savez(tmp_path / "L.npz", losses=L)
    assert cli.main(["switch", str(tmp_path / "L.npz")]) == 0
    line = next(s for s in capsys.readouterr().out.splitlines() if s.startswith("codelength"))
    want = switching.codelength(L, switching.FixedShare(m=mdlnb.protocol("default").m)).total_nats
    assert float(line.split()[1]) == pytest.approx(want, abs=1e-6)
