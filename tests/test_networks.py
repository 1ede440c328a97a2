"""Policy distributions against scipy, and the network's output shapes per action space."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from rfig_exp.agents.ppo.networks import ActorCritic, Categorical, DiagGaussian
from rfig_exp.envs import BoxSpace, DiscreteSpace


def test_categorical_log_prob_and_entropy():
    logits = np.array([[0.5, -1.0, 2.0], [0.0, 0.0, 0.0]], np.float32)
    dist = Categorical(jnp.asarray(logits))
    p = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    np.testing.assert_allclose(dist.log_prob(jnp.array([2, 1])), np.log([p[0, 2], p[1, 1]]), rtol=1e-5)
    np.testing.assert_allclose(dist.entropy(), [stats.entropy(p[0]), stats.entropy(p[1])], rtol=1e-5)


def test_diag_gaussian_log_prob_and_entropy():
    mean = np.array([[0.3, -0.2]], np.float32)
    log_std = np.array([0.1, -0.5], np.float32)
    dist = DiagGaussian(jnp.asarray(mean), jnp.asarray(log_std))
    action = np.array([[0.0, 0.4]], np.float32)
    want = stats.norm(mean, np.exp(log_std)).logpdf(action).sum(-1)
    np.testing.assert_allclose(dist.log_prob(jnp.asarray(action)), want, rtol=1e-5)
    np.testing.assert_allclose(dist.entropy(), stats.norm(mean, np.exp(log_std)).entropy().sum(-1), rtol=1e-5)


@pytest.mark.parametrize("space", [DiscreteSpace(4), BoxSpace(2)])
def test_actor_critic_shapes(space):
    net = ActorCritic(space, obs_ndim=3, hidden=(16, 16))
    obs = jnp.zeros((5, 10, 10, 4))
    params = net.init(jax.random.PRNGKey(0), obs[0])
    pi, values = net.apply(params, obs)
    assert values.shape == (5, 2)
    action = pi.sample(jax.random.PRNGKey(1))
    assert action.shape == ((5,) if isinstance(space, DiscreteSpace) else (5, 2))
    assert pi.log_prob(action).shape == (5,)
