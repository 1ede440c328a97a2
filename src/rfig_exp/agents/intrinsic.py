"""The agent's side of an exploration bonus: what a PPO does around ``rfig_exp.bonuses`` (docs/library.md).

A bonus owns only its model. The agent around it, as the paper's Algorithm 1 and PPO+RND (Burda et
al. 2018) have it:

1. normalises observations by running statistics that start from random-policy warm-up states,
   clipped to ``[-obs_clip, obs_clip]``, and makes the bonus's state from those warm-up states
   (:func:`init`);
2. per update, merges the rollout's states into the statistics, normalises the rollout's states and
   true next states with the merged ones, and takes the reward from the bonus's state *before* the
   batch's update, then the update (:func:`observe`); repairs the bonus's state when it asks for it
   (:func:`refresh_if_needed`, :func:`refresh_seeds`), without vmap turning that into work for
   every seed on every update;
3. divides the intrinsic reward by the running std of the non-episodic discounted intrinsic return,
   one forward filter per env carried across updates and episode ends (:func:`scale`);
4. takes a non-episodic GAE of the scaled reward against the intrinsic value head, and weighs the
   two advantages ``ext_coef * A_ext + beta * A_int`` (:func:`advantage`).

These are pure functions over an :class:`IntrinsicState`, jit-, vmap- and scan-friendly; their
numeric settings come in ``hp``, any object with the fields ``obs_clip``, ``gamma_int``, ``beta``,
``ext_coef`` and ``bonus`` (the bonus's hyperparameters): :class:`IntrinsicHparams`, or this
project's ``PPOHparams``, so the trainer (``rfig_exp.agents.ppo.train``) runs these same functions.
:class:`IntrinsicReward` bundles them with a bonus and its settings for a training loop of one's
own: a PureJaxRL ``ppo.py`` needs a handful of lines (docs/library.md shows the diff).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.extend.core
import jax.numpy as jnp
from jax.custom_batching import custom_vmap

from rfig_exp.agents import returns, warmup
from rfig_exp.agents.contract import IntrinsicSide
from rfig_exp.agents.normalization import (
    RunningMeanStd,
    normalize,
    rms_init,
    rms_update,
    scale_by_return_std,
    scale_by_reward_std,
)
from rfig_exp.agents.shapes import (
    BONUS_DTYPE,
    RolloutShape,
    TreeSpec,
    bonus_input,
    bonus_reward,
    bonus_update,
    check_fraction,
    check_hparams,
    check_key,
    check_tree,
    checked_need,
    checked_refresh,
    tree_spec,
)
from rfig_exp.bonuses import action_space_of, create, observation_shape, positive_integer
from rfig_exp.bonuses.base import Bonus, BonusBatch, concrete, float32_hparams
from rfig_exp.bonuses.settings import BonusSettings
from rfig_exp.config.settings import declared


class IntrinsicState(NamedTuple):
    """Everything the agent keeps for the bonus, one seed's (a pytree: stack it to vmap seeds)."""

    obs_rms: RunningMeanStd     # observation statistics, one observation's shape
    return_filter: jax.Array    # [num_envs] discounted intrinsic return of each env's stream
    return_rms: RunningMeanStd  # [] statistics of those returns
    bonus: Any                  # the bonus's own state


class IntrinsicHparams(NamedTuple):
    """The numeric settings, float32 scalars (arguments of the compiled function, so a sweep can vmap
    over them): the agent's and, in ``bonus``, the bonus's own."""

    obs_clip: Any
    gamma_int: Any
    beta: Any
    ext_coef: Any
    bonus: Any


def init(bonus: Bonus, key: jax.Array, warmup_obs: jax.Array, num_envs: int, hp: Any) -> IntrinsicState:
    """The state before the first update: observation statistics of ``warmup_obs`` (``[N, *obs]``
    raw states of a random policy: the resets and the steps after them) and the bonus's state made
    from those states normalised (in the bonus's float32)."""
    obs_rms = rms_update(rms_init(warmup_obs.shape[1:]), warmup_obs)
    bonus_state = bonus.init(key, bonus_input(normalize(obs_rms, warmup_obs, hp.obs_clip)), hp.bonus)
    return IntrinsicState(obs_rms, jnp.zeros((num_envs,), jnp.float32), rms_init(()), bonus_state)


