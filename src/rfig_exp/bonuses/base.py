"""The one interface every exploration bonus implements.

A bonus is a bundle of pure functions over its own pytree state. The agent owns
observation normalisation, intrinsic-reward normalisation and both GAEs
(``rfig_exp.agents.intrinsic``, which this project's trainer and a loop of one's own both run);
a bonus owns only its model. ``reward`` always sees the state *before* this batch's ``update``.

Numeric hyperparameters (``hparams``, a NamedTuple of float32 scalars per bonus: its traced
settings) are arguments of the compiled function, so a sweep can vmap over them; anything
that sets a shape is a static setting, fixed when the bonus is made (each bonus declares its
settings in its own module: ``rfig_exp.bonuses``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, NamedTuple, Optional

import jax
import jax.numpy as jnp

from rfig_exp.envs.base import BoxSpace, DiscreteSpace

BonusState = Any
Hparams = Any  # the bonus's NamedTuple of float32 scalars (its settings' Hparams)
Metrics = dict[str, jax.Array]


class BonusBatch(NamedTuple):
    """One rollout as a bonus sees it; leading axes ``[T, B]``.

    Observations are normalised by the agent's running statistics and clipped to
    [-clip, clip]. ``next_obs`` is the true ``s'`` (the final observation at episode ends).
    """

    obs: jax.Array
    actions: jax.Array
    next_obs: jax.Array
    terminated: jax.Array
    truncated: jax.Array


@dataclass(frozen=True)
class Bonus:
    """``init(key, warmup_obs [N, *obs], hparams) -> state``;
    ``reward(state, batch, hparams) -> (r_int [T, B], metrics)``;
    ``update(state, batch, key, hparams) -> (state, metrics)``.

    Optional ``needs_refresh(state) -> bool`` / ``refresh(state, hparams) -> state`` let a
    bonus ask for expensive repair work (e.g. an exact matrix inverse). The agent calls
    them outside the per-seed vmap, so the costly branch runs only when some seed asks
    for it instead of being turned into an always-executed ``select`` by vmap.

    Optional ``progress_note(metrics, seed_updates) -> (note, warning)`` is the bonus's part of
    the console's progress line: from a window's host metrics (``bonus/<name>``, ``[S]`` each) and
    its updates times seeds, a short note and a warning or None (said once per run). Host side,
    no JAX.

    ``intrinsic=False`` declares the reward identically zero (the ``none`` bonus). The
    agent then leaves the intrinsic stream out of the advantage and the value loss, so
    the run is plain PPO: an all-zero stream would still add ``beta * A_int`` noise from
    an untrained intrinsic value head to every advantage.
    """

    name: str
    init: Callable[[jax.Array, jax.Array, Hparams], BonusState]
    reward: Callable[[BonusState, BonusBatch, Hparams], tuple[jax.Array, Metrics]]
    update: Callable[[BonusState, BonusBatch, jax.Array, Hparams], tuple[BonusState, Metrics]]
    needs_refresh: Optional[Callable[[BonusState], jax.Array]] = None
    refresh: Optional[Callable[[BonusState, Hparams], BonusState]] = None
    describe: Optional[Callable[[BonusState], Metrics]] = None  # scalars for summary.json
    intrinsic: bool = True
    counted_metrics: tuple[str, ...] = ()  # metrics that count events: summed over a window, not averaged
    progress_note: Optional[Callable[[Mapping[str, Any], int], tuple[str, Optional[str]]]] = None


def flat_states(x: jax.Array, obs_ndim: int) -> jax.Array:
    """``[*lead, *obs_shape] -> [prod(lead), prod(obs_shape)]``.

    Raises ValueError for an array with fewer axes than an observation: flattening states that
    are flat already (``[N, d]`` of a 2-D or 3-D observation) would otherwise silently merge
    rows or keep them by accident, depending on the observation's rank."""
    if x.ndim < obs_ndim:
        raise ValueError(f"flat_states: an array of shape {x.shape} has fewer axes than one "
                         f"{obs_ndim}-D observation (already flat?)")
    lead = x.shape[: x.ndim - obs_ndim]
    n = 1
    for s in lead:
        n *= s
    return x.reshape(n, -1)


def action_features(actions: jax.Array, action_space) -> jax.Array:
    """Actions as float32 model inputs: ``[...] int -> [..., A]`` one-hot for a
    ``DiscreteSpace`` (A = num_actions), ``[..., A] -> [..., A]`` unchanged for a ``BoxSpace``.

    For bonuses whose model takes the action (e.g. a dynamics model ``p(s' | s, a)``), so
    they work for both kinds of action space.
    """
    if isinstance(action_space, DiscreteSpace):
        return jax.nn.one_hot(actions, action_space.num_actions, dtype=jnp.float32)
    if isinstance(action_space, BoxSpace):
        actions = jnp.asarray(actions, jnp.float32)
        if actions.shape[-1:] != (action_space.dim,):
            raise ValueError(f"BoxSpace(dim={action_space.dim}) actions need a trailing axis of {action_space.dim}, "
                             f"got shape {actions.shape}")
        return actions
    raise TypeError(f"unknown action space {action_space!r}")


def float32_hparams(hparams):
    """A settings' ``hparams`` NamedTuple (Python floats) as float32 scalars, the arguments of the
    compiled function (``rfig_exp.bonuses.make_bonus`` returns them with the bonus)."""
    return jax.tree.map(lambda v: jnp.asarray(v, jnp.float32), hparams)
