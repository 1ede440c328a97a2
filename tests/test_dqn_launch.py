"""``agent=dqn`` through ``launch.py`` as PPO goes through it: the results contract in a folder of its
own (its variant names the agent, so PPO's folders never hold it), a relaunch that skips a complete
run, a killed run resumed from its checkpoint to the end, a ``-m`` sweep of vmapped seeds that
``launch.py status`` reads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import FAULT_SEAM
from test_launch import launch, rows

ROOT = Path(__file__).resolve().parents[1]
# 4 envs x 128 updates: a TD step from the 8th update, the target copied every 16
TINY_DQN = ["agent=dqn", "env=cartpole", "agent.num_envs=4", "agent.buffer_size=256", "agent.buffer_batch_size=16",
            "agent.hidden=[16,16]", "agent.learning_starts=32", "agent.target_update_interval=64",
            "agent.eps_anneal=256", "agent.obs_norm_init_steps=8", "agent.total_timesteps=512", "eval_frequency=128",
            "wandb.mode=disabled", "compile_cache=null"]


def _dqn_run(results: Path, bonus: str, seed: int = 0) -> Path:
    (run,) = (results / "default" / "cartpole" / bonus).glob(f"*/seed_{seed}")
    return run


def test_a_dqn_run_writes_the_results_contract_in_its_own_folder_and_a_relaunch_skips_it(tmp_path):
    args = [*TINY_DQN, "bonus=none", f"results_dir={tmp_path}"]
    out = launch(*args)
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    run = _dqn_run(tmp_path, "none")
    assert run.parent.name.startswith("agent=dqn,") and not (run.parent.parent / "base").exists()
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "complete" and summary["env_steps"] == 512 and summary["num_windows"] == 4
    assert summary["variant_overrides"]["agent"] == "dqn" and summary["num_envs"] == 4
    assert summary["warmup_env_steps"] == 32 and summary["final_coverage"] is not None
    assert yaml.safe_load((run.parent / "variant.yaml").read_text()) == summary["variant_overrides"]
    assert "agent:\n  name: dqn" in (run / "config.yaml").read_text()
    header = (run / "metrics.csv").read_text().splitlines()[0].split(",")
    assert {"episode_return", "td_loss", "epsilon", "coverage"} <= set(header)
    assert [int(r["env_steps"]) for r in rows(run)] == [128, 256, 384, 512]
    assert (run / "visits.npy").exists() and not (run / "checkpoint").exists()
    again = launch(*args)
    assert again.returncode == 0 and "already complete" in again.stdout + again.stderr


def test_a_killed_dqn_run_with_rnd_resumes_from_its_checkpoint(tmp_path):
    args = [*TINY_DQN, "bonus=rnd", "bonus.hidden=[32,32]", "checkpoint.every_windows=1", f"results_dir={tmp_path}"]
    env = dict(os.environ, WANDB_MODE="disabled", RFIG_FAULT="window@3:kill", RFIG_FAULT_ONCE=str(tmp_path / "once"))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(FAULT_SEAM), os.environ.get("PYTHONPATH")]))
    killed = subprocess.run([sys.executable, "launch.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=300)
    assert killed.returncode == -9, (killed.stdout + killed.stderr)[-3000:]
    run = _dqn_run(tmp_path, "rnd")
    assert not (run / "summary.json").exists() and list((run / "checkpoint").glob("window_*.json"))
    resumed = subprocess.run([sys.executable, "launch.py", *args], cwd=ROOT, env=env, capture_output=True,
                             text=True, timeout=300)
    log = resumed.stdout + resumed.stderr
    assert resumed.returncode == 0, log[-3000:]
    assert "resuming from the checkpoint after window" in log
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "complete" and summary["resumed_from_windows"]
    got = rows(run)
    assert [int(r["env_steps"]) for r in got] == [128, 256, 384, 512], "each window exactly once"
    assert all(float(r["intrinsic_reward"]) > 0 for r in got) and "bonus/predictor_loss" in got[0]


@pytest.mark.timeout(900)
def test_a_dqn_sweep_vmaps_its_seeds_and_status_reads_it(tmp_path):
    out = launch("-m", *TINY_DQN, "bonus=none", "agent.total_timesteps=256", "seed=range(2)", f"results_dir={tmp_path}")
    log = out.stdout + out.stderr
    assert out.returncode == 0, log[-3000:]
    assert "[sweep] 2 runs as 1 compiled job of 2 runs, vmapped over seed" in out.stdout
    for seed in (0, 1):
        assert json.loads((_dqn_run(tmp_path, "none", seed) / "summary.json").read_text())["num_seeds_in_process"] == 2
    status = subprocess.run([sys.executable, "launch.py", "status", "--results", str(tmp_path), "--json"], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert status.returncode == 0, status.stderr
    (group,) = json.loads(status.stdout)["default"]["groups"]
    assert group["variant"].startswith("agent=dqn,") and group["complete"] == [0, 1] and not group["missing"], group
