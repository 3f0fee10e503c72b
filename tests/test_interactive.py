"""What a person running the notebooks by hand sees (issue 25), without a browser:
the parameters cell's profile applied, writes under build/lab, a progress widget for
a run longer than a few seconds, a report's warning as one line on standard output,
the memory plan on standard output, the HTML title, no TCP warning from batch runs.
(tests/test_lab.py opens JupyterLab itself.)"""

from __future__ import annotations

import importlib.util
import os
import warnings

import nbformat
import pytest

from mdlnb.infra import _warnings
from mdlnb.tools import runner
from mdlnb.tools.runner import _notebooks

ROOT = runner.ROOT


def _defaults(name: str) -> dict:
    """The namespace after the parameters cell of notebook ``name`` ran unchanged."""
    ns: dict = {}
    cell = next(
        c
        for c in __import__("jupytext").read(runner.notebook_dir() / f"{name}.py").cells
        if "parameters" in c.metadata.get("tags", [])
    )
    exec(cell.source, ns)
    ns.pop("__builtins__")
    return ns


@pytest.fixture
def by_hand(monkeypatch):
    monkeypatch.delenv(runner.RUNNER_ENV, raising=False)


def test_smoke_profile_in_the_parameters_cell_applies_its_overrides(by_hand, capsys):
    ns = {**_defaults("quickstart"), "profile": "smoke"}
    runner.interactive_profile(ns, "quickstart")
    smoke = _notebooks._profile_table()["quickstart"]["smoke"]
    assert (
        (ns["size"], ns["protocol"], ns["blockwise_epochs"])
        == (smoke["size"], smoke["protocol"], smoke["blockwise_epochs"])
        == (300, "small", 5)
    )
    assert ns["task_name"] == "digits" and ns["seed"] == 0  # not in the profile
    assert ns["paper_dir"] == str(ROOT / "build" / "lab" / "paper")  # never paper/
    out = capsys.readouterr().out
    assert out == (
        "interactive run of quickstart, profile 'smoke': size=300, "
        "protocol='small', blockwise_epochs=5; writing to build/lab/paper\n"
    )


def test_values_edited_in_the_cell_win_over_the_profile(by_hand):
    ns = {**_defaults("quickstart"), "profile": "smoke", "size": 500, "paper_dir": "build/mine"}
    runner.interactive_profile(ns, "quickstart")
    assert ns["size"] == 500 and ns["protocol"] == "small"
    assert ns["paper_dir"] == str(ROOT / "build" / "mine")  # from the repository root
    # a study notebook: the profile's overrides, a field set in the cell on top
    ns = {**_defaults("objectives"), "profile": "smoke", "overrides": {"workers": 2}}
    runner.interactive_profile(ns, "objectives")
    smoke = _notebooks._profile_table()["objectives"]["smoke"]
    assert ns["overrides"] == {**smoke["overrides"], "workers": 2}
    assert ns["size"] == "XS"


def test_default_profile_changes_only_where_it_writes(by_hand, capsys):
    ns = _defaults("parity_toy")
    before = dict(ns)
    runner.interactive_profile(ns, "parity_toy")
    assert {k: v for k, v in ns.items() if k != "paper_dir"} == {
        k: v for k, v in before.items() if k != "paper_dir"
    }
    assert ns["paper_dir"].endswith("build/lab/paper")
    assert "(the parameters cell as it is)" in capsys.readouterr().out


def test_a_bad_profile_is_an_error_naming_it(by_hand):
    with pytest.raises(ValueError, match="profile"):
        runner.interactive_profile({**_defaults("quickstart"), "profile": "fast"}, "quickstart")


def test_under_the_runner_it_does_nothing(monkeypatch, capsys):
    monkeypatch.setenv(runner.RUNNER_ENV, "1")
    ns = {**_defaults("quickstart"), "profile": "smoke"}
    before = dict(ns)
    runner.interactive_profile(ns, "quickstart")
    assert ns == before and capsys.readouterr().out == ""


def test_every_notebook_calls_it_right_after_its_parameters_cell():
    import jupytext

    for name in runner.available():
        cells = jupytext.read(runner.notebook_dir() / f"{name}.py").cells
        i = next(i for i, c in enumerate(cells) if "parameters" in c.metadata.get("tags", []))
        assert f'runner.interactive_profile(globals(), "{name}")' in cells[i + 1].source, name


def test_html_title_is_the_first_heading(tmp_path):
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("1"),
            nbformat.v4.new_markdown_cell("Intro\n\n# The `parity` toy: **why**\n\n## later"),
        ]
    )
    path = tmp_path / "x.ipynb"
    nbformat.write(nb, path)
    assert runner.notebook_title(nb) == "The parity toy: why"
    assert "<title>The parity toy: why</title>" in runner.to_html(path).read_text()