def observe(bonus: Bonus, state: IntrinsicState, rollout: BonusBatch, key: jax.Array,
            hp: Any) -> tuple[IntrinsicState, jax.Array, dict[str, jax.Array]]:
    """``(state, r_int [T, B], metrics)`` for ``rollout``, a ``BonusBatch`` of *raw* observations
    (``next_obs``: the true ``s'``, the final observation at an episode end): the statistics merged
    with ``rollout.obs``, the bonus's reward (unscaled) from its state before this batch, then its
    update, both on the batch normalised by the merged statistics (its floats in the bonus's float32).
    ``metrics``: the bonus's, of its reward then of its update. What the bonus returns is checked as it is
    traced (``r_int`` of the batch's ``[T, B]`` floats, the state of the structure it was given: a one-line
    error naming the bonus, ``rfig_exp.agents.shapes``)."""
    obs_rms = rms_update(state.obs_rms, rollout.obs.reshape((-1,) + state.obs_rms.mean.shape))
    batch = BonusBatch(obs=bonus_input(normalize(obs_rms, rollout.obs, hp.obs_clip)),
                       actions=bonus_input(rollout.actions),
                       next_obs=bonus_input(normalize(obs_rms, rollout.next_obs, hp.obs_clip)),
                       terminated=rollout.terminated, truncated=rollout.truncated)
    r_int, reward_metrics = bonus_reward(bonus.name, bonus.reward(state.bonus, batch, hp.bonus),
                                         rollout.terminated.shape)
    bonus_state, update_metrics = bonus_update(bonus.name, bonus.update(state.bonus, batch, key, hp.bonus), state.bonus)
    return state._replace(obs_rms=obs_rms, bonus=bonus_state), r_int, {**reward_metrics, **update_metrics}


def scale(state: IntrinsicState, r_int: jax.Array, hp: Any,
          by: str = "return_std") -> tuple[IntrinsicState, jax.Array]:
    """``r_int [T, B]`` divided by a running std, no mean subtracted, no clipping; the statistics
    advanced by the batch. ``by="return_std"`` (the paper, RND's scaling): the std of the discounted
    intrinsic return, one forward filter per env; of every return since the start, so the scaled
    reward falls as the bonus's raw reward does (states becoming familiar), in units of the run's
    own intrinsic-return scale. ``by="reward_std"`` (the RFIG authors' code): the std of the raw
    per-step rewards (the filter is not used)."""
    if by == "reward_std":
        return_rms, scaled = scale_by_reward_std(state.return_rms, r_int)
        return state._replace(return_rms=return_rms), scaled
    if by != "return_std":
        raise ValueError(f"scale: by={by!r} must be one of return_std, reward_std")
    return_filter, return_rms, scaled = scale_by_return_std(state.return_filter, state.return_rms, r_int, hp.gamma_int)
    return state._replace(return_filter=return_filter, return_rms=return_rms), scaled


def advantage(adv_ext: jax.Array, r_int: jax.Array, v_int: jax.Array, v_int_last: jax.Array, gae_lambda: Any,
              hp: Any) -> tuple[jax.Array, jax.Array]:
    """``(ext_coef * A_ext + beta * A_int, A_int)``, all ``[T, B]``: ``A_int`` the non-episodic GAE
    of the scaled ``r_int`` along each env's stream (episode ends included), ``v_int`` the intrinsic
    values the rollout saw, ``v_int_last [B]`` that of the observation after the rollout."""
    adv_int = returns.intrinsic_gae(r_int, v_int, v_int_last, hp.gamma_int, gae_lambda)
    return hp.ext_coef * adv_ext + hp.beta * adv_int, adv_int


