"""The library refuses what it cannot do, in one line naming the argument, as it is traced: float64
inputs (``JAX_ENABLE_X64``) are cast to the bonuses' float32 and run; a user bonus's outputs (its
reward's shape and dtype, the state its update and refresh return) are checked as its inputs are;
actions against the action space where a bonus reads them; the state, ``hp``, ``key`` and
``gae_lambda`` against what the methods take. The DQN example builds with its defaults, and the
wheel's build is documented and its ``build/`` ignored."""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import ROOT

from rfig_exp.agents import intrinsic
from rfig_exp.agents.intrinsic import IntrinsicReward
from rfig_exp.agents.replay import ReplayIntrinsic
from rfig_exp.bonuses import Bonus, BoxSpace, DiscreteSpace, settings_class
from rfig_exp.bonuses.base import action_features

T, B = 16, 4
KEY = jax.random.PRNGKey(0)


def _one_line_error(call, message: str, error=ValueError) -> str:
    with pytest.raises(error) as err:
        call()
    assert message in str(err.value), str(err.value)
    assert "\n" not in str(err.value)
    return str(err.value)


def _rollout(actions=None, shape=(T, B)):
    obs = jax.random.normal(jax.random.PRNGKey(7), shape + (2,))
    actions = jnp.zeros(shape, jnp.int32) if actions is None else actions
    return obs, actions, obs + 0.1, jnp.zeros(shape, bool), jnp.zeros(shape, bool)


@pytest.fixture(scope="module")
def rfig():
    explore = IntrinsicReward.create("rfig", (2,), DiscreteSpace(3), B, T, warmup_steps=2,
                                     **settings_class("rfig").small)
    return explore, explore.init(KEY, jax.random.normal(KEY, (B * 3, 2)))


# 1. float64 inputs ---------------------------------------------------------------------------------

X64 = """
    import sys
    import rfig_exp
    rfig_exp.set_cpu_flags()
    import gymnax, jax, jax.numpy as jnp
    from rfig_exp.agents.intrinsic import IntrinsicReward
    from rfig_exp.agents.replay import ReplayIntrinsic
    from rfig_exp.bonuses import settings_class

    env, params = gymnax.make("MountainCar-v0")
    spaces = env.observation_space(params), env.action_space(params)
    T, B = 8, 4
    key = jax.random.PRNGKey(0)
    warm = IntrinsicReward.create("none", *spaces, B, T, warmup_steps=15).warmup(key, env, params)  # float64, 64
    for name in sys.argv[1:]:
        if name == "replay":
            break
        explore = IntrinsicReward.create(name, *spaces, B, T, warmup_steps=15, **settings_class(name).small)
        state, step = explore.init(key, warm), jax.jit(explore.step)
        for i in range(2):
            k = jax.random.PRNGKey(i + 1)
            obs = warm[i * T * B:(i + 1) * T * B].reshape(T, B, 2)
            ends = jnp.zeros((T, B), bool)
            state, r_int, _ = step(state, obs, jax.random.randint(k, (T, B), 0, 3), obs + 1e-3, ends, ends, k)
        z = jnp.zeros((T, B), jnp.float64)
        adv, _ = explore.advantage(z, r_int, z, jnp.zeros(B, jnp.float64), 0.95)
        floats = sorted({str(x.dtype) for x in jax.tree.leaves(state) if jnp.issubdtype(x.dtype, jnp.floating)})
        print(name, warm.dtype, r_int.dtype, bool(jnp.isfinite(r_int).all() & jnp.isfinite(adv).all()), floats)
    if "replay" not in sys.argv:
        sys.exit()
    replay = ReplayIntrinsic.create("rfig", *spaces, B, warmup_steps=4, rho=0.25, **settings_class("rfig").small)
    state = replay.init(key, warm)
    obs, ends = warm[:B], jnp.zeros(B, bool)
    state, mixed, _ = jax.jit(replay.step)(state, obs, jnp.zeros(B, int), obs, ends, ends, jnp.ones(B), key)
    print("replay", mixed.dtype, bool(jnp.isfinite(mixed).all()))
"""


