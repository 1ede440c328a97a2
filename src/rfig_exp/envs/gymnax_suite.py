"""gymnax classic control and MinAtar behind the :class:`Env` interface.

gymnax 1.0 already separates termination from time-limit truncation and returns the
pre-reset observation as ``info["final_observation"]``; this adapter renames, and maps
gymnax's ``Discrete``/``Box`` action spaces to ours (a Box action arrives already clipped
to its bounds by the agent).
"""

from __future__ import annotations

import jax.numpy as jnp

from rfig_exp.envs.base import BoxSpace, DiscreteSpace, Env, EnvStep


def _action_space(space) -> DiscreteSpace | BoxSpace:
    if hasattr(space, "n"):
        return DiscreteSpace(int(space.n))
    low, high = jnp.ravel(jnp.asarray(space.low)), jnp.ravel(jnp.asarray(space.high))
    if not (bool((low == low[0]).all()) and bool((high == high[0]).all())):
        raise NotImplementedError(f"per-dimension action bounds are not supported: {space.low}, {space.high}")
    return BoxSpace(dim=int(space.shape[0]) if space.shape else 1, low=float(low[0]), high=float(high[0]))


def make_gymnax_env(name: str, gymnax_id: str, options: dict | None = None) -> Env:
    del options  # gymnax envs take no options yet
    import gymnax  # lazy: keeps `import rfig_exp` light

    env, params = gymnax.make(gymnax_id)
    obs_space = env.observation_space(params)
    action_space = _action_space(env.action_space(params))

    def reset(key):
        obs, state = env.reset(key, params)
        return obs.astype(jnp.float32), state

    def step(key, state, action):
        if isinstance(action_space, BoxSpace) and action.ndim == 0:
            action = action[None]
        obs, state, reward, terminated, truncated, info = env.step(key, state, action, params)
        return EnvStep(
            obs=obs.astype(jnp.float32),
            state=state,
            reward=jnp.asarray(reward, jnp.float32).reshape(()),
            terminated=jnp.asarray(terminated, bool),
            truncated=jnp.logical_and(jnp.asarray(truncated, bool), ~jnp.asarray(terminated, bool)),
            final_obs=info["final_observation"].astype(jnp.float32),
        )

    return Env(
        name=name,
        obs_shape=tuple(int(s) for s in obs_space.shape),
        action_space=action_space,
        max_episode_steps=int(params.max_steps_in_episode),
        reset=reset,
        step=step,
    )
