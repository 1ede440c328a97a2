"""The bonuses' public API (docs/library.md): ``rfig_exp.bonuses.create`` makes the same bonus, with
the same hyperparameters, as the path this project's trainer takes (a composed Hydra config, the
run spec, ``make_bonus``): the same state from the same warm-up, the same intrinsic rewards for the
same states and state, the same updated state. Bad input gets the config checks' errors."""

from __future__ import annotations

import importlib.util
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rfig_exp.config import variants
from rfig_exp.bonuses import BonusBatch, BoxSpace, DiscreteSpace, bonus_names, create, declaring_modules, make_bonus
from rfig_exp.config.run_spec import build_run_spec
from rfig_exp.envs import make_env
from rfig_exp.config.errors import ConfigError
from rfig_exp.agents.ppo.normalization import normalize, rms_init, rms_update, scale_by_return_std

from conftest import ROOT, compose_config

# small enough to run eagerly in seconds; each is a setting of that bonus
SMALL = {"rfig": {"num_features": 64, "lengthscale_samples": 32}, "rnd": {"hidden": [32, 32]},
         "vime": {"hidden": [16]}, "hashexplo": {"hidden": [16]}, "none": {}}
T, B = 16, 4


def example_module():
    """examples/ppo_bonus.py as a module (it is a script, not part of the package)."""
    spec = importlib.util.spec_from_file_location("ppo_bonus_example", ROOT / "examples" / "ppo_bonus.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # flax's dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _equal_trees(a, b) -> None:
    leaves_a, leaves_b = jax.tree.leaves(a), jax.tree.leaves(b)
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(leaves_a, leaves_b):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def _mountaincar_states(key, shape):
    """Raw MountainCar observations (position, velocity) spread over the whole state space."""
    low, high = jnp.array([-1.2, -0.07]), jnp.array([0.6, 0.07])
    return jax.random.uniform(key, shape + (2,), minval=low, maxval=high)


def test_the_bonus_names_are_its_modules_and_its_yaml_files():
    # an installed wheel has no conf/: there the modules name the bonuses, here the files do
    assert declaring_modules() == variants.group_options("bonus") == bonus_names()


@pytest.mark.parametrize("name", sorted(SMALL))
def test_create_gives_the_trainers_bonus_state_and_rewards(name):
    assert sorted(SMALL) == bonus_names()
    settings = SMALL[name]
    overrides = [f"bonus.{k}={v}".replace(" ", "") for k, v in settings.items()]
    spec = build_run_spec(compose_config("env=mountaincar", f"bonus={name}", "agent.num_envs=4",
                                         "agent.num_steps=16", "agent.num_minibatches=2", *overrides))
    env = make_env(spec.env)
    ours, our_hp = make_bonus(spec.bonus, env.obs_shape, env.action_space)
    lib, lib_hp = create(name, (2,), DiscreteSpace(3), T * B, **settings)
    _equal_trees(our_hp, lib_hp)
    assert (lib.intrinsic, lib.refresh is None) == (ours.intrinsic, ours.refresh is None)

    k_warm, k_obs, k_next, k_act, k_init, k_up = jax.random.split(jax.random.PRNGKey(3), 6)
    warm = _mountaincar_states(k_warm, (64,))
    rms = rms_update(rms_init((2,)), warm)
    state = ours.init(k_init, normalize(rms, warm, 5.0), our_hp)
    _equal_trees(state, lib.init(k_init, normalize(rms, warm, 5.0), lib_hp))

    raw_obs, raw_next = _mountaincar_states(k_obs, (T, B)), _mountaincar_states(k_next, (T, B))
    rms = rms_update(rms, raw_obs.reshape(-1, 2))
    batch = BonusBatch(obs=normalize(rms, raw_obs, 5.0), actions=jax.random.randint(k_act, (T, B), 0, 3),
                       next_obs=normalize(rms, raw_next, 5.0), terminated=jnp.zeros((T, B), bool),
                       truncated=jnp.zeros((T, B), bool))
    for _ in range(2):  # reward on the state before the update, then the update, twice
        r_ours, _ = ours.reward(state, batch, our_hp)
        r_lib, _ = lib.reward(state, batch, lib_hp)
        assert r_ours.shape == (T, B)
        np.testing.assert_array_equal(np.asarray(r_ours), np.asarray(r_lib))
        new_state, _ = ours.update(state, batch, k_up, our_hp)
        _equal_trees(new_state, lib.update(state, batch, k_up, lib_hp)[0])
        state = new_state
    if name != "none":
        assert float(jnp.abs(r_ours).max()) > 0.0  # not a comparison of two zero arrays


def test_the_example_normalises_as_the_trainer_does():
    ex = example_module()
    k_a, k_b, k_r = jax.random.split(jax.random.PRNGKey(0), 3)
    a, b = _mountaincar_states(k_a, (300,)), _mountaincar_states(k_b, (200,))
    ours = rms_update(rms_update(rms_init((2,)), a), b)
    theirs = ex.rms_update(ex.rms_update((jnp.zeros(2), jnp.ones(2), 0.0), a), b)
    np.testing.assert_allclose(np.asarray(ours.mean), np.asarray(theirs[0]), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(ours.var), np.asarray(theirs[1]), rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(normalize(ours, a, 5.0)),
                                  np.asarray(ex.normalize((ours.mean, ours.var, ours.count), a, 5.0)))
    # the intrinsic reward's scale: the running std of its discounted return, as scale_by_return_std
    r = jax.random.uniform(k_r, (T, B))
    _, _, scaled = scale_by_return_std(jnp.zeros(B), rms_init(()), r, 0.99)
    _, returns = jax.lax.scan(lambda f, x: (0.99 * f + x,) * 2, jnp.zeros(B), r)
    theirs = ex.rms_update((jnp.zeros(()), jnp.ones(()), 0.0), returns.reshape(-1))
    np.testing.assert_allclose(np.asarray(scaled), np.asarray(r / jnp.sqrt(theirs[1] + 1e-8)), rtol=1e-5)


def test_create_keeps_every_default_it_is_not_given():
    _, hp = create("rfig", (2,), DiscreteSpace(3), 4096)
    assert np.isnan(float(hp.lengthscale)) and float(hp.reg) == 1.0   # lengthscale: auto
    _, hp = create("rfig", (2,), BoxSpace(dim=1), 4096, lengthscale=0.5, reg=2.0)
    assert (float(hp.lengthscale), float(hp.reg)) == (0.5, 2.0)


@pytest.mark.parametrize("call, message", [
    (lambda: create("ucb", (2,), DiscreteSpace(3), 4096), "bonus.name='ucb' is not a known bonus; valid names: "
                                                           "hashexplo, none, rfig, rnd, vime"),
    (lambda: create("rfig", (2,), DiscreteSpace(3), 4096, rho=2.0), "bonus.rho=2.0 must be in (0, 1]"),
    (lambda: create("rfig", (2,), DiscreteSpace(3), 8, rho=0.0625), "bonus.rho=0.0625 keeps floor(8 * rho) = 0"),
    (lambda: create("rnd", (2,), DiscreteSpace(3), 4096, activation="gelu"), "bonus.activation='gelu'"),
    (lambda: create("rfig", (2,), DiscreteSpace(3), 4096, num_featurs=64),
     "bonus.num_featurs is not a setting of bonus rfig; its settings: num_features, rho"),
    (lambda: create("rfig", (2,), DiscreteSpace(3), 4096, beta=0.3), "bonus.beta is the agent's setting"),
    (lambda: create("rfig", (2,), DiscreteSpace(3), 0), "batch_size=0 must be >= 1"),
    (lambda: create("rfig", (2.5,), DiscreteSpace(3), 4096), "obs_shape=2.5 must be an integer"),
])
def test_create_refuses_bad_input_naming_the_setting(call, message):
    with pytest.raises(ConfigError) as err:
        call()
    assert message in str(err.value)


def test_create_refuses_an_action_space_it_does_not_know():
    with pytest.raises(ConfigError, match="action_space=3 must be rfig_exp.bonuses.DiscreteSpace"):
        create("rfig", (2,), 3, 4096)
