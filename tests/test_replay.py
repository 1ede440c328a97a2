"""``ReplayIntrinsic``, a bonus for a DQN's replay buffer: the reward it mixes for insertion is, step
for step, what a plain numpy loop computes from the recipe (observation statistics over the warm-up
and every inserted state, the bonus's reward of the normalised true next states, the per-env
discounted intrinsic return's running std, ``ext_coef * r + beta * r_int``); the bonus learns once
per insertion; one env step's ``[B, ...]`` arrays go in as they come; misuse is one line."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rfig_exp.agents.replay import ReplayIntrinsic
from rfig_exp.bonuses import Bonus, DiscreteSpace

B = 5


def _abs_sum_bonus() -> Bonus:
    """A bonus whose reward is ``sum |s'|`` of the normalised true next state, and whose state counts
    its updates: what it computes is known exactly, so the agent's side around it can be checked."""
    return Bonus("abs_sum", init=lambda key, warm, hp: jnp.zeros((), jnp.int32),
                 reward=lambda state, batch, hp: (jnp.abs(batch.next_obs).sum(-1), {}),
                 update=lambda state, batch, key, hp: (state + 1, {}))


def _numpy_mixed(warm, steps, gamma, clip, beta, ext_coef, hold):
    """The mixed rewards of each insertion, by a plain loop over the recipe in float64; the intrinsic
    reward zero while fewer than ``hold`` returns are in its std."""
    seen, returns, carry, out = [warm], [], np.zeros(B), []
    for obs, next_obs, reward in steps:
        seen.append(obs)
        states = np.concatenate(seen)
        mean, var = states.mean(0), states.var(0)
        raw = np.abs(np.clip((next_obs - mean) / np.sqrt(var + 1e-8), -clip, clip)).sum(-1)
        carry = gamma * carry + raw
        returns.extend(carry)
        r_int = raw / np.sqrt(np.var(returns) + 1e-8) if len(returns) >= hold else 0.0 * raw
        out.append(ext_coef * reward + beta * r_int)
    return out


def test_the_mixed_reward_is_the_recipe_computed_by_a_numpy_loop():
    replay = ReplayIntrinsic.create("none", (2,), DiscreteSpace(3), B, beta=0.3, ext_coef=0.7, gamma_int=0.9,
                                    obs_clip=2.0, warmup_steps=2)
    replay = ReplayIntrinsic(dataclasses.replace(replay.explore, bonus=_abs_sum_bonus()))
    rng = np.random.default_rng(0)
    warm = rng.normal(size=(B * 4, 2)).astype(np.float32)
    steps = [(rng.normal(i, 1 + i, size=(B, 2)).astype(np.float32), rng.normal(i, 2, size=(B, 2)).astype(np.float32),
              rng.integers(0, 2, size=B).astype(np.float32)) for i in range(6)]
    state = replay.init(jax.random.PRNGKey(0), jnp.asarray(warm))
    step = jax.jit(replay.step)
    ends = jnp.zeros(B, bool)
    wants = _numpy_mixed(warm, steps, 0.9, 2.0, 0.3, 0.7, hold=2 * B)
    assert np.all(wants[0] == 0.7 * steps[0][2]) and np.all(wants[2] != 0.7 * steps[2][2])  # held, then not
    for (obs, next_obs, reward), want in zip(steps, wants):
        state, mixed, metrics = step(state, obs, jnp.zeros(B, jnp.int32), next_obs, ends, ends, reward,
                                     jax.random.PRNGKey(1))
        assert mixed.shape == (B,)
        np.testing.assert_allclose(np.asarray(mixed), want, rtol=2e-5, atol=1e-6)
    assert int(state.bonus) == len(steps)  # one update per insertion


def test_rfig_learns_each_insertion_once_and_its_reward_falls_on_familiar_states():
    replay = ReplayIntrinsic.create("rfig", (2,), DiscreteSpace(3), B, 2, num_features=64, lengthscale_samples=32,
                                    rho=0.5, warmup_steps=1)
    key = jax.random.PRNGKey(3)
    state = replay.init(key, jax.random.normal(key, (B * 8, 2)))
    obs = jax.random.normal(jax.random.PRNGKey(4), (2, B, 2))
    zeros, ends = jnp.zeros((2, B)), jnp.zeros((2, B), bool)
    step = jax.jit(replay.step)
    raw = []
    for i in range(4):  # the same transitions inserted again and again: they become familiar
        state, mixed, metrics = step(state, obs, jnp.zeros((2, B), jnp.int32), obs + 0.1, ends, ends, zeros,
                                     jax.random.PRNGKey(i))
        assert mixed.shape == (2, B) and np.isfinite(np.asarray(mixed)).all()
        raw.append(float(metrics["intrinsic_reward"]))
    assert raw[3] < raw[2] < raw[1] < raw[0], raw
    assert int(state.bonus.updates_since_refresh) == 4  # one update per insertion, none per sample


def test_rnd_takes_one_env_steps_transitions_and_learns_from_them():
    replay = ReplayIntrinsic.create("rnd", (2,), DiscreteSpace(3), B, hidden=[16, 16], warmup_steps=1)
    state = replay.init(jax.random.PRNGKey(0), jax.random.normal(jax.random.PRNGKey(1), (B * 8, 2)))
    obs, ends = jax.random.normal(jax.random.PRNGKey(2), (B, 2)), jnp.zeros(B, bool)
    new, mixed, metrics = replay.step(state, obs, jnp.zeros(B, jnp.int32), obs, ends, ends, jnp.ones(B),
                                      jax.random.PRNGKey(3))
    assert mixed.shape == (B,) and np.isfinite(np.asarray(mixed)).all() and float(jnp.std(mixed)) > 0
    changed = jax.tree.map(lambda a, b: bool(jnp.any(a != b)), new.bonus, state.bonus)
    assert any(jax.tree.leaves(changed))  # the predictor took its step


def test_no_bonus_leaves_the_reward_as_the_env_gave_it_times_ext_coef():
    replay = ReplayIntrinsic.create("none", (2,), DiscreteSpace(3), B, ext_coef=0.5)
    state = replay.init(jax.random.PRNGKey(0), jnp.ones((B, 2)))
    reward = jnp.arange(B, dtype=jnp.float32)
    _, mixed, _ = replay.step(state, jnp.ones((B, 2)), jnp.zeros(B, jnp.int32), jnp.ones((B, 2)),
                              jnp.zeros(B, bool), jnp.zeros(B, bool), reward, jax.random.PRNGKey(1))
    np.testing.assert_array_equal(np.asarray(mixed), 0.5 * np.arange(B))


def test_misuse_is_one_line_naming_the_argument():
    replay = ReplayIntrinsic.create("none", (2,), DiscreteSpace(3), B)
    state = replay.init(jax.random.PRNGKey(0), jnp.ones((B, 2)))
    ones, ends = jnp.ones((B, 2)), jnp.zeros(B, bool)
    with pytest.raises(ValueError) as err:
        replay.step(state, ones, jnp.zeros(B, jnp.int32), ones, ends, ends, jnp.zeros((B, 1)), jax.random.PRNGKey(1))
    assert str(err.value) == ("ReplayIntrinsic.step: reward has shape (1, 5, 1), expected [num_steps, num_envs] = "
                              "(1, 5)")
    with pytest.raises(ValueError, match=r"ReplayIntrinsic.step: obs has shape \(1, 5, 3\), expected "):
        replay.step(state, jnp.ones((B, 3)), jnp.zeros(B, jnp.int32), ones, ends, ends, jnp.zeros(B),
                    jax.random.PRNGKey(1))
