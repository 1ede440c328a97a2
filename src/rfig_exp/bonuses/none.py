"""No exploration bonus: plain PPO.

The bonus interface is called as for any other bonus (its reward is 0); ``intrinsic=False``
tells the agent to leave the intrinsic stream out of the advantage and the value loss.
"""

from __future__ import annotations

import jax.numpy as jnp

from rfig_exp.bonuses.base import Bonus, float32_hparams
from rfig_exp.bonuses.settings import NoneSettings


def make_none_bonus(settings: NoneSettings, obs_shape, action_space, batch_shape):
    del obs_shape, action_space, batch_shape

    def init(key, warmup_obs, hparams):
        return ()

    def reward(state, batch, hparams):
        return jnp.zeros(batch.terminated.shape, jnp.float32), {}

    def update(state, batch, key, hparams):
        return state, {}

    return Bonus("none", init, reward, update, intrinsic=False), float32_hparams(settings.hparams)
