"""gymnax classic control and MinAtar behind the :class:`Env` interface.

gymnax 1.0 already separates termination from time-limit truncation and returns the
pre-reset observation as ``info["final_observation"]``; this adapter only renames.
"""

from __future__ import annotations

import jax.numpy as jnp

from rfig_exp.envs.base import DiscreteSpace, Env, EnvStep


def make_gymnax_env(name: str, gymnax_id: str, options: dict | None = None) -> Env:
    del options  # gymnax envs take no options yet
    import gymnax  # lazy: keeps `import rfig_exp` light

    env, params = gymnax.make(gymnax_id)
    obs_space = env.observation_space(params)

    def reset(key):
        obs, state = env.reset(key, params)
        return obs.astype(jnp.float32), state

    def step(key, state, action):
        obs, state, reward, terminated, truncated, info = env.step(key, state, action, params)
        return EnvStep(
            obs=obs.astype(jnp.float32),
            state=state,
            reward=jnp.asarray(reward, jnp.float32),
            terminated=jnp.asarray(terminated, bool),
            truncated=jnp.logical_and(jnp.asarray(truncated, bool), ~jnp.asarray(terminated, bool)),
            final_obs=info["final_observation"].astype(jnp.float32),
        )

    return Env(
        name=name,
        obs_shape=tuple(int(s) for s in obs_space.shape),
        action_space=DiscreteSpace(int(env.action_space(params).n)),
        max_episode_steps=int(params.max_steps_in_episode),
        reset=reset,
        step=step,
    )
