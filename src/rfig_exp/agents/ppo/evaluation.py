"""Evaluation episodes (``agent.eval_episodes``): fresh episodes with the policy frozen.

What the RFIG authors' code plots as the return (its ``evaluate.py``, github.com/riiswa/rejax at b16e24a):
at step 0 and after every evaluation window, ``N`` fresh episodes per seed, each from its own
``env.reset``, with the current policy *sampled* (not greedy) on observations normalised by the
current statistics (``RunState.obs_rms``, clipped to ``agent.obs_clip``), the parameters and
statistics frozen: the evaluation changes no training state. Each episode runs until it ends
(terminated or truncated) or the env's ``max_episode_steps``; a seed's score is the mean of its
``N`` returns (and of their lengths).

- :func:`evaluate`: one seed, pure: ``(params, obs_rms, key) -> (returns [N], lengths [N])``;
- :func:`seeds_evaluator`: a function of the stacked run states ``[S]``, as ``run_window`` takes
  them, to ``{"eval/episode_return": [S], "eval/episode_length": [S]}``.

The key of an evaluation is :func:`eval_key` of the run's key, ``fold_in(state.key, EVAL_SALT)``: it
consumes nothing, so training draws exactly what it draws without evaluation (the metrics are
bit-identical), and since the run's key advances at every update, each window evaluates with a new
key. Inside :func:`evaluate` the key is used so (the tests' plain loop follows this):
``k_reset, k_noise, k_env = split(key, 3)``; episode ``i`` starts from
``env.reset(split(k_reset, N)[i])``; at its step ``t`` the policy's noise is
``sampling_noise(space, k_noise, (T, N))[t, i]`` and the env's key ``split(k_env, (T, N))[t, i]``, with
``T = env.max_episode_steps``.
"""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp

from rfig_exp.agents.contract import EVAL_LENGTH, EVAL_RETURN
from rfig_exp.agents.normalization import RunningMeanStd, normalize
from rfig_exp.agents.ppo.networks import sampling_noise
from rfig_exp.agents.seeds import map_seeds
from rfig_exp.envs.base import Env

EVAL_SALT = 0x65766C  # "evl": fold_in(run key, EVAL_SALT) is the evaluation's key, never drawn by training
RETURN, LENGTH = EVAL_RETURN, EVAL_LENGTH  # metrics.csv columns (the agent contract's)


def eval_key(run_key: jax.Array) -> jax.Array:
    """The evaluation's key of a state whose key is ``run_key`` (a key the run never draws)."""
    return jax.random.fold_in(run_key, EVAL_SALT)


def evaluate(network: Any, env: Env, env_action: Callable[[jax.Array], jax.Array], num_episodes: int,
             params: Any, obs_rms: RunningMeanStd, obs_clip: jax.Array | float,
             key: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``num_episodes`` (N) fresh episodes of one seed's frozen, sampled policy.

    ``network``: the agent's ``ActorCritic`` (its policy is used); ``env_action``: the policy's sample
    -> the action sent to the env (clipped to a box); ``params``: the network's parameters;
    ``obs_rms``: observation statistics (feature shape ``obs_shape``); ``obs_clip``: [] the clip of the
    normalised observations; ``key``: [2] (see the module doc for how it is used).

    Returns ``(returns [N] float32, lengths [N] int32)``: each episode's undiscounted return up to
    its first end and its number of steps (at most ``env.max_episode_steps``).
    """
    n, max_steps = num_episodes, env.max_episode_steps
    v_step = jax.vmap(env.step)
    k_reset, k_noise, k_env = jax.random.split(key, 3)
    obs, env_state = jax.vmap(env.reset)(jax.random.split(k_reset, n))
    # All the randomness drawn at once, vectorised, as the training rollout does: a PRNG call per
    # step inside the loop costs more on CPU than drawing for steps an early exit never takes
    # ([T, N, A] floats: 0.3 MB on MountainCar, 8 MB per seed on Freeway's 2,500 steps).
    noise = sampling_noise(env.action_space, k_noise, (max_steps, n))
    env_keys = jax.random.split(k_env, (max_steps, n))

    # A while_loop over the N episodes together, not a scan over max_episode_steps with masking: it
    # stops when the last of the N episodes has ended. On CPU an iteration of either loop costs about
    # the same (a scan is a while loop there too: 11-16 ms for 200 steps of 128 MountainCar episodes,
    # one seed, both ways), so the early exit is a pure saving where episodes end before the limit:
    # a policy that solves MountainCar (~110-step episodes against its 200-step limit), CartPole
    # early in training (128 episodes of 22 steps on average: 61 steps against a 500-step scan, 4x
    # cheaper). Under vmap over seeds it runs until every seed's episodes have ended (the slowest
    # seed sets the cost); finished episodes keep stepping (the env auto-resets) with rewards masked.
    def cond(carry):
        t, _, _, _, _, done = carry
        return jnp.logical_and(t < max_steps, ~jnp.all(done))

    def body(carry):
        t, env_state, obs, ret, length, done = carry
        pi, _ = network.apply(params, normalize(obs_rms, obs, obs_clip))
        out = v_step(env_keys[t], env_state, env_action(pi.sample_with_noise(noise[t])))
        live = ~done
        ret = ret + jnp.where(live, out.reward, 0.0)
        length = length + live.astype(jnp.int32)
        done = done | out.terminated | out.truncated
        return t + 1, out.state, out.obs, ret, length, done

    carry = (jnp.zeros((), jnp.int32), env_state, obs, jnp.zeros((n,), jnp.float32), jnp.zeros((n,), jnp.int32),
             jnp.zeros((n,), bool))
    _, _, _, returns, lengths, _ = jax.lax.while_loop(cond, body, carry)
    return returns, lengths


def seeds_evaluator(network: Any, env: Env, env_action: Callable[[jax.Array], jax.Array], num_episodes: int):
    """``evaluate_seeds(states, hparams) -> {RETURN: [S], LENGTH: [S]}``: every seed's mean return and
    mean length over ``num_episodes`` evaluation episodes, from the stacked run states ``[S]`` (their
    ``params``, ``obs_rms`` and ``key``, read, never changed) and the hyperparameters (``hp.agent.obs_clip``;
    scalars shared by the seeds, or a row per seed, as ``run_window`` takes them)."""

    def one_seed(state, hp):
        returns, lengths = evaluate(network, env, env_action, num_episodes, state.params, state.obs_rms,
                                    hp.agent.obs_clip, eval_key(state.key))
        return {RETURN: returns.mean(), LENGTH: lengths.astype(jnp.float32).mean()}

    def evaluate_seeds(states, hparams):
        return map_seeds(one_seed, states, hparams)

    return evaluate_seeds