@pytest.mark.parametrize("names", [("rfig", "replay"), ("rnd", "vime", "hashexplo")])
def test_float64_observations_under_x64_run_every_bonus_in_float32(names):
    # gymnax emits float64 observations under JAX_ENABLE_X64: RFIG failed with `cond branches must have
    # equal output types`, RND and VIME with a `scan body` carry error; the bonus boundary casts to float32
    env = {**os.environ, "JAX_ENABLE_X64": "1"}
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(X64), *names], capture_output=True, text=True,
                         timeout=300, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    for name in names:
        want = "replay float64 True" if name == "replay" else f"{name} float64 float32 True ['float32']"
        assert want in lines, out.stdout


# 2. a user bonus's outputs -------------------------------------------------------------------------

def _users(reward=None, update=None, init=None, **kw) -> Bonus:
    """A user's bonus: a count state ``[2]``, reward ``|s'|`` summed, unless told otherwise."""
    return Bonus("mine", init=init or (lambda key, warm, hp: jnp.zeros(2)),
                 reward=reward or (lambda s, batch, hp: (jnp.abs(batch.next_obs).sum(-1), {})),
                 update=update or (lambda s, batch, key, hp: (s + 1.0, {})), **kw)


def _explore(bonus: Bonus, num_steps: int = T) -> IntrinsicReward:
    base = IntrinsicReward.create("none", (2,), DiscreteSpace(3), B, num_steps, warmup_steps=2)
    return dataclasses.replace(base, bonus=bonus)


@pytest.mark.parametrize("bonus, message, error", [
    (_users(reward=lambda s, batch, hp: (jnp.abs(batch.next_obs).sum(-1).reshape(-1), {})),
     "bonus mine: reward returned r_int of shape (64,), expected [T, B] = (16, 4), the batch's leading axes; "
     "reshape it to batch.terminated.shape", ValueError),
    (_users(reward=lambda s, batch, hp: (jnp.zeros(batch.terminated.shape, jnp.int32), {})),
     "bonus mine: reward returned r_int of dtype int32, expected floats (float32)", TypeError),
    (_users(reward=lambda s, batch, hp: jnp.zeros(batch.terminated.shape)),
     "bonus mine: reward returned an array of shape (16, 4) and dtype float32, expected a pair (r_int [T, B], "
     "metrics)", TypeError),
    (_users(reward=lambda s, batch, hp: (jnp.zeros(batch.terminated.shape), {"r": jnp.zeros(batch.terminated.shape)})),
     "bonus mine: reward returned metrics['r'] of shape (16, 4), expected a scalar", ValueError),
    (_users(update=lambda s, batch, key, hp: (jnp.concatenate([s, s]), {})),
     "bonus mine: update's state has shape (4,) and dtype float32, expected shape (2,) and dtype float32, as the "
     "state it was given", ValueError),
    (_users(update=lambda s, batch, key, hp: ({"counts": s}, {})),
     "bonus mine: update's state is a dict with keys ['counts'], expected an array of shape (2,)", TypeError),
    (_users(update=lambda s, batch, key, hp: (s.astype(jnp.int32), {})),
     "bonus mine: update's state has shape (2,) and dtype int32, expected shape (2,) and dtype float32", ValueError),
    (_users(update=lambda s, batch, key, hp: (s, [1.0])),
     "bonus mine: update returned metrics that are a list of 1 items, expected a dict of scalars", TypeError),
])
def test_a_users_bonus_outputs_are_checked_naming_the_bonus_and_method(bonus, message, error):
    explore = _explore(bonus)
    state = explore.init(KEY, jnp.ones((B * 3, 2)))
    # as traced: eval_shape computes nothing, the error comes from the static shapes alone
    _one_line_error(lambda: jax.eval_shape(lambda s: explore.step(s, *_rollout(), KEY), state), message, error)


def test_replay_refuses_a_flattened_reward_that_broadcast_before():
    # one env step: r_int [B] where [1, B] is expected ran the return filter over the envs as if they were
    # time steps (rewards off by up to 0.52) without an error
    bonus = _users(reward=lambda s, batch, hp: (jnp.abs(batch.next_obs).sum(-1).reshape(-1), {}))
    replay = ReplayIntrinsic(_explore(bonus, num_steps=1))
    state = replay.init(KEY, jnp.ones((B * 3, 2)))
    obs, ends = jnp.ones((B, 2)), jnp.zeros(B, bool)
    _one_line_error(lambda: replay.step(state, obs, jnp.zeros(B, jnp.int32), obs, ends, ends, jnp.zeros(B), KEY),
                    "bonus mine: reward returned r_int of shape (4,), expected [T, B] = (1, 4)")


