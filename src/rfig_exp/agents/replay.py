"""The agent's side of a bonus for an off-policy learner with a replay buffer: a DQN in PureJaxRL's
``dqn.py`` shape (vectorised envs, transitions added to a buffer as they are collected, TD targets on
minibatches sampled from it; docs/library-dqn.md).

:class:`ReplayIntrinsic` turns the transitions of one collection step into the reward to store in
the buffer, ``ext_coef * r_ext + beta * r_int``, with these choices (the reasons: docs/library-dqn.md):

1. **The intrinsic reward is computed once, as the transitions are inserted**, from the bonus's
   state before it learns from them (NGU and Agent57 compute theirs as the actors act and store it
   with the transition), not again for each sampled minibatch: a replayed transition keeps the
   novelty it had when it was visited, and the cost is one reward per collected transition rather
   than one per sampled one.
2. **One bonus update per insertion, on the inserted transitions**, never on replayed samples: RFIG's
   precision is a posterior over the states seen and a count bonus counts visits, so each
   transition must enter the model once; a transition replayed k times would count k times.
3. **The same normalisation as PPO's** (:func:`rfig_exp.agents.intrinsic.scale`): observations by
   running statistics from a random-policy warm-up, clipped; the reward divided by the running std of
   each env's non-episodic discounted intrinsic return (RND's scaling), so ``beta`` weighs every
   bonus alike and means what it means for ``IntrinsicReward``. One difference: the intrinsic reward
   is zero until those statistics hold ``warmup_steps * num_envs`` returns (as many as PPO's first
   update of 128 steps gives them). A PPO's first update scales by the std of thousands of returns;
   one env step's are a handful, for RFIG all equal (every state's first reward is ``0.5 log 2``),
   and dividing by their std stored rewards of 80 in the buffer where later ones are 0.02.
4. **One reward, one Q-network**: the stored reward mixes both streams (NGU's ``r = r_e + beta
   r_i``). The TD target then cuts the intrinsic return at episode ends with the extrinsic one,
   where PPO's separate intrinsic head does not (a DQN with two heads would keep them apart).

The methods are :class:`rfig_exp.agents.intrinsic.IntrinsicReward`'s (the same functions and state);
``step`` adds the mixing and takes one env step's ``[B, ...]`` arrays when ``num_steps`` is 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from rfig_exp.agents.intrinsic import IntrinsicHparams, IntrinsicReward, IntrinsicState
from rfig_exp.agents.shapes import expect


@dataclass(frozen=True)
class ReplayIntrinsic:
    """A bonus for a DQN's replay buffer: :meth:`create` it once, :meth:`init` per seed from
    :meth:`warmup`'s states, then per collection step :meth:`step`, whose reward goes into the buffer in
    place of the env's. ``explore`` is the :class:`IntrinsicReward` underneath (``explore.bonus``,
    ``explore.hparams``)."""

    explore: IntrinsicReward

    @classmethod
    def create(cls, name: str, observation_space: Any, action_space: Any, num_envs: int, num_steps: int = 1, *,
               module: str | None = None, **settings: Any) -> ReplayIntrinsic:
        """Bonus ``name`` for transitions inserted ``num_steps`` per env at a time from ``num_envs`` envs
        (PureJaxRL's ``dqn.py``: one step of every env per iteration, ``num_steps=1``); ``settings``:
        ``beta`` (0.5), ``ext_coef`` (1), ``gamma_int`` (0.99), ``obs_clip`` (5), ``warmup_steps``
        (128) and the bonus's own (``IntrinsicReward.create``'s, checked alike). A bonus that keeps a
        fraction of each batch needs it to hold a state: RFIG's ``floor(num_envs * num_steps * rho)``
        is at least 1 (16 envs at its default ``rho`` 0.0625)."""
        return cls(IntrinsicReward.create(name, observation_space, action_space, num_envs, num_steps, module=module,
                                          **settings))

    @property
    def hparams(self) -> IntrinsicHparams:
        return self.explore.hparams

    def warmup(self, key: jax.Array, env: Any, env_params: Any) -> jax.Array:
        """``[num_envs * (warmup_steps + 1), *obs]`` random-policy states (``IntrinsicReward.warmup``)."""
        return self.explore.warmup(key, env, env_params)

    def init(self, key: jax.Array, warmup_obs: jax.Array, hp: IntrinsicHparams | None = None) -> IntrinsicState:
        """The state before the first insertion (``IntrinsicReward.init``)."""
        return self.explore.init(key, warmup_obs, hp)

    def normalize(self, state: IntrinsicState, obs: jax.Array, hp: IntrinsicHparams | None = None) -> jax.Array:
        """``obs [..., *obs_shape]`` normalised by the current statistics (for a Q-network that wants them)."""
        return self.explore.normalize(state, obs, hp)

    def step(self, state: IntrinsicState, obs: jax.Array, actions: jax.Array, next_obs: jax.Array,
             terminated: jax.Array, truncated: jax.Array, reward: jax.Array, key: jax.Array,
             hp: IntrinsicHparams | None = None) -> tuple[IntrinsicState, jax.Array, dict[str, jax.Array]]:
        """The transitions about to be inserted, *raw* (``obs [T, B, *obs_shape]``, ``actions``, the true
        next states ``next_obs`` in any shape of that size, ``terminated``, ``truncated`` and the env's
        ``reward [T, B]``; with ``num_steps`` 1 also one env step's ``[B, ...]``): ``(state, mixed,
        metrics)``, ``mixed = ext_coef * reward + beta * r_int`` of the leading shape given, to store in
        the buffer in place of ``reward``. ``r_int`` is scaled by the intrinsic return's std, from the
        bonus's state before these transitions, which it then learns (one update), and zero until
        ``warmup_steps * num_envs`` returns are in the std (the module's docstring); ``metrics``: the
        bonus's, ``intrinsic_reward`` (raw mean) and ``intrinsic_reward_normalized`` (scaled mean)."""
        self.explore.check_state("ReplayIntrinsic.step", state, key)
        hp = self.explore.checked_hp("ReplayIntrinsic.step", hp)
        one_step = self.explore.rollout.num_steps == 1 and getattr(terminated, "ndim", 0) == 1
        if one_step:  # one vmapped env step: [B, ...] -> [1, B, ...]
            obs, actions, next_obs, terminated, truncated, reward = jax.tree.map(
                lambda x: x[None], (obs, actions, next_obs, terminated, truncated, reward))
        self.explore.rollout.check_rollout("ReplayIntrinsic.step", obs, actions, next_obs, terminated, truncated)
        expect("ReplayIntrinsic.step", "reward", reward, self.explore.rollout.lead, "[num_steps, num_envs]")
        state, r_int, metrics = self.explore.step(state, obs, actions, next_obs, terminated, truncated, key, hp)
        # held at zero until the return statistics hold a warm-up's worth of returns: the std of the first
        # few is no scale (RFIG's first rewards are equal, 0.5 log 2, and so are one step's returns)
        r_int = jnp.where(state.return_rms.count >= self.explore.warmup_steps * self.explore.num_envs, r_int, 0.0)
        mixed = hp.ext_coef * reward + hp.beta * r_int
        metrics = {**metrics, "intrinsic_reward_normalized": r_int.mean()}
        return state, (mixed[0] if one_step else mixed), metrics


__all__ = ["ReplayIntrinsic"]
