"""The agent's side of a bonus (``rfig_exp.agents.intrinsic``), which both this project's trainer and a
PPO of one's own run: each step is the recipe of docs/library.md written out here from its parts
(observation statistics, normalisation, reward before update, the return-std scaling, the intrinsic
GAE and the weighting), bit for bit; RFIG's refresh under a vmap over seeds runs only when a seed asks
for it and gives each seed what it alone would get; and the settings are checked by their
declarations, naming the argument."""

from __future__ import annotations

import gymnax
import jax
import jax.extend.core
import jax.numpy as jnp
import numpy as np
import pytest

from rfig_exp.agents import intrinsic
from rfig_exp.agents.intrinsic import IntrinsicReward
from rfig_exp.agents.normalization import normalize, rms_init, rms_update, scale_by_return_std
from rfig_exp.agents.ppo import losses
from rfig_exp.bonuses import Bonus, BonusBatch, DiscreteSpace
from rfig_exp.config.errors import ConfigError

T, B = 16, 4
SMALL = {"rfig": {"num_features": 64, "lengthscale_samples": 32}, "rnd": {"hidden": [32, 32]},
         "none": {}}


def _equal_trees(a, b) -> None:
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def _states(key, shape):
    """Raw MountainCar observations (position, velocity) over the whole state space."""
    return jax.random.uniform(key, shape + (2,), minval=jnp.array([-1.2, -0.07]), maxval=jnp.array([0.6, 0.07]))


@pytest.mark.parametrize("name", sorted(SMALL))
def test_init_step_and_advantage_are_the_recipe(name):
    explore = IntrinsicReward.create(name, (2,), DiscreteSpace(3), B, T, beta=0.3, ext_coef=0.7, gamma_int=0.9,
                                     obs_clip=3.0, **SMALL[name])
    bonus, hp = explore.bonus, explore.hparams
    k_warm, k_init, k_obs, k_next, k_act, k_up, k_v = jax.random.split(jax.random.PRNGKey(7), 7)
    warm = _states(k_warm, (B * 9,))
    state = explore.init(k_init, warm)
    # the recipe, from its parts
    rms = rms_update(rms_init((2,)), warm)
    bonus_state = bonus.init(k_init, normalize(rms, warm, 3.0), hp.bonus)
    _equal_trees(state, intrinsic.IntrinsicState(rms, jnp.zeros(B), rms_init(()), bonus_state))

    ret_filter, ret_rms = jnp.zeros(B), rms_init(())
    for update in range(2):
        obs, next_obs = _states(jax.random.fold_in(k_obs, update), (T, B)), _states(k_next, (T, B))
        actions = jax.random.randint(k_act, (T, B), 0, 3)
        ends = jnp.zeros((T, B), bool).at[5, 1].set(True)
        state, r_int, metrics = explore.step(state, obs, actions, next_obs, ends, ~ends & False, k_up)

        rms = rms_update(rms, obs.reshape(-1, 2))
        batch = BonusBatch(normalize(rms, obs, 3.0), actions, normalize(rms, next_obs, 3.0), ends, ~ends & False)
        raw, _ = bonus.reward(bonus_state, batch, hp.bonus)  # the state before this batch's update
        bonus_state, _ = bonus.update(bonus_state, batch, k_up, hp.bonus)
        want = raw
        if bonus.intrinsic:
            ret_filter, ret_rms, want = scale_by_return_std(ret_filter, ret_rms, raw, 0.9)
        np.testing.assert_array_equal(np.asarray(r_int), np.asarray(want))
        _equal_trees(state, intrinsic.IntrinsicState(rms, ret_filter, ret_rms, bonus_state))
        assert float(metrics["intrinsic_reward"]) == float(raw.mean())
    if name != "none":
        assert float(jnp.abs(r_int).max()) > 0.0  # not a comparison of zeros

    adv_ext, v_int, v_last = jax.random.normal(k_v, (3, T, B))
    adv, adv_int = explore.advantage(adv_ext, r_int, v_int, v_last[0], 0.95)
    want_int = jnp.zeros((T, B))
    if bonus.intrinsic:
        want_int = losses.intrinsic_gae(r_int, v_int, v_last[0], hp.gamma_int, 0.95)
    np.testing.assert_array_equal(np.asarray(adv_int), np.asarray(want_int))
    np.testing.assert_allclose(np.asarray(adv), np.asarray(0.7 * adv_ext + 0.3 * want_int), rtol=1e-6)


