"""The RFIG authors' code's two departures from the paper, as settings of our bonus
(docs/bonuses/rfig.md), against independent float64 numpy computations:

- the prior: ``Sigma_0 = (reg + prior_scale) I`` (theirs: 1024 + 1) and ``Lambda_0 = 0``
  (``initial_precision: zero``: the first rollout's bonus is exactly 0);
- the length-scale rule ``lengthscale_method: linear_valko``: Valko's effective dimension of the
  linear covariance ``X^T X + gamma I`` of all the warm-up states.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_rfig_bonus import OBS, B, T, batch_of, make, numpy_features

from rfig_exp.bonuses.rfig import RFIGSettings
from rfig_exp.bonuses.rfig.lengthscale import auto_lengthscale, linear_effective_dimension
from rfig_exp.bonuses.shuffle import subsample as draw_indices
from rfig_exp.envs import make_env
from rfig_exp.envs.base import random_actions

AUTHORS_PRIOR = 1024.0  # rnk.py:148, cov_matrix = I * n_features with n_features = 1024


def reference_rewards(state, batches, keys, sigma0, zero_first, subsample):
    """Algorithm 1 in float64 from ``Sigma_0 = sigma0 I``: the reward of batch t is
    ``0.5 log1p(phi^T Sigma_{t-1}^-1 phi)``, 0 for t = 1 if ``zero_first`` (Lambda_0 = 0); then
    ``Sigma += Phi_sub^T Phi_sub`` on the subsample indices the bonus draws."""
    d = state.bias.shape[0]
    sigma = sigma0 * np.eye(d)
    rewards, sigmas = [], []
    for t, (x, key) in enumerate(zip(batches, keys)):
        phi = numpy_features(state, np.asarray(x).reshape(T * B, -1))
        lam = np.zeros((d, d)) if (zero_first and t == 0) else np.linalg.inv(sigma)
        rewards.append(0.5 * np.log1p(np.einsum("nd,de,ne->n", phi, lam, phi)).reshape(T, B))
        idx = np.asarray(draw_indices(key, T * B, subsample))
        sigma = sigma + phi[idx].T @ phi[idx]
        sigmas.append(sigma)
    return rewards, sigmas


@pytest.mark.parametrize("inverse", ["exact", "newton_schulz", "woodbury"])
@pytest.mark.parametrize("prior_scale,initial_precision", [
    (AUTHORS_PRIOR, "zero"),      # the authors' code
    (AUTHORS_PRIOR, "inverse"),   # their ridge alone
    (0.0, "zero"),                # their zero first bonus alone
])
def test_prior_settings_match_float64_algorithm(inverse, prior_scale, initial_precision):
    reg = 1.0
    bonus, hp = make(inverse=inverse, reg=reg, prior_scale=prior_scale, initial_precision=initial_precision)
    state = bonus.init(jax.random.PRNGKey(0), jnp.zeros((10,) + OBS), hp)
    d = state.bias.shape[0]
    np.testing.assert_array_equal(np.asarray(state.sigma), (reg + prior_scale) * np.eye(d, dtype=np.float32))
    if initial_precision == "zero":
        assert not np.asarray(state.precision).any()
    rng = np.random.default_rng(0)
    batches = [rng.normal(size=(T, B) + OBS).astype(np.float32) for _ in range(5)]
    keys = list(jax.random.split(jax.random.PRNGKey(1), 5))
    want_rewards, want_sigmas = reference_rewards(state, batches, keys, reg + prior_scale,
                                                  initial_precision == "zero", math.floor(T * B * 0.25))
    reward, update = jax.jit(bonus.reward), jax.jit(bonus.update)
    for t, (x, key, want, want_sigma) in enumerate(zip(batches, keys, want_rewards, want_sigmas)):
        r, _ = reward(state, batch_of(jnp.asarray(x)), hp)
        if t == 0 and initial_precision == "zero":
            assert not np.asarray(r).any()  # exactly 0, as 0.5 log(1 + phi^T 0 phi) in theirs
        else:
            # ~5e-4 under the 1025 ridge: a relative check, not one at the default's 2e-5 atol
            np.testing.assert_allclose(np.asarray(r), want, rtol=2e-4, atol=1e-7)
        state, metrics = update(state, batch_of(jnp.asarray(x)), key, hp)
        assert float(metrics["inverse_residual"]) < 1e-3 and float(metrics["divergence_count"]) == 0.0
        np.testing.assert_allclose(np.asarray(state.sigma), want_sigma, rtol=1e-5, atol=1e-5)
        # Lambda_t = Sigma_t^-1 from the first update on (the authors invert Sigma at every update)
        want_lam = np.linalg.inv(want_sigma)
        scale = np.abs(want_lam).max()
        np.testing.assert_allclose(np.asarray(state.precision), want_lam, rtol=1e-3, atol=1e-4 * scale)
    if initial_precision == "zero" and prior_scale == AUTHORS_PRIOR:
        # The authors' bonus stays tiny: <= 0.5 log(1 + ||phi||^2 / 1025), with ||phi||^2 <= 2
        assert 0.0 < float(r.max()) <= 0.5 * math.log1p(2.0 / (reg + AUTHORS_PRIOR))


def test_defaults_are_the_papers_prior():
    """The defaults keep the paper's Sigma_0 = reg I, Lambda_0 = I / reg, exactly as before the settings existed."""
    defaults = RFIGSettings.defaults()
    assert defaults["prior_scale"] == 0.0 and defaults["initial_precision"] == "inverse"
    assert defaults["lengthscale_method"] == "valko"
    bonus, hp = make(reg=0.7)
    state = bonus.init(jax.random.PRNGKey(0), jnp.zeros((10,) + OBS), hp)
    eye = jnp.eye(state.bias.shape[0], dtype=jnp.float32)
    np.testing.assert_array_equal(np.asarray(state.sigma), np.asarray(jnp.float32(0.7) * eye))
    np.testing.assert_array_equal(np.asarray(state.precision), np.asarray(eye / jnp.float32(0.7)))


