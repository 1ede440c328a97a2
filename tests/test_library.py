"""The bonuses' public API (docs/library.md): ``rfig_exp.bonuses.create`` makes the same bonus, with
the same hyperparameters, as the path this project's trainer takes (a composed Hydra config, the
run spec, ``make_bonus``): the same state from the same warm-up, the same intrinsic rewards for the
same states and state, the same updated state. It takes the shapes and spaces users have (numpy's
integers, gymnax's spaces), a bonus of the user's own module or installed package by name, and gives
a bonus the agent's ``obs_clip``. Bad input gets the config checks' errors, naming the argument."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap

import gymnax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import ROOT, compose_config, small_bonus

from rfig_exp.agents.normalization import normalize, rms_init, rms_update
from rfig_exp.bonuses import (
    BonusBatch,
    BoxSpace,
    DiscreteSpace,
    bonus_names,
    create,
    declaring_modules,
    make_bonus,
    settings_class,
)
from rfig_exp.config import folders
from rfig_exp.config.errors import ConfigError
from rfig_exp.envs import make_env
from rfig_exp.spec.run_spec import build_run_spec

T, B = 16, 4


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
    assert declaring_modules() == folders.group_options("bonus") == bonus_names()


@pytest.mark.extended
@pytest.mark.parametrize("name", bonus_names())
def test_create_gives_the_trainers_bonus_state_and_rewards(name):
    settings = settings_class(name).small  # small enough to run eagerly in seconds
    spec = build_run_spec(compose_config("env=mountaincar", f"bonus={name}", "agent.num_envs=4",
                                         "agent.num_steps=16", "agent.num_minibatches=2", *small_bonus(name)))
    env = make_env(spec.env)
    ours, our_hp = make_bonus(spec.bonus, env.obs_shape, env.action_space)
    lib, lib_hp = create(name, (2,), DiscreteSpace(3), T * B, **settings)
    assert lib_hp.beta is None and our_hp.beta == 0.5  # the agent's weight: create holds none
    _equal_trees(dataclasses.replace(our_hp, beta=None), lib_hp)
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
    if ours.intrinsic:
        assert float(jnp.abs(r_ours).max()) > 0.0  # not a comparison of two zero arrays


def test_create_keeps_every_default_it_is_not_given():
    _, hp = create("rfig", (2,), DiscreteSpace(3), 4096)
    assert np.isnan(float(hp.lengthscale)) and float(hp.reg) == 1.0   # lengthscale: auto
    _, hp = create("rfig", (2,), BoxSpace(dim=1), 4096, lengthscale=0.5, reg=2.0)
    assert (float(hp.lengthscale), float(hp.reg)) == (0.5, 2.0)


@pytest.mark.parametrize("call, message", [
    (lambda: create("ucb", (2,), DiscreteSpace(3), 4096), "bonus.name='ucb' is not a known bonus; valid names: "
                                                           + ", ".join(bonus_names())),
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


@pytest.mark.parametrize("env_id", ["MountainCar-v0", "MountainCarContinuous-v0", "Breakout-MinAtar"])
def test_create_takes_a_gymnax_envs_own_spaces(env_id):
    env, params = gymnax.make(env_id)
    obs_space, act_space = env.observation_space(params), env.action_space(params)
    bonus, hp = create("rfig", obs_space, act_space, np.int64(64), num_features=np.int64(32), lengthscale_samples=32)
    n = int(np.prod(obs_space.shape))
    state = bonus.init(jax.random.PRNGKey(0), jnp.zeros((16,) + obs_space.shape), hp)
    assert state.omega_unit.shape == (n, 32)
    space = (DiscreteSpace(act_space.n) if hasattr(act_space, "n")
             else BoxSpace(act_space.shape[0], float(act_space.low), float(act_space.high)))
    _, ours = create("rfig", tuple(obs_space.shape), space, 64, num_features=32, lengthscale_samples=32)
    _equal_trees(hp, ours)  # the same as from the shape and the project's own space


@pytest.mark.parametrize("obs_shape", [2, np.int64(2), (2,), [np.int32(2)], (np.int64(2),)])
def test_create_takes_an_int_or_a_tuple_of_python_or_numpy_ints(obs_shape):
    bonus, hp = create("rfig", obs_shape, DiscreteSpace(np.int64(3)), np.int64(64), num_features=32,
                       lengthscale_samples=32)
    assert bonus.init(jax.random.PRNGKey(0), jnp.zeros((16, 2)), hp).omega_unit.shape == (2, 32)


class _Box:
    """A gymnax-like Box: shape, low, high."""

    def __init__(self, shape, low, high):
        self.shape, self.low, self.high = shape, low, high


@pytest.mark.parametrize("call, message", [
    (lambda: create("rfig", "two", DiscreteSpace(3), 64), "obs_shape='two' must be an integer"),
    (lambda: create("rfig", None, DiscreteSpace(3), 64), "obs_shape=None must be an integer, a tuple of integers "
                                                         "or a space with a shape"),
    (lambda: create("rfig", (2, 0), DiscreteSpace(3), 64), "obs_shape=0 must be >= 1"),
    (lambda: create("rfig", 2, DiscreteSpace(3), np.float32(64.5)), "batch_size=64.5 must be an integer"),
    (lambda: create("rfig", 2, _Box((2, 2), -1.0, 1.0), 64), "action_space: a Box of shape (2, 2)"),
    (lambda: create("rfig", 2, _Box((2,), np.array([-1.0, -2.0]), 1.0), 64),
     "action_space: a Box with a different low per dimension ([-2.0, -1.0])"),
])
def test_create_names_the_argument_it_cannot_take(call, message):
    with pytest.raises(ConfigError) as err:
        call()
    assert message in str(err.value) and "\n" not in str(err.value)


def test_the_trainer_gives_the_bonus_the_agents_obs_clip():
    spec = build_run_spec(compose_config("bonus=rnd", "agent.obs_clip=3"))
    assert spec.bonus.obs_clip == 3.0 == spec.agent.obs_clip


# A bonus of the user's own: a count over a grid of the normalised observations, whose bounds are the
# agent's obs_clip (the bonus reads it from its settings).
GRID_COUNT = """
    from dataclasses import dataclass
    from typing import ClassVar

    from rfig_exp.bonuses import BonusSettings
    from rfig_exp.config.settings import static
    from rfig_exp.config.validation import Count


    @dataclass(frozen=True)
    class GridCountSettings(BonusSettings):
        name: ClassVar[str] = "gridcount"
        label: ClassVar[str] = "grid count"
        colour: ClassVar[str] = "#117733"
        role: ClassVar[str] = "baseline"

        cells: int = static(8, Count(2))   # cells per dimension over [-obs_clip, obs_clip]


    def make(settings, obs_shape, action_space):
        import jax.numpy as jnp

        from rfig_exp.bonuses.base import Bonus

        def cell(obs):
            x = obs.reshape(-1, obs_shape[0])
            edge = jnp.floor((x + settings.obs_clip) / (2 * settings.obs_clip) * settings.cells)
            idx = jnp.clip(edge, 0, settings.cells - 1).astype(jnp.int32)
            return idx[:, 0] * settings.cells + idx[:, 1]

        def reward(counts, batch, hp):
            return (1.0 / jnp.sqrt(counts[cell(batch.next_obs)] + 1.0)).reshape(batch.terminated.shape), {}

        def update(counts, batch, key, hp):
            return counts.at[cell(batch.next_obs)].add(1.0), {}

        return Bonus(settings.name, lambda key, warm, hp: jnp.zeros(settings.cells ** 2), reward, update)
