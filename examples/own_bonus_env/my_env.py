"""An environment of the user's own: a chain of ``length`` states. The agent starts at the left
end and steps left (action 0) or right (1); the right end pays 1 and ends the episode, which is
cut after ``2 * length`` steps. The observation is the one-hot position."""

from __future__ import annotations

from dataclasses import dataclass

from rfig_exp.config.settings import setting
from rfig_exp.config.validation import Count
from rfig_exp.envs import UserEnvSettings


@dataclass(frozen=True)
class ChainSettings(UserEnvSettings):
    length: int = setting(10, Count(2))   # env.length: states of the chain


def make(settings: ChainSettings):
    """The env as ``rfig_exp.envs.base.Env``: pure, unbatched ``reset`` and auto-resetting ``step``."""
    import jax
    import jax.numpy as jnp

    from rfig_exp.envs import DiscreteSpace, Env, EnvStep

    n, limit = settings.length, 2 * settings.length
    start = (jnp.int32(0), jnp.int32(0))   # (position, steps taken)

    def observe(position):
        return jax.nn.one_hot(position, n, dtype=jnp.float32)

    def reset(key):
        return observe(0), start

    def step(key, state, action):
        position, steps = state
        position = jnp.clip(position + 2 * action.astype(jnp.int32) - 1, 0, n - 1)
        steps = steps + 1
        terminated = position == n - 1
        truncated = (steps >= limit) & ~terminated
        done = terminated | truncated
        after = jax.tree.map(lambda a, b: jnp.where(done, a, b), start, (position, steps))
        return EnvStep(obs=observe(after[0]), state=after, reward=terminated.astype(jnp.float32),
                       terminated=terminated, truncated=truncated, final_obs=observe(position))

    return Env(name=settings.name, obs_shape=(n,), action_space=DiscreteSpace(2), max_episode_steps=limit,
               reset=reset, step=step)
