"""The PPO training core: pure functions of a key, config-free and file-free.

``make_trainer`` returns two functions:

- ``init(key, hparams) -> RunState`` for one seed: random-policy warm-up (observation
  statistics and the bonus's ``warmup_obs``), network and optimiser, environments;
- ``run_window(states, hparams) -> (states, metrics)`` for a stack of seeds ``[S]``:
  ``lax.scan`` over ``updates_per_window`` PPO updates of ``vmap(update)``, with metrics
  reduced inside the scan to one value per seed (``[S]`` per metric);

and, with ``agent.eval_episodes > 0``, a third, ``evaluate(states, hparams) -> {eval/*: [S]}``
(``rfig_exp.agents.ppo.evaluation``), which ``run_window`` also runs after its updates.

The whole run is ``init`` once and ``run_window`` ``num_windows`` times on the same
compiled function; the carried ``RunState`` holds everything (parameters, optimiser,
normalisers, bonus, environments, keys), so a run can be checkpointed between windows.

Numeric hyperparameters come in ``hparams`` (arguments of the compiled function); only
shapes and structural choices live in the static ``TrainSpec``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from jax.flatten_util import ravel_pytree

from rfig_exp.agents import intrinsic, returns, signal, warmup
from rfig_exp.agents.contract import Readout, Trainer
from rfig_exp.agents.metrics import EPISODES_FINISHED, UpdateMetrics, reduce_window
from rfig_exp.agents.normalization import RunningMeanStd, normalize
from rfig_exp.agents.ppo import evaluation, losses
from rfig_exp.agents.ppo.config import PPOHparams, TrainSpec
from rfig_exp.agents.ppo.metrics import SGDMetrics
from rfig_exp.agents.ppo.networks import EXT, INT, NETWORK_GROUPS, ActorCritic, sampling_noise
from rfig_exp.agents.ppo.optimizer import parameter_groups, ppo_optimizer, ravel_like, unravel_like
from rfig_exp.agents.seeds import hparams_axis, map_seeds
from rfig_exp.bonuses.base import Bonus, BonusBatch, float32_hparams
from rfig_exp.bonuses.shuffle import permutations
from rfig_exp.envs.base import BoxSpace, Env

NOVELTY_STREAM = 0x5E7  # folded into an update's key for the novelty statistics' draws


def as_arrays(hparams: PPOHparams) -> PPOHparams:
    """The hyperparameters as the compiled functions take them: every traced setting a float32
    scalar (the agent's, ``beta`` and the bonus's), every other setting static."""
    beta = jnp.asarray(hparams.beta, jnp.float32)
    return PPOHparams(float32_hparams(hparams.agent), beta, float32_hparams(hparams.bonus))  # type: ignore[arg-type]


class Transition(NamedTuple):
    obs: jax.Array          # [T, B, *obs] raw (the update re-normalises it with the same statistics)
    action: jax.Array       # [T, B(, A)]
    log_prob: jax.Array     # [T, B]
    values: jax.Array       # [T, B, 2] extrinsic and intrinsic values (columns EXT, INT)
    reward: jax.Array       # [T, B]
    terminated: jax.Array   # [T, B]
    truncated: jax.Array    # [T, B]
    final_obs: jax.Array    # [T, B, *obs] raw true next observation s'
    cell: Any               # [T, B] int32 coverage cell of s' (envs with a grid), else None


class RunState(NamedTuple):
    params: Any
    opt_state: Any
    obs_rms: RunningMeanStd
    int_return_filter: jax.Array   # [B]
    int_return_rms: RunningMeanStd
    bonus_state: Any
    env_state: Any
    obs: jax.Array                 # [B, *obs] raw
    episode_return: jax.Array      # [B]
    episode_length: jax.Array      # [B]
    update: jax.Array              # [] int32, updates done so far
    key: jax.Array
    visits: jax.Array              # [num_cells] int32 visit counts of the env's coverage grid ([0] without one)
    novelty: Any                   # signal.Reservoir of earlier next states (agent.novelty_reservoir), else None


def _env_action(action, action_space):
    """The action sent to the env: a Gaussian sample clipped to the box. The policy's
    log-probability keeps the unclipped sample (PPO's reference implementations)."""
    if isinstance(action_space, BoxSpace):
        return jnp.clip(action, action_space.low, action_space.high)
    return action


def make_trainer(spec: TrainSpec, env: Env, bonus: Bonus) -> Trainer:
    # length: long as a whole, short in its parts: a factory of closures (init, rollout, loss, one SGD step,
    # one PPO update, a window), each well under 80 lines, sharing the static network, env, bonus
    # and spec by closure so that jit sees them as constants rather than arguments.
    network = ActorCritic(env.action_space, len(env.obs_shape), spec.hidden, spec.activation, spec.networks,
                          spec.weight_init)
    groups = None
    if spec.networks == "separate":  # each network's gradient clipped by its own norm (the authors' optimisers)
        shapes = jax.eval_shape(network.init, jax.random.PRNGKey(0), jnp.zeros(env.obs_shape, jnp.float32))
        groups = parameter_groups(shapes, lambda path: NETWORK_GROUPS.index(path[1].key))
    optimizer = ppo_optimizer(groups)
    num_envs, num_steps = spec.num_envs, spec.num_steps
    obs_shape = env.obs_shape
    v_reset = jax.vmap(env.reset)
    v_step = jax.vmap(env.step)
    num_cells = env.coverage.num_cells if env.coverage is not None else 0
    measures_novelty = bonus.intrinsic and spec.novelty_reservoir > 0

    def init(key, hparams):
        k_params, k_warm, k_bonus, k_reset, k_run = jax.random.split(key, 5)
        # reset_steps: every step one from the resets, and their states alone (the authors' code)
        trajectories = spec.warmup == "trajectories"
        obs, warm_next = warmup.env_rollout(k_warm, env, num_envs, spec.obs_norm_init_steps, advance=trajectories)
        warm_obs = warmup.warmup_states(obs, warm_next, with_resets=trajectories)
        explored = intrinsic.init(bonus, k_bonus, warm_obs, num_envs, hparams)

        params = network.init(k_params, jnp.zeros(obs_shape, jnp.float32))
        obs, env_state = v_reset(jax.random.split(k_reset, num_envs))
        return RunState(
            params=params, opt_state=optimizer.init(params), obs_rms=explored.obs_rms,
            int_return_filter=explored.return_filter, int_return_rms=explored.return_rms,
            bonus_state=explored.bonus, env_state=env_state, obs=obs,
            episode_return=jnp.zeros((num_envs,), jnp.float32), episode_length=jnp.zeros((num_envs,), jnp.int32),
            update=jnp.zeros((), jnp.int32), key=k_run, visits=jnp.zeros((num_cells,), jnp.int32),
            novelty=signal.reservoir_init(spec.novelty_reservoir, obs_shape) if measures_novelty else None,
        )

    def rollout(state: RunState, key, hp):
        def step(carry, noise_and_keys):
            env_state, obs, ep_ret, ep_len, finished = carry
            action_noise, env_keys = noise_and_keys
            pi, values = network.apply(state.params, normalize(state.obs_rms, obs, hp.agent.obs_clip))
            action = pi.sample_with_noise(action_noise)
            out = v_step(env_keys, env_state, _env_action(action, env.action_space))
            ep_ret = ep_ret + out.reward
            ep_len = ep_len + 1
            done = jnp.logical_or(out.terminated, out.truncated)
            # Sums over the episodes that end here; the window divides by episodes_finished.
            ended = {"episode_return": ep_ret, "episode_length": ep_len.astype(jnp.float32),
                     EPISODES_FINISHED: jnp.ones_like(ep_ret),
                     **{f"env/{k}": out.episode_info[k] for k in env.episode_info}}
            finished = {k: finished[k] + jnp.where(done, v, 0.0).sum() for k, v in ended.items()}
            transition = Transition(obs, action, pi.log_prob(action), values, out.reward,
                                    out.terminated, out.truncated, out.final_obs, out.cell)
            carry = (out.state, out.obs, jnp.where(done, 0.0, ep_ret), jnp.where(done, 0, ep_len), finished)
            return carry, transition

        # All of the rollout's randomness is drawn here, vectorised, rather than by a PRNG
        # call per step: on CPU each call is a small loop of kernels inside the step loop.
        k_noise, k_env = jax.random.split(key)
        noise = sampling_noise(env.action_space, k_noise, (num_steps, num_envs))
        env_keys = jax.random.split(k_env, (num_steps, num_envs))
        zero = jnp.zeros((), jnp.float32)
        finished = {k: zero for k in ("episode_return", "episode_length", EPISODES_FINISHED,
                                      *(f"env/{k}" for k in env.episode_info))}
        carry = (state.env_state, state.obs, state.episode_return, state.episode_length, finished)
        carry, traj = jax.lax.scan(step, carry, (noise, env_keys))
        return carry, traj

    def loss_fn(flat_params, mb, hp, unravel):
        pi, values = network.apply(unravel(flat_params), mb["obs_norm"])
        if spec.advantage_mix == "separate":
            adv = losses.separately_standardized(mb["adv_ext"], mb.get("adv_int"), hp.agent.ext_coef, hp.beta)
        else:
            adv = losses.standardize(mb["adv"])
        pg_loss, approx_kl, clip_frac = losses.policy_loss(pi.log_prob(mb["action"]), mb["log_prob"], adv,
                                                           hp.agent.clip_eps)
        value_losses = losses.clipped_value_loss(values, mb["values"], mb["targets"], hp.agent.clip_eps)  # [2]
        entropy = pi.entropy().mean()
        value_loss = value_losses.sum() if bonus.intrinsic else value_losses[EXT]
        total = pg_loss + hp.agent.vf_coef * value_loss - hp.agent.ent_coef * entropy
        return total, (pg_loss, value_losses[EXT], value_losses[INT], entropy, approx_kl, clip_frac)

    def sgd_step(carry, mb, hp, lr, unravel):
        # Parameters, gradients and Adam moments are single flat vectors here: the same
        # element-wise math, but a handful of XLA kernels per step instead of a few per leaf.
        params, opt_state = carry
        grads, aux = jax.grad(loss_fn, has_aux=True)(params, mb, hp, unravel)
        updates, opt_state = optimizer.update(grads, opt_state, params, max_grad_norm=hp.agent.max_grad_norm,
                                              learning_rate=lr)
        metrics = SGDMetrics(*aux, grad_norm=optax.tree.norm(grads))
        return (optax.apply_updates(params, updates), opt_state), metrics.stacked()

    def advantages_of(state: RunState, traj: Transition, last_obs, explored, r_int_raw, hp):
        """``(explored, r_int, A_ext, A_int, advantages)``, each ``[T, B]``: the intrinsic reward
        scaled, both streams' GAEs, and what the minibatches are made from (``adv``, or ``adv_ext``
        and ``adv_int`` for ``advantage_mix=separate``)."""
        def values_when_acting(obs):  # [..., 2]: the statistics and parameters the rollout used
            return network.apply(state.params, normalize(state.obs_rms, obs, hp.agent.obs_clip))[1]

        v_ext, v_int = traj.values[..., EXT], traj.values[..., INT]
        values_final = values_when_acting(traj.final_obs)  # [T, B, 2] V(s') of the true next observations
        term, trunc = traj.terminated, traj.truncated
        if spec.time_limit == "terminal":
            term, trunc = returns.time_limit_as_terminal(term, trunc)
        term, trunc = term.astype(jnp.float32), trunc.astype(jnp.float32)
        adv_ext = returns.extrinsic_gae(traj.reward, v_ext, values_final[..., EXT], term, trunc,
                                       hp.agent.gamma, hp.agent.gae_lambda)
        if bonus.intrinsic:
            explored, r_int = intrinsic.scale(explored, r_int_raw, hp, by=spec.intrinsic_scale)
            if spec.intrinsic_return == "episodic":
                adv_int = returns.extrinsic_gae(r_int, v_int, values_final[..., INT], term, trunc,
                                               hp.gamma_int, hp.agent.gae_lambda)
                adv = hp.agent.ext_coef * adv_ext + hp.beta * adv_int
            else:
                v_int_last = values_when_acting(last_obs)[..., INT]
                adv, adv_int = intrinsic.advantage(adv_ext, r_int, v_int, v_int_last, hp.agent.gae_lambda, hp)
        else:  # plain PPO (see Bonus.intrinsic): no intrinsic stream at all
            r_int = r_int_raw
            adv_int = jnp.zeros_like(adv_ext)
            adv = hp.agent.ext_coef * adv_ext
        if spec.advantage_mix == "separate":  # each stream standardised per minibatch (loss_fn)
            advantages = {"adv_ext": adv_ext, **({"adv_int": adv_int} if bonus.intrinsic else {})}
        else:  # combined before minibatching; each minibatch then standardises it (PPO+RND)
            advantages = {"adv": adv}
        return explored, r_int, adv_ext, adv_int, advantages

    def update(state: RunState, hp):
        key, k_roll, k_bonus, k_sgd = jax.random.split(state.key, 4)
        (env_state, last_obs, ep_ret, ep_len, finished), traj = rollout(state, k_roll, hp)

        # Algorithm 1: update the observation statistics with the batch, then the bonus
        # sees states normalised by the new statistics (intrinsic.observe). The policy and values
        # keep the statistics they acted with, so old log-probs and values stay consistent.
        explored = intrinsic.IntrinsicState(state.obs_rms, state.int_return_filter, state.int_return_rms,
                                            state.bonus_state)
        transitions = BonusBatch(obs=traj.obs, actions=_env_action(traj.action, env.action_space),
                                 next_obs=traj.final_obs, terminated=traj.terminated, truncated=traj.truncated)
        explored, r_int_raw, bonus_metrics = intrinsic.observe(bonus, explored, transitions, k_bonus, hp)

        explored, r_int, adv_ext, adv_int, advantages = advantages_of(state, traj, last_obs, explored, r_int_raw, hp)
        v_ext, v_int = traj.values[..., EXT], traj.values[..., INT]

        batch = dict(
            # The observations as the policy saw them: normalised with the statistics it acted with.
            obs_norm=normalize(state.obs_rms, traj.obs, hp.agent.obs_clip),
            action=traj.action, log_prob=traj.log_prob, **advantages,
            values=traj.values, targets=jnp.stack([adv_ext + v_ext, adv_int + v_int], axis=-1))
        batch = jax.tree.map(lambda x: x.reshape((spec.batch_size,) + x.shape[2:]), batch)

        frac = 1.0 - state.update.astype(jnp.float32) / spec.num_updates if spec.anneal_lr else 1.0
        lr = hp.agent.lr * frac

        def epoch(carry, perm):
            mbs = jax.tree.map(
                lambda x: x[perm].reshape((spec.num_minibatches, -1) + x.shape[1:]), batch)
            return jax.lax.scan(lambda c, mb: sgd_step(c, mb, hp, lr, unravel), carry, mbs)

        flat_params, unravel = ravel_pytree(state.params)
        params_def = jax.tree.structure(state.params)
        flat_opt = ravel_like(state.opt_state, params_def, lambda p: ravel_pytree(p)[0])
        (flat_params, flat_opt), sgd_metrics = jax.lax.scan(
            epoch, (flat_params, flat_opt), permutations(k_sgd, spec.update_epochs, spec.batch_size))
        params = unravel(flat_params)
        opt_state = unravel_like(flat_opt, state.opt_state, params_def, unravel)

        if num_cells:
            visits = state.visits.at[traj.cell.reshape(-1)].add(1)
        else:
            visits = state.visits

        bonus_metrics = {f"bonus/{k}": v for k, v in bonus_metrics.items()}
        counted = {f"bonus/{k}" for k in bonus.counted_metrics}
        if bonus.intrinsic:  # is the raw bonus informative? (counts before this batch, as the bonus saw)
            seen_before = state.visits[traj.cell] if num_cells else None
            bonus_metrics.update({f"signal/{k}": v for k, v in signal.batch_signal(r_int_raw, seen_before).items()})
        novelty = state.novelty
        if measures_novelty:  # in the bonus's input space: the observations as it was given them
            def bonus_input(x):
                return normalize(explored.obs_rms, x, hp.agent.obs_clip).reshape(x.shape[0], -1).astype(jnp.float32)
            # its own stream, folded from the update's key, so that no other number changes
            novelty, novelty_metrics = signal.novelty_step(state.novelty, r_int_raw, traj.final_obs, bonus_input,
                                                           jax.random.fold_in(state.key, NOVELTY_STREAM))
            bonus_metrics.update({f"signal/{k}": v for k, v in novelty_metrics.items()})
        metrics = UpdateMetrics(
            means={**SGDMetrics.mean_of(sgd_metrics)._asdict(), "extrinsic_reward": traj.reward.mean(),
                   "intrinsic_reward": r_int_raw.mean(), "intrinsic_reward_normalized": r_int.mean(),
                   "learning_rate": lr, **{k: v for k, v in bonus_metrics.items() if k not in counted}},
            counts={EPISODES_FINISHED: finished.pop(EPISODES_FINISHED),
                    **{k: v for k, v in bonus_metrics.items() if k in counted}},
            episode_sums=finished,
            final={"coverage": (visits > 0).mean()} if num_cells else {},
        )
        new_state = RunState(
            params=params, opt_state=opt_state, obs_rms=explored.obs_rms, int_return_filter=explored.return_filter,
            int_return_rms=explored.return_rms, bonus_state=explored.bonus, env_state=env_state, obs=last_obs,
            episode_return=ep_ret, episode_length=ep_len, update=state.update + 1, key=key, visits=visits,
            novelty=novelty)
        return new_state, metrics

    def run_window(states: RunState, hparams):
        hp_axis = hparams_axis(hparams)

        def body(states, _):
            states, metrics = map_seeds(update, states, hparams)
            if bonus.refresh is not None:  # outside the vmap: see intrinsic.refresh_seeds
                states = states._replace(bonus_state=intrinsic.refresh_seeds(bonus, states.bonus_state, hparams.bonus,
                                                                             hp_axis))
            return states, metrics

        states, metrics = jax.lax.scan(body, states, None, length=spec.updates_per_window)
        metrics = reduce_window(metrics)
        if evaluate is not None:  # the window's policy and statistics, frozen; nothing in the program without
            metrics.update(evaluate(states, hparams))
        return states, metrics

    evaluate = evaluation.seeds_evaluator(network, env, lambda a: _env_action(a, env.action_space),
                                          spec.eval_episodes) if spec.eval_episodes else None
    return Trainer(init=init, run_window=run_window, evaluate=evaluate,
                   readout=lambda states: Readout(states.bonus_state, states.visits))
