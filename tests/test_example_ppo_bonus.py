"""examples/ppo_bonus.py, the single-file PPO that uses the bonuses' public API, runs a few updates
with RFIG and with another bonus named on its command line, and reports a return per seed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import warnings

import pytest
from conftest import ROOT

from rfig_exp.bonuses import bonus_names

# a few updates of 8 envs x 64 steps; the bonus's settings go through --set beside the agent's
FEW_UPDATES = ["total_timesteps=2048", "num_envs=8", "num_steps=64", "num_minibatches=4", "update_epochs=1",
               "warmup_steps=8", "final_updates=2"]
# A training run takes about 15 s alone and 35-45 s beside two others on two cores; past this it is
# wedged (docs/speed.md, *XLA CPU wedges*: jaxlib 0.10's CPU client, every thread idle, in 7 of 64
# runs of this test's RND case dispatched asynchronously; the example now runs its call inline), not slow.
WEDGED_AFTER_S = 300


def run_example(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "examples" / "ppo_bonus.py"), *args],
                          capture_output=True, text=True, timeout=timeout)


def run_example_or_its_stack(*args: str) -> tuple[subprocess.CompletedProcess | None, str]:
    """The example's finished process, or ``None`` and every thread's Python stack where it wedged:
    past :data:`WEDGED_AFTER_S` it gets SIGABRT, on which Python's faulthandler prints the stacks."""
    proc = subprocess.Popen([sys.executable, str(ROOT / "examples" / "ppo_bonus.py"), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONFAULTHANDLER": "1"})
    try:
        out, err = proc.communicate(timeout=WEDGED_AFTER_S)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        try:
            _, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        return None, err[-6000:]
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), ""


def train_example(*args: str) -> subprocess.CompletedProcess:
    """The example run to its end. A wedged attempt is started once more, as a sweep's supervisor
    starts a wedged job again (``stall_retries``), with its stack in a warning; two wedges fail the
    test with both stacks."""
    stacks = []
    for _ in range(2):
        out, stack = run_example_or_its_stack(*args)
        if out is not None:
            if stacks:
                warnings.warn("examples/ppo_bonus.py wedged once (finished when started again); where:\n"
                              + stacks[0], stacklevel=2)
            return out
        stacks.append(stack)
    pytest.fail(f"examples/ppo_bonus.py wedged twice, each past {WEDGED_AFTER_S} s; where:\n" + "\n---\n".join(stacks))


@pytest.mark.extended
@pytest.mark.timeout(900)
@pytest.mark.parametrize("bonus, settings", [("rfig", ["num_features=64", "lengthscale_samples=32"]),
                                             ("rnd", ["hidden=[32,32]", "update_proportion=0.5"])])
def test_the_example_trains_a_few_updates_with_a_bonus_by_name(bonus, settings):
    out = train_example("--bonus", bonus, "--seeds", "2", "--set", *FEW_UPDATES, *settings)
    assert out.returncode == 0, out.stderr[-3000:]
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert [(r["bonus"], r["seed"]) for r in rows] == [(bonus, 0), (bonus, 1)]
    for r in rows:  # MountainCar's return is -1 a step, at most 200 steps an episode
        assert -200.0 <= r["final_return"] < 0 and r["success"] == (r["final_return"] > -200.0)


def test_the_example_refuses_a_bad_setting_with_the_config_error():
    out = run_example("--bonus", "rfig", "--set", *FEW_UPDATES, "rho=2")
    assert out.returncode != 0 and "bonus.rho=2.0 must be in (0, 1]" in out.stderr
    out = run_example("--bonus", "ucb", "--set", *FEW_UPDATES)
    assert out.returncode != 0 and f"valid names: {', '.join(bonus_names())}" in out.stderr


def test_the_examples_help_lists_its_settings_and_each_bonuses():
    out = run_example("--help")
    assert out.returncode == 0, out.stderr[-2000:]
    for setting in ("total_timesteps=1000000", "num_envs=32", "beta=0.5", "gamma_int=0.99", "obs_clip=5.0",
                    "warmup_steps=128", "final_updates=6"):
        assert f"  {setting}: " in out.stdout, setting
    assert "  rfig: num_features, rho, reg, prior_scale, initial_precision, lengthscale" in out.stdout
    assert "  none: -" in out.stdout


def test_a_budget_under_one_update_is_refused_with_a_message():
    out = run_example("--set", "total_timesteps=1000")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip().endswith("error: total_timesteps=1000 is smaller than one update "
                                       "(num_envs * num_steps = 4096 steps)"), out.stderr
