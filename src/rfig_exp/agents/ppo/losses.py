"""PPO's loss (pure functions): the clipped surrogate, the clipped value loss and the advantages'
standardisation. The GAEs of both streams they are computed from are :mod:`rfig_exp.agents.returns`'s,
shared with the agent's side of a bonus (re-exported here for the trainer and its tests).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from rfig_exp.agents.returns import extrinsic_gae, gae, intrinsic_gae, time_limit_as_terminal

__all__ = ["clipped_value_loss", "extrinsic_gae", "gae", "intrinsic_gae", "policy_loss", "separately_standardized",
           "standardize", "time_limit_as_terminal"]


def standardize(x: jax.Array) -> jax.Array:
    """``(x - mean) / (std + 1e-8)`` over all of ``x`` (a minibatch's advantages)."""
    return (x - x.mean()) / (x.std() + 1e-8)


def separately_standardized(adv_ext: jax.Array, adv_int: jax.Array | None, ext_coef, beta) -> jax.Array:
    """The RFIG authors' advantage (``agent.advantage_mix=separate``), ``[N]``: each stream
    standardised over the minibatch, then ``ext_coef * std(A_ext) + beta * std(A_int)``; without an
    intrinsic stream (``adv_int`` None) ``std(A_ext)`` alone, whatever ``ext_coef``."""
    if adv_int is None:
        return standardize(adv_ext)
    return ext_coef * standardize(adv_ext) + beta * standardize(adv_int)


def clipped_value_loss(values, old_values, targets, clip_eps):
    """PPO's clipped value loss (PureJaxRL/CleanRL default), ``[N, ...]`` -> ``[...]``: one loss
    per value head when the heads are stacked on the last axis."""
    clipped = old_values + jnp.clip(values - old_values, -clip_eps, clip_eps)
    return 0.5 * jnp.maximum((values - targets) ** 2, (clipped - targets) ** 2).mean(axis=0)


def policy_loss(log_probs, old_log_probs, advantages, clip_eps):
    """Clipped surrogate, ``[N]`` -> (loss, approx_kl, clip_fraction)."""
    log_ratio = log_probs - old_log_probs
    ratio = jnp.exp(log_ratio)
    surrogate = jnp.minimum(ratio * advantages, jnp.clip(ratio, 1 - clip_eps, 1 + clip_eps) * advantages)
    approx_kl = ((ratio - 1) - log_ratio).mean()
    clip_frac = (jnp.abs(ratio - 1) > clip_eps).mean()
    return -surrogate.mean(), approx_kl, clip_frac