def _where_seed(need: jax.Array, a: Any, b: Any) -> Any:
    """Per-seed select between two stacked pytrees, ``need`` is ``[S]``."""
    return jax.tree.map(lambda x, y: jnp.where(need.reshape(need.shape + (1,) * (x.ndim - 1)), x, y), a, b)


def refresh_seeds(bonus: Bonus, states: Any, hp: Any, hp_axis: int | None = None) -> Any:
    """The bonus's states of ``[S]`` seeds, each refreshed where its ``needs_refresh`` asks: one
    ``lax.cond`` on whether any seed asks, outside the per-seed computation, so the expensive branch
    (RFIG's exact inverse) runs on the updates where some seed needs it, not on every update as a
    vmapped ``cond`` (a select of both branches) would. ``hp``: the bonus's hyperparameters, shared
    by the seeds (``hp_axis=0``: one per seed)."""
    need = jax.vmap(lambda s: checked_need(bonus.name, bonus.needs_refresh, s))(states)
    one = checked_refresh(bonus.name, bonus.refresh)
    first = jax.tree.map(lambda x: x[0], states)
    changed = _changed_leaves(one, first, jax.tree.map(lambda x: x[0], hp) if hp_axis == 0 else hp)  # as per seed
    return _cond_on_changed(need.any(), jax.vmap(one, in_axes=(0, hp_axis)), states, hp, changed,
                            where=lambda fresh, old: _where_seed(need, fresh, old))


def _changed_leaves(refresh: Any, state: Any, hp: Any) -> list[bool]:
    """For each leaf of ``state``, whether ``refresh(state, hp)`` may change it: not an output that
    its traced program passes through (:func:`_passed_through`)."""
    passed = _passed_through(jax.make_jaxpr(refresh)(state, hp).jaxpr)
    return [passed[i] != i for i in range(len(jax.tree.leaves(state)))]


def _cond_on_changed(pred: jax.Array, refresh: Any, state: Any, hp: Any, changed: list[bool],
                     where: Any = None) -> Any:
    """``lax.cond(pred, refresh, identity, state, hp)``, the cond carrying only the leaves of
    ``state`` that ``refresh`` changes (``changed``, :func:`_changed_leaves`; ``where(fresh, old)``
    applied to those when given). A leaf
    that a branch passes through while another op of it reads the leaf in another layout (RFIG's
    ``Sigma``, passed on unchanged by a refresh that feeds it to LAPACK's column-major Cholesky)
    takes that layout on the cond's output: XLA on CPU then transposes it into and out of the cond
    on every update, refreshed or not (7-17 ms per update for a [1024, 1024] Sigma, 2-5x the rest of
    RFIG's update; ``benchmarks/dqn_throughput.py --rfig-floor``)."""
    leaves, treedef = jax.tree.flatten(state)

    def pick(tree: Any) -> list:
        return [leaf for leaf, c in zip(jax.tree.leaves(tree), changed) if c]

    def fresh(s: Any, h: Any) -> list:
        new = refresh(s, h)
        return pick(where(new, s) if where is not None else new)

    out = iter(jax.lax.cond(pred, fresh, lambda s, h: pick(s), state, hp))
    return treedef.unflatten([next(out) if c else leaf for leaf, c in zip(leaves, changed)])


# Primitives that call one program on their operands as they are (a jit, a custom_vmap or custom_jvp
# function): an output of theirs that their program passes through is the operand itself.
_CALLS = frozenset({"pjit", "jit", "closed_call", "core_call", "custom_vmap_call", "custom_jvp_call"})


def _passed_through(jaxpr: Any) -> list[int | None]:
    """For each output of ``jaxpr``, the index of the input it is, passed through unchanged (through
    the calls of :data:`_CALLS`, which a bonus's jitted or per-seed functions trace into); None for an
    output it computes."""
    source = {v: i for i, v in enumerate(jaxpr.invars)}
    for eqn in jaxpr.eqns:
        if eqn.primitive.name not in _CALLS:
            continue
        body = next((p.jaxpr for p in eqn.params.values() if isinstance(p, jax.extend.core.ClosedJaxpr)
                     and len(p.jaxpr.invars) == len(eqn.invars) and len(p.jaxpr.outvars) == len(eqn.outvars)), None)
        if body is None:
            continue
        for out, i in zip(eqn.outvars, _passed_through(body)):
            given = eqn.invars[i] if i is not None else None
            if isinstance(given, jax.extend.core.Var) and given in source:
                source[out] = source[given]
    return [source.get(v) if isinstance(v, jax.extend.core.Var) else None for v in jaxpr.outvars]


