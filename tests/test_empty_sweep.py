"""A sweep over no values (``seed=range(0)``) is refused before anything is written: one line naming
its key, exit 2 (rfig_exp.launch.hydra_adapter.expand_sweep, rfig_exp.launch.preflight)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rfig_exp.config.errors import ExitCode
from rfig_exp.launch.preflight import PreflightError, expand_jobs

ROOT = Path(__file__).resolve().parents[1]
EMPTY_SEED = ("error: seed: an empty sweep (seed=range(0) has no values), so there is no run to launch; "
              "give it one value or more")


def _launch(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """``launch.py ARGS`` as a user runs it, from ``cwd``."""
    env = dict(os.environ, WANDB_MODE="disabled")
    return subprocess.run([sys.executable, str(ROOT / "launch.py"), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.parametrize("multirun", [["-m"], []], ids=["sweep", "single"])
def test_an_empty_seed_sweep_is_one_line_exit_2_and_writes_nothing(tmp_path, multirun):
    results = tmp_path / "res"
    out = _launch(tmp_path, *multirun, "seed=range(0)", f"results_dir={results}", "experiment=empty")
    assert out.returncode == ExitCode.BAD_CONFIG == 2, out.stdout + out.stderr
    assert out.stderr.strip().splitlines() == [EMPTY_SEED], out.stderr
    assert "Traceback" not in out.stdout + out.stderr and "validated" not in out.stdout
    assert list(tmp_path.iterdir()) == [], "nothing written: no results/<exp>/.hydra/, no outputs/ or multirun/"


@pytest.mark.parametrize("others", [["env=cartpole", "bonus=none"], ["env=cartpole", "bonus=none,rfig",
                                                                     "hydra/launcher=local"]],
                         ids=["the_users_command", "beside_another_sweep_on_submitit"])
def test_the_users_command_with_the_default_results_dir_writes_no_hydra_folder(tmp_path, others):
    """``python launch.py -m 'seed=range(0)' env=cartpole bonus=none`` as typed, from a folder of its
    own: the default ``results_dir=results`` is relative to it, and no ``results/default/.hydra/``
    (nor a submitit folder) may appear there."""
    out = _launch(tmp_path, "-m", "seed=range(0)", *others)
    assert out.returncode == ExitCode.BAD_CONFIG, out.stdout + out.stderr
    assert out.stderr.strip().splitlines() == [EMPTY_SEED], out.stderr
    assert out.stdout == "" and list(tmp_path.iterdir()) == []


def test_an_empty_sweep_of_a_preset_is_refused_and_a_later_value_replaces_it(tmp_path):
    """The preset's ``seed: range(0)`` is refused as the command line's would be; a command line
    value of the key replaces it (Hydra's rule for a key given twice), and so does a later one."""
    (tmp_path / "sweep").mkdir()
    (tmp_path / "sweep" / "nothing.yaml").write_text(
        "# @package _global_\n# No seeds at all.\nhydra:\n  sweeper:\n    params:\n      seed: range(0)\n")
    search = f"hydra.searchpath=[file://{tmp_path}]"
    with pytest.raises(PreflightError) as refused:
        expand_jobs([search, "sweep=nothing"], multirun=True)
    assert refused.value.lines == [EMPTY_SEED.removeprefix("error: ")]
    assert len(expand_jobs([search, "sweep=nothing", "seed=range(2)", "seeds_per_job=1"], multirun=True)) == 2
    assert len(expand_jobs(["seed=range(0)", "seed=range(3)", "seeds_per_job=1"], multirun=True)) == 3
    with pytest.raises(PreflightError) as refused:
        expand_jobs(["bonus=none,rnd", "agent.lr=range(0)"], multirun=True)
    assert refused.value.lines[0].startswith("agent.lr: an empty sweep (agent.lr=range(0) has no values)")
