"""What VIME's bonus measures, on random-policy rollouts of gymnax envs with the paper-sized BNN at the
bonus's defaults (the raw gain, ``kl_ratio_len=0``): each transition's gain against the exact float64 KL
of its own one-step posterior; its ranking against the model's prediction error; a known-answer case
that separates an information gain from a prediction error; and the posterior std's movement.
benchmarks/vime_information_gain.py prints the same quantities for a 1M-step run's worth of updates."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from bonus_fixtures import make_test_bonus

from rfig_exp.bonuses import BonusBatch
from rfig_exp.bonuses.base import action_features
from rfig_exp.bonuses.bnn import forward, sample_noise
from rfig_exp.envs import make_env
from rfig_exp.envs.base import DiscreteSpace, random_actions

T, B = 16, 8            # 128 transitions per batch
RAW = dict(kl_ratio_len=0)


def rollout(env, key, warmup=48):
    """A random-policy ``BonusBatch [T, B]`` after ``warmup`` steps, normalised by its own statistics."""
    k_reset, k_steps = jax.random.split(key)
    obs, state = jax.vmap(env.reset)(jax.random.split(k_reset, B))

    def step(carry, k):
        state, obs = carry
        k_act, k_env = jax.random.split(k)
        action = random_actions(k_act, env.action_space, B)
        out = jax.vmap(env.step)(jax.random.split(k_env, B), state, action)
        return (out.state, out.obs), (obs, action, out.final_obs, out.terminated, out.truncated)

    _, steps = jax.lax.scan(step, (state, obs), jax.random.split(k_steps, warmup + T))
    o, a, f, term, trunc = (z[warmup:] for z in steps)
    mean, std = o.reshape(T * B, -1).mean(0), o.reshape(T * B, -1).std(0) + 1e-8
    norm = lambda x: jnp.clip((x - mean) / std, -5.0, 5.0)  # noqa: E731
    return BonusBatch(obs=norm(o), actions=a, next_obs=norm(f), terminated=term, truncated=trunc)


def model_io(batch, space):
    n = batch.terminated.size
    x = jnp.concatenate([batch.obs.reshape(n, -1), action_features(batch.actions, space).reshape(n, -1)], -1)
    return np.asarray(x, np.float64), np.asarray(batch.next_obs.reshape(n, -1), np.float64)


def f64(layers):
    return [(np.asarray(d["w"], np.float64), np.asarray(d["b"], np.float64)) for d in layers]


def exact_kl_of_each_step(params, eps, x, y, likelihood_sigma, step):
    """Float64, one transition at a time: its NLL gradient ``g`` with respect to ``(mu, rho)`` under the
    weight sample ``mu + softplus(rho) eps`` (a ReLU MLP's backward pass written out), the step
    ``(mu, rho) -= step * H^-1 g`` with ``H_mu = 1/sigma^2``, ``H_rho = 2 sigmoid(rho)^2 / sigma^2``, and
    the textbook ``KL(N(m', s'^2) || N(m, s^2))`` of that step summed over every weight and bias."""
    mu, rho, eps = f64(params["mu"]), f64(params["rho"]), f64(eps)
    kls = []
    for xi, yi in zip(x, y):
        weights = [(m[0] + np.log1p(np.exp(r[0])) * e[0], m[1] + np.log1p(np.exp(r[1])) * e[1])
                   for m, r, e in zip(mu, rho, eps)]
        a, inputs, zs = xi, [], []
        for layer, (w, b) in enumerate(weights):
            inputs.append(a)
            zs.append(a @ w + b)
            a = np.maximum(zs[-1], 0.0) if layer < len(weights) - 1 else zs[-1]
        d, kl = (a - yi) / likelihood_sigma ** 2, 0.0
        for layer in reversed(range(len(weights))):
            for m, r, e, g_mu in zip(mu[layer], rho[layer], eps[layer], (np.outer(inputs[layer], d), d)):
                s, sig = np.log1p(np.exp(r)), 1.0 / (1.0 + np.exp(-r))
                g_rho = g_mu * e * sig
                m_new = m - step * g_mu * s ** 2
                s_new = np.log1p(np.exp(r - step * g_rho * s ** 2 / (2.0 * sig ** 2)))
                kl += np.sum(np.log(s / s_new) + (s_new ** 2 + (m_new - m) ** 2) / (2.0 * s ** 2) - 0.5)
            if layer:
                d = (weights[layer][0] @ d) * (zs[layer - 1] > 0)
        kls.append(kl)
    return np.array(kls)


def spearman(a, b):
    rank = lambda v: np.argsort(np.argsort(np.asarray(v))).astype(np.float64)  # noqa: E731
    return float(np.corrcoef(rank(a), rank(b))[0, 1])


def sampled_squared_error(params, eps, x, y):
    weights = [(m[0] + np.log1p(np.exp(r[0])) * e[0], m[1] + np.log1p(np.exp(r[1])) * e[1])
               for m, r, e in zip(f64(params["mu"]), f64(params["rho"]), f64(eps))]
    a = x
    for layer, (w, b) in enumerate(weights):
        a = a @ w + b
        a = np.maximum(a, 0.0) if layer < len(weights) - 1 else a
    return np.sum((a - y) ** 2, 1)


@pytest.fixture(scope="module", params=["mountaincar", "acrobot"])
def real(request):
    """An env's rollout batch, the bonus at its defaults, and its state at init and after 6 updates
    (one metrics window) on fresh rollouts."""
    env = make_env(request.param)
    bonus, hp = make_test_bonus("vime", env.obs_shape, env.action_space, (T, B), **RAW)
    state = bonus.init(jax.random.PRNGKey(0), None, hp)
    update, roll = jax.jit(bonus.update), jax.jit(lambda key: rollout(env, key))
    states = [state]
    for i in range(6):
        state, _ = update(state, roll(jax.random.PRNGKey(10 + i)), jax.random.PRNGKey(100 + i), hp)
    states.append(state)
    return env, bonus, hp, states, roll(jax.random.PRNGKey(1))


def test_each_transitions_gain_is_the_kl_of_its_own_posterior_step(real):
    env, bonus, hp, states, batch = real
    x, y = model_io(batch, env.action_space)
    reward = jax.jit(bonus.reward)
    for state in states:
        gain = np.asarray(reward(state, batch, hp)[0], np.float64).reshape(-1)      # float32, as the agent gets it
        eps = sample_noise(state.key, state.params["mu"])
        exact = exact_kl_of_each_step(state.params, eps, x, y, float(hp.likelihood_sigma), float(hp.step_size))
        assert np.all(exact > 0) and exact.max() > 10 * exact.min()    # transitions differ: not one number
        np.testing.assert_allclose(gain, exact, rtol=1e-3)             # measured: at most 3e-4
        # the comparison is per transition: the same numbers paired with other transitions fail it
        assert np.max(np.abs(np.roll(gain, 1) / exact - 1.0)) > 0.5


def test_the_gain_ranks_transitions_as_the_sampled_networks_squared_error(real):
    """With every sigma equal the gain is ``sigma^2``-weighted ``||g_i||^2``, and ``g_i`` is the residual
    of the sampled network back-propagated: its rank follows that residual's size (measured Spearman
    0.95-0.98), and the mean network's less (the weight noise moves the residual)."""
    env, bonus, hp, states, batch = real
    x, y = model_io(batch, env.action_space)
    for state in states:
        gain = np.asarray(jax.jit(bonus.reward)(state, batch, hp)[0]).reshape(-1)
        err = sampled_squared_error(state.params, sample_noise(state.key, state.params["mu"]), x, y)
        assert spearman(gain, err) > 0.85
        assert spearman(gain, np.random.default_rng(0).permutation(err)) < 0.3