# -- linear_valko -------------------------------------------------------------------------------

def numpy_linear_valko(x, gamma):
    """The rule as the spec writes it, in float64, with a plain loop:
    min { j : j gamma ln T >= sum_{i > j} eig_i(X^T X + gamma I) }, eigenvalues descending, T = rows."""
    x = np.asarray(x, np.float64)
    t, d = x.shape
    eig = np.sort(np.linalg.eigvalsh(x.T @ x + gamma * np.eye(d)))[::-1]
    for j in range(1, d + 1):
        if j * gamma * math.log(t) >= eig[j:].sum():
            return j
    raise AssertionError("unreachable: j = d has an empty tail")


def test_linear_valko_on_informative_and_constant_dims():
    """3 informative, 7 constant (normalised to 0) dims, T = 4096: eigenvalues ~4097 (x3) and
    1 (x7); j = 3 is the first with j ln T (24.95) >= the tail (7). The convention sum_{i >= j}
    would give 4. 1 informative and 29 constant dims: j ln T >= 30 - j first at j = 4 = ceil(30 / 9.32),
    the floor d / (1 + ln T) that constant dims set."""
    rng = np.random.default_rng(0)
    n = 4096
    three = np.concatenate([rng.standard_normal((n, 3)), np.zeros((n, 7))], axis=1)
    one = np.concatenate([rng.standard_normal((n, 1)), np.zeros((n, 29))], axis=1)
    for x, want in ((three, 3), (one, 4)):
        assert numpy_linear_valko(x, 1.0) == want
        assert int(linear_effective_dimension(jnp.asarray(x, jnp.float32), 1.0)) == want
        ls, d_eff = auto_lengthscale(jnp.asarray(x, jnp.float32), "linear_valko", 1.0)
        assert int(d_eff) == want and float(ls) == pytest.approx(math.sqrt(want), rel=1e-6)


@pytest.mark.parametrize("gamma", [1.0, 30.0, 1e-3])
def test_linear_valko_matches_numpy_on_mixed_scales(gamma):
    rng = np.random.default_rng(1)
    scales = np.array([5.0, 3.0, 2.0, 1.0, 0.5, 0.2, 0.1, 0.05, 0.02, 0.0, 0.0, 0.0])
    mix = np.linalg.qr(rng.standard_normal((12, 12)))[0]  # correlated dims: not axis-aligned
    x = (rng.standard_normal((2000, 12)) * scales) @ mix
    want = numpy_linear_valko(x, gamma)
    assert 1 < want < 12
    assert int(linear_effective_dimension(jnp.asarray(x, jnp.float32), gamma)) == want


def authors_mountaincar_warmup(seed=0, num_envs=32, num_steps=128):
    """The authors' warm-up states (ppo_with_bonus.py:187-197): 32 envs reset, then 128 steps of
    uniform random actions each taken from those same initial states (the env state is never
    carried), normalised with the statistics of all 4096 (their RMS, ~exact from var 1, count 1e-4)."""
    env = make_env("mountaincar")
    k_reset, k_steps = jax.random.split(jax.random.PRNGKey(seed))
    _, states0 = jax.vmap(env.reset)(jax.random.split(k_reset, num_envs))

    def one_step(key):
        k_act, k_env = jax.random.split(key)
        actions = random_actions(k_act, env.action_space, num_envs)
        return jax.vmap(env.step)(jax.random.split(k_env, num_envs), states0, actions).obs

    obs = np.asarray(jax.vmap(one_step)(jax.random.split(k_steps, num_steps)), np.float64)  # [128, 32, 2]
    x = obs.reshape(num_steps * num_envs, -1)
    return (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-8)


def test_linear_valko_gives_the_authors_mountaincar_lengthscale():
    """specs/authors-code.md 2.4.1: d_eff 2, ell = sqrt(2) ~ 1.41 on MountainCar; the bonus's init
    applies the rule to all 4096 warm-up states, not lengthscale_samples of them."""
    x = authors_mountaincar_warmup()
    assert x.shape == (4096, 2)
    assert numpy_linear_valko(x, 1.0) == 2
    bonus, hp = make((2,), lengthscale="auto", lengthscale_method="linear_valko", lengthscale_samples=64)
    state = bonus.init(jax.random.PRNGKey(0), jnp.asarray(x, jnp.float32), hp)
    assert int(state.effective_dim) == 2
    assert float(state.lengthscale) == pytest.approx(math.sqrt(2.0), rel=1e-6)
    assert round(float(state.lengthscale), 2) == 1.41


def test_linear_valko_uses_every_warmup_state():
    """All rows count (T = N in ln T and in X^T X): with 64 of 2048 rows the tail test differs."""
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.standard_normal((2048, 2)), 0.05 * rng.standard_normal((2048, 6))], axis=1)
    want_all, want_64 = numpy_linear_valko(x, 1.0), numpy_linear_valko(x[:64], 1.0)
    assert want_all != want_64  # the check can tell a subsample from the whole
    bonus, hp = make((8,), lengthscale="auto", lengthscale_method="linear_valko", lengthscale_samples=64)
    state = bonus.init(jax.random.PRNGKey(0), jnp.asarray(x, jnp.float32), hp)
    assert int(state.effective_dim) == want_all
