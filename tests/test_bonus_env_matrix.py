"""Every bonus meets every observation kind: one real PPO update per (bonus, env) cell.

Why: ``env=deepsea bonus=rfig`` once failed at its first update (``TypeError: dot_general
requires contracting dimensions to have the same shape``) because RFIG's update flattened
its already-flat states a second time, which only a 2-D observation exposes, and no test
ran a bonus on one; the ``rfig``/``obs2d`` cell fails that way on the pre-fix RFIG.

Each cell builds the env and the bonus from the composed Hydra config (``conf/``) through
the project's factories, as ``run_experiment`` does, and runs ``trainer.init`` and one
``trainer.run_window`` of one update (rollout, bonus reward and update, refresh, GAE, SGD)
in one compiled function. The bonus's ``reward`` is wrapped only to copy its ``[T, B]``
output into the metrics (``reduce_window`` keeps its shape); the trainer and the bonus's
own functions are the ones a run compiles.

Each bonus runs as the small model its module declares (``small``). Default suite: every bonus on
DeepSea and RFIG on every kind, one seed; ``slow``: the other cells, and every cell with two
seeds, the vmapped path of multi-seed runs.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import compose_config, small_bonus

from rfig_exp.agents.ppo.train import as_arrays, make_trainer
from rfig_exp.bonuses import bonus_names, make_bonus
from rfig_exp.envs import BoxSpace, DiscreteSpace, make_env
from rfig_exp.spec.run_spec import build_run_spec

NUM_ENVS, NUM_STEPS = 4, 8
BATCH = NUM_ENVS * NUM_STEPS

# One update of a tiny agent: total_timesteps = eval_frequency = one batch.
AGENT = [
    f"agent.num_envs={NUM_ENVS}", f"agent.num_steps={NUM_STEPS}", "agent.num_minibatches=2",
    "agent.update_epochs=1", f"agent.total_timesteps={BATCH}", f"eval_frequency={BATCH}",
    "agent.obs_norm_init_steps=8", "agent.hidden=[16,16]", "wandb.mode=disabled",
]

# One env per observation kind: (overrides, obs_shape, discrete actions?).
ENVS = {
    "obs1d": (["env=mountaincar"], (2,), True),
    "obs2d": (["env=deepsea", "env.size=5"], (5, 5), True),
    "image3d": (["env=minatar_breakout"], (10, 10, 4), True),
    "continuous": (["env=pendulum"], (3,), False),
}

# Means over the episodes that finished in the window: NaN when none did (reduce_window).
PER_EPISODE = ("episode_return", "episode_length")

SPY = "_r_int_matrix_test"

# One compile per cell, with XLA's backend optimisations off for this compile only: the
# same program (what is tested is its tracing, shapes and numbers), compiled in about half
# the time; a one-update run gains nothing from optimised code.
FAST_COMPILE = {"xla_backend_optimization_level": 0, "xla_llvm_disable_expensive_passes": True}


def with_reward_spy(bonus, shapes: list):
    """The same bonus whose ``reward`` also reports its ``[T, B]`` output: its shape at trace time
    (appended to ``shapes``: static) and, as the scalar metrics a bonus may return, its minimum,
    maximum, mean and whether every value is finite."""
    def reward(state, batch, hp):
        r, metrics = bonus.reward(state, batch, hp)
        shapes.append(tuple(r.shape))
        spy = {"min": r.min(), "max": r.max(), "mean": r.mean(), "finite": jnp.isfinite(r).all().astype(r.dtype)}
        return r, {**metrics, **{f"{SPY}_{k}": v for k, v in spy.items()}}

    return dataclasses.replace(bonus, reward=reward)


def one_update(bonus_name: str, env_kind: str, num_seeds: int):
    """Build the cell's env, bonus and trainer as ``run_experiment`` does, then init its
    seeds and run their one-update window (as a run's first window: vmapped seeds)."""
    cfg = compose_config(*AGENT, f"num_seeds={num_seeds}", f"bonus={bonus_name}", *small_bonus(bonus_name),
                         *ENVS[env_kind][0])
    spec = build_run_spec(cfg)
    assert spec.train.num_updates == 1 and spec.train.updates_per_window == 1
    env = make_env(cfg.env)
    bonus, bonus_hp = make_bonus(spec.bonus, env.obs_shape, env.action_space)
    hp = as_arrays(spec.agent.hparams(spec.bonus.beta, bonus_hp))
    shapes: list = []
    trainer = make_trainer(spec.train, env, with_reward_spy(bonus, shapes))

    def init_and_window(keys, hp):
        states = jax.vmap(trainer.init, in_axes=(0, None))(keys, hp)
        after, metrics = trainer.run_window(states, hp)
        return states, after, metrics

    keys = jnp.stack([jax.random.PRNGKey(s) for s in spec.seeds])
    compiled = jax.jit(init_and_window).lower(keys, hp).compile(compiler_options=FAST_COMPILE)
    before, after, metrics = jax.device_get(compiled(keys, hp))
    return env, bonus, before, after, metrics, shapes


def inexact_leaves(tree):
    return [np.asarray(x) for x in jax.tree.leaves(tree) if jnp.issubdtype(np.asarray(x).dtype, jnp.inexact)]


def check_one_update(bonus_name: str, env_kind: str, num_seeds: int):
    env, bonus, before, after, metrics, shapes = one_update(bonus_name, env_kind, num_seeds)
    _, obs_shape, discrete = ENVS[env_kind]
    assert env.obs_shape == obs_shape  # the cell really has the observation kind it names
    assert isinstance(env.action_space, DiscreteSpace if discrete else BoxSpace)

    # The intrinsic reward as the bonus handed it to the agent: [T, B] per seed (its shape as traced),
    # summarised per seed by the spy's scalar metrics.
    assert shapes and set(shapes) == {(NUM_STEPS, NUM_ENVS)}, shapes
    spy = {k: np.asarray(metrics.pop(f"bonus/{SPY}_{k}")) for k in ("min", "max", "mean", "finite")}
    assert all(v.shape == (num_seeds,) for v in spy.values()), spy
    assert (spy["finite"] == 1.0).all(), spy
    if not bonus.intrinsic:  # declared identically zero (plain PPO)
        assert (spy["min"] == 0.0).all() and (spy["max"] == 0.0).all()
    else:
        # rfig 0.5 log(1 + phi^T Lambda phi), rnd a squared error, vime clipped to [0, clip],
        # hashexplo 1 / sqrt(count): non-negative, and positive somewhere for a fresh model.
        assert (spy["min"] >= 0.0).all() and (spy["max"] > 0.0).all(), spy
    np.testing.assert_allclose(metrics["intrinsic_reward"], spy["mean"], rtol=1e-5, atol=1e-7)

    # The bonus state after its update: finite, and (for a learning bonus) changed.
    assert all(np.isfinite(x).all() for x in inexact_leaves(after.bonus_state)), after.bonus_state
    if bonus.intrinsic:
        changed = [not np.array_equal(a, b) for a, b in
                   zip(jax.tree.leaves(before.bonus_state), jax.tree.leaves(after.bonus_state))]
        assert any(changed), "the bonus update left its state unchanged"

    # The whole agent took its one update, and every metric of the run is finite.
    assert np.asarray(after.update).tolist() == [1] * num_seeds
    assert all(np.isfinite(x).all() for x in inexact_leaves(after.params))
    assert not all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(before.params), jax.tree.leaves(after.params)))
    for name in ("policy_loss", "value_loss_ext", "value_loss_int", "entropy", "grad_norm",
                 "intrinsic_reward_normalized"):
        assert name in metrics
    finished = np.asarray(metrics["episodes_finished"])
    for name, value in metrics.items():
        value = np.asarray(value)
        assert value.shape == (num_seeds,), (name, value.shape)
        if name in PER_EPISODE or name.startswith("env/"):  # NaN exactly for a seed with no finished episode
            assert (np.isfinite(value) == (finished > 0)).all(), (name, value, finished)
        else:
            assert np.isfinite(value).all(), (name, value)


def _cells():
    """Every declared bonus x observation kind; the default suite keeps every bonus on DeepSea (the
    2-D observations that once broke RFIG) and RFIG on every kind, ``make test-all`` the rest."""
    return [pytest.param(b, e, marks=() if e == "obs2d" or b == "rfig" else pytest.mark.slow)
            for e in ENVS for b in bonus_names()]


@pytest.mark.extended
@pytest.mark.parametrize("bonus_name,env_kind", _cells())
def test_one_update_of_every_bonus_on_every_observation_kind(bonus_name, env_kind):
    check_one_update(bonus_name, env_kind, num_seeds=1)


@pytest.mark.slow  # the same 20 cells again: about as long as the default matrix
@pytest.mark.parametrize("env_kind", list(ENVS))
@pytest.mark.parametrize("bonus_name", bonus_names())
def test_one_update_with_two_vmapped_seeds(bonus_name, env_kind):
    """Two seeds take ``run_window``'s ``vmap(update)`` path (one seed runs unbatched)."""
    check_one_update(bonus_name, env_kind, num_seeds=2)
