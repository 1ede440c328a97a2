"""Sparse Brax locomotion: the Milestone reward against a plain-Python recomputation, the
episode bookkeeping (terminated vs truncated, final observation, auto-reset), options
validation, and a tiny end-to-end training run.

brax compiles slowly on CPU, so the default suite compiles one env (``FAST_ENV``) once, in a
module fixture that records a short rollout together with an independent recording of
the same steps by the bare brax env; the other envs and backends are in slow tests.
"""

import csv
import json
import math
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import ROOT, compose_config
from omegaconf import OmegaConf

from rfig_exp.config.errors import ConfigError
from rfig_exp.envs import declared_envs, make_env
from rfig_exp.envs.brax_suite import milestone_reward
from rfig_exp.envs.settings import parse_env
from rfig_exp.envs.suites.brax import BACKENDS, BraxSettings
from rfig_exp.run.experiment import run_experiment

SPARSE = sorted(n for n, env in declared_envs().items() if env.settings is BraxSettings)
FAST_ENV, FAST_BACKEND = "sparse_hopper", "spring"


def python_milestones(xs, x0, delta, alpha):
    """The paper's wrapper as a plain float64 loop over one episode's torso x positions."""
    last, rewards, distances, reached = 0.0, [], [], []
    for x in xs:
        d = float(x) - float(x0)
        m = math.floor(d / delta)
        if m > last:
            rewards.append(alpha * (m - last))
            last = m
        else:
            rewards.append(0.0)
        distances.append(d)
        reached.append(last)
    return rewards, distances, reached


# --------------------------------------------------------------------------- no brax needed

