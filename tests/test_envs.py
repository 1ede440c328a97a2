import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import compose_config

from rfig_exp.config.errors import ConfigError
from rfig_exp.envs import declared_envs, env_names, make_env


def test_unknown_env_lists_valid_names():
    with pytest.raises(ConfigError) as err:
        make_env("mountaincar-v9")
    for name in ("mountaincar", "minatar_breakout", "cartpole"):
        assert name in str(err.value)


# brax: one Brax env runs end to end in test_grid
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if e.settings.suite == "brax" else n
                                  for n, e in sorted(declared_envs().items())])
def test_every_registered_env_steps(name):
    env = make_env(compose_config(f"env={name}").env)  # its conf/env node: some envs need options (a layout)
    obs, state = env.reset(jax.random.PRNGKey(0))
    assert obs.shape == env.obs_shape and obs.dtype == jnp.float32
    out = env.step(jax.random.PRNGKey(1), state, jnp.asarray(0))
    assert out.obs.shape == env.obs_shape and out.final_obs.shape == env.obs_shape
    assert out.reward.shape == () and out.terminated.dtype == bool and out.truncated.dtype == bool
    assert env.max_episode_steps > 0 and env_names() == sorted(declared_envs())


def test_time_limit_is_truncation_with_true_final_observation():
    env = make_env("mountaincar")
    obs, state = env.reset(jax.random.PRNGKey(0))

    def step(carry, key):
        state = carry
        out = env.step(key, state, jnp.asarray(1))  # "do nothing": never reaches the goal
        return out.state, out

    _, outs = jax.lax.scan(step, state, jax.random.split(jax.random.PRNGKey(1), env.max_episode_steps))
    assert not bool(outs.terminated.any())
    assert np.flatnonzero(np.asarray(outs.truncated)).tolist() == [env.max_episode_steps - 1]
    last = env.max_episode_steps - 1
    # The next observation is a fresh reset; the final observation continues the trajectory.
    assert float(jnp.abs(outs.final_obs[last] - outs.obs[last - 1]).max()) < 0.1
    assert -0.6 <= float(outs.obs[last][0]) <= -0.4 and float(outs.obs[last][1]) == 0.0