def refresh_if_needed(bonus: Bonus, state: Any, hp: Any) -> Any:
    """One seed's bonus state, refreshed if ``needs_refresh`` asks; under ``jax.vmap`` (PureJaxRL's
    ``jit(vmap(train))``), :func:`refresh_seeds` over the seeds, so the refresh costs nothing on the
    updates where no seed needs one. The state unchanged for a bonus without a refresh."""
    if bonus.refresh is None:
        return state
    refresh = checked_refresh(bonus.name, bonus.refresh)
    one = custom_vmap(lambda s, h: _cond_on_changed(checked_need(bonus.name, bonus.needs_refresh, s), refresh, s, h,
                                                    _changed_leaves(refresh, s, h)))

    @one.def_vmap
    def rule(axis_size, in_batched, states, h):
        states, hp_axis = _stacked(states, in_batched[0], axis_size), None
        if any(jax.tree.leaves(in_batched[1])):  # a sweep vmapped over the hyperparameters as well
            h, hp_axis = _stacked(h, in_batched[1], axis_size), 0
        out = refresh_seeds(bonus, states, h, hp_axis)
        return out, jax.tree.map(lambda _: True, out)

    return one(state, hp)


def _stacked(tree: Any, batched: Any, axis_size: int) -> Any:
    """``tree`` with every leaf that vmap left unbatched broadcast to ``[axis_size, ...]``."""
    return jax.tree.map(lambda x, b: x if b else jnp.broadcast_to(x, (axis_size,) + jnp.shape(x)), tree, batched)


# The agent's settings IntrinsicReward takes, by its argument's name, each declared once: in
# IntrinsicSide (every agent's, conf/agent/ppo.yaml's defaults) under the name of the right, beta in BonusSettings.
AGENT_SETTINGS = {"obs_clip": "obs_clip", "gamma_int": "gamma_int", "ext_coef": "ext_coef", "beta": "beta",
                  "warmup_steps": "obs_norm_init_steps"}


def _checked(given: dict[str, Any]) -> dict[str, Any]:
    """The agent's settings of :data:`AGENT_SETTINGS`, ``given`` or their declared defaults, checked by
    their declared rules (an error names the argument)."""
    declarations = {**dict(declared(IntrinsicSide)), "beta": dict(declared(BonusSettings))["beta"]}
    out = {}
    for argument, name in AGENT_SETTINGS.items():
        d = declarations[name]
        out[argument] = d.rule(given.get(argument, d.default), argument, {})
    return out


class _GymnaxStep(NamedTuple):
    """What the warm-up reads of a gymnax env's ``step``: its first, second and last outputs (the
    reward and episode ends between them are four or five outputs, by gymnax's version)."""

    obs: Any
    state: Any
    info: Any

    @classmethod
    def of(cls, out: tuple) -> _GymnaxStep:
        return cls(out[0], out[1], out[-1])


def _gymnax_next_states(obs: jax.Array, actions: jax.Array, out: _GymnaxStep) -> jax.Array:
    """A gymnax step's true next states: ``info["final_observation"]`` where the env gives it (gymnax
    1.0), else the observation it returns; in the observation's shape."""
    final = out.info.get("final_observation", out.obs) if isinstance(out.info, dict) else out.obs
    return final.reshape(out.obs.shape)