def test_milestone_reward_formula_backwards_and_multi_milestone_jumps():
    # Forward, exactly onto a milestone, backwards below the start, back over an already paid
    # milestone (no pay), a jump over three milestones at once, and wobbling around one.
    d = np.array([0.3, 0.99, 1.0, 0.5, -2.3, 1.7, 4.2, 3.9, 4.05, 7.25, 6.0, 9.5], np.float32)
    for delta, alpha in ((1.0, 1.0), (0.5, 2.5), (3.0, 0.1)):
        def body(last, dt):
            r, last = milestone_reward(dt, last, delta, alpha)
            return last, (r, last)

        _, (r, last) = jax.lax.scan(body, jnp.zeros((), jnp.float32), jnp.asarray(d))
        want_r, _, want_last = python_milestones(d.astype(np.float64), 0.0, delta, alpha)
        np.testing.assert_allclose(np.asarray(r), want_r, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(np.asarray(last), want_last)
    # delta = 1: 1 (at 1.0), nothing back at 1.7, 3 at once at 4.2, 3 at 7.25, 2 at 9.5
    want_r, _, _ = python_milestones(d, 0.0, 1.0, 1.0)
    assert want_r == [0, 0, 1, 0, 0, 0, 3, 0, 0, 3, 0, 2]


@pytest.mark.parametrize("key, value", [
    ("backend", "bullet"), ("episode_length", 0), ("episode_length", 2.5), ("episode_length", True),
    ("milestone_distance", 0.0), ("milestone_distance", -1.0), ("milestone_distance", "far"),
    ("reward_scale", float("nan")), ("reward_scale", -2), ("episode_lenght", 100),
])
def test_bad_options_raise_config_error_naming_the_key(key, value):
    with pytest.raises(ConfigError, match=rf"env\.{key}"):
        parse_env({"name": "sparse_ant", key: value})
    with pytest.raises(ConfigError, match=rf"env\.{key}"):
        make_env({"name": "sparse_ant", key: value})


def test_good_options_and_the_yaml_defaults():
    assert parse_env("sparse_ant") == BraxSettings("sparse_ant", "ant", "generalized", 1000, 1.0, 1.0)
    opts = parse_env({"name": "sparse_ant", "backend": "mjx", "episode_length": 5, "milestone_distance": 2,
                      "reward_scale": 0.5})
    assert opts == BraxSettings("sparse_ant", "ant", backend="mjx", episode_length=5, milestone_distance=2.0,
                                reward_scale=0.5)
    for name in SPARSE:
        node = OmegaConf.to_container(compose_config(f"env={name}").env)
        assert set(node) - {"name"} == set(BraxSettings.options())
        # the YAML files restate the defaults
        assert parse_env(node) == BraxSettings.of(name, declared_envs()[name].suite_id, {})
    assert BraxSettings.defaults()["backend"] in BACKENDS


def test_brax_is_imported_only_when_a_brax_env_is_made():
    code = (
        "import sys, rfig_exp\n"
        "from rfig_exp.envs import make_env\n"
        "from rfig_exp.config.errors import ConfigError\n"
        "make_env('cartpole')\n"
        "try:\n"
        "    make_env({'name': 'sparse_ant', 'backend': 'bullet'})\n"
        "except ConfigError:\n"
        "    pass\n"
        "assert 'brax' not in sys.modules, 'brax imported'\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr[-2000:]


# --------------------------------------------------------------------------- one compiled env

LENGTH, DELTA, ALPHA, B, T = 40, 0.002, 1.5, 8, 120


@pytest.fixture(scope="module")
def rollout():
    """A random-action rollout of ``FAST_ENV`` (``B`` envs x ``T`` steps, episodes of
    ``LENGTH`` steps, milestones every ``DELTA``), recorded step by step next to what the
    bare brax env does from the same state with the same action and reset key."""
    from brax import envs as brax_envs

    env = make_env({"name": FAST_ENV, "backend": FAST_BACKEND, "episode_length": LENGTH,
                    "milestone_distance": DELTA, "reward_scale": ALPHA})
    bare = brax_envs.get_environment(declared_envs()[FAST_ENV].suite_id, backend=FAST_BACKEND)

    def run(key):
        k_reset, k_steps = jax.random.split(key)
        obs0, state = jax.vmap(env.reset)(jax.random.split(k_reset, B))

        def body(state, k):
            k_act, k_env = jax.random.split(k)
            action = jax.random.uniform(k_act, (B, env.action_space.dim), minval=-1.0, maxval=1.0)
            env_keys = jax.random.split(k_env, B)
            out = jax.vmap(env.step)(env_keys, state, action)
            ref = jax.vmap(bare.step)(state.brax, action)   # the same step, without our wrapper
            ref_reset = jax.vmap(bare.reset)(env_keys)       # what a reset with this step's key gives
            rec = dict(obs=out.obs, reward=out.reward, terminated=out.terminated, truncated=out.truncated,
                       final_obs=out.final_obs, cell=out.cell, distance=out.episode_info["distance"],
                       milestones=out.episode_info["milestones"], t=out.state.t, x0=out.state.x0,
                       milestone=out.state.milestone,
                       ref_x=ref.pipeline_state.x.pos[:, 0, 0], ref_xz=ref.pipeline_state.x.pos[:, 0, ::2],
                       ref_obs=ref.obs, ref_done=ref.done, reset_obs=ref_reset.obs,
                       reset_x=ref_reset.pipeline_state.x.pos[:, 0, 0])
            return out.state, rec

        _, rec = jax.lax.scan(body, state, jax.random.split(k_steps, T))
        first_x = jax.vmap(bare.reset)(jax.random.split(k_reset, B)).pipeline_state.x.pos[:, 0, 0]
        return obs0, first_x, rec

    obs0, first_x, rec = jax.jit(run)(jax.random.PRNGKey(3))
    return env, np.asarray(obs0), np.asarray(first_x), {k: np.asarray(v) for k, v in rec.items()}


@pytest.mark.extended
def test_rollout_shapes_and_dtypes(rollout):
    env, obs0, _, rec = rollout
    assert env.obs_shape == (11,) and obs0.shape == (B, 11) and obs0.dtype == np.float32
    assert rec["obs"].dtype == np.float32 and rec["final_obs"].dtype == np.float32
    assert rec["reward"].dtype == np.float32 and rec["terminated"].dtype == bool
    assert rec["cell"].dtype == np.int32 and env.episode_info == ("distance", "milestones")
    assert np.isfinite(rec["obs"]).all()


def test_milestone_reward_matches_a_python_recomputation_from_recorded_torso_x(rollout):
    _, _, first_x, rec = rollout
    done = rec["terminated"] | rec["truncated"]
    checked = {"backwards": 0, "multi": 0, "episodes": 0}
    for b in range(B):
        start, x0 = 0, first_x[b]
        for t in range(T):
            if done[t, b] or t == T - 1:
                xs = rec["ref_x"][start:t + 1, b]
                want_r, want_d, want_m = python_milestones(xs.astype(np.float64), x0, DELTA, ALPHA)
                np.testing.assert_allclose(rec["reward"][start:t + 1, b], want_r, rtol=1e-5, atol=1e-6)
                np.testing.assert_allclose(rec["distance"][start:t + 1, b], want_d, rtol=1e-5, atol=1e-5)
                np.testing.assert_allclose(rec["milestones"][start:t + 1, b], want_m)
                checked["backwards"] += int((np.diff(xs) < 0).sum())
                checked["multi"] += sum(r > ALPHA for r in want_r)
                checked["episodes"] += 1
                start, x0 = t + 1, rec["reset_x"][t, b]
    # The recording really exercised the cases the formula distinguishes.
    assert checked["backwards"] > 0 and checked["multi"] > 0 and checked["episodes"] > B, checked


def test_terminated_is_brax_done_and_truncated_is_the_length_limit(rollout):
    _, _, _, rec = rollout
    assert not (rec["terminated"] & rec["truncated"]).any()
    np.testing.assert_array_equal(rec["terminated"], rec["ref_done"] > 0)
    for b in range(B):
        length = 0
        for t in range(T):
            length += 1
            assert rec["truncated"][t, b] == (length == LENGTH and not rec["terminated"][t, b]), (t, b)
            if rec["terminated"][t, b] or rec["truncated"][t, b]:
                length = 0
    assert rec["truncated"].sum() >= B and rec["terminated"].any()  # both kinds happened


def test_final_obs_is_the_state_reached_and_obs_is_a_fresh_reset(rollout):
    _, _, _, rec = rollout
    done = rec["terminated"] | rec["truncated"]
    np.testing.assert_allclose(rec["final_obs"], rec["ref_obs"], rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(rec["obs"][~done], rec["final_obs"][~done])
    np.testing.assert_allclose(rec["obs"][done], rec["reset_obs"][done], rtol=1e-6, atol=1e-6)
    assert np.abs(rec["obs"][done] - rec["final_obs"][done]).max() > 0.01
    # After a reset the episode bookkeeping starts again from the new pose.
    assert (rec["t"][done] == 0).all() and (rec["milestone"][done] == 0).all()
    np.testing.assert_allclose(rec["x0"][done], rec["reset_x"][done], rtol=1e-6, atol=1e-6)
    # Different reset keys: the new episodes do not all start from one pose (brax's AutoResetWrapper would).
    assert len({tuple(np.round(o, 5)) for o in rec["obs"][done]}) == int(done.sum())


def test_coverage_cell_is_the_torso_x_z_cell_of_the_state_reached(rollout):
    env, _, _, rec = rollout
    grid = env.coverage
    assert grid.axes == ("x", "z") and grid.num_cells == 50 * 20
    (xlo, xhi), (zlo, zhi) = grid.bounds
    xz = rec["ref_xz"].astype(np.float64)
    i = np.clip(np.floor((xz[..., 0] - xlo) / (xhi - xlo) * grid.shape[0]), 0, grid.shape[0] - 1)
    j = np.clip(np.floor((xz[..., 1] - zlo) / (zhi - zlo) * grid.shape[1]), 0, grid.shape[1] - 1)
    np.testing.assert_array_equal(rec["cell"], (i * grid.shape[1] + j).astype(np.int32))


# --------------------------------------------------------------------------- end to end

@pytest.mark.slow  # about a minute of compiling on a quiet 2-core machine (the env inside PPO's two scans)
def test_tiny_training_run_writes_distance_and_milestones(tiny_config, tmp_path):
    cfg = tiny_config(f"env={FAST_ENV}", "bonus=none", f"results_dir={tmp_path}", f"env.backend={FAST_BACKEND}",
                      "env.episode_length=20")
    (summary,) = run_experiment(cfg)
    (run,) = [p.parent for p in tmp_path.rglob("summary.json")]
    on_disk = json.loads((run / "summary.json").read_text())
    assert on_disk["status"] == "complete" and on_disk["env"] == FAST_ENV
    with open(run / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2
    for row in rows:
        assert float(row["episodes_finished"]) > 0  # 4 envs x 64 steps with 20-step episodes
        assert math.isfinite(float(row["env/distance"])) and float(row["env/milestones"]) >= 0
        assert 0 < float(row["coverage"]) <= 1
    visits = np.load(run / "visits.npy")
    assert visits.shape == (50, 20) and visits.sum() == 256


# --------------------------------------------------------------------------- slow: more compiles

def _random_rollout(env, key, num_envs, steps):
    """``num_envs`` x ``steps`` uniform random actions in the env's box: the EnvSteps ``[T, B]``."""
    def run(key):
        k_reset, k_steps = jax.random.split(key)
        _, state = jax.vmap(env.reset)(jax.random.split(k_reset, num_envs))

        def body(state, k):
            k_act, k_env = jax.random.split(k)
            action = jax.random.uniform(k_act, (num_envs, env.action_space.dim),
                                        minval=env.action_space.low, maxval=env.action_space.high)
            out = jax.vmap(env.step)(jax.random.split(k_env, num_envs), state, action)
            return out.state, out._replace(state=None)

        return jax.lax.scan(body, state, jax.random.split(k_steps, steps))[1]

    return jax.tree.map(np.asarray, jax.jit(run)(key))


@pytest.mark.slow
def test_termination_on_the_last_allowed_step_is_not_truncation():
    """An episode that becomes unhealthy exactly at the length limit is terminated only."""
    key, num_envs, steps = jax.random.PRNGKey(7), 8, 150
    long = _random_rollout(make_env({"name": FAST_ENV, "backend": FAST_BACKEND}), key, num_envs, steps)
    first = [int(np.argmax(long.terminated[:, b])) for b in range(num_envs) if long.terminated[:, b].any()]
    assert first, "no env terminated; pick another key"
    k = min(first)  # the first episode of that env ends (unhealthy) on step k + 1
    limited = _random_rollout(make_env({"name": FAST_ENV, "backend": FAST_BACKEND, "episode_length": k + 1}),
                              key, num_envs, k + 1)
    # Same keys and actions: identical up to the limit, then the limit decides between the two.
    np.testing.assert_allclose(limited.final_obs, long.final_obs[: k + 1], rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(limited.terminated[k], long.terminated[k])
    np.testing.assert_array_equal(limited.truncated[k], ~long.terminated[k])
    assert limited.terminated[k].any() and not (limited.terminated[k] & limited.truncated[k]).any()
    assert not limited.truncated[:k].any()


@pytest.mark.slow
@pytest.mark.parametrize("name", SPARSE)
def test_every_sparse_env_runs_on_its_default_backend(name):
    env = make_env({"name": name})
    out = _random_rollout(env, jax.random.PRNGKey(0), 4, 50)
    assert out.obs.shape == (50, 4) + env.obs_shape and out.obs.dtype == np.float32
    assert np.isfinite(out.obs).all() and np.isfinite(out.reward).all()
    assert (out.reward >= 0).all() and np.array_equal(out.reward, np.round(out.reward))  # whole milestones
    assert (out.episode_info["milestones"] >= 0).all()
    assert ((0 <= out.cell) & (out.cell < env.coverage.num_cells)).all()


@pytest.mark.slow
@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != BraxSettings.defaults()["backend"]])
def test_sparse_ant_runs_on_every_backend(backend):
    env = make_env({"name": "sparse_ant", "backend": backend, "episode_length": 20})
    out = _random_rollout(env, jax.random.PRNGKey(0), 4, 45)
    assert np.isfinite(out.obs).all() and np.isfinite(out.episode_info["distance"]).all()
    assert (out.terminated[:20] | out.truncated[:20]).any(0).all()  # every first episode ended by step 20