def test_report_warning_is_one_line_without_a_source_path(capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        _warnings.install()
        warnings.warn("best expert sits on the edge", _warnings.ResultWarning, stacklevel=1)
    err = capsys.readouterr().err
    assert err == "warning: best expert sits on the edge\n"  # not in a kernel: stderr
    with pytest.warns(UserWarning, match="edge"):  # still a UserWarning
        warnings.warn("edge", _warnings.ResultWarning, stacklevel=1)


def test_memory_plan_line_goes_to_standard_output(capsys):
    from mdlnb.board import experts
    from mdlnb.prequential import _memory, _slicing

    board = experts.preset("small")
    plan = _memory.plan(board, 300, 64, 10)
    meta = _slicing.announce(plan, True, 300)
    out, err = capsys.readouterr()
    assert out == meta["line"] + "\n" and err == ""


_KERNEL_CODE = """
import os, warnings
os.environ.pop("MDLNB_PROGRESS", None)
import mdlnb
from mdlnb.infra import _progress
_progress.AUTO_DELAY_S = {delay}
task = mdlnb.data.load("digits", size={size}, seed=0)
rep = mdlnb.evaluate(task, protocol="small", cache=False)
print("done", round(rep.total_nats, 3))
"""


def _run_in_kernel(code: str, tmp_path, *more: str) -> list:
    """Run ``code`` (and each of ``more``, as later cells) in a fresh kernel; the first
    cell's outputs (a list of lists, one per cell, when ``more`` is given)."""
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in (code, *more)])
    env = {k: v for k, v in os.environ.items() if k not in ("MDLNB_PROGRESS", runner.RUNNER_ENV)}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    old = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        NotebookClient(
            nb, kernel_name="python3", timeout=240, resources={"metadata": {"path": str(tmp_path)}}
        ).execute()
    finally:
        os.environ.clear()
        os.environ.update(old)
    return [c.outputs for c in nb.cells] if more else nb.cells[0].outputs


_ONCE_CELLS = (
    """
import os, warnings
os.environ["MDLNB_PROGRESS"] = "0"
import mdlnb
task = mdlnb.data.load("digits", size=300, seed=0)
rep = mdlnb.evaluate(task, protocol="small")
print(rep)
""",
    """
rep2 = mdlnb.evaluate(task, protocol="small", seed=1)
print("coded", round(rep2.total_nats, 1))
""",
    """
from sklearn.decomposition import PCA
cmp = mdlnb.compare({"pixels": task.x.reshape(300, -1),
                     "pca8": PCA(8, random_state=0).fit_transform(task.x.reshape(300, -1))},
                    task, protocol="small", progress=False)
print(cmp)
""",
)


@pytest.mark.slow
def test_in_a_kernel_each_warning_is_printed_once(tmp_path):
    """A report printed in the cell that computed it shows its warning once (in the
    report, not again as a Python warning); a report not printed shows it once, after the
    cell's output; a comparison printed likewise — stdout only, no stderr."""
    cells = _run_in_kernel(_ONCE_CELLS[0], tmp_path, *_ONCE_CELLS[1:])
    texts = [
        "".join(o.get("text", "") for o in outs if o["output_type"] == "stream") for outs in cells
    ]
    assert not [
        o for outs in cells for o in outs if o["output_type"] == "stream" and o["name"] == "stderr"
    ]
    edge = "only two values of learning_rate"
    assert texts[0].count(edge) == 1 and "  warning        : best expert" in texts[0]
    assert texts[1].count(edge) == 1
    assert texts[1].index("coded") < texts[1].index("warning: best expert")  # after the output
    assert texts[2].count(edge) == texts[2].count("  warning: best expert") >= 1
    assert "warning: compare:" not in texts[2]


@pytest.mark.slow
def test_in_a_kernel_a_long_run_shows_a_widget_bar_and_the_warning_as_output(tmp_path):
    """progress=None in a notebook kernel: a long stage 1 draws tqdm's widget (the lab
    extra's ipywidgets); the report's grid-edge warning is one stdout line, no
    stderr at all; a run shorter than the delay draws nothing."""
    if importlib.util.find_spec("ipywidgets") is None:
        pytest.skip("ipywidgets (the lab extra) is not installed")
    outs = _run_in_kernel(_KERNEL_CODE.format(delay=0.2, size=600), tmp_path)
    kinds = [(o["output_type"], o.get("name")) for o in outs]
    assert ("stream", "stderr") not in kinds, [o.get("text") for o in outs]
    widgets = [
        o
        for o in outs
        if o["output_type"] == "display_data"
        and "application/vnd.jupyter.widget-view+json" in o["data"]
    ]
    assert widgets, kinds
    text = "".join(o.get("text", "") for o in outs if o["output_type"] == "stream")
    assert "warning: best expert" in text and "evaluation.py" not in text
    assert text.count("warning: best expert") == 1
    outs = _run_in_kernel(_KERNEL_CODE.format(delay=600, size=100), tmp_path)
    assert not [o for o in outs if o["output_type"] == "display_data"]


