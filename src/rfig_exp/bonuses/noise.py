"""The control: a bonus that knows nothing about the states, through the same two-head agent.

Each transition's raw intrinsic reward is an independent Exponential(1) draw: non-negative and
right-skewed like a novelty bonus (coefficient of variation 1), unrelated to the state, the action
or how often either was seen. The agent then does what it does for every bonus: divides it by the
running std of its discounted return, fits the intrinsic value head and adds ``beta * A_int`` to
the advantage. Whatever a real bonus gains over this control comes from what its reward says about
the states; whatever this control gains over plain PPO (``none``) comes from the second value head,
the reward scaling and advantage noise of a bonus's size.

Why noise rather than a constant: a constant reward's intrinsic advantage vanishes once the
intrinsic head has fitted its value (only the head's fitting error is left), so it would control
for the second head but not for the intrinsic advantage a real bonus adds to every minibatch; noise
of the same normalised scale controls for both (docs/bonuses/noise.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rfig_exp.bonuses.settings import BonusSettings


@dataclass(frozen=True)
class NoiseSettings(BonusSettings):
    name: ClassVar[str] = "noise"
    label: ClassVar[str] = "Noise"
    colour: ClassVar[str] = "#999999"
    role: ClassVar[str] = "control"


def make(settings: NoiseSettings, obs_shape, action_space):
    import jax
    import jax.numpy as jnp

    from rfig_exp.bonuses.base import Bonus

    def init(key, warmup_obs, hparams):
        return key   # the next batch's draws

    def reward(state, batch, hparams):
        r = jax.random.exponential(state, batch.terminated.shape, jnp.float32)
        return r, {}

    def update(state, batch, key, hparams):
        return key, {}

    return Bonus(settings.name, init, reward, update)
