"""The signal statistics of a bonus's raw reward (rfig_exp.agents.signal) against independent
computations (scipy's ranks and correlations, numpy), on bonuses whose answer is known."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from rfig_exp.agents.signal import average_ranks, batch_signal, spearman

T, B = 16, 32


def test_average_ranks_equal_scipys_with_ties():
    x = np.array([3.0, 1.0, 3.0, 2.0, 3.0, 0.5, 1.0], np.float32)
    np.testing.assert_allclose(np.asarray(average_ranks(jnp.asarray(x))), stats.rankdata(x) - 1)


@pytest.mark.parametrize("seed", range(3))
def test_spearman_equals_scipys_on_tied_counts(seed):
    rng = np.random.default_rng(seed)
    visits = rng.integers(0, 6, 400).astype(np.float32)          # many ties, as visit counts have
    bonus = (1.0 / np.sqrt(1.0 + visits) + 0.3 * rng.random(400)).astype(np.float32)
    expected = stats.spearmanr(bonus, visits).statistic
    assert float(spearman(jnp.asarray(bonus), jnp.asarray(visits))) == pytest.approx(expected, abs=1e-5)
    assert expected < -0.3


def test_a_constant_bonus_sits_at_its_maximum_with_no_spread():
    out = batch_signal(jnp.full((T, B), 1000.0), jnp.arange(T * B).reshape(T, B))
    assert float(out["at_max_fraction"]) == 1.0 and float(out["cv"]) == 0.0
    assert float(out["visit_rank_corr"]) == 0.0   # undefined for a constant: reported as 0


def test_a_clip_that_binds_is_the_fraction_at_the_maximum():
    raw = jax.random.exponential(jax.random.PRNGKey(0), (T, B))
    clip = float(np.quantile(np.asarray(raw), 0.7))
    out = batch_signal(jnp.minimum(raw, clip))
    assert float(out["at_max_fraction"]) == pytest.approx(float(np.mean(np.asarray(raw) >= clip)), abs=1e-6)
    assert 0.25 < float(out["at_max_fraction"]) < 0.35
    assert "visit_rank_corr" not in out   # no coverage grid


def test_an_informative_bonus_is_spread_one_at_the_top_and_falls_with_visits():
    visits = jax.random.randint(jax.random.PRNGKey(1), (T, B), 0, 50)
    raw = 1.0 / jnp.sqrt(1.0 + visits) * jax.random.uniform(jax.random.PRNGKey(2), (T, B), minval=0.9, maxval=1.1)
    out = batch_signal(raw, visits)
    r = np.asarray(raw).ravel()
    assert float(out["at_max_fraction"]) == pytest.approx(1.0 / (T * B))
    assert float(out["cv"]) == pytest.approx(np.std(r) / np.mean(r), rel=1e-4)
    assert float(out["visit_rank_corr"]) < -0.8


def test_noise_is_blind_to_visits():
    visits = jax.random.randint(jax.random.PRNGKey(3), (64, 64), 0, 50)
    out = batch_signal(jax.random.exponential(jax.random.PRNGKey(4), (64, 64)), visits)
    assert abs(float(out["visit_rank_corr"])) < 0.05 and float(out["cv"]) == pytest.approx(1.0, abs=0.05)


def test_jit_and_vmap():
    raw = jax.random.exponential(jax.random.PRNGKey(5), (3, T, B))
    visits = jax.random.randint(jax.random.PRNGKey(6), (3, T, B), 0, 9)
    stacked = jax.jit(jax.vmap(batch_signal))(raw, visits)
    for s in range(3):
        one = batch_signal(raw[s], visits[s])
        for k, v in one.items():
            assert float(stacked[k][s]) == pytest.approx(float(v), abs=1e-6)