def test_batch_runs_do_not_print_the_tcp_warning(tmp_path, monkeypatch, capfd):
    nbs = tmp_path / "nbs"
    nbs.mkdir()
    (nbs / "toy.py").write_text(
        '# %% tags=["parameters"]\nprofile = "default"\n\n'
        '# %%\nimport os\nprint("runner:", os.environ.get("MDLNB_RUNNER"))\n'
    )
    monkeypatch.setattr(_notebooks, "notebook_dir", lambda: nbs)
    out = runner.run("toy", "default", out_dir=tmp_path / "out")
    captured = capfd.readouterr()
    assert "TCP" not in captured.err + captured.out
    text = nbformat.read(out, as_version=4).cells[-1].outputs[0]["text"]
    assert text == "runner: 1\n"
    assert not [p for p in os.listdir(tmp_path) if "kernel-" in p]


# ---- the parameters cell as the kernel ran it (issue 41) -----------------------------


def _cell(name: str, edit=lambda s: s) -> str:
    cell = next(
        c
        for c in __import__("jupytext").read(runner.notebook_dir() / f"{name}.py").cells
        if "parameters" in c.metadata.get("tags", [])
    )
    return edit(cell.source)


def test_a_misspelled_parameter_fails_at_once_naming_it(by_hand):
    src = _cell("quickstart", lambda s: s + "\nblockwise_epoch = 5\n")
    ns: dict = {}
    exec(src, ns)
    with pytest.raises(
        ValueError,
        match=r"'blockwise_epoch' is not a parameter of quickstart "
        r"\(did you mean 'blockwise_epochs'\?\)",
    ):
        runner.interactive_profile(ns, "quickstart", cell=src)


def test_a_wrong_type_in_the_cell_fails_naming_the_parameter(by_hand):
    src = _cell("quickstart", lambda s: s.replace("size: int | None = None", 'size = "300"'))
    ns: dict = {}
    exec(src, ns)
    with pytest.raises(
        ValueError,
        match=r"size = '300' is a str, but quickstart's size takes "
        r"int \| None \(its annotation\)",
    ):
        runner.interactive_profile(ns, "quickstart", cell=src)


def test_the_values_of_the_cell_that_ran_win_whatever_the_file_says(by_hand, capsys):
    """`profile = "smoke"` with `size = 500` typed in the cell: N = 500, the smoke profile
    for the rest — the file on disk is not read for the values."""
    src = _cell(
        "quickstart",
        lambda s: s.replace('profile = "default"', 'profile = "smoke"').replace(
            "size: int | None = None", "size = 500"
        ),
    )
    ns: dict = {}
    exec(src, ns)
    runner.interactive_profile(ns, "quickstart", cell=src)
    assert ns["size"] == 500 and ns["protocol"] == "small" and ns["blockwise_epochs"] == 5
    assert "size=" not in capsys.readouterr().out.split(";")[0].split(":", 1)[1]


_KERNEL_NOTEBOOK_CELLS = (
    "%s\n",
    'from mdlnb.tools import runner\nrunner.interactive_profile(globals(), "quickstart")\n'
    'print("size", size, "protocol", protocol)\n',
)


@pytest.mark.slow
def test_in_a_kernel_the_profile_reads_the_cell_as_run_not_the_file(tmp_path):
    """In a kernel (the cells as JupyterLab sends them, the file on disk untouched): the
    edited size is used, and a misspelling fails in the profile cell, naming it."""
    edited = _cell(
        "quickstart",
        lambda s: s.replace('profile = "default"', 'profile = "smoke"').replace(
            "size: int | None = None", "size = 500"
        ),
    )
    outs = _run_in_kernel(_KERNEL_NOTEBOOK_CELLS[0] % edited, tmp_path, _KERNEL_NOTEBOOK_CELLS[1])
    text = "".join(o.get("text", "") for o in outs[1] if o["output_type"] == "stream")
    assert "size 500 protocol small" in text
    typo = edited + "\nblockwise_epoch = 5\n"
    from nbclient.exceptions import CellExecutionError

    with pytest.raises(CellExecutionError, match="'blockwise_epoch' is not a parameter"):
        _run_in_kernel(_KERNEL_NOTEBOOK_CELLS[0] % typo, tmp_path, _KERNEL_NOTEBOOK_CELLS[1])


@pytest.mark.slow
def test_in_a_kernel_a_study_cell_shows_a_bar_of_its_stages(tmp_path):
    """The parity study's run (its smoke size) draws one widget bar over its stages in a
    notebook kernel, and nothing on stderr."""
    if importlib.util.find_spec("ipywidgets") is None:
        pytest.skip("ipywidgets (the lab extra) is not installed")
    code = (
        "import os\nos.environ.pop('MDLNB_PROGRESS', None)\n"
        "from mdlnb.studies import parity\n"
        "r = parity.run(parity.ParityConfig(d=6, n_examples=200, seeds=2, num_sizes=8,\n"
        "               at=(3, 10, 50), mlp_width=16, mlp_steps=20))\nprint('ran')\n"
    )
    outs = _run_in_kernel(code, tmp_path)
    bars = [
        o
        for o in outs
        if o["output_type"] == "display_data"
        and "application/vnd.jupyter.widget-view+json" in o["data"]
    ]
    assert bars and "parity" in bars[0]["data"].get("text/plain", "")
    assert not [o for o in outs if o.get("name") == "stderr"]
