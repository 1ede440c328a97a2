"""Which bonuses a GPU's TF32 matmuls (its float32 default) would change, checked on the CPU
with emulated TF32 (tests/tf32_emulation.py) against float32, on a MountainCar-sized batch
after a few updates.

RFIG keeps the precision matrix Lambda ~ Sigma^-1 by rank-k Woodbury updates; each update's
rounding error stays in Lambda, and at TF32 it grows past ``refresh_tol`` within a few
updates (on a GPU: a recovery nearly every update), so its matmuls carry
``bonus.matmul_precision`` (default ``highest``), which the emulation must respect.
RND's prediction errors, VIME's information gains and #Explo's SimHash codes come out of
well-conditioned network passes: TF32 moves them by well under a percent (and a hash code is
a deterministic function of the state at either precision, so counts stay consistent);
they keep the process default, like the PPO networks.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from bonus_fixtures import make_test_bonus
from tf32_emulation import tf32

from rfig_exp.bonuses import BonusBatch
from rfig_exp.bonuses.simhash import simhash_bits
from rfig_exp.envs.base import DiscreteSpace

T, B, OBS, ACTIONS = 128, 32, (2,), 3


def make(name, **overrides):
    return make_test_bonus(name, OBS, DiscreteSpace(ACTIONS), (T, B), **overrides)


def batch(seed, spread=1.0):
    """Normalised MountainCar-like states: a random walk in the unit box, ``[T, B]``."""
    k_obs, k_act = jax.random.split(jax.random.PRNGKey(seed))
    obs = spread * jnp.cumsum(0.1 * jax.random.normal(k_obs, (T + 1, B) + OBS), axis=0)
    actions = jax.random.randint(k_act, (T, B), 0, ACTIONS)
    zeros = jnp.zeros((T, B), bool)
    return BonusBatch(obs=obs[:-1], actions=actions, next_obs=obs[1:], terminated=zeros, truncated=zeros)


def trained(name, updates=4, **overrides):
    bonus, hp = make(name, **overrides)
    state = bonus.init(jax.random.PRNGKey(0), batch(99).next_obs.reshape((-1,) + OBS), hp)
    for u in range(updates):
        state, _ = jax.jit(bonus.update)(state, batch(u), jax.random.PRNGKey(u), hp)
    return bonus, hp, state


def relative_change(bonus, hp, state) -> float:
    """Median over states of |r_tf32 - r_f32| / |r_f32| for a batch the bonus has seen."""
    seen = batch(1)
    f32 = np.asarray(bonus.reward(state, seen, hp)[0], np.float64)
    t32 = np.asarray(tf32(lambda st: bonus.reward(st, seen, hp)[0])(state), np.float64)
    assert np.all(np.isfinite(t32))
    return float(np.median(np.abs(t32 - f32) / np.maximum(np.abs(f32), 1e-30)))


def test_the_emulation_rounds_default_precision_matmuls_only():
    x = jax.random.normal(jax.random.PRNGKey(0), (8, 64))
    w = jax.random.normal(jax.random.PRNGKey(1), (64, 4))
    exact = np.asarray(x @ w)
    assert np.abs(np.asarray(tf32(lambda a, b: a @ b)(x, w)) - exact).max() > 1e-4
    np.testing.assert_array_equal(np.asarray(tf32(lambda a, b: jnp.dot(a, b, precision="highest"))(x, w)), exact)


def woodbury_residual_under_tf32(matmul_precision: str, updates: int = 12) -> float:
    """The largest residual ||Sigma Lambda v - v|| / ||v|| of RFIG's Woodbury-updated precision
    over ``updates`` real updates run under emulated TF32 (no refresh in between)."""
    bonus, hp, state = trained("rfig", updates=0, matmul_precision=matmul_precision, refresh_every=0,
                               refresh_tol=1e9, divergence_tol=1e9)
    step = tf32(lambda st, b, k: bonus.update(st, b, k, hp)[0])
    for u in range(updates):
        state = step(state, batch(u), jax.random.PRNGKey(u))
    return float(state.max_residual)


@pytest.mark.extended
def test_rfig_needs_its_float32_matmuls_and_keeps_them_under_tf32():
    """The issue's GPU measurement in miniature: at the process default (TF32) the Woodbury
    update drifts past refresh_tol (1e-3) within a few updates; with the bonus's own
    ``highest`` precision, which the emulation leaves at float32, it stays well inside."""
    default = woodbury_residual_under_tf32("default")
    highest = woodbury_residual_under_tf32("highest")
    assert highest < 1e-3 < default, (highest, default)


@pytest.mark.extended
@pytest.mark.parametrize("name", ["rnd", "vime", "hashexplo"])
def test_the_network_bonuses_barely_move_under_tf32(name):
    change = relative_change(*trained(name))
    assert change < 5e-3, (name, change)


def test_simhash_codes_rarely_flip_under_tf32_and_are_deterministic():
    bonus, hp, state = trained("hashexplo")
    x = batch(7).next_obs.reshape(-1, OBS[0])
    f32 = np.asarray(simhash_bits(state.encoder, state.projection, x))
    t32 = np.asarray(tf32(lambda s, v: simhash_bits(s.encoder, s.projection, v))(state, x))
    again = np.asarray(tf32(lambda s, v: simhash_bits(s.encoder, s.projection, v))(state, x))
    np.testing.assert_array_equal(t32, again)
    assert (t32 != f32).any(axis=1).mean() < 0.02
