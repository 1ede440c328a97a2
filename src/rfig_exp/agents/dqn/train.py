"""The DQN training core: pure functions of a key, config-free and file-free (the agent contract,
``rfig_exp.agents.contract``).

``make_trainer`` returns ``init(key, hparams) -> DQNState`` for one seed (a random-policy warm-up
of the observation statistics and the bonus, the Q-network, its target copy, an empty replay buffer,
the envs) and ``run_window(states, hparams) -> (states, metrics)`` for a stack of seeds ``[S]``: one
``lax.scan`` over ``updates_per_window`` updates of the vmapped one-seed update, its metrics reduced
inside the scan to one value per seed (``[S]``, ``rfig_exp.agents.metrics``).

One update, per seed (purejaxql's DQN): epsilon-greedy actions of the online network in every env
(epsilon linear from ``eps_start`` to ``eps_finish`` over ``eps_anneal`` env steps), one env step;
the transitions' stored reward ``ext_coef * r_ext + beta * r_int`` from the bonus
(:class:`rfig_exp.agents.replay.ReplayIntrinsic`: the intrinsic reward computed once, as they are
inserted, and learnt from once); the transitions written over the buffer's oldest row; once
``learning_starts`` env steps are in, one TD step on ``buffer_batch_size`` transitions drawn
uniformly (target ``r + gamma * (1 - terminated) * max_a Q_target(s', a)``, ``s'`` the true next
state, a time limit bootstrapped); the target network moved to the online one (``tau``) every
``target_update_interval`` env steps.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

from rfig_exp.agents import warmup
from rfig_exp.agents.contract import Readout, Trainer
from rfig_exp.agents.dqn.config import DQNHparams, DQNSpec
from rfig_exp.agents.intrinsic import IntrinsicHparams, IntrinsicReward, IntrinsicState
from rfig_exp.agents.metrics import EPISODES_FINISHED, UpdateMetrics, reduce_window
from rfig_exp.agents.replay import ReplayIntrinsic
from rfig_exp.agents.seeds import hparams_axis
from rfig_exp.agents.shapes import RolloutShape
from rfig_exp.bonuses.base import Bonus, float32_hparams
from rfig_exp.envs.base import DiscreteSpace, Env


def as_arrays(hparams: DQNHparams) -> DQNHparams:
    """The hyperparameters as the compiled functions take them: every traced setting a float32 scalar."""
    beta = jnp.asarray(hparams.beta, jnp.float32)
    return DQNHparams(float32_hparams(hparams.agent), beta, float32_hparams(hparams.bonus))  # type: ignore[arg-type]


class QNetwork(nn.Module):
    """``obs [N, *obs] -> Q [N, A]``: a ReLU MLP over the flattened observation."""

    hidden: tuple[int, ...]
    num_actions: int

    @nn.compact
    def __call__(self, x):
        x = x.reshape((x.shape[0], -1)).astype(jnp.float32)
        for width in self.hidden:
            x = nn.relu(nn.Dense(width)(x))
        return nn.Dense(self.num_actions)(x)


class DQNState(NamedTuple):
    params: Any
    target: Any
    opt_state: Any
    explored: IntrinsicState     # the agent's side of the bonus (statistics, return filter, bonus state)
    buffer: dict                 # {obs, action, reward, next_obs, terminated}: [rows, B, ...]
    env_state: Any
    obs: jax.Array               # [B, *obs] raw
    episode_return: jax.Array    # [B]
    episode_length: jax.Array    # [B]
    update: jax.Array            # [] int32, updates done so far (row update % rows is written next)
    key: jax.Array
    visits: jax.Array            # [num_cells] int32 visit counts of the env's coverage grid ([0] without one)


def _optimizer(hp: DQNHparams) -> optax.GradientTransformation:
    """Adam after a global-norm clip; its state holds no hyperparameter, so it is made per use from traced ones."""
    return optax.chain(optax.clip_by_global_norm(hp.agent.max_grad_norm), optax.adam(hp.agent.lr))


def _replay(bonus: Bonus, spec: DQNSpec, env: Env, hp: DQNHparams) -> ReplayIntrinsic:
    """The bonus's side for these hyperparameters: one env step of ``num_envs`` envs per insertion."""
    hparams = IntrinsicHparams(hp.obs_clip, hp.gamma_int, hp.beta, hp.ext_coef, hp.bonus)
    rollout = RolloutShape(1, spec.num_envs, tuple(env.obs_shape), env.action_space)
    return ReplayIntrinsic(IntrinsicReward(bonus, hparams, spec.num_envs, spec.obs_norm_init_steps, rollout))