def _counting_bonus(calls: list) -> Bonus:
    """A bonus whose state is ``[need, value]``: ``needs_refresh`` reads ``need``, ``refresh`` clears
    it, adds 100 to ``value`` and reports each run of it to ``calls``."""
    def refresh(state, hp):
        jax.debug.callback(lambda: calls.append(1))
        return jnp.stack([0.0, state[1] + 100.0])

    return Bonus("counting", init=None, reward=None, update=None, needs_refresh=lambda s: s[0] > 0, refresh=refresh)


@pytest.mark.parametrize("need", [[0, 0, 0], [0, 1, 0], [1, 1, 1]])
def test_the_refresh_under_vmap_runs_when_a_seed_asks_and_gives_each_seed_its_own(need):
    calls: list = []
    bonus = _counting_bonus(calls)
    states = jnp.stack([jnp.asarray(need, jnp.float32), jnp.arange(3.0)], axis=1)   # [S=3, 2]

    def per_seed_loop(state):  # a PureJaxRL train: the seed's own scan, the refresh inside it
        return jax.lax.scan(lambda s, _: (intrinsic.refresh_if_needed(bonus, s, ()), None), state, None, length=2)[0]

    out = jax.block_until_ready(jax.jit(jax.vmap(per_seed_loop))(states))
    one_by_one = [jax.jit(per_seed_loop)(s) for s in states]
    np.testing.assert_array_equal(np.asarray(out), np.asarray(jnp.stack(one_by_one)))
    np.testing.assert_array_equal(np.asarray(out[:, 1]), np.arange(3.0) + 100.0 * np.asarray(need))
    calls.clear()
    jax.block_until_ready(jax.jit(jax.vmap(per_seed_loop))(states))
    # the refresh ran (for every seed, the others' results discarded) only on the update where some
    # seed asked for it: never when none did, where a vmapped lax.cond would run it on each update
    assert (len(calls) > 0) == any(need)


def test_the_refresh_under_vmap_over_seeds_and_hyperparameters():
    bonus = Bonus("scaled", init=None, reward=None, update=None, needs_refresh=lambda s: s[0] > 0,
                  refresh=lambda s, hp: jnp.stack([0.0, s[1] * hp]))
    states, hps = jnp.array([[1.0, 2.0], [0.0, 3.0]]), jnp.array([10.0, 20.0])
    out = jax.jit(jax.vmap(lambda s, h: intrinsic.refresh_if_needed(bonus, s, h)))(states, hps)
    np.testing.assert_array_equal(np.asarray(out), [[0.0, 20.0], [0.0, 3.0]])


def test_rfig_refreshed_under_vmap_as_each_seed_alone():
    explore = IntrinsicReward.create("rfig", 2, DiscreteSpace(3), B, T, num_features=64, lengthscale_samples=32)
    keys = jax.random.split(jax.random.PRNGKey(1), 3)
    states = jax.vmap(lambda k: explore.bonus.init(k, _states(k, (40,)), explore.hparams.bonus))(keys)
    states = states._replace(stale=jnp.array([True, False, True]),
                             precision=states.precision * jnp.array([1.01, 1.02, 1.03])[:, None, None])
    out = jax.jit(jax.vmap(lambda s: intrinsic.refresh_if_needed(explore.bonus, s, explore.hparams.bonus)))(states)
    for seed in range(3):
        alone = jax.jit(lambda s: intrinsic.refresh_if_needed(explore.bonus, s, explore.hparams.bonus))(
            jax.tree.map(lambda x: x[seed], states))
        _equal_trees(jax.tree.map(lambda x: x[seed], out), alone)
    assert [int(r) for r in out.refreshes] == [1, 0, 1]


def _cond_outputs(fn, *args) -> list[int]:
    """The number of outputs of each ``cond`` in ``fn``'s traced program, nested calls included."""
    found: list[int] = []

    def walk(jaxpr):
        for eqn in jaxpr.eqns:
            if eqn.primitive.name == "cond":
                found.append(len(eqn.outvars))
            for p in eqn.params.values():
                for sub in (p if isinstance(p, tuple) else (p,)):
                    if isinstance(sub, jax.extend.core.ClosedJaxpr):
                        walk(sub.jaxpr)

    walk(jax.make_jaxpr(fn)(*args).jaxpr)
    return found


