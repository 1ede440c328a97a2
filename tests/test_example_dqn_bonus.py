"""examples/dqn_bonus.py, a DQN in PureJaxRL's dqn.py shape with a bonus through ``ReplayIntrinsic``,
trains a few hundred iterations on Breakout-MinAtar with RFIG and with RND, vmapped over seeds, its
scaled intrinsic reward finite and varying once the return statistics are warm; a bad setting is the
config error."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import ROOT

# 300 iterations of 16 envs, learning from the 100th; the return statistics warm for 8 iterations
FEW = ["total_timesteps=4800", "learning_starts=1600", "buffer_size=4800", "batch_size=32", "warmup_steps=8",
       "final_iterations=100", "eps_anneal=2000"]


def run_example(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "examples" / "dqn_bonus.py"), *args],
                          capture_output=True, text=True, timeout=300)


@pytest.mark.extended
@pytest.mark.parametrize("bonus, settings", [("rfig", ["num_features=64", "lengthscale_samples=32"]),
                                             ("rnd", ["hidden=[32,32]"])])
def test_the_example_trains_with_a_bonus_its_intrinsic_reward_finite_and_varying(bonus, settings):
    out = run_example("--bonus", bonus, "--seeds", "2", "--set", *FEW, *settings)
    assert out.returncode == 0, out.stderr[-3000:]
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert [(r["bonus"], r["seed"]) for r in rows] == [(bonus, 0), (bonus, 1)]
    for r in rows:
        assert r["r_int_finite"] and r["r_int_scaled_std"] > 0 and r["episodes"] > 0
        assert r["r_int_scaled_first_last"][0] > 0 and r["final_return"] is not None
    assert "env steps/s" in out.stdout


def test_the_example_refuses_a_bad_setting_with_the_config_error():
    out = run_example("--bonus", "rfig", "--set", *FEW, "num_envs=4")
    assert out.returncode == 2 and "bonus.rho=0.0625 keeps floor(4 * rho) = 0" in out.stderr, out.stderr[-2000:]
    out = run_example("--set", "total_timesteps=8")
    assert out.returncode == 2 and "total_timesteps=8 is smaller than one iteration (num_envs = 16 steps)" in out.stderr