def test_a_users_refresh_and_needs_refresh_are_checked():
    grows = _users(needs_refresh=lambda s: s[0] > 0, refresh=lambda s, hp: jnp.concatenate([s, s]))
    _one_line_error(lambda: intrinsic.refresh_if_needed(grows, jnp.ones(2), ()),
                    "bonus mine: refresh's state has shape (4,) and dtype float32, expected shape (2,)")
    _one_line_error(lambda: jax.vmap(lambda s: intrinsic.refresh_if_needed(grows, s, ()))(jnp.ones((3, 2))),
                    "bonus mine: refresh's state has shape (4,)")
    vector = _users(needs_refresh=lambda s: s > 0, refresh=lambda s, hp: s)
    _one_line_error(lambda: intrinsic.refresh_if_needed(vector, jnp.ones(2), ()),
                    "bonus mine: needs_refresh returned shape (2,) and dtype bool, expected a scalar bool")


def test_a_users_state_whose_shape_follows_the_warmup_states_is_no_mistake():
    # a bonus that keeps its warm-up states (an episodic memory): their number is the user's choice
    memory = _users(init=lambda key, warm, hp: (warm, jnp.zeros(2)),
                    update=lambda s, batch, key, hp: ((s[0], s[1] + 1.0), {}))
    explore = _explore(memory)
    state = explore.init(KEY, jnp.ones((7, 2)))
    _, r_int, _ = jax.jit(explore.step)(state, *_rollout(), KEY)
    assert r_int.shape == (T, B) and np.isfinite(np.asarray(r_int)).all()


# 3. actions, where a bonus reads them ------------------------------------------------------------------

@pytest.fixture(scope="module")
def vime():
    explore = IntrinsicReward.create("vime", (2,), DiscreteSpace(3), B, T, warmup_steps=2, hidden=[8])
    return explore, explore.init(KEY, jax.random.normal(KEY, (B * 3, 2)))


@pytest.mark.parametrize("bad, low, high", [(7, 0, 7), (-1, -1, 2)])
def test_vime_refuses_an_action_outside_the_space_when_it_is_concrete(vime, bad, low, high):
    explore, state = vime
    actions = jnp.zeros((T, B), jnp.int32).at[3, 1].set(bad).at[0, 0].set(2)
    _one_line_error(lambda: explore.step(state, *_rollout(actions), KEY),
                    f"bonus vime: actions hold values in [{low}, {high}], expected integers in [0, 3) for "
                    "DiscreteSpace(3)")


def test_vime_refuses_float_actions_as_it_is_traced(vime):
    explore, state = vime
    floats = jnp.zeros((T, B), jnp.float32)
    _one_line_error(lambda: jax.jit(explore.step)(state, *_rollout(floats), KEY),
                    "bonus vime: actions have dtype float32, expected integers in [0, 3) for DiscreteSpace(3)",
                    TypeError)
    # the RFIG authors' variant reads the raw index: checked alike
    index = IntrinsicReward.create("vime", (2,), DiscreteSpace(3), B, T, hidden=[8], action_input="index")
    index_state = index.init(KEY, jnp.ones((B * 3, 2)))
    _one_line_error(lambda: jax.jit(index.step)(index_state, *_rollout(floats), KEY),
                    "bonus vime: actions have dtype float32", TypeError)
    _one_line_error(lambda: index.step(index_state, *_rollout(jnp.full((T, B), 5, jnp.int32)), KEY),
                    "bonus vime: actions hold values in [5, 5]")
    # a traced action's value is unknown while it is traced: under jit it goes through (documented)
    traced = jax.jit(explore.step)(state, *_rollout(jnp.full((T, B), 7, jnp.int32)), KEY)[1]
    assert traced.shape == (T, B)


def test_action_features_checks_the_actions_against_the_space():
    _one_line_error(lambda: action_features(jnp.zeros(4), DiscreteSpace(3)),
                    "action_features: actions have dtype float32, expected integers in [0, 3)", TypeError)
    _one_line_error(lambda: action_features(jnp.zeros((4, 1), jnp.int32), BoxSpace(1)),
                    "action_features: actions have dtype int32, expected floats for BoxSpace(dim=1)", TypeError)
    _one_line_error(lambda: action_features(jnp.array([0, 3]), DiscreteSpace(3)),
                    "action_features: actions hold values in [0, 3]")
    np.testing.assert_array_equal(np.asarray(action_features(jnp.array([0, 2]), DiscreteSpace(3))),
                                  [[1, 0, 0], [0, 0, 1]])


