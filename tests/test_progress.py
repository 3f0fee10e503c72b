"""mdlnb.infra._progress: tqdm where a person watches, one summary line in batch mode."""

from __future__ import annotations

import ast
import io
import re
import sys
import warnings
from pathlib import Path

import pytest
from tqdm import std

from mdlnb.infra import _progress


@pytest.fixture
def batch(monkeypatch):
    monkeypatch.setenv(_progress.ENV, "0")


@pytest.mark.parametrize(
    "value,on",
    [("0", False), ("false", False), ("OFF", False), ("no", False), ("1", True), ("yes", True)],
)
def test_enabled_reads_the_environment(monkeypatch, value, on):
    monkeypatch.setenv(_progress.ENV, value)
    assert _progress.enabled() is on
    monkeypatch.delenv(_progress.ENV)
    assert _progress.enabled()


def test_batch_mode_iterates_everything_and_prints_one_line(batch, capsys):
    items = list(_progress.bar(range(5), desc="features", unit="pair"))
    assert items == [0, 1, 2, 3, 4]
    out, err = capsys.readouterr()
    assert err == ""
    assert re.fullmatch(r"features: 5/5 pair in \d+\.\d s\n", out)


def test_batch_mode_manual_updates_postfix_and_resumed_count(batch, capsys):
    b = _progress.bar(total=10, initial=3, desc="pairs", unit="pair")
    b.update(2)
    b.update()
    b.set_postfix(loss="0.1234")
    b.close()
    b.close()  # closing twice prints once
    with _progress.bar(total=4, desc="truth") as b2:
        b2.set_postfix_str("best 0.5 bits/ex")
        b2.update(4)
    _progress.bar(total=3, desc="prequential", leave=False).close()  # transient: silent
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    assert re.fullmatch(r"pairs: 6/10 pair \(3 done before\) in \d+\.\d s; loss=0\.1234", lines[0])
    assert re.fullmatch(r"truth: 4/4 it in \d+\.\d s; best 0\.5 bits/ex", lines[1])


def test_interactive_mode_is_tqdm(monkeypatch):
    monkeypatch.delenv(_progress.ENV, raising=False)
    b = _progress.bar(range(3), desc="x", unit="pair")
    try:
        assert isinstance(b, std.tqdm) and b.total == 3 and b.desc == "x"
        assert list(b) == [0, 1, 2] and b.n == 3
    finally:
        b.close()


def test_kernel_without_ipywidgets_gets_a_text_bar_without_warning(monkeypatch):
    monkeypatch.setattr(_progress, "_in_kernel", lambda: True)
    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # import fails
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _progress.tqdm_class() is std.tqdm


def test_kernel_with_ipywidgets_gets_the_widget_bar(monkeypatch):
    pytest.importorskip("ipywidgets", reason="ipywidgets (the lab extra) not installed")
    from tqdm import notebook

    monkeypatch.setattr(_progress, "_in_kernel", lambda: True)
    assert _progress.tqdm_class() is notebook.tqdm
    monkeypatch.setattr(_progress, "_in_kernel", lambda: False)
    assert _progress.tqdm_class() is std.tqdm


def test_no_module_draws_tqdm_bars_itself():
    """Every progress bar of the package goes through mdlnb.infra._progress (so the
    runner's batch mode reaches all of them)."""
    root = Path(_progress.__file__).parent
    offenders = []
    for path in root.rglob("*.py"):
        if path.name == "_progress.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if any(n.split(".")[0] == "tqdm" for n in names):
                offenders.append(f"{path.relative_to(root)}:{node.lineno}")
    assert not offenders, f"import tqdm directly (use mdlnb.infra._progress.bar): {offenders}"


def test_one_progress_rule_none_is_auto(monkeypatch):
    """progress=None (the default of evaluate, compare, prequential.run and the studies):
    a bar only when a person watches and the run is long; True/False as given."""
    monkeypatch.setattr(_progress, "_in_kernel", lambda: False)
    monkeypatch.setattr(_progress.sys, "stdout", io.StringIO())  # not a terminal
    assert not _progress.interactive()
    assert _progress.wanted(None) is False and _progress.wanted(True) is True
    monkeypatch.setattr(_progress, "_in_kernel", lambda: True)  # a notebook
    assert _progress.interactive()
    assert _progress.wanted(None) is True and _progress.wanted(None, long=False) is False
    assert _progress.wanted(False) is False


def test_entry_points_share_the_default():
    import inspect

    import mdlnb
    from mdlnb.studies import layers, pretraining
    from mdlnb.studies.encoder_grid import run as enc_run
    from mdlnb.studies.encoder_grid._run import run_pairs
    from mdlnb.studies.transferability import run as tr_run

    for fn in (
        mdlnb.evaluate,
        mdlnb.compare,
        mdlnb.prequential.run,
        enc_run,
        tr_run,
        layers.run,
        pretraining.run,
        run_pairs,
    ):
        assert inspect.signature(fn).parameters["progress"].default is None, fn


def test_pretraining_command_line_still_prints_its_lines(monkeypatch):
    """``python -m mdlnb.studies.pretraining train`` (``make pretrain``, often into a log
    file, where ``None`` would print nothing) asks for its per-evaluation lines."""
    from mdlnb.studies import pretraining
    from mdlnb.studies.pretraining import __main__ as cli

    seen = {}
    monkeypatch.setattr(pretraining, "run", lambda **kw: seen.update(kw) or [])
    assert cli.main(["train", "--only", "simclr:vit_S"]) == 0
    assert seen["progress"] is True and seen["only"] == ["simclr:vit_S"]


def test_run_pairs_none_follows_the_one_rule(monkeypatch, capsys):
    """The encoder study's pair loop: ``None`` draws nothing where no one watches,
    a summary line in batch mode inside a kernel (papermill)."""
    from mdlnb.studies.encoder_grid import _run as enc

    monkeypatch.setattr(enc, "_work", lambda *a: {"value": 1})
    monkeypatch.setattr(enc, "pair_key", lambda *a: "k")
    fs = [
        type("FS", (), dict(encoder=f"e{i}", task="t", train=None, test=None))() for i in range(2)
    ]
    cfg = type("Cfg", (), {"workers": 1})()
    monkeypatch.setattr(_progress, "_in_kernel", lambda: False)
    monkeypatch.setattr(_progress.sys, "stdout", io.StringIO())  # not a terminal
    assert len(enc.run_pairs(fs, cfg, cache=False)) == 2
    assert _progress.sys.stdout.getvalue() == ""
    monkeypatch.setattr(_progress, "_in_kernel", lambda: True)  # papermill's kernel
    monkeypatch.setenv(_progress.ENV, "0")
    enc.run_pairs(fs, cfg, cache=False)
    assert "encoder × task pairs: 2/2 pair" in _progress.sys.stdout.getvalue()