def _epsilon(spec: DQNSpec, hp: DQNHparams, update: jax.Array) -> jax.Array:
    frac = jnp.minimum(update.astype(jnp.float32) * spec.num_envs / spec.eps_anneal, 1.0)
    return hp.agent.eps_start + frac * (hp.agent.eps_finish - hp.agent.eps_start)


def buffer_add(buffer: dict, row: jax.Array, transitions: dict) -> dict:
    """``buffer`` (``{name: [rows, B, ...]}``) with row ``row`` replaced by ``transitions`` (``[B, ...]``)."""
    return jax.tree.map(lambda b, x: b.at[row].set(x.astype(b.dtype)), buffer, transitions)


def buffer_sample(buffer: dict, filled: jax.Array, key: jax.Array, n: int) -> dict:
    """``n`` transitions (``[n, ...]``) drawn uniformly from the first ``filled`` rows of every env."""
    rows, envs = jax.tree.leaves(buffer)[0].shape[:2]
    k_row, k_env = jax.random.split(key)
    row = jax.random.randint(k_row, (n,), 0, jnp.minimum(filled, rows))
    env = jax.random.randint(k_env, (n,), 0, envs)
    return jax.tree.map(lambda b: b[row, env], buffer)


def td_loss(q: jax.Array, target: jax.Array, kind: str) -> jax.Array:
    """The mean TD loss of ``q`` against ``target`` (both ``[N]``): squared error, or Huber's (delta 1)."""
    if kind == "huber":
        return optax.huber_loss(q, target, delta=1.0).mean()
    return ((q - target) ** 2).mean()


def _initial_state(spec: DQNSpec, env: Env, bonus: Bonus, network: QNetwork):
    """``init(key, hp) -> DQNState`` of one seed: the warm-up, the networks, an empty buffer, the envs."""
    rows = spec.buffer_size // spec.num_envs
    num_cells = env.coverage.num_cells if env.coverage is not None else 0
    v_reset = jax.vmap(env.reset)

    def init(key, hp):
        k_params, k_warm, k_bonus, k_reset, k_run = jax.random.split(key, 5)
        obs, warm_next = warmup.env_rollout(k_warm, env, spec.num_envs, spec.obs_norm_init_steps, advance=True)
        explored = _replay(bonus, spec, env, hp).init(k_bonus, warmup.warmup_states(obs, warm_next))
        obs, env_state = v_reset(jax.random.split(k_reset, spec.num_envs))
        params = network.init(k_params, jnp.zeros((1, *env.obs_shape), jnp.float32))
        lead = (rows, spec.num_envs)
        buffer = {"obs": jnp.zeros(lead + obs.shape[1:], obs.dtype), "action": jnp.zeros(lead, jnp.int32),
                  "reward": jnp.zeros(lead, jnp.float32), "next_obs": jnp.zeros(lead + obs.shape[1:], obs.dtype),
                  "terminated": jnp.zeros(lead, bool)}
        zeros = jnp.zeros((spec.num_envs,), jnp.float32)
        return DQNState(params, params, _optimizer(hp).init(params), explored, buffer, env_state, obs, zeros,
                        zeros.astype(jnp.int32), jnp.zeros((), jnp.int32), k_run, jnp.zeros((num_cells,), jnp.int32))

    return init


def _update_metrics(bonus: Bonus, env: Env, out: Any, ep_ret: jax.Array, ep_len: jax.Array, visits: jax.Array,
                    bonus_metrics: dict, learner: dict) -> UpdateMetrics:
    """One update's metrics (``rfig_exp.agents.metrics``): ``learner``'s and the bonus's means, the finished
    episodes' sums, the bonus's counts and the coverage after it."""
    done = jnp.logical_or(out.terminated, out.truncated)
    ended = {"episode_return": ep_ret, "episode_length": ep_len.astype(jnp.float32),
             **{f"env/{k}": out.episode_info[k] for k in env.episode_info}}
    counted = {f"bonus/{k}" for k in bonus.counted_metrics}
    named = {k if k.startswith("intrinsic_reward") else f"bonus/{k}": v for k, v in bonus_metrics.items()}
    return UpdateMetrics(
        means={**learner, "extrinsic_reward": out.reward.mean(),
               **{k: v for k, v in named.items() if k not in counted}},
        counts={EPISODES_FINISHED: done.sum().astype(jnp.float32), **{k: v for k, v in named.items() if k in counted}},
        episode_sums={k: jnp.where(done, v, 0.0).sum() for k, v in ended.items()},
        final={"coverage": (visits > 0).mean()} if env.coverage is not None else {})


