"""Every notebook runs end to end with its ``smoke`` parameters."""

import json

import pytest

from mdlnb import runner

NOTEBOOKS = runner.available()

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
def test_notebook_smoke(name, tmp_path):
    out = runner.run(name, "smoke", out_dir=tmp_path / "nb",
                     parameters={"paper_dir": str(tmp_path / "paper")})
    nb = json.loads(out.read_text())
    errors = [o for c in nb["cells"] if c["cell_type"] == "code"
              for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
    # A notebook that saves nothing to paper/ has not done its job.
    assert any((tmp_path / "paper").iterdir()), f"{name} wrote nothing to paper_dir"
    missing = [f for f in EXPECTED.get(name, []) if not (tmp_path / "paper" / f).is_file()]
    assert not missing, f"{name} did not write {missing}"


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
