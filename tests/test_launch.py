"""launch.py as a user runs it: in a subprocess, through real Hydra composition."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TINY = ["agent.num_envs=4", "agent.num_steps=16", "agent.num_minibatches=2", "agent.update_epochs=1",
        "agent.total_timesteps=256", "eval_frequency=128", "agent.obs_norm_init_steps=8", "wandb.mode=disabled"]


def launch(*args, timeout=300):
    env = dict(os.environ, WANDB_MODE="disabled")
    return subprocess.run([sys.executable, "launch.py", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_single_run_writes_the_results_contract_and_skips_when_complete(tmp_path):
    args = ["env=cartpole", "bonus=rfig", "bonus.num_features=64", *TINY, f"results_dir={tmp_path}"]
    out = launch(*args)
    assert out.returncode == 0, out.stderr[-3000:]
    log = out.stdout + out.stderr
    assert "window 1/2" in log and "steps/s" in log and "lengthscale" in log
    run = tmp_path / "default" / "cartpole" / "rfig" / "seed_0"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "complete" and summary["env_steps"] == 256
    assert "bonus:\n  name: rfig" in (run / "config.yaml").read_text()
    assert len((run / "metrics.csv").read_text().strip().splitlines()) == 3  # header + 2 windows
    again = launch(*args)
    assert again.returncode == 0 and "already complete" in again.stdout + again.stderr


def test_multirun_sweep_over_seeds_with_range_syntax(tmp_path):
    out = launch("-m", "env=cartpole", "bonus=none", "seed=range(2)", *TINY, f"results_dir={tmp_path}",
                 "experiment=sweep")
    assert out.returncode == 0, out.stderr[-3000:]
    for seed in (0, 1):
        summary = json.loads((tmp_path / "sweep" / "cartpole" / "none" / f"seed_{seed}" / "summary.json").read_text())
        assert summary["seed"] == seed


@pytest.mark.parametrize("override,fragment", [
    ("bonus.rho=1.5", "bonus.rho=1.5 must be in (0, 1]"),
    ("bonus.reg=-1", "bonus.reg=-1.0 must be > 0"),
    ("agent.total_timesteps=32", "agent.total_timesteps=32 is smaller than one batch"),
    ("agent.lr=-0.1", "agent.lr=-0.1 must be > 0"),
    ("bonus.inverse=svd", "valid: exact, newton_schulz, woodbury"),
    ("eval_frequency=100", "eval_frequency=100 must be a multiple of the batch"),
])
def test_impossible_values_fail_before_compiling(tmp_path, override, fragment):
    out = launch("env=cartpole", *TINY, override, f"results_dir={tmp_path}", timeout=120)
    assert out.returncode == 2
    assert fragment in out.stderr
    assert not list(tmp_path.rglob("seed_*")), "nothing may be written for a rejected config"


@pytest.mark.parametrize("group,bad,valid", [("env", "pong", "minatar_breakout"), ("bonus", "icm", "rfig")])
def test_unknown_names_list_the_valid_choices(tmp_path, group, bad, valid):
    out = launch(f"{group}={bad}", f"results_dir={tmp_path}", timeout=120)
    assert out.returncode != 0
    assert valid in out.stderr and bad in out.stderr


def test_a_killed_run_never_looks_complete(tmp_path):
    args = ["env=cartpole", "bonus=none", "agent.num_envs=4", "agent.num_steps=16", "agent.num_minibatches=2",
            "agent.total_timesteps=50000000", "eval_frequency=64", "wandb.mode=disabled", f"results_dir={tmp_path}"]
    proc = subprocess.Popen([sys.executable, "launch.py", *args], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=dict(os.environ, WANDB_MODE="disabled"))
    metrics = tmp_path / "default" / "cartpole" / "none" / "seed_0" / "metrics.csv"
    try:
        deadline = time.time() + 240
        while time.time() < deadline:
            if metrics.exists() and len(metrics.read_text().splitlines()) >= 3:
                break
            time.sleep(0.5)
        else:
            pytest.fail("the run wrote no metrics within 240 s")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert not (metrics.parent / "summary.json").exists()
    assert (metrics.parent / "config.yaml").exists()