def test_the_refresh_cond_carries_only_what_the_refresh_changes():
    """RFIG's refresh passes Sigma, the features, the probes and its summaries through: the cond around it carries
    the rest only (carried through it, Sigma took LAPACK's layout and was transposed twice per update,
    7-17 ms for D = 1024), alone and under vmap; the refreshed state is the refresh's, leaf for leaf."""
    explore = IntrinsicReward.create("rfig", 2, DiscreteSpace(3), B, T, num_features=64, lengthscale_samples=32)
    hp = explore.hparams.bonus
    state = explore.bonus.init(jax.random.PRNGKey(0), _states(jax.random.PRNGKey(1), (40,)), hp)
    leaves = len(jax.tree.leaves(state))
    kept = [state.sigma, state.omega_unit, state.bias, state.lengthscale, state.effective_dim, state.probes,
            state.max_residual]
    alone = _cond_outputs(lambda s: intrinsic.refresh_if_needed(explore.bonus, s, hp), state)
    stacked = jax.tree.map(lambda x: jnp.stack([x, x]), state)
    seeds = _cond_outputs(jax.vmap(lambda s: intrinsic.refresh_if_needed(explore.bonus, s, hp)), stacked)
    assert alone == seeds == [leaves - len(kept)], (alone, seeds, leaves)
    stale = state._replace(stale=jnp.array(True), precision=state.precision * 1.01)
    _equal_trees(jax.jit(lambda s: intrinsic.refresh_if_needed(explore.bonus, s, hp))(stale),
                 jax.jit(lambda s: explore.bonus.refresh(s, hp))(stale))
    _equal_trees(jax.jit(lambda s: intrinsic.refresh_if_needed(explore.bonus, s, hp))(state), state)


def test_passed_through_follows_nested_calls_and_not_computed_outputs():
    def inner(a, b):
        return b, a + 1.0

    def outer(a, b, c):
        x, y = jax.jit(inner)(a, b)
        return x, y, c, a * 2.0

    program = jax.make_jaxpr(outer)(1.0, 2.0, 3.0).jaxpr
    assert intrinsic._passed_through(program) == [1, None, 2, None]


def test_the_warmup_takes_a_gymnax_envs_resets_and_true_next_states():
    env, params = gymnax.make("MountainCar-v0")
    explore = IntrinsicReward.create("none", env.observation_space(params), env.action_space(params), 4, 8,
                                     warmup_steps=250)
    states = jax.jit(lambda k: explore.warmup(k, env, params))(jax.random.PRNGKey(0))
    assert states.shape == (4 * 251, 2) and np.isfinite(np.asarray(states)).all()
    assert float(jnp.abs(states[:, 1]).max()) > 0.0  # the random policy moved the cars


@pytest.mark.parametrize("settings, message", [
    ({"beta": -1.0}, "beta=-1.0 must be >= 0.0"),
    ({"obs_clip": 0.0}, "obs_clip=0.0 must be > 0 (inf: no clipping)"),
    ({"gamma_int": 1.5}, "gamma_int=1.5 must be <= 1.0"),
    ({"warmup_steps": 0}, "warmup_steps=0 must be >= 1"),
    ({"num_featurs": 64}, "bonus.num_featurs is not a setting of bonus rfig"),
])
def test_create_refuses_bad_settings_naming_them(settings, message):
    with pytest.raises(ConfigError) as err:
        IntrinsicReward.create("rfig", (2,), DiscreteSpace(3), 4, 16, **settings)
    assert message in str(err.value)


def test_create_takes_a_gymnax_envs_spaces_and_numpy_integers():
    env, params = gymnax.make("Breakout-MinAtar")
    explore = IntrinsicReward.create("rnd", env.observation_space(params), env.action_space(params), np.int64(4),
                                     np.int32(16), hidden=[32, 32])
    assert explore.num_envs == 4 and explore.warmup_steps == 128
    assert explore.bonus.init(jax.random.PRNGKey(0), jnp.zeros((8, 10, 10, 4)), explore.hparams.bonus) is not None
