"""Every misuse of the library's entry points is one line naming the argument, the shape given and the
shape expected (``rfig_exp.agents.shapes``): a flattened ``[T*B, *obs]`` rollout, a wrong observation
width, ``T`` and ``B`` swapped, warm-up states of the wrong width, ``DiscreteSpace(0)``,
``obs_shape=()``; the checks run as the function is traced (static shapes), and the one shape that
may differ, ``next_obs`` beside a flattened ``obs`` (MinAtar through a flattening wrapper), still works."""

from __future__ import annotations

import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rfig_exp.agents.intrinsic import IntrinsicReward
from rfig_exp.bonuses import BoxSpace, DiscreteSpace, create
from rfig_exp.config.errors import ConfigError

T, B = 16, 4


@pytest.fixture(scope="module")
def explore():
    return IntrinsicReward.create("rnd", (2,), DiscreteSpace(3), B, T, hidden=[8, 8], warmup_steps=2)


@pytest.fixture(scope="module")
def x_state(explore):
    return explore.init(jax.random.PRNGKey(0), jnp.zeros((B * 3, 2)))


def _rollout(obs_shape=(T, B, 2), actions=(T, B), next_obs=None, ends=(T, B)):
    """A rollout's arrays of the given shapes (``next_obs``: ``obs``'s shape unless given)."""
    return (jnp.ones(obs_shape), jnp.zeros(actions, jnp.int32), jnp.ones(next_obs or obs_shape),
            jnp.zeros(ends, bool), jnp.zeros(ends, bool))


def _one_line_error(call, message: str, error=ValueError) -> None:
    with pytest.raises(error) as err:
        call()
    assert message in str(err.value), str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("rollout, message", [
    (_rollout((T * B, 2), (T * B,), ends=(T * B,)),
     "IntrinsicReward.step: obs has shape (64, 2), expected [num_steps, num_envs, *obs_shape] = (16, 4, 2); "
     "a flattened [T*B, ...] rollout? pass it with its [T, B] axes"),
    (_rollout((T, B, 3)),
     "IntrinsicReward.step: obs has shape (16, 4, 3), expected [num_steps, num_envs, *obs_shape] = (16, 4, 2); "
     "observations of shape (3,) where the bonus was made for (2,)"),
    (_rollout((B, T, 2), (B, T), ends=(B, T)),
     "IntrinsicReward.step: obs has shape (4, 16, 2), expected [num_steps, num_envs, *obs_shape] = (16, 4, 2); "
     "T and B swapped? T = num_steps = 16, B = num_envs = 4"),
    (_rollout(actions=(B, T)), "IntrinsicReward.step: actions has shape (4, 16), expected [num_steps, num_envs] = "
                               "(16, 4); T and B swapped?"),
    (_rollout(actions=(T, B, 1)), "actions has shape (16, 4, 1), expected [num_steps, num_envs] = (16, 4)"),
    (_rollout(ends=(T * B,)), "terminated has shape (64,), expected [num_steps, num_envs] = (16, 4)"),
    (_rollout(next_obs=(T, B, 3)), "IntrinsicReward.step: next_obs has shape (16, 4, 3), expected [num_steps, "
                                   "num_envs, ...] = (16, 4, ...) with 2 numbers per observation"),
    (_rollout(next_obs=(T * B, 2)), "next_obs has shape (64, 2), expected [num_steps, num_envs, ...]"),
])
def test_a_rollout_of_the_wrong_shape_is_one_line_naming_the_argument(explore, x_state, rollout, message):
    _one_line_error(lambda: explore.step(x_state, *rollout, jax.random.PRNGKey(1)), message)


def test_the_checks_run_as_the_step_is_traced_not_when_it_runs(explore, x_state):
    # jax.eval_shape traces without computing: the error comes from the static shapes alone
    obs, actions, next_obs, term, trunc = _rollout((T * B, 2), (T * B,), ends=(T * B,))
    _one_line_error(lambda: jax.eval_shape(lambda o: explore.step(x_state, o, actions, next_obs, term, trunc,
                                                                  jax.random.PRNGKey(1)), obs), "a flattened")
    # the right shapes trace and run under jit (and vmap over seeds: shapes are per seed inside)
    good = _rollout()
    states = jax.tree.map(lambda x: jnp.stack([x, x]), x_state)
    out = jax.jit(jax.vmap(lambda s: explore.step(s, *good, jax.random.PRNGKey(1))[1]))(states)
    assert out.shape == (2, T, B)


def test_warmup_states_of_the_wrong_width_are_refused_at_init(explore):
    _one_line_error(lambda: explore.init(jax.random.PRNGKey(0), jnp.zeros((36, 3))),
                    "IntrinsicReward.init: warmup_obs has shape (36, 3), expected [N, *obs_shape] with obs_shape (2,)")
    _one_line_error(lambda: explore.init(jax.random.PRNGKey(0), jnp.zeros((T, B, 2))),
                    "warmup_obs has shape (16, 4, 2), expected [N, *obs_shape]")