# 4. the state, hp, key and gae_lambda --------------------------------------------------------------------

def test_a_zeroed_state_is_refused_where_it_is_concrete(rfig):
    explore, state = rfig
    zeroed = jax.tree.map(jnp.zeros_like, state)   # all-NaN rewards for RFIG (its length-scale 0)
    _one_line_error(lambda: explore.step(zeroed, *_rollout(), KEY),
                    "IntrinsicReward.step: state.obs_rms.count is 0: a state IntrinsicReward.init did not make")
    _one_line_error(lambda: explore.normalize(zeroed, jnp.ones(2)), "IntrinsicReward.normalize: state.obs_rms.count")


def test_gae_lambda_outside_zero_to_one_is_refused(rfig):
    explore, _ = rfig
    z = jnp.zeros((T, B))
    _one_line_error(lambda: explore.advantage(z, z, z, jnp.zeros(B), 1.5),
                    "IntrinsicReward.advantage: gae_lambda=1.5 must be in [0, 1]")
    _one_line_error(lambda: explore.advantage(z, z, z, jnp.zeros(B), jnp.array([0.9, 0.95])),
                    "IntrinsicReward.advantage: gae_lambda has shape (2,), expected a scalar")
    # a traced lambda (a vmapped sweep) passes on its shape
    out = jax.vmap(lambda lam: explore.advantage(z, z, z, jnp.zeros(B), lam)[1])(jnp.array([0.9, 0.95]))
    assert out.shape == (2, T, B)


def _other_states():
    rnd = IntrinsicReward.create("rnd", (2,), DiscreteSpace(3), B, T, **settings_class("rnd").small)
    eight = IntrinsicReward.create("rfig", (2,), DiscreteSpace(3), 8, T, **settings_class("rfig").small)
    wide = IntrinsicReward.create("rfig", (2,), DiscreteSpace(3), B, T, num_features=32, lengthscale_samples=32)
    return {"rnd": rnd.init(KEY, jnp.ones((12, 2))), "eight": eight.init(KEY, jnp.ones((12, 2))),
            "wide": wide.init(KEY, jnp.ones((12, 2)))}


@pytest.mark.parametrize("which, message, error", [
    (None, "IntrinsicReward.step: state is None, expected the IntrinsicState of IntrinsicReward.init", TypeError),
    ("tuple", "IntrinsicReward.step: state is tuple, expected the IntrinsicState", TypeError),
    ("rnd", "IntrinsicReward.step: state.bonus is an RNDState, expected an RFIGState, the state of bonus rfig",
     TypeError),
    ("eight", "IntrinsicReward.step: state.return_filter has shape (8,) and dtype float32, expected shape (4,) and "
              "dtype float32, as IntrinsicReward.init makes it for num_envs=4", ValueError),
    ("wide", "IntrinsicReward.step: state.bonus.omega_unit has shape (2, 32) and dtype float32, expected shape "
             "(2, 64)", ValueError),
])
def test_a_state_not_made_for_this_bonus_is_one_line_naming_it(rfig, which, message, error):
    explore, state = rfig
    given = None if which is None else tuple(state) if which == "tuple" else _other_states()[which]
    _one_line_error(lambda: explore.step(given, *_rollout(), KEY), message, error)
    if which is not None:  # as traced, under jit
        _one_line_error(lambda: jax.eval_shape(lambda s: explore.step(s, *_rollout(), KEY), given), message, error)