def test_posterior_std_moves_by_the_full_adam_step_towards_the_prior_whatever_the_data(real):
    """Every ``rho`` gets a KL-to-prior gradient far larger than its data gradient (sigma 0.05 against
    the prior's 0.5), so Adam moves each by ``lr`` per update: after t updates every sigma is
    ``softplus(rho0 + t lr)`` and the posterior std says nothing about which inputs were seen."""
    env, bonus, hp, states, _ = real
    rho0 = float(np.log(np.expm1(float(hp.init_sigma))))
    expected = np.log1p(np.exp(rho0 + 6 * float(hp.lr)))
    sigmas = np.concatenate([np.ravel(jax.nn.softplus(r)) for r in jax.tree.leaves(states[-1].params["rho"])])
    assert expected > float(hp.init_sigma) * 1.0005                      # the prediction moves at all
    assert float(np.mean(sigmas)) == pytest.approx(expected, rel=2e-6)    # measured 1e-7 off
    # every weight within a fifth of that movement (measured: at most 7% of it)
    assert np.max(np.abs(sigmas - expected)) < 0.2 * (expected - float(hp.init_sigma))


def test_known_answer_the_bonus_ranks_a_seen_noisy_region_above_a_novel_one():
    """Region A: seen in each of 200 training batches, targets ``s + N(0, 1)``. Region B (its mirror
    image, equal input norms): never seen, targets the mean network's prediction + 0.5 per output, so
    a quarter of A's squared error. The exact information gain of a conjugate Bayesian linear model
    trained on the same A points ranks B above A (its posterior is certain about A); the squared error
    ranks A above B; so does this VIME (measured P(B above A): 0.99 linear, 0.17 squared error, 0.30 VIME)."""
    n, d, space = 256, 2, DiscreteSpace(3)
    bonus, hp = make_test_bonus("vime", (d,), space, (1, n), **RAW)
    state = bonus.init(jax.random.PRNGKey(0), None, hp)
    update, reward = jax.jit(bonus.update), jax.jit(bonus.reward)

    def region(key, centre, noise):
        k_s, k_a, k_y = jax.random.split(key, 3)
        s = centre + 0.3 * jax.random.normal(k_s, (n, d))
        a = jax.random.randint(k_a, (n,), 0, 3)
        return s, a, s + noise * jax.random.normal(k_y, (n, d))

    def batch(s, a, y):
        zeros = jnp.zeros((1, n), bool)
        return BonusBatch(obs=s[None], actions=a[None], next_obs=y[None], terminated=zeros, truncated=zeros)

    def features(s, a):
        return np.concatenate([np.asarray(s), np.asarray(action_features(a, space)), np.ones((n, 1))], 1)

    seen = [region(jax.random.PRNGKey(100 + t), 1.0, 1.0) for t in range(200)]
    for t, data in enumerate(seen):
        state, _ = update(state, batch(*data), jax.random.PRNGKey(5000 + t), hp)
    s_a, a_a, y_a = region(jax.random.PRNGKey(1), 1.0, 1.0)
    s_b, a_b, _ = region(jax.random.PRNGKey(2), -1.0, 0.0)
    x_b = jnp.concatenate([s_b, action_features(a_b, space)], 1)
    shift = np.where(np.random.default_rng(3).random((n, d)) < 0.5, 0.5, -0.5)
    y_b = forward(state.params["mu"], x_b)[0] + shift

    def p_b_above_a(score_a, score_b):
        return float(np.mean(np.asarray(score_b)[None, :] > np.asarray(score_a)[:, None]))

    draws = [state._replace(key=jax.random.PRNGKey(900 + k)) for k in range(8)]
    vime_a = np.mean([np.asarray(reward(st, batch(s_a, a_a, y_a), hp)[0]).ravel() for st in draws], 0)
    vime_b = np.mean([np.asarray(reward(st, batch(s_b, a_b, y_b), hp)[0]).ravel() for st in draws], 0)
    x_a = jnp.concatenate([s_a, action_features(a_a, space)], 1)
    err_a = np.sum((np.asarray(forward(state.params["mu"], x_a)[0]) - np.asarray(y_a)) ** 2, 1)
    err_b = np.sum(shift ** 2, 1)

    # The conjugate model y = W phi + N(0, 5^2), prior N(0, 0.5^2): exact KL of the posterior after one
    # more point from the posterior given every A point, one loop per transition.
    noise, prior = float(hp.likelihood_sigma), float(hp.prior_sigma)
    phi_seen = np.concatenate([features(s, a) for s, a, _ in seen])
    precision = np.eye(phi_seen.shape[1]) / prior ** 2 + phi_seen.T @ phi_seen / noise ** 2
    cov = np.linalg.inv(precision)
    w = cov @ phi_seen.T @ np.concatenate([np.asarray(y) for _, _, y in seen]) / noise ** 2

    def linear_gain(phi, r):
        gains = []
        for p, ri in zip(phi, r):
            c = cov - np.outer(cov @ p, cov @ p) / (noise ** 2 + p @ cov @ p)
            dm = np.outer(cov @ p, ri) / (noise ** 2 + p @ cov @ p)          # the mean's change per output
            logdet = np.linalg.slogdet(cov)[1] - np.linalg.slogdet(c)[1]
            gains.append(0.5 * d * (np.trace(precision @ c) - len(p) + logdet)
                         + 0.5 * np.trace(dm.T @ precision @ dm))
        return np.array(gains)

    lin_a = linear_gain(features(s_a, a_a), np.asarray(y_a) - features(s_a, a_a) @ w)
    lin_b = linear_gain(features(s_b, a_b), shift)
    assert err_b.mean() < 0.35 * err_a.mean()                      # B's error is the moderate one
    assert p_b_above_a(lin_a, lin_b) > 0.9                         # an information gain prefers B
    assert p_b_above_a(err_a, err_b) < 0.3                         # a prediction error prefers A
    assert p_b_above_a(vime_a, vime_b) < 0.4                       # this VIME: A, as the prediction error
