"""Config composition and validation (no compilation involved)."""

import pytest
from conftest import compose_config

from rfig_exp.config.errors import ConfigError
from rfig_exp.spec.run_spec import build_run_spec


def test_defaults_are_the_papers():
    spec = build_run_spec(compose_config())
    t = spec.train
    assert (spec.env_name, spec.bonus_name, spec.seeds) == ("mountaincar", "rfig", (0,))
    assert (t.num_envs, t.num_steps, t.num_minibatches, t.update_epochs, t.hidden) == (32, 128, 32, 4, (64, 64))
    # 1M steps rounded up to whole 24,576-step windows of 6 updates
    assert (t.updates_per_window, spec.num_windows, spec.total_env_steps) == (6, 41, 1_007_616)


def test_named_sweep_overrides_defaults_and_the_command_line_overrides_the_sweep():
    cfg = compose_config("sweep=smoke")
    assert (cfg.num_seeds, cfg.experiment, cfg.agent.total_timesteps) == (2, "smoke", 65536)
    assert compose_config("sweep=smoke", "num_seeds=3").num_seeds == 3


def test_jobs_per_gpu_is_read_and_off_by_default():
    assert build_run_spec(compose_config()).placement.jobs_per_gpu is None
    assert build_run_spec(compose_config("placement.jobs_per_gpu=4")).placement.jobs_per_gpu == 4


def test_num_seeds_lists_consecutive_seeds():
    assert build_run_spec(compose_config("seed=8", "num_seeds=8")).seeds == tuple(range(8, 16))


@pytest.mark.parametrize("override,fragment", [
    ("num_seeds=0", "num_seeds=0 must be >= 1"),
    ("agent.num_minibatches=5", "agent.num_minibatches=5 must divide the batch"),
    ("eval_frequency=2002944", "eval_frequency=2002944 exceeds agent.total_timesteps"),
    ("agent.gamma=1.5", "agent.gamma=1.5 must be <= 1.0"),
    ("agent.activation=gelu", "valid: tanh, relu"),
    ("agent.hidden=[]", "agent.hidden=[] must be a non-empty list"),
    ("bonus.beta=-1", "bonus.beta=-1.0 must be >= 0.0"),
    ("placement.jobs_per_gpu=0", "placement.jobs_per_gpu=0 must be null or an integer >= 1"),
])
def test_impossible_values_name_their_key(override, fragment):
    with pytest.raises(ConfigError) as err:
        build_run_spec(compose_config(override))
    assert fragment in str(err.value)


def test_plain_ppo_without_extrinsic_reward_is_the_entropy_only_baseline():
    # Reward-free exploration compares bonuses against the entropy-only policy (the
    # coverage evidence), so bonus=none with agent.ext_coef=0 is allowed.
    spec = build_run_spec(compose_config("bonus=none", "agent.ext_coef=0"))
    assert spec.variant == "agent.ext_coef=0"