def test_a_wrong_hp_is_one_line_naming_it(rfig):
    explore, state = rfig
    rnd = IntrinsicReward.create("rnd", (2,), DiscreteSpace(3), B, T, **settings_class("rnd").small)
    wide = IntrinsicReward.create("rfig", (2,), DiscreteSpace(3), B, T, num_features=32, lengthscale_samples=32)
    step = lambda hp: explore.step(state, *_rollout(), KEY, hp)  # noqa: E731
    _one_line_error(lambda: step(explore.hparams.bonus), "IntrinsicReward.step: hp is an RFIGSettings, without "
                    "gamma_int, ext_coef, bonus; expected IntrinsicHparams", TypeError)
    _one_line_error(lambda: step(rnd.hparams), "IntrinsicReward.step: hp.bonus is an RNDSettings, expected the "
                    "RFIGSettings of bonus rfig", TypeError)
    _one_line_error(lambda: step(wide.hparams), "IntrinsicReward.step: hp.bonus.num_features=32 where bonus rfig was "
                    "made with 64")
    stacked = explore.hparams._replace(beta=jnp.array([0.1, 0.2]))
    _one_line_error(lambda: step(stacked), "IntrinsicReward.step: hp.beta has shape (2,), expected a scalar")
    # a sweep vmapped over the hparams is no mistake
    axes = explore.hparams._replace(obs_clip=None, gamma_int=None, beta=0, ext_coef=None, bonus=None)
    r_int = jax.vmap(lambda hp: step(hp)[1], in_axes=(axes,))(stacked)
    assert r_int.shape == (2, T, B)
    z = jnp.zeros((T, B))
    _one_line_error(lambda: explore.advantage(z, z, z, jnp.zeros(B), 0.95, rnd.hparams), "IntrinsicReward.advantage: "
                    "hp.bonus is an RNDSettings", TypeError)


@pytest.mark.parametrize("key, message", [
    (None, "IntrinsicReward.step: key is None, expected one PRNG key"),
    (jnp.zeros(3, jnp.uint32), "IntrinsicReward.step: key is an array of shape (3,) and dtype uint32, expected one "
                               "PRNG key"),
    (jax.random.split(KEY, 2), "key is an array of shape (2, 2) and dtype uint32"),
])
def test_a_wrong_key_is_one_line_naming_it(rfig, key, message):
    explore, state = rfig
    _one_line_error(lambda: explore.step(state, *_rollout(), key), message, TypeError)


def test_replay_names_itself_and_the_checks_cost_nothing_under_jit_and_vmap(rfig):
    replay = ReplayIntrinsic.create("rnd", (2,), DiscreteSpace(3), B, **settings_class("rnd").small)
    obs, ends = jnp.ones((B, 2)), jnp.zeros(B, bool)
    _one_line_error(lambda: replay.step(None, obs, jnp.zeros(B, jnp.int32), obs, ends, ends, jnp.zeros(B), KEY),
                    "ReplayIntrinsic.step: state is None", TypeError)
    _one_line_error(lambda: replay.step(rfig[1], obs, jnp.zeros(B, jnp.int32), obs, ends, ends, jnp.zeros(B), KEY),
                    "ReplayIntrinsic.step: state.bonus is an RFIGState, expected an RNDState", TypeError)
    explore, state = rfig
    states = jax.tree.map(lambda x: jnp.stack([x, x]), state)
    keys = jax.random.split(KEY, 2)
    out = jax.jit(jax.vmap(lambda s, k: explore.step(s, *_rollout(), k)[1]))(states, keys)
    assert out.shape == (2, T, B) and np.isfinite(np.asarray(out)).all()


# 5. the DQN example as shipped ----------------------------------------------------------------------------

def test_the_dqn_example_builds_and_traces_with_its_defaults():
    spec = importlib.util.spec_from_file_location("dqn_bonus_example", ROOT / "examples" / "dqn_bonus.py")
    example = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = example  # flax's dataclasses look their module up there
    spec.loader.exec_module(example)
    config = dict(example.CONFIG, total_timesteps=example.CONFIG["num_envs"] * 4)  # the defaults, a few iterations
    out = jax.eval_shape(example.make_train(config, "rfig", {}), KEY)
    assert out["r_int_scaled"].shape == (4,)


# 6. the wheel's build ----------------------------------------------------------------------------------------

def test_the_wheel_build_is_documented_and_leaves_nothing_tracked_behind():
    library = (ROOT / "docs" / "library.md").read_text()
    assert "python -m pip wheel --no-deps -w dist ." in library
    ignored = subprocess.run(["git", "check-ignore", "build/lib/rfig_exp/__init__.py", "dist/x.whl",
                              "src/rfig_exp.egg-info/PKG-INFO"], cwd=ROOT, capture_output=True, text=True)
    assert ignored.stdout.split() == ["build/lib/rfig_exp/__init__.py", "dist/x.whl", "src/rfig_exp.egg-info/PKG-INFO"]
