"""The random policy's warm-up (rfig_exp.agents.warmup): what it steps from and what it returns."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from rfig_exp.agents.warmup import env_rollout, warmup_states
from rfig_exp.envs import make_env


def test_the_warmup_states_are_the_resets_then_each_steps_true_next_state():
    env = make_env("mountaincar")
    obs, nxt = env_rollout(jax.random.PRNGKey(0), env, 3, 5)
    assert obs.shape == (3, *env.obs_shape) and nxt.shape == (5, 3, *env.obs_shape)
    states = warmup_states(obs, nxt)
    assert states.shape == (18, *env.obs_shape)
    np.testing.assert_array_equal(states[:3], obs)
    assert warmup_states(obs, nxt, with_resets=False).shape == (15, *env.obs_shape)


def test_without_advance_every_step_starts_from_the_resets():
    env = make_env("mountaincar")
    keep = lambda obs, actions, out: obs  # noqa: E731  (the observation each step started from)
    obs, started = env_rollout(jax.random.PRNGKey(1), env, 2, 4, keep=keep, advance=False)
    np.testing.assert_array_equal(started, jnp.broadcast_to(obs, started.shape))
    _, moving = env_rollout(jax.random.PRNGKey(1), env, 2, 4, keep=keep)
    np.testing.assert_array_equal(moving[0], obs)
    assert not np.array_equal(moving[1:], started[1:])