"""

# create it by its module, then by its name alone from an installed package's entry point, and look
# at which cell the state (1, 1) falls in for two obs_clip values
USE_GRID_COUNT = """
    import sys
    import jax.numpy as jnp
    from rfig_exp.bonuses import BonusBatch, DiscreteSpace, create, installed_bonuses

    print(installed_bonuses())
    for how in ({"module": "gridcount_bonus"}, {}):
        for clip in (2.0, 8.0):
            bonus, hp = create("gridcount", 2, DiscreteSpace(3), 4, obs_clip=clip, cells=4, **how)
            state = bonus.init(None, None, hp)
            one = jnp.ones((1, 1, 2))
            batch = BonusBatch(one, jnp.zeros((1, 1), int), one, jnp.zeros((1, 1), bool), jnp.zeros((1, 1), bool))
            state, _ = bonus.update(state, batch, None, hp)
            print(sorted(int(i) for i in jnp.flatnonzero(state)))
"""


def test_a_users_bonus_by_its_module_and_by_an_installed_entry_point(tmp_path):
    (tmp_path / "gridcount_bonus.py").write_text(textwrap.dedent(GRID_COUNT))
    dist = tmp_path / "gridcount_plugin-1.0.dist-info"  # what pip installs for a package that declares
    dist.mkdir()                                         # [project.entry-points."rfig_exp.bonuses"]
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: gridcount-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[rfig_exp.bonuses]\ngridcount = gridcount_bonus\n")
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(USE_GRID_COUNT)], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120, env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}/src"})
    assert out.returncode == 0, out.stderr[-2000:]
    # (1, 1) in cell (2, 2) of a 4 x 4 grid over [-2, 2]^2, in cell (2, 2) over [-8, 8]^2 too but of
    # another edge: (1 + 2) / 4 * 4 = 3 and (1 + 8) / 16 * 4 = 2.25
    assert out.stdout.splitlines() == ["{'gridcount': 'gridcount_bonus'}", "[15]", "[10]", "[15]", "[10]"]


def test_an_unknown_name_lists_the_installed_bonuses_and_the_module_argument():
    with pytest.raises(ConfigError) as err:
        create("gridcount", 2, DiscreteSpace(3), 4)
    assert f"valid names: {', '.join(bonus_names())}" in str(err.value)
    assert "module=<its module>" in str(err.value)
