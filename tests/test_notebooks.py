"""Every notebook runs end to end with its ``smoke`` parameters, and writes what it should."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from mdlnb import claims, manifest, runner

NOTEBOOKS = runner.available()
_RUNS: dict = {}


def smoke(name, tmp_path_factory):
    """Run notebook ``name``'s smoke profile once per session; returns its paper_dir."""
    if name not in _RUNS:
        root = tmp_path_factory.mktemp(name)
        out = runner.run(name, "smoke", out_dir=root / "nb",
                         parameters={"paper_dir": str(root / "paper")})
        _RUNS[name] = (json.loads(out.read_text()), root / "paper")
    return _RUNS[name]

# What a notebook's smoke run must have written to paper_dir (besides anything else).
EXPECTED = {
    "parity_toy": ["parity_curves.png", "parity_rankings.csv", "parity_measures.csv",
                   "parity_mlp_measures.csv", "parity_switching.csv",
                   "parity_switching_posterior.png"],
    "loss_data": ["loss_data_curves.csv", "loss_data_curves.png", "loss_data_measures.csv",
                  "loss_data_measures.png", "loss_data_rankings.csv", "loss_data_final.csv",
                  "loss_data_esc_refined.csv"],
}


@pytest.mark.notebook
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_smoke(name, tmp_path_factory):
    nb, paper = smoke(name, tmp_path_factory)
    errors = [o for c in nb["cells"] if c["cell_type"] == "code"
              for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
    # A notebook that saves nothing to paper/ has not done its job.
    assert any(paper.iterdir()), f"{name} wrote nothing to paper_dir"
    missing = [f for f in EXPECTED.get(name, []) if not (paper / f).is_file()]
    assert not missing, f"{name} did not write {missing}"


def _claims_ok(paper, name, ids):
    df = pd.read_csv(paper / "claims" / f"{name}.csv", dtype=str, keep_default_na=False)
    assert list(df.columns) == list(claims.COLUMNS)
    assert sorted(df["id"]) == sorted(ids)
    assert df["verdict"].isin(claims.VERDICTS).all()
    assert (df["our_value"].str.len() > 0).all() and (df["rule"].str.len() > 0).all()
    _manifest_ok(paper, name)


def _manifest_ok(paper, name):
    """The notebook's manifest lists what it wrote, and each listed file parses."""
    m = pd.read_csv(paper / "manifest" / f"{name}.csv")
    assert set(m["notebook"]) == {name} and set(m["profile"]) == {"smoke"}
    assert set(m["file"]) == {p.name for p in paper.iterdir() if p.suffix in (".csv", ".png")}
    assert manifest.check(paper) == len(m)


# The claims each notebook decides (issue 14); switching_strategies and data_efficiency
# are checked with their outputs below.
CLAIMS = {"objectives": ["a1", "a2", "f"], "readout_preference": ["d1", "d2", "d3"],
          "parity_toy": ["g1", "g2", "g3"],
          "transferability_baselines": ["h1", "h2", "h3", "h4", "i1", "i2", "i3"]}


@pytest.mark.notebook
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_records_its_files_and_claims(name, tmp_path_factory):
    _, paper = smoke(name, tmp_path_factory)
    if name in CLAIMS:
        _claims_ok(paper, name, CLAIMS[name])
    else:
        _manifest_ok(paper, name)


@pytest.mark.notebook
def test_parity_claims_hold_on_the_smoke_run(tmp_path_factory):
    """The exact algorithms flip VA/MDL and keep SDL/εSC even at the smoke size (d = 6)."""
    _, paper = smoke("parity_toy", tmp_path_factory)
    df = pd.read_csv(paper / "claims" / "parity_toy.csv")
    assert set(df["verdict"]) == {"holds"}


# A switching code of experts that start at the uniform code pays at most log C
# per example plus what the worst prior pays over the best expert; on these
# small boards that stays below 0.5 nats per example.
MARGIN_NATS = 0.5


@pytest.mark.notebook
def test_switching_strategies_outputs(tmp_path_factory):
    _, paper = smoke("switching_strategies", tmp_path_factory)
    cl = pd.read_csv(paper / "switching_codelengths.csv")
    assert {"pair", "seed", "strategy", "num_classes", "n", "codelength [nats]",
            "nats per example", "regret [nats]"} <= set(cl.columns)
    assert np.isfinite(cl.select_dtypes("number")).all().all()
    assert (cl["nats per example"] <= np.log(cl["num_classes"]) + MARGIN_NATS).all()
    assert (cl["nats per example"] > 0).all()
    assert (cl.loc[cl["strategy"] == "fixed share", "regret [nats]"] == 0).all()
    assert set(cl["strategy"]) == {"fixed share", "Bayesian mixture", "elementwise mixture",
                                   "switch distribution", "run-length"}
    sens = pd.read_csv(paper / "switching_sensitivity.csv")
    assert set(sens["rate"]) == {"m", "constant α"} and np.isfinite(sens["mean"]).all()
    seq = pd.read_csv(paper / "switching_sequence.csv")
    # allowing more switches can only lower the best sequence loss
    for _, g in seq.groupby(["pair", "seed"]):
        assert np.all(np.diff(g["best sequence [nats]"]) <= 1e-6)
    _claims_ok(paper, "switching_strategies", ["b1", "b2", "c1", "c2"])
    for png in ("switching_regret", "switching_sensitivity", "switching_bound"):
        assert (paper / f"{png}.png").stat().st_size > 1000


@pytest.mark.notebook
def test_data_efficiency_outputs(tmp_path_factory):
    _, paper = smoke("data_efficiency", tmp_path_factory)
    cl = pd.read_csv(paper / "data_efficiency_codelengths.csv")
    assert {"task", "domain", "seed", "method", "n", "codelength [nats]", "nats per example",
            "regret [nats]", "crossing n"} <= set(cl.columns)
    assert set(cl["domain"]) == {"in-domain", "out-of-domain"}
    assert set(cl["method"]) == {"linear probe", "deep MLP", "fine-tuned", "from scratch"}
    num = cl[["n", "codelength [nats]", "nats per example", "regret [nats]"]]
    assert np.isfinite(num).all().all() and (cl["nats per example"] > 0).all()
    log_c = cl["task"].map({"fashion_mnist": math.log(10), "sci_patches": math.log(4)})
    assert (cl["nats per example"] <= log_c + MARGIN_NATS).all()
    assert (cl.loc[cl["method"] == "from scratch", "regret [nats]"] == 0).all()
    # regret is a difference of codelengths of the same stream
    for _, g in cl.groupby(["task", "seed"]):
        base = g.loc[g["method"] == "from scratch", "codelength [nats]"].item()
        np.testing.assert_allclose(g["regret [nats]"], g["codelength [nats]"] - base, atol=1e-6)
    crossing = cl["crossing n"].dropna()
    assert ((crossing >= 1) & (crossing <= cl.loc[crossing.index, "n"])).all()
    _claims_ok(paper, "data_efficiency", ["e1", "e2"])
    assert (paper / "data_efficiency_regret.png").stat().st_size > 1000


def test_profiles_are_known():
    with pytest.raises(ValueError, match="profile"):
        runner.profile_parameters("quickstart", "huge")


def test_encoder_notebooks_share_one_grid():
    """objectives, scaling and readout_preference read one mdlnb.studies.encoders grid:
    the same overrides in every profile, so CI (and make reproduce) computes it once."""
    from mdlnb.studies.encoders import EncodersConfig

    for profile in ("smoke", "default", "full"):
        grids = [runner.profile_parameters(n, profile).get("overrides", {})
                 for n in ("objectives", "scaling", "readout_preference")]
        assert grids[0] == grids[1] == grids[2], profile
        EncodersConfig.from_overrides(grids[0])   # every field known and valid
