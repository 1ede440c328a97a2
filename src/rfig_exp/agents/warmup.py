"""The random policy's warm-up: the env states a run collects before it trains, from which the
observation statistics and the bonus's state start (``rfig_exp.agents.intrinsic.init``).

One loop, :func:`random_policy_rollout`, for the PPO trainer, the library's ``IntrinsicReward`` (a
gymnax env of one's own) and the benchmarks' random-policy batches, so that each takes the same
states from the same key: the key split into the resets' and the steps', each step's key into its
actions' and its envs'. :func:`env_rollout` runs it on this project's ``Env``; :func:`warmup_states`
flattens what it collected into the ``[N, *obs]`` states ``init`` takes.
"""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp

from rfig_exp.envs.base import Env, random_actions


def next_states(obs: jax.Array, actions: jax.Array, out: Any) -> jax.Array:
    """What a warm-up keeps of a step: its true next states (``out.final_obs``: the last observation of
    an episode that ended, not the reset that replaced it)."""
    return out.final_obs


def random_policy_rollout(key: jax.Array, reset: Callable, step: Callable, sample: Callable, num_envs: int,
                          num_steps: int, *, keep: Callable = next_states, advance: bool = True) -> tuple[Any, Any]:
    """``(obs [B, *obs], kept [T, ...])``: ``num_steps`` steps of ``num_envs`` envs under a random policy.

    ``reset(keys [B]) -> (obs, state)`` and ``step(keys [B], state, actions) -> out`` (``out.state``,
    ``out.obs``: the next state and observation) are vmapped over the envs; ``sample(key) -> actions
    [B, ...]``; ``keep(obs, actions, out)``, from the observation the step started from, is what each
    step stacks (:func:`next_states` by default). Without ``advance`` every step starts from the
    resets (the authors' code: each warm-up state is one step from an initial state)."""
    k_reset, k_steps = jax.random.split(key)
    obs, env_state = reset(jax.random.split(k_reset, num_envs))

    def one(carry, k):
        env_state, obs = carry
        k_act, k_env = jax.random.split(k)
        actions = sample(k_act)
        out = step(jax.random.split(k_env, num_envs), env_state, actions)
        return ((out.state, out.obs) if advance else carry), keep(obs, actions, out)

    _, kept = jax.lax.scan(one, (env_state, obs), jax.random.split(k_steps, num_steps))
    return obs, kept


def env_rollout(key: jax.Array, env: Env, num_envs: int, num_steps: int, *, keep: Callable = next_states,
                advance: bool = True) -> tuple[Any, Any]:
    """:func:`random_policy_rollout` on this project's ``Env``: uniform actions of its action space
    (``rfig_exp.envs.base.random_actions``)."""
    return random_policy_rollout(key, jax.vmap(env.reset), jax.vmap(env.step),
                                 lambda k: random_actions(k, env.action_space, num_envs), num_envs, num_steps,
                                 keep=keep, advance=advance)


def warmup_states(obs: jax.Array, next_obs: jax.Array, *, with_resets: bool = True) -> jax.Array:
    """``[N, *obs]``: the resets ``obs [B, *obs]`` (unless not ``with_resets``), then the steps' states
    ``next_obs [T, B, ...]``, one observation's shape each."""
    states = jnp.concatenate([obs[None], next_obs]) if with_resets else next_obs
    return states.reshape((-1,) + obs.shape[1:])


__all__ = ["env_rollout", "next_states", "random_policy_rollout", "warmup_states"]
