"""Returns and advantages of both reward streams (pure functions): what any agent's side of a
bonus needs (``rfig_exp.agents.intrinsic``) and what PPO's losses are built on.

Extrinsic stream (episodic, truncation-aware): the TD target bootstraps from the value of
the *true* next observation ``s'`` unless the step terminated; on a time-limit truncation
it bootstraps from ``V(s')`` of the final observation, never from the reset observation.
The advantage recursion is cut at every episode end (terminated or truncated).

Intrinsic stream (non-episodic, Burda et al. 2018): one continuing stream per environment,
episode ends included; the next state of the stream is the next observation the agent
sees (the reset observation after an episode end). ``agent.intrinsic_return=episodic`` (the
RFIG authors' code) takes the extrinsic stream's episodic GAE of the intrinsic reward instead.

``agent.time_limit=terminal`` (gymnax 0.0.8's ``done``, as the RFIG authors' code uses it) makes a
time limit an end like any other: :func:`time_limit_as_terminal`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def gae(
    rewards: jax.Array,
    values: jax.Array,
    next_values: jax.Array,
    bootstrap_mask: jax.Array,
    trace_mask: jax.Array,
    gamma: jax.Array | float,
    lam: jax.Array | float,
) -> jax.Array:
    """Generalised advantage estimates, all arrays ``[T, B]``.

    ``delta_t = r_t + gamma * bootstrap_mask_t * next_values_t - values_t``
    ``A_t = delta_t + gamma * lam * trace_mask_t * A_{t+1}``, ``A_T = 0``.
    """
    deltas = rewards + gamma * bootstrap_mask * next_values - values

    def step(adv_next, xs):
        delta, trace = xs
        adv = delta + gamma * lam * trace * adv_next
        return adv, adv

    _, adv = jax.lax.scan(step, jnp.zeros_like(deltas[0]), (deltas, trace_mask), reverse=True, unroll=16)
    return adv


def extrinsic_gae(rewards, values, final_values, terminated, truncated, gamma, lam):
    """Episodic GAE, all ``[T, B]``. ``final_values`` is ``V(s')`` of the true next observation,
    bootstrapped unless the step terminated; the trace is cut at every end."""
    done = jnp.logical_or(terminated, truncated)
    return gae(rewards, values, final_values, 1.0 - terminated, 1.0 - done, gamma, lam)


def time_limit_as_terminal(terminated: jax.Array, truncated: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(terminated, truncated)`` with every truncation counted as a termination: no bootstrap
    from ``V(s')`` at a time limit, as gymnax 0.0.8's single ``done`` flag has it."""
    return jnp.logical_or(terminated, truncated), jnp.zeros_like(truncated)


def intrinsic_gae(rewards, values, last_value, gamma, lam):
    """Non-episodic GAE. ``values [T, B]`` along the stream, ``last_value [B]`` after it."""
    next_values = jnp.concatenate([values[1:], last_value[None]], axis=0)
    ones = jnp.ones_like(rewards)
    return gae(rewards, values, next_values, ones, ones, gamma, lam)
