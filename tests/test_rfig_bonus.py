"""The RFIG bonus (Algorithm 1) against a direct float64 numpy computation."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import FLOAT32_ROUNDING
from omegaconf import OmegaConf

from rfig_exp.bonuses import BonusBatch, make_bonus, parse_bonus
from rfig_exp.bonuses.shuffle import subsample as draw_indices
from rfig_exp.config.errors import ConfigError
from rfig_exp.envs import DiscreteSpace

T, B, OBS = 8, 16, (3,)


def rfig_cfg(**overrides):
    base = dict(name="rfig", beta=0.5, num_features=128, rho=0.25, reg=1.0, prior_scale=0.0,
                initial_precision="inverse", lengthscale=1.5, lengthscale_scale=1.0, lengthscale_method="valko",
                lengthscale_gamma=1.0, lengthscale_samples=64,
                inverse="exact", newton_schulz_iters=20, refresh_every=4, refresh_tol=1e-3, divergence_tol=1e-2,
                quad_blocks=4, matmul_precision="highest")
    base.update(overrides)
    return OmegaConf.create(base)


def make(obs_shape=OBS, **overrides):
    return make_bonus(parse_bonus(rfig_cfg(**overrides), T * B), obs_shape, DiscreteSpace(2))


def batch_of(next_obs):
    zeros = jnp.zeros((T, B), bool)
    return BonusBatch(obs=next_obs, actions=jnp.zeros((T, B), jnp.int32), next_obs=next_obs,
                      terminated=zeros, truncated=zeros)


def numpy_features(state, x):
    w = np.asarray(state.omega_unit, np.float64) / float(state.lengthscale)
    d = w.shape[1]
    return np.sqrt(2.0 / d) * np.cos(x.reshape(len(x), -1).astype(np.float64) @ w + np.asarray(state.bias, np.float64))


def reference_run(state, batches, keys, reg, subsample):
    """Algorithm 1 in float64: bonus with the precision before each update, then
    Sigma += Phi_sub^T Phi_sub on the same subsample indices the bonus drew."""
    d = state.bias.shape[0]
    sigma = reg * np.eye(d)
    rewards = []
    for x, key in zip(batches, keys):
        flat = np.asarray(x).reshape(T * B, -1)
        phi = numpy_features(state, flat)
        lam = np.linalg.inv(sigma)
        rewards.append(0.5 * np.log1p(np.einsum("nd,de,ne->n", phi, lam, phi)).reshape(T, B))
        idx = np.asarray(draw_indices(key, T * B, subsample))  # the draw itself: test_shuffle.py
        sigma = sigma + phi[idx].T @ phi[idx]
    return rewards, sigma


@pytest.mark.parametrize("inverse,quad_blocks,obs_shape", [
    ("exact", 4, OBS), ("newton_schulz", 4, OBS), ("woodbury", 4, OBS), ("woodbury", 1, OBS), ("woodbury", 8, OBS),
    # 2-D (DeepSea) and 3-D (MinAtar) observations: the update once flattened its flat
    # subsample a second time, which for a 2-D observation merged the states into one row.
    ("woodbury", 4, (4, 5)), ("exact", 4, (3, 3, 2)),
])
def test_bonus_matches_float64_algorithm(inverse, quad_blocks, obs_shape):
    bonus, hp = make(obs_shape, inverse=inverse, quad_blocks=quad_blocks)
    state = bonus.init(jax.random.PRNGKey(0), jnp.zeros((10,) + obs_shape), hp)
    rng = np.random.default_rng(0)
    batches = [rng.normal(size=(T, B) + obs_shape).astype(np.float32) for _ in range(5)]
    keys = list(jax.random.split(jax.random.PRNGKey(1), 5))
    want_rewards, want_sigma = reference_run(state, batches, keys, 1.0, math.floor(T * B * 0.25))
    reward, update = jax.jit(bonus.reward), jax.jit(bonus.update)
    for x, key, want in zip(batches, keys, want_rewards):
        r, _ = reward(state, batch_of(jnp.asarray(x)), hp)
        np.testing.assert_allclose(np.asarray(r), want, rtol=2e-4, atol=2e-5)
        state, metrics = update(state, batch_of(jnp.asarray(x)), key, hp)
        assert float(metrics["inverse_residual"]) < 1e-3
    np.testing.assert_allclose(np.asarray(state.sigma), want_sigma, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(state.precision), np.linalg.inv(want_sigma), rtol=1e-3, atol=1e-4)


def test_information_gain_falls_on_repeated_states_and_stays_high_on_novel_ones():
    bonus, hp = make(rho=1.0)
    state = bonus.init(jax.random.PRNGKey(0), jnp.zeros((10,) + OBS), hp)
    rng = np.random.default_rng(1)
    seen = jnp.asarray(rng.normal(size=(T, B) + OBS) * 0.3, jnp.float32)  # a small region
    novel = seen + 6.0                                                     # far away
    first, _ = bonus.reward(state, batch_of(seen), hp)
    for i in range(4):
        state, _ = bonus.update(state, batch_of(seen), jax.random.PRNGKey(i), hp)
    again, _ = bonus.reward(state, batch_of(seen), hp)
    fresh, _ = bonus.reward(state, batch_of(novel), hp)
    assert float(again.mean()) < 0.2 * float(first.mean())
    assert float(fresh.mean()) > 0.8 * float(first.mean())
    # Before any data, the bonus is 0.5 log(1 + ||phi||^2 / reg) with ||phi||^2 ~ 1.
    assert float(first.mean()) == pytest.approx(0.5 * np.log(2.0), rel=0.1)


def test_auto_lengthscale_is_sqrt_of_effective_dimension():
    bonus, hp = make(lengthscale="auto")
    warm = jax.random.normal(jax.random.PRNGKey(3), (64,) + OBS)
    state = bonus.init(jax.random.PRNGKey(0), warm, hp)
    assert float(state.lengthscale) == pytest.approx(math.sqrt(float(state.effective_dim)), rel=1e-5)
    assert 1 <= float(state.effective_dim) <= 64


def test_lengthscale_scale_multiplies_the_automatic_and_the_given_lengthscale():
    warm = jax.random.normal(jax.random.PRNGKey(3), (64,) + OBS)
    bonus, hp = make(lengthscale="auto")
    auto = bonus.init(jax.random.PRNGKey(0), warm, hp)
    bonus, hp = make(lengthscale="auto", lengthscale_scale=0.25)
    scaled = bonus.init(jax.random.PRNGKey(0), warm, hp)
    assert float(scaled.lengthscale) == pytest.approx(0.25 * float(auto.lengthscale), rel=1e-6)
    assert float(scaled.effective_dim) == float(auto.effective_dim)
    bonus, hp = make(lengthscale=1.5, lengthscale_scale=4.0)
    assert float(bonus.init(jax.random.PRNGKey(0), warm, hp).lengthscale) == pytest.approx(6.0)


def test_refresh_restores_exact_inverse_and_counts_divergence():
    bonus, hp = make(inverse="woodbury", refresh_every=2)
    state = bonus.init(jax.random.PRNGKey(0), jnp.zeros((10,) + OBS), hp)
    x = jnp.asarray(np.random.default_rng(2).normal(size=(T, B) + OBS), jnp.float32)
    state, _ = bonus.update(state, batch_of(x), jax.random.PRNGKey(1), hp)
    assert not bool(bonus.needs_refresh(state))
    state, _ = bonus.update(state, batch_of(x), jax.random.PRNGKey(2), hp)
    assert bool(bonus.needs_refresh(state))             # scheduled refresh
    state = bonus.refresh(state, hp)
    assert int(state.recoveries) == 0                    # a scheduled refresh is not a recovery
    broken = state._replace(precision=state.precision.at[0, 0].set(jnp.nan))
    broken, metrics = bonus.update(broken, batch_of(x), jax.random.PRNGKey(3), hp)
    assert not np.isfinite(float(metrics["inverse_residual"])) and float(metrics["divergence_count"]) == 1.0
    assert bool(bonus.needs_refresh(broken))
    fixed = bonus.refresh(broken, hp)
    assert int(fixed.recoveries) == 1
    np.testing.assert_allclose(np.asarray(fixed.precision), np.linalg.inv(np.asarray(fixed.sigma, np.float64)),
                               rtol=1e-3, atol=1e-4)


def test_residual_asks_for_a_refresh_once_it_has_grown():
    """With no fixed period, a residual above refresh_tol that has at least doubled since the
    last exact inverse makes the update ask for a refresh; the refresh is not a recovery."""
    bonus, hp = make(inverse="woodbury", refresh_every=0, refresh_tol=1e-4, divergence_tol=1e-1)
    state = bonus.init(jax.random.PRNGKey(0), jnp.zeros((10,) + OBS), hp)
    x = jnp.asarray(np.random.default_rng(3).normal(size=(T, B) + OBS), jnp.float32)
    update = jax.jit(bonus.update)
    state, metrics = update(state, batch_of(x), jax.random.PRNGKey(1), hp)
    assert float(metrics["inverse_residual"]) < 1e-4          # float32 Woodbury, exact enough
    assert not bool(bonus.needs_refresh(state)) and float(metrics["refresh_count"]) == 0.0

    # A precision 0.3% off: the next update inherits the error (residual ~3e-3).
    off = state._replace(precision=state.precision * 1.003)
    stale, metrics = update(off, batch_of(x), jax.random.PRNGKey(2), hp)
    assert 1e-3 < float(metrics["inverse_residual"]) < 1e-2
    assert bool(bonus.needs_refresh(stale)) and float(metrics["refresh_count"]) == 1.0
    assert float(metrics["divergence_count"]) == 0.0
    fresh = bonus.refresh(stale, hp)
    assert int(fresh.refreshes) == 1 and int(fresh.recoveries) == 0 and not bool(bonus.needs_refresh(fresh))
    want = np.linalg.inv(np.asarray(fresh.sigma, np.float64))
    np.testing.assert_allclose(np.asarray(fresh.precision), want, rtol=1e-3, atol=1e-4)
    assert float(fresh.residual) == float(fresh.refreshed_residual) < 1e-4

    # The same error after an exact inverse that itself had a residual of 2e-3: a refresh
    # could not get far below that, so none is asked for (float32's floor near refresh_tol).
    floor_high = off._replace(refreshed_residual=jnp.float32(2e-3))
    kept, metrics = update(floor_high, batch_of(x), jax.random.PRNGKey(2), hp)
    assert 1e-3 < float(metrics["inverse_residual"]) < 4e-3
    assert not bool(bonus.needs_refresh(kept)) and float(metrics["refresh_count"]) == 0.0

    # The largest residual of any update is what describe reports.
    described = bonus.describe(stale)
    assert float(described["max_inverse_residual"]) == pytest.approx(float(stale.residual))
    assert int(bonus.describe(fresh)["refreshes"]) == 1


def test_vmapped_seeds_match_each_seed_alone():
    # reward, update and refresh run one seed after another under vmap on CPU
    # (rfig_exp.bonuses.rfig.linalg.sequential_vmap); the result must be the per-seed one.
    bonus, hp = make(inverse="woodbury", refresh_every=0)
    keys = jax.random.split(jax.random.PRNGKey(5), 2)
    states = jax.vmap(bonus.init, in_axes=(0, None, None))(keys, jnp.zeros((10,) + OBS), hp)
    x = jnp.asarray(np.random.default_rng(6).normal(size=(2, T, B) + OBS), jnp.float32)
    batches = jax.vmap(batch_of)(x)
    upd_keys = jax.random.split(jax.random.PRNGKey(7), 2)
    r, _ = jax.jit(jax.vmap(bonus.reward, in_axes=(0, 0, None)))(states, batches, hp)
    new, metrics = jax.jit(jax.vmap(bonus.update, in_axes=(0, 0, 0, None)))(states, batches, upd_keys, hp)
    fresh = jax.jit(jax.vmap(bonus.refresh, in_axes=(0, None)))(new, hp)
    for i in range(2):
        one = jax.tree.map(lambda a: a[i], states)
        r_i, _ = bonus.reward(one, batch_of(x[i]), hp)
        new_i, metrics_i = bonus.update(one, batch_of(x[i]), upd_keys[i], hp)
        np.testing.assert_allclose(np.asarray(r[i]), np.asarray(r_i), rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(np.asarray(new.precision[i]), np.asarray(new_i.precision), rtol=1e-5, atol=1e-7)
        # The residual is rounding noise (~4e-7 here), so both must be at rounding level rather than
        # equal to each other's digits (a sign error in the Woodbury update gives 1.8).
        vmapped, alone = float(metrics["inverse_residual"][i]), float(metrics_i["inverse_residual"])
        assert max(vmapped, alone) < FLOAT32_ROUNDING and abs(vmapped - alone) < FLOAT32_ROUNDING
        np.testing.assert_allclose(np.asarray(fresh.precision[i]), np.asarray(bonus.refresh(new_i, hp).precision),
                                   rtol=1e-5, atol=1e-7)
    assert not np.allclose(np.asarray(r[0]), np.asarray(r[1]))  # the seeds really differ


@pytest.mark.parametrize("inverse", ["exact", "newton_schulz"])
def test_exact_and_newton_schulz_ask_for_a_refresh_only_on_divergence(inverse):
    bonus, hp = make(inverse=inverse, refresh_tol=1e-9)
    state = bonus.init(jax.random.PRNGKey(0), jnp.zeros((10,) + OBS), hp)
    x = jnp.asarray(np.random.default_rng(4).normal(size=(T, B) + OBS), jnp.float32)
    state, metrics = bonus.update(state, batch_of(x), jax.random.PRNGKey(1), hp)
    assert float(metrics["inverse_residual"]) > 1e-9            # above the (tiny) refresh_tol
    assert not bool(bonus.needs_refresh(state))
    woodbury, hp_w = make(inverse="woodbury", refresh_tol=1e-9)  # the same residual asks there
    state_w = woodbury.init(jax.random.PRNGKey(0), jnp.zeros((10,) + OBS), hp_w)
    state_w, metrics_w = woodbury.update(state_w, batch_of(x), jax.random.PRNGKey(1), hp_w)
    assert float(metrics_w["inverse_residual"]) > 1e-9 and bool(woodbury.needs_refresh(state_w))


@pytest.mark.parametrize("key,value,fragment", [
    ("rho", 0.0, "bonus.rho"), ("rho", 1.5, "bonus.rho"), ("rho", 0.001, "bonus.rho"),
    ("reg", -1.0, "bonus.reg"), ("reg", 0.0, "bonus.reg"), ("inverse", "lu", "exact, newton_schulz, woodbury"),
    ("prior_scale", -1.0, "bonus.prior_scale"), ("prior_scale", "authors", "bonus.prior_scale"),
    ("initial_precision", "none", "inverse, zero"), ("lengthscale_method", "linear", "linear_valko"),
    ("lengthscale", -2.0, "bonus.lengthscale"), ("lengthscale", "big", "bonus.lengthscale"),
    ("num_features", 0, "bonus.num_features"), ("matmul_precision", "tf32", "TF32_TF32_F32_X3"),
    ("lengthscale_scale", 0.0, "bonus.lengthscale_scale"),
    ("lengthscale_scale", -1.0, "bonus.lengthscale_scale"), ("lengthscale_method", "guess", "participation_ratio"),
    ("refresh_every", -1, "bonus.refresh_every"), ("refresh_every", 2.5, "bonus.refresh_every"),
    ("refresh_tol", 0.0, "bonus.refresh_tol"), ("refresh_tol", 0.5, "bonus.refresh_tol"),
    ("refresh_tol", "often", "bonus.refresh_tol"), ("quad_blocks", 0, "bonus.quad_blocks"),
    ("quad_blocks", 3, "bonus.quad_blocks"), ("quad_blocks", 2.0, "bonus.quad_blocks"),
])
def test_impossible_values_fail_with_the_key(key, value, fragment):
    with pytest.raises(ConfigError, match=fragment.replace(".", r"\.")):
        make(**{key: value})


def _dot_precisions(fn, *args) -> list[str]:
    """The ``precision = [...]`` of every dot_general in the lowered program of ``fn(*args)``."""
    import re

    text = jax.jit(fn).lower(*args).as_text()
    dots = [line for line in text.splitlines() if "stablehlo.dot_general" in line]
    return [m.group(1) if (m := re.search(r"precision = \[([A-Z_]+), ", line)) else "unset" for line in dots]


@pytest.mark.parametrize("inverse", ["woodbury", "exact", "newton_schulz"])
def test_every_bonus_matmul_keeps_its_precision_under_any_process_default(inverse):
    """On a GPU the process default is TF32, under which the Woodbury-updated inverse is lost;
    every matmul of init, reward, update and refresh must carry the bonus's own precision,
    one seed or vmapped, whatever ``jax_default_matmul_precision`` the process sets."""
    # "default" leaves the process's TF32 showing through (lowered as HIGH): the check can fail.
    for precision, want in (("highest", "HIGHEST"), ("default", "HIGH")):
        bonus, hp = make(inverse=inverse, lengthscale="auto", matmul_precision=precision)
        warm = jnp.zeros((64,) + OBS)
        state = bonus.init(jax.random.PRNGKey(0), warm, hp)
        batch = batch_of(jnp.ones((T, B) + OBS))
        two = jax.tree.map(lambda x: jnp.stack([x, x]), state)
        with jax.default_matmul_precision("tensorfloat32"):  # what a GPU process gets by default
            found = (_dot_precisions(lambda k, w: bonus.init(k, w, hp), jax.random.PRNGKey(0), warm)
                     + _dot_precisions(lambda st: bonus.reward(st, batch, hp), state)
                     + _dot_precisions(lambda st: bonus.update(st, batch, jax.random.PRNGKey(1), hp), state)
                     + _dot_precisions(lambda st: bonus.refresh(st, hp), state)
                     + _dot_precisions(jax.vmap(lambda st: bonus.update(st, batch, jax.random.PRNGKey(1), hp)), two))
        assert len(found) >= 8
        assert set(found) == {want}, found
    assert jax.config.jax_default_matmul_precision is None  # nothing leaks out of the bonus


def test_woodbury_under_tf32_rounding_leaves_refresh_tol_and_float32_stays_inside():
    """Emulated TF32 matmuls (inputs rounded to 10 mantissa bits, float32 accumulation) against
    float32 ones, in the Woodbury update of Lambda over RFF batches of a MountainCar-like state
    stream: the residual ||Sigma Lambda v - v|| / ||v|| leaves refresh_tol within a few updates
    under TF32 and stays inside it in float32, which is what bonus.matmul_precision=highest keeps."""
    from tf32_emulation import round_tf32_np

    from rfig_exp.bonuses.rfig import precision

    rng = np.random.default_rng(0)
    d, k = 256, 64
    omega = rng.normal(size=(2, d)) / 0.5
    bias = rng.uniform(0, 2 * np.pi, d)
    probes = rng.normal(size=(d, 4)).astype(np.float32)

    def run(mm):
        lam = np.eye(d, dtype=np.float32)
        sigma = np.eye(d, dtype=np.float32)
        worst = 0.0
        for t in range(20):
            x = rng_states[t]
            phi = (np.sqrt(2.0 / d) * np.cos(x @ omega + bias)).astype(np.float32)
            sigma = sigma + mm(phi.T, phi)
            u = mm(phi, lam)
            s = np.eye(k, dtype=np.float32) + mm(u, phi.T)
            c = np.linalg.cholesky(s.astype(np.float64)).astype(np.float32)
            v = np.linalg.solve(c, u.astype(np.float64)).astype(np.float32)
            lam = lam - mm(v.T, v)
            r = mm(sigma, mm(lam, probes)) - probes
            worst = max(worst, float(np.linalg.norm(r) / np.linalg.norm(probes)))
        return worst

    rng_states = [rng.normal(size=(k, 2)) * 0.5 for _ in range(20)]
    f32 = run(lambda a, b: (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float32))
    tf32 = run(lambda a, b: (round_tf32_np(a) @ round_tf32_np(b)).astype(np.float32))
    tol = 1e-3  # conf/bonus/rfig.yaml refresh_tol
    assert f32 < tol < tf32, (f32, tf32)
    # The project's own Woodbury step agrees with this float32 emulation.
    lam = np.eye(d, dtype=np.float32)
    phi = (np.sqrt(2.0 / d) * np.cos(rng_states[0] @ omega + bias)).astype(np.float32)
    got = np.asarray(precision.woodbury_update(jnp.asarray(lam), jnp.asarray(phi)))
    np.testing.assert_allclose(got, np.linalg.inv(np.eye(d) + phi.T.astype(np.float64) @ phi), atol=1e-5)


def test_flat_states_refuses_states_that_are_flat_already():
    from rfig_exp.bonuses.base import flat_states

    assert flat_states(jnp.zeros((8, 16, 4, 5)), 2).shape == (128, 20)
    assert flat_states(jnp.zeros((4, 5)), 2).shape == (1, 20)   # one observation
    with pytest.raises(ValueError, match="fewer axes"):
        flat_states(jnp.zeros((25, 400)), 3)                   # MinAtar states flattened before
