"""Running statistics for observation and intrinsic-reward normalisation (pure functions).

Observation statistics follow Algorithm 1 of the paper: updated with every batch of
states. Intrinsic rewards are divided by the running std of the *discounted intrinsic
return*, tracked by a forward filter ``R_t = gamma * R_{t-1} + r_t`` per environment and
scanned over the time axis (PPO+RND, Burda et al. 2018); no mean subtraction, no clipping.
The RFIG authors' code divides by the running std of the raw per-step rewards instead
(:func:`scale_by_reward_std`).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

EPS = 1e-8


class RunningMeanStd(NamedTuple):
    mean: jax.Array   # feature shape
    var: jax.Array    # feature shape
    count: jax.Array  # [] float32


def rms_init(shape: tuple[int, ...]) -> RunningMeanStd:
    return RunningMeanStd(jnp.zeros(shape, jnp.float32), jnp.ones(shape, jnp.float32), jnp.zeros((), jnp.float32))


def rms_update(rms: RunningMeanStd, batch: jax.Array) -> RunningMeanStd:
    """Merge a batch ``[N, *shape]`` into the statistics (Chan et al. parallel variance)."""
    batch = batch.astype(jnp.float32)
    n = jnp.asarray(batch.shape[0], jnp.float32)
    b_mean = batch.mean(axis=0)
    b_var = batch.var(axis=0)
    total = rms.count + n
    delta = b_mean - rms.mean
    mean = rms.mean + delta * n / total
    m2 = rms.var * rms.count + b_var * n + delta**2 * rms.count * n / total
    return RunningMeanStd(mean, m2 / total, total)


def normalize(rms: RunningMeanStd, x: jax.Array, clip: jax.Array | float) -> jax.Array:
    """``(x - mean) / std`` clipped to ``[-clip, clip]``; ``x`` is ``[..., *shape]``."""
    return jnp.clip((x - rms.mean) / jnp.sqrt(rms.var + EPS), -clip, clip)


def discounted_return_filter(
    carry: jax.Array, rewards: jax.Array, gamma: jax.Array | float
) -> tuple[jax.Array, jax.Array]:
    """Forward filter over time. ``carry`` is ``[B]``, ``rewards`` ``[T, B]``.

    Returns the new carry ``[B]`` and the filtered returns ``R`` ``[T, B]``.
    """

    def step(r_prev, r_t):
        r_new = gamma * r_prev + r_t
        return r_new, r_new

    return jax.lax.scan(step, carry, rewards, unroll=16)


def scale_by_return_std(
    filter_carry: jax.Array, rms: RunningMeanStd, rewards: jax.Array, gamma: jax.Array | float
) -> tuple[jax.Array, RunningMeanStd, jax.Array]:
    """Update the filter and its statistics with ``rewards [T, B]``; return scaled rewards."""
    filter_carry, returns = discounted_return_filter(filter_carry, rewards, gamma)
    rms = rms_update(rms, returns.reshape(-1))
    return filter_carry, rms, rewards / jnp.sqrt(rms.var + EPS)


def scale_by_reward_std(rms: RunningMeanStd, rewards: jax.Array) -> tuple[RunningMeanStd, jax.Array]:
    """Merge every reward of ``rewards [T, B]`` into the statistics, then divide by their std: the
    running std of the raw per-step reward, no mean subtracted (the RFIG authors' code,
    ``update_return=False``). A positive bonus keeps a positive mean (mean/std per step)."""
    rms = rms_update(rms, rewards.reshape(-1))
    return rms, rewards / jnp.sqrt(rms.var + EPS)
