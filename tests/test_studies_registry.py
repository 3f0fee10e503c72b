"""The studies registry: every study has a Config, every study notebook is listed, the
notebooks with one parameter per field agree with their Config's defaults, and the
shared last step (finish) writes claims and the manifest."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from mdlnb import studies
from mdlnb.research import claims
from mdlnb.studies import StudyConfig
from mdlnb.tools import runner


@pytest.mark.parametrize("study", studies._SUBMODULES)
def test_every_study_has_a_config(study):
    cls = studies.config_class(study)
    assert dataclasses.is_dataclass(cls) and issubclass(cls, StudyConfig)
    assert cls.from_overrides({}) == cls()


def test_unknown_study_and_notebook_lookup():
    with pytest.raises(ValueError, match="study"):
        studies.config_class("nope")
    assert studies.study_of("objectives") == "encoder_grid"
    assert studies.study_of("switching_strategies") == "switching_strategies"
    assert studies.study_of("quickstart") is None
    assert set(studies.NOTEBOOKS) <= set(runner.available())
    assert set(studies.NOTEBOOKS.values()) <= set(studies._SUBMODULES)


FLAT = [
    n
    for n, s in studies.NOTEBOOKS.items()
    if "overrides" not in runner.notebook_parameters(n)
    and any(
        f.name in runner.notebook_parameters(n) for f in dataclasses.fields(studies.config_class(s))
    )
]


def test_flat_notebooks_are_the_expected_ones():
    assert sorted(FLAT) == [
        "beyond_classification",
        "data_efficiency",
        "layers",
        "loss_data",
        "parity_toy",
        "shift",
        "switching_strategies",
    ]


@pytest.mark.parametrize("name", FLAT)
def test_flat_notebook_defaults_are_the_config_defaults(name):
    """One parameter per field, of the same name and default: the Config's defaults are
    the notebook's default profile (from_parameters reads them all)."""
    params = runner.notebook_parameters(name)
    config = studies.config_class(studies.study_of(name)).from_parameters(params)
    default = type(config)()
    assert config == default, name


def test_runner_checks_flat_parameters_against_the_config():
    with pytest.raises(ValueError, match=r"switching_strategies.smoke: m = 'a' is a str"):
        runner.check_profile("switching_strategies", "smoke", {"m": "a"})
    with pytest.raises(ValueError, match=r"pairs: expected '<encoder>/<task>'"):
        runner.check_profile("switching_strategies", "smoke", {"pairs": ["digits"]})
    with pytest.raises(ValueError, match="alpha"):
        runner.check_profile("parity_toy", "smoke", {"alpha": 0.7})
    runner.check_profile("layers", "smoke", {"which": ["head", "stage2"], "size": None})


def test_from_parameters_needs_every_field():
    cls = studies.config_class("parity")
    with pytest.raises(ValueError, match=r"\['seed'\]"):
        cls.from_parameters({k: v for k, v in cls().to_dict().items() if k != "seed"})
    assert cls.from_parameters({**cls().to_dict(), "other": 1}) == cls()


def test_finish_writes_claims_and_manifest(tmp_path):
    pd.DataFrame({"a": [1]}).to_csv(tmp_path / "toy_table.csv", index=False)
    found = [
        claims.Claim.decided(
            "z1",
            "A statement.",
            "Sec. 1",
            "none",
            "a rule",
            claims.t_effect([1.0, 1.2, 0.9], paper_effect=1.0),
        )
    ]
    text = studies.finish(
        "toy", tmp_path, "smoke", found, pattern="toy_*", setting=[("tasks", "19", "2")]
    )
    assert text == claims.describe(found) and text.startswith("(z1) direction replicated")
    assert list(pd.read_csv(tmp_path / "claims" / "toy.csv")["id"]) == ["z1"]
    assert pd.read_csv(tmp_path / "setting" / "toy.csv", dtype=str).values.tolist() == [
        ["toy", "tasks", "19", "2"]
    ]
    m = pd.read_csv(tmp_path / "manifest" / "toy.csv")
    assert list(m["file"]) == ["toy_table.csv"] and set(m["profile"]) == {"smoke"}
    (tmp_path / "claims" / "toy.csv").unlink()
    assert studies.finish("toy", tmp_path, "smoke", pattern="toy_*") == ""
    assert not (tmp_path / "claims" / "toy.csv").exists()


#: the pretraining notebook shows the committed encoders (``pretraining.result()``, each
#: artifact checked against its SHA-256); training them is ``make pretrain``
READS_ARTIFACTS = {"pretraining"}


@pytest.mark.parametrize("notebook", sorted(set(studies.NOTEBOOKS) - READS_ARTIFACTS))
def test_every_study_notebook_runs_its_study_as_run_config(notebook):
    """A study notebook hands its whole config to ``run`` (no field unpacked by hand in a
    cell), so what a profile sets is what runs."""
    import re

    source = (runner.notebook_dir() / f"{notebook}.py").read_text()
    assert re.search(r"^\w+ = \w+\.run\(config\)", source, flags=re.M), notebook