def make_trainer(spec: DQNSpec, env: Env, bonus: Bonus) -> Trainer:
    """The DQN's :class:`~rfig_exp.agents.contract.Trainer` for ``env`` (discrete actions) and ``bonus``."""
    if not isinstance(env.action_space, DiscreteSpace):
        raise ValueError(f"agent=dqn takes discrete actions; env {env.name} has a box (use agent=ppo)")
    network = QNetwork(spec.hidden, env.action_space.num_actions)
    rows = spec.buffer_size // spec.num_envs
    v_step = jax.vmap(env.step)
    num_cells = env.coverage.num_cells if env.coverage is not None else 0

    init = _initial_state(spec, env, bonus, network)

    def learn(state: DQNState, buffer: dict, key, hp):
        """One TD step on a sampled minibatch: ``(params, opt_state, loss)``."""
        batch = buffer_sample(buffer, state.update + 1, key, spec.buffer_batch_size)
        q_next = network.apply(state.target, batch["next_obs"]).max(-1)
        target = batch["reward"] + hp.agent.gamma * (1.0 - batch["terminated"].astype(jnp.float32)) * q_next

        def loss_fn(params):
            q = network.apply(params, batch["obs"])
            return td_loss(jnp.take_along_axis(q, batch["action"][:, None], axis=-1)[:, 0], target, spec.loss)

        loss, grads = jax.value_and_grad(loss_fn)(state.params)
        updates, opt_state = _optimizer(hp).update(grads, state.opt_state, state.params)
        return optax.apply_updates(state.params, updates), opt_state, loss

    def act(state: DQNState, key, hp):
        """Epsilon-greedy actions ``[B]`` and epsilon."""
        k_eps, k_act = jax.random.split(key)
        eps = _epsilon(spec, hp, state.update)
        greedy = network.apply(state.params, state.obs).argmax(-1)
        explore = jax.random.uniform(k_eps, (spec.num_envs,)) < eps
        uniform = jax.random.randint(k_act, (spec.num_envs,), 0, env.action_space.num_actions)
        return jnp.where(explore, uniform, greedy), eps

    def update(state: DQNState, hp):
        key, k_act, k_env, k_bonus, k_learn = jax.random.split(state.key, 5)
        action, eps = act(state, k_act, hp)
        out = v_step(jax.random.split(k_env, spec.num_envs), state.env_state, action)
        explored, mixed, bonus_metrics = _replay(bonus, spec, env, hp).step(
            state.explored, state.obs, action, out.final_obs, out.terminated, out.truncated, out.reward, k_bonus)
        buffer = buffer_add(state.buffer, state.update % rows, {"obs": state.obs, "action": action, "reward": mixed,
                                                                  "next_obs": out.final_obs,
                                                                  "terminated": out.terminated})
        steps = (state.update + 1) * spec.num_envs
        params, opt_state, loss = jax.lax.cond(steps > spec.learning_starts, lambda: learn(state, buffer, k_learn, hp),
                                               lambda: (state.params, state.opt_state, jnp.zeros((), jnp.float32)))
        target = jax.lax.cond(steps % spec.target_update_interval < spec.num_envs,
                              lambda: optax.incremental_update(params, state.target, hp.agent.tau),
                              lambda: state.target)
        visits = state.visits.at[out.cell].add(1) if num_cells else state.visits
        ep_ret, ep_len = state.episode_return + out.reward, state.episode_length + 1
        metrics = _update_metrics(bonus, env, out, ep_ret, ep_len, visits, bonus_metrics,
                                  {"td_loss": loss, "epsilon": eps, "learning_rate": hp.agent.lr})
        done = jnp.logical_or(out.terminated, out.truncated)
        new = DQNState(params, target, opt_state, explored, buffer, out.state, out.obs, jnp.where(done, 0.0, ep_ret),
                       jnp.where(done, 0, ep_len), state.update + 1, key, visits)
        return new, metrics

    def run_window(states: DQNState, hparams):
        # always vmapped, one seed too: map_seeds' unbatched path slices and re-stacks the state every update,
        # a copy of the whole replay buffer, where the vmapped scan carry updates it in place
        def body(states, _):
            return jax.vmap(update, in_axes=(0, hparams_axis(hparams)))(states, hparams)

        states, metrics = jax.lax.scan(body, states, None, length=spec.updates_per_window)
        return states, reduce_window(metrics)

    return Trainer(init=init, run_window=run_window,
                   readout=lambda states: Readout(states.explored.bonus, states.visits))
