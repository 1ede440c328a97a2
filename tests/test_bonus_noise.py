"""The noise control: i.i.d. Exponential(1) rewards, independent of the batch, new every update."""

import jax
import jax.numpy as jnp
import numpy as np
from bonus_fixtures import batch_of, in_agent_order, make_test_bonus
from scipy import stats

from rfig_exp.envs.base import DiscreteSpace

T, B = 64, 32


def test_exponential_draws_that_ignore_the_states_and_change_every_update():
    bonus, hp = make_test_bonus("noise", (3,), DiscreteSpace(2), (T, B))
    state = bonus.init(jax.random.PRNGKey(0), None, hp)
    obs = jax.random.normal(jax.random.PRNGKey(1), (T, B, 3))
    r, metrics = jax.jit(bonus.reward)(state, batch_of(obs), hp)
    assert r.shape == (T, B) and r.dtype == jnp.float32 and metrics == {}
    # the same draws for other states: the reward knows nothing of them
    np.testing.assert_array_equal(np.asarray(r), np.asarray(bonus.reward(state, batch_of(obs * 10.0), hp)[0]))
    assert stats.kstest(np.asarray(r).ravel(), "expon").pvalue > 0.01
    r2, new_state = in_agent_order(bonus, state, batch_of(obs), jax.random.PRNGKey(2), hp)
    again, _ = bonus.reward(new_state, batch_of(obs), hp)
    assert abs(float(stats.spearmanr(np.asarray(r).ravel(), np.asarray(again).ravel()).statistic)) < 0.1


def test_vmapped_seeds_draw_their_own():
    bonus, hp = make_test_bonus("noise", (3,), DiscreteSpace(2), (T, B))
    states = jax.vmap(bonus.init, in_axes=(0, None, None))(jax.random.split(jax.random.PRNGKey(0), 2), None, hp)
    obs = jnp.zeros((2, T, B, 3))
    r, _ = jax.vmap(lambda s, o: bonus.reward(s, batch_of(o), hp))(states, obs)
    assert not np.allclose(np.asarray(r[0]), np.asarray(r[1]))