@dataclass(frozen=True)
class IntrinsicReward:
    """A bonus with the agent's side of it, for a PPO of one's own: :meth:`create` it once, then per
    seed :meth:`init` (from :meth:`warmup`'s states), and per update :meth:`step` after the rollout
    and :meth:`advantage` beside the extrinsic GAE. ``hparams`` are the default of each method's
    ``hp`` (pass other ``IntrinsicHparams`` to vmap a sweep over them). Each method checks what it is
    given as it is traced: the arrays' shapes against ``rollout``, the state's structure, shapes and
    dtypes against what :meth:`init` makes, ``key``, ``hp`` and ``gae_lambda`` (a one-line ValueError or
    TypeError naming the argument; nothing at run time; values only where they are concrete, outside
    ``jit``)."""

    bonus: Bonus
    hparams: IntrinsicHparams
    num_envs: int
    warmup_steps: int   # the random policy's steps per env before training (agent.obs_norm_init_steps)
    rollout: RolloutShape  # [num_steps, num_envs], one observation's shape, the actions' space

    @classmethod
    def create(cls, name: str, observation_space: Any, action_space: Any, num_envs: int, num_steps: int, *,
               module: str | None = None, **settings: Any) -> IntrinsicReward:
        """Bonus ``name`` (``rfig_exp.bonuses.create``: a built-in, an installed one, or one of
        ``module``) for ``num_envs`` envs of ``num_steps`` steps per rollout, observations of
        ``observation_space`` (a shape, an int or a space with a ``shape``), actions of
        ``action_space`` (gymnax's spaces work as they are). ``settings``: the agent's
        ``obs_clip``, ``gamma_int``, ``ext_coef``, ``beta`` and ``warmup_steps`` (defaults:
        ``conf/agent/ppo.yaml``, ``beta`` 0.5), and the bonus's own by name."""
        agent = _checked({k: v for k, v in settings.items() if k in AGENT_SETTINGS})
        num_envs, num_steps = positive_integer(num_envs, "num_envs"), positive_integer(num_steps, "num_steps")
        own = {k: v for k, v in settings.items() if k not in AGENT_SETTINGS}
        bonus, bonus_hp = create(name, observation_space, action_space, num_envs * num_steps, module=module,
                                 obs_clip=agent["obs_clip"], **own)
        hparams = IntrinsicHparams(*float32_hparams((agent["obs_clip"], agent["gamma_int"], agent["beta"],
                                                     agent["ext_coef"])), bonus=bonus_hp)
        rollout = RolloutShape(num_steps, num_envs, observation_shape(observation_space), action_space_of(action_space))
        return cls(bonus, hparams, num_envs, agent["warmup_steps"], rollout)

    def warmup(self, key: jax.Array, env: Any, env_params: Any) -> jax.Array:
        """``[num_envs * (warmup_steps + 1), *obs]`` states of a uniformly random policy in a gymnax
        env (``env.reset(key, params)``, ``env.step(key, state, action, params)``, auto-resetting):
        the resets, then each step's true next state (``info["final_observation"]`` where the env
        gives it, gymnax 1.0; else the observation it returns)."""
        space = env.action_space(env_params)
        v_step = jax.vmap(env.step, in_axes=(0, 0, 0, None))
        obs, states = warmup.random_policy_rollout(
            key, lambda keys: jax.vmap(env.reset, in_axes=(0, None))(keys, env_params),
            lambda keys, state, actions: _GymnaxStep.of(v_step(keys, state, actions, env_params)),
            lambda k: jax.vmap(space.sample)(jax.random.split(k, self.num_envs)), self.num_envs,
            self.warmup_steps, keep=_gymnax_next_states)
        return warmup.warmup_states(obs, states)

    def init(self, key: jax.Array, warmup_obs: jax.Array, hp: IntrinsicHparams | None = None) -> IntrinsicState:
        """:func:`init`: the state before the first update, from ``warmup_obs [N, *obs_shape]``
        (:meth:`warmup`)."""
        self.rollout.check_obs("IntrinsicReward.init", "warmup_obs", warmup_obs, leading=1)
        if warmup_obs.shape[0] == 0:
            raise ValueError("IntrinsicReward.init: warmup_obs holds no state (shape "
                             f"{tuple(warmup_obs.shape)}); the statistics start from them (IntrinsicReward.warmup)")
        check_key("IntrinsicReward.init", key)
        return init(self.bonus, key, warmup_obs, self.num_envs, self.checked_hp("IntrinsicReward.init", hp))

    def normalize(self, state: IntrinsicState, obs: jax.Array, hp: IntrinsicHparams | None = None) -> jax.Array:
        """``obs [..., *obs_shape]`` normalised and clipped by the current statistics (for a policy that
        wants them too)."""
        self.check_state("IntrinsicReward.normalize", state)
        self.rollout.check_obs("IntrinsicReward.normalize", "obs", obs)
        return normalize(state.obs_rms, obs, self.checked_hp("IntrinsicReward.normalize", hp).obs_clip)

    def step(self, state: IntrinsicState, obs: jax.Array, actions: jax.Array, next_obs: jax.Array,
             terminated: jax.Array, truncated: jax.Array, key: jax.Array,
             hp: IntrinsicHparams | None = None) -> tuple[IntrinsicState, jax.Array, dict[str, jax.Array]]:
        """After a rollout of raw ``obs [T, B, *obs_shape]`` (``T = num_steps``, ``B = num_envs``),
        ``actions [T, B]`` (``[T, B, dim]`` for a box), true next states ``next_obs [T, B, ...]`` (each
        observation of ``obs_shape``'s size in any shape: gymnax's unflattened final observation beside a
        flattened ``obs``) and episode ends ``terminated``, ``truncated [T, B]``: ``(state, r_int [T, B],
        metrics)``, ``r_int`` scaled (:func:`observe`, :func:`refresh_if_needed`, :func:`scale`); zero for a
        bonus whose reward is (``none``). ``metrics``: the bonus's, and the raw and scaled reward's means
        (``intrinsic_reward``, ``intrinsic_reward_normalized``)."""
        self.check_state("IntrinsicReward.step", state, key)
        self.rollout.check_rollout("IntrinsicReward.step", obs, actions, next_obs, terminated, truncated)
        hp = self.checked_hp("IntrinsicReward.step", hp)
        rollout = BonusBatch(obs, actions, next_obs.reshape(obs.shape), terminated, truncated)
        state, raw, metrics = observe(self.bonus, state, rollout, key, hp)
        state = state._replace(bonus=refresh_if_needed(self.bonus, state.bonus, hp.bonus))
        r_int = raw
        if self.bonus.intrinsic:
            state, r_int = scale(state, raw, hp)
        return state, r_int, {**metrics, "intrinsic_reward": raw.mean(), "intrinsic_reward_normalized": r_int.mean()}

    def advantage(self, adv_ext: jax.Array, r_int: jax.Array, v_int: jax.Array, v_int_last: jax.Array,
                  gae_lambda: Any, hp: IntrinsicHparams | None = None) -> tuple[jax.Array, jax.Array]:
        """:func:`advantage`: ``(ext_coef * A_ext + beta * A_int, A_int)``; the intrinsic value head's
        target is ``A_int + v_int``. For a bonus without a reward (``none``) ``A_int`` is zero: the
        intrinsic head and its loss can go (the run is plain PPO). ``adv_ext``, ``r_int``, ``v_int``
        ``[T, B]``; ``v_int_last [B]``."""
        self.rollout.check_advantage("IntrinsicReward.advantage", adv_ext, r_int, v_int, v_int_last)
        check_fraction("IntrinsicReward.advantage", "gae_lambda", gae_lambda)
        hp = self.checked_hp("IntrinsicReward.advantage", hp)
        if self.bonus.intrinsic:
            return advantage(adv_ext, r_int, v_int, v_int_last, gae_lambda, hp)
        return hp.ext_coef * adv_ext, jnp.zeros_like(adv_ext)

    def checked_hp(self, where: str, hp: IntrinsicHparams | None) -> IntrinsicHparams:
        """``hp``, or :attr:`hparams` when None; TypeError or ValueError naming ``hp`` where it is not this
        bonus's (``rfig_exp.agents.shapes.check_hparams``)."""
        if hp is None:
            return self.hparams
        check_hparams(where, hp, self.hparams, self.bonus.name)
        return hp

    def check_state(self, where: str, state: Any, key: Any = ...) -> None:
        """TypeError or ValueError naming ``state`` (``key``) unless it is an :class:`IntrinsicState` of the
        structure, shapes and dtypes :meth:`init` makes for these ``num_envs``, observations and bonus (the
        bonus's part is compared with ``jax.eval_shape`` of its ``init``, once, where ``key`` is given: it is
        checked too, and a state may hold one), and, when the state is concrete, one :meth:`init` made: a zeroed
        state (its observation count 0) would give NaN rewards. Under ``jit`` that count is traced, unknown."""
        if not isinstance(state, IntrinsicState):
            raise TypeError(f"{where}: state is {'None' if state is None else type(state).__name__}, expected the "
                            "IntrinsicState of IntrinsicReward.init (carry the one step returns)")
        made = f"as IntrinsicReward.init makes it for num_envs={self.num_envs}, obs_shape {self.rollout.obs_shape}"
        f32 = jax.ShapeDtypeStruct((), BONUS_DTYPE)
        obs = jax.ShapeDtypeStruct(self.rollout.obs_shape, BONUS_DTYPE)
        for name, want in (("obs_rms", RunningMeanStd(obs, obs, f32)), ("return_rms", RunningMeanStd(f32, f32, f32)),
                           ("return_filter", jax.ShapeDtypeStruct((self.num_envs,), BONUS_DTYPE))):
            check_tree(f"{where}: state.{name}", getattr(state, name), tree_spec(want), made)
        if key is not ...:
            check_key(where, key)
            bonus_spec = self._bonus_spec(key)
            if bonus_spec is not None:
                check_tree(f"{where}: state.bonus", state.bonus, bonus_spec, f"the state of bonus {self.bonus.name}, "
                           "as IntrinsicReward.init makes it")
        count = concrete(state.obs_rms.count)
        if count is not None and count.size == 1 and float(count) == 0.0:
            raise ValueError(f"{where}: state.obs_rms.count is 0: a state IntrinsicReward.init did not make (it counts "
                             "the warm-up states; a zeroed state gives NaN rewards): make it with explore.init(key, "
                             "explore.warmup(key, env, env_params))")

    def _bonus_spec(self, key: Any) -> TreeSpec | None:
        """The bonus's state as its ``init`` makes it (``jax.eval_shape``: traced, not run) for warm-up states
        of :meth:`warmup`'s number and of twice that, whose leaves of different shapes are free; None where
        ``init`` cannot be traced alone. Kept per key type (a state may hold a key)."""
        cache = self.__dict__.setdefault("_bonus_specs", {})  # a frozen dataclass: its __dict__ holds the memo
        aval = jax.ShapeDtypeStruct(key.shape, key.dtype)
        if (aval.shape, str(aval.dtype)) not in cache:
            n = self.num_envs * (self.warmup_steps + 1)
            specs = []
            for size in (n, 2 * n):
                warm = jax.ShapeDtypeStruct((size, *self.rollout.obs_shape), BONUS_DTYPE)
                try:
                    specs.append(tree_spec(jax.eval_shape(self.bonus.init, aval, warm, self.hparams.bonus)))
                except Exception:  # an init that reads values (no state to compare), or fails as it runs itself
                    specs = []
                    break
            spec = None
            if len(specs) == 2 and specs[0].treedef == specs[1].treedef:
                free = frozenset(i for i, (a, b) in enumerate(zip(specs[0].leaves, specs[1].leaves)) if a[0] != b[0])
                spec = specs[0]._replace(free=free)
            cache[(aval.shape, str(aval.dtype))] = spec
        return cache[(aval.shape, str(aval.dtype))]


__all__ = ["AGENT_SETTINGS", "IntrinsicHparams", "IntrinsicReward", "IntrinsicState", "advantage", "init", "observe",
           "refresh_if_needed", "refresh_seeds", "scale"]
