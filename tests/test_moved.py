"""Old import paths of the modules the 2026-11 layout moved (mdlnb._moved): each gives
the very module object of the new path, with a DeprecationWarning at the user's line."""

import importlib
import subprocess
import sys
import warnings

import pytest

import mdlnb
from mdlnb import _moved


@pytest.mark.parametrize("old", sorted(_moved.MOVED))
def test_old_path_is_the_new_module_with_a_warning(old):
    new = importlib.import_module(_moved.MOVED[old])
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {_moved.MOVED[old]}"):
        module = importlib.import_module(old)
    assert module is new
    assert module.__name__ == module.__spec__.name == _moved.MOVED[old]


def test_the_three_spellings_warn_at_the_callers_line():
    code = (
        "import warnings; warnings.simplefilter('always')\n"
        "import mdlnb\n"
        "from mdlnb import experts\n"
        "x = mdlnb.readouts\n"
        "import mdlnb.board.readouts as r\n"
        "assert x is r and experts is mdlnb.board.experts\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stderr
    assert "<string>:3: DeprecationWarning: mdlnb.experts moved to mdlnb.board.experts" in out
    assert "<string>:4: DeprecationWarning: mdlnb.readouts moved to mdlnb.board.readouts" in out


def test_the_renamed_studies_warn_at_the_callers_line():
    code = (
        "import warnings; warnings.simplefilter('always')\n"
        "from mdlnb.studies import encoders\n"
        "import mdlnb.studies\n"
        "s = mdlnb.studies.switching\n"
        "assert encoders is mdlnb.studies.encoder_grid\n"
        "assert s is mdlnb.studies.switching_strategies\n"
        "assert mdlnb.studies.NOTEBOOKS['objectives'] == 'encoder_grid'\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stderr
    assert (
        "<string>:2: DeprecationWarning: mdlnb.studies.encoders moved to mdlnb.studies.encoder_grid"
    ) in out
    assert (
        "<string>:4: DeprecationWarning: mdlnb.studies.switching moved to "
        "mdlnb.studies.switching_strategies"
    ) in out


def test_a_name_that_never_existed_is_still_an_error():
    assert _moved.new_name("mdlnb.nonesuch") is None
    with pytest.raises(AttributeError, match="nonesuch"):
        mdlnb.nonesuch  # noqa: B018
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert mdlnb.Task is not None  # a name that did not move: no warning


def test_a_module_below_a_moved_package_follows_it():
    import mdlnb.baselines.transfer._logme as new

    sys.modules.pop("mdlnb.transfer._logme", None)
    with pytest.warns(DeprecationWarning, match="mdlnb.transfer._logme moved"):
        old = importlib.import_module("mdlnb.transfer._logme")
    assert old is new


def test_python_dash_m_with_an_old_path_runs_the_new_command():
    out = subprocess.run(
        [sys.executable, "-m", "mdlnb.runner", "--help"], capture_output=True, text=True
    )
    assert out.returncode == 0
    assert out.stdout.startswith("usage: python -m mdlnb.tools.runner")
    assert "python -m mdlnb.runner moved to python -m mdlnb.tools.runner" in out.stderr
