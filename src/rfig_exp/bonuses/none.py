"""No exploration bonus: plain PPO.

The bonus interface is called as for any other bonus (its reward is 0); ``intrinsic=False``
tells the agent to leave the intrinsic stream out of the advantage and the value loss.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rfig_exp.bonuses.settings import BonusSettings


@dataclass(frozen=True)
class NoneSettings(BonusSettings):
    name: ClassVar[str] = "none"
    label: ClassVar[str] = "PPO"
    colour: ClassVar[str] = "#555555"
    role: ClassVar[str] = "reference"


def make(settings: NoneSettings, obs_shape, action_space):
    import jax.numpy as jnp

    from rfig_exp.bonuses.base import Bonus

    def init(key, warmup_obs, hparams):
        return ()

    def reward(state, batch, hparams):
        return jnp.zeros(batch.terminated.shape, jnp.float32), {}

    def update(state, batch, key, hparams):
        return state, {}

    return Bonus(settings.name, init, reward, update, intrinsic=False)
