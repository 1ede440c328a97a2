"""A Hydra launcher whose jobs launch.py cannot run is refused before anything is written."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from rfig_exp.config.errors import PreflightError
from rfig_exp.launch import hydra_adapter
from rfig_exp.launch.preflight import preflight


def test_the_three_supported_launchers_have_their_kinds():
    kinds = {target: hydra_adapter.launcher_kind(OmegaConf.create({"_target_": target})) for target in (
        "hydra._internal.core_plugins.basic_launcher.BasicLauncher",
        "hydra_plugins.hydra_submitit_launcher.submitit_launcher.LocalLauncher",
        "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher")}
    assert list(kinds.values()) == [hydra_adapter.IN_PROCESS, hydra_adapter.LOCAL, hydra_adapter.SLURM]


def test_a_plugins_launcher_is_one_line_listing_the_supported_ones(tmp_path):
    folder = tmp_path / "conf" / "hydra" / "launcher"
    folder.mkdir(parents=True)
    (folder / "joblib.yaml").write_text(
        "_target_: hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher\nn_jobs: 2\n")
    results = tmp_path / "results"
    with pytest.raises(PreflightError) as refused:
        preflight(["-m", f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "hydra/launcher=joblib",
                   "env=cartpole", "bonus=none,rfig", f"results_dir={results}"])
    (line,) = refused.value.lines
    assert line.startswith("hydra/launcher: hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher "
                           "is not supported; valid: basic")
    assert "local" in line and "slurm" in line
    assert not results.exists()  # nothing written: no manifest, no run folder