def test_normalize_and_advantage_name_what_does_not_fit(explore, x_state):
    _one_line_error(lambda: explore.normalize(x_state, jnp.zeros((T, B, 3))),
                    "IntrinsicReward.normalize: obs has shape (16, 4, 3), expected [..., *obs_shape] with "
                    "obs_shape (2,)")
    assert explore.normalize(x_state, jnp.zeros(2)).shape == (2,)  # one observation, no leading axis
    zeros = jnp.zeros((T, B))
    _one_line_error(lambda: explore.advantage(zeros, zeros, zeros, jnp.zeros((B, 2)), 0.95),
                    "IntrinsicReward.advantage: v_int_last has shape (4, 2), expected [num_envs] = (4,)")
    _one_line_error(lambda: explore.advantage(zeros.T, zeros, zeros, jnp.zeros(B), 0.95),
                    "adv_ext has shape (4, 16), expected [num_steps, num_envs] = (16, 4); T and B swapped?")


def test_a_flattened_obs_beside_the_unflattened_final_observation_works():
    # MinAtar through PureJaxRL's FlattenObservationWrapper: obs [T, B, 400], gymnax's
    # info["final_observation"] [T, B, 10, 10, 4]
    explore = IntrinsicReward.create("rnd", (400,), DiscreteSpace(3), B, T, hidden=[8, 8])
    x_state = explore.init(jax.random.PRNGKey(0), jnp.zeros((8, 400)))
    obs, actions, _, term, trunc = _rollout((T, B, 400))
    final = jax.random.uniform(jax.random.PRNGKey(2), (T, B, 10, 10, 4))
    _, r_int, _ = explore.step(x_state, obs, actions, final, term, trunc, jax.random.PRNGKey(1))
    assert r_int.shape == (T, B) and np.isfinite(np.asarray(r_int)).all()


def test_box_actions_take_their_dimension():
    explore = IntrinsicReward.create("rnd", (2,), BoxSpace(1, -1.0, 1.0), B, T, hidden=[8, 8])
    x_state = explore.init(jax.random.PRNGKey(0), jnp.zeros((8, 2)))
    obs, actions, next_obs, term, trunc = _rollout()
    _one_line_error(lambda: explore.step(x_state, obs, actions, next_obs, term, trunc, jax.random.PRNGKey(1)),
                    "actions has shape (16, 4), expected [num_steps, num_envs, dim] = (16, 4, 1)")
    explore.step(x_state, obs, jnp.zeros((T, B, 1)), next_obs, term, trunc, jax.random.PRNGKey(1))


@pytest.mark.parametrize("call, message", [
    (lambda: IntrinsicReward.create("rnd", (2,), DiscreteSpace(0), B, T), "action_space.num_actions=0 must be >= 1"),
    (lambda: create("rnd", (2,), DiscreteSpace(0), 64), "action_space.num_actions=0 must be >= 1"),
    (lambda: IntrinsicReward.create("rnd", (), DiscreteSpace(3), B, T),
     "obs_shape=() has no dimension; one observation of a single number is obs_shape=1"),
    (lambda: create("rnd", [], DiscreteSpace(3), 64), "obs_shape=() has no dimension"),
    (lambda: create("rnd", (2,), BoxSpace(0), 64), "action_space.dim=0 must be >= 1"),
    (lambda: create("rnd", (2,), BoxSpace(1, 1.0, -1.0), 64), "a Box with low=1.0 and high=-1.0; low must be below"),
])
def test_create_refuses_an_empty_space_naming_it(call, message):
    _one_line_error(call, message, ConfigError)


def test_beta_is_the_agents_alone_the_bonus_settings_hold_none():
    # create refuses beta, so the settings object it returns shows none rather than the YAML's 0.5
    _, hp = create("rnd", (2,), DiscreteSpace(3), 64, hidden=[8, 8])
    assert hp.beta is None
    explore = IntrinsicReward.create("rnd", (2,), DiscreteSpace(3), B, T, hidden=[8, 8], beta=0.3)
    assert float(explore.hparams.beta) == pytest.approx(0.3) and explore.hparams.bonus.beta is None


@pytest.mark.parametrize("first, warned", [("import jax", True), ("import rfig_exp; rfig_exp.set_cpu_flags()", False)])
def test_create_warns_when_jax_runs_on_a_cpu_without_the_flags(first, warned):
    code = (f"{first}\nimport jax, jax.numpy as jnp; jnp.zeros(1)\nfrom rfig_exp.bonuses import DiscreteSpace, create\n"
            "create('none', 2, DiscreteSpace(3), 4); create('none', 2, DiscreteSpace(3), 4)")
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "OPENBLAS_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stderr.count("RuntimeWarning: JAX runs on a CPU without --xla_cpu_multi_thread_eigen=false") == warned
