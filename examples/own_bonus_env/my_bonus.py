"""A bonus of the user's own: a count bonus over a SimHash of the state, ``r = scale / sqrt(n(s') + 1)``,
``n`` the visits of ``s'``'s cell of a ``2**bits`` table (cells: the signs of a fixed Gaussian
projection of the observation, as the agent normalises it)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from rfig_exp.bonuses import BonusSettings
from rfig_exp.config.settings import static, traced
from rfig_exp.config.validation import Count, Number


@dataclass(frozen=True)
class CountSettings(BonusSettings):
    name: ClassVar[str] = "count"             # bonus.name, the YAML file's name, the results folder
    label: ClassVar[str] = "SimHash count"    # in every figure and table
    colour: ClassVar[str] = "#AA3377"
    role: ClassVar[str] = "baseline"          # reference | baseline | method

    bits: int = static(8, Count(1))           # k: the table has 2**k cells (static: sets a shape)
    scale: float = traced(1.0, Number(0.0))   # r = scale / sqrt(n + 1) (traced: an argument of the jit)


def make(settings: CountSettings, obs_shape, action_space):
    """The bonus's pure functions (JAX is imported here, not at the top: a config is checked,
    and a report drawn, without it)."""
    import jax
    import jax.numpy as jnp

    from rfig_exp.bonuses.base import Bonus, flat_states

    powers = 2 ** jnp.arange(settings.bits)

    def cells(projection, obs):
        x = flat_states(obs, len(obs_shape))                       # [N, d]
        return ((x @ projection) > 0).astype(jnp.int32) @ powers   # [N]

    def init(key, warmup_obs, hp):
        projection = jax.random.normal(key, (math.prod(obs_shape), settings.bits))
        return projection, jnp.zeros(2 ** settings.bits)

    def reward(state, batch, hp):
        projection, counts = state
        n = counts[cells(projection, batch.next_obs)]
        return (hp.scale / jnp.sqrt(n + 1.0)).reshape(batch.terminated.shape), {}

    def update(state, batch, key, hp):
        projection, counts = state
        counts = counts.at[cells(projection, batch.next_obs)].add(1.0)
        return (projection, counts), {"cells_visited": jnp.sum(counts > 0)}

    return Bonus(settings.name, init, reward, update)
