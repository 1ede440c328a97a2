"""Evaluation episodes (agent.eval_episodes): the compiled loop against a plain Python one, training
untouched by them, their columns and step-0 value, and a resumed run's values."""

from __future__ import annotations

import csv
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import TINY, compose_config, find_run, trainer_of
from test_checkpoint import _save_then_die

from rfig_exp.agents.normalization import RunningMeanStd, normalize
from rfig_exp.agents.ppo import evaluation
from rfig_exp.agents.ppo.networks import ActorCritic, sampling_noise
from rfig_exp.envs import make_env
from rfig_exp.envs.base import BoxSpace
from rfig_exp.run import checkpoint
from rfig_exp.run.experiment import run_experiment

EVAL = (evaluation.RETURN, evaluation.LENGTH)


def python_episodes(network, env, params, rms, clip, key, n):
    """The module doc's key scheme, one episode at a time in a plain Python loop, each stopped at its
    first end (or the time limit): ``(returns, lengths)``."""
    t_max = env.max_episode_steps
    k_reset, k_noise, k_env = jax.random.split(key, 3)
    noise = sampling_noise(env.action_space, k_noise, (t_max, n))
    env_keys = jax.random.split(k_env, (t_max, n))
    reset_keys = jax.random.split(k_reset, n)
    policy = jax.jit(lambda obs: network.apply(params, normalize(rms, obs, clip))[0])
    step = jax.jit(env.step)
    box = isinstance(env.action_space, BoxSpace)
    returns, lengths = [], []
    for i in range(n):
        obs, state = env.reset(reset_keys[i])
        total, t = 0.0, 0
        while t < t_max:
            action = policy(obs).sample_with_noise(noise[t, i])
            if box:
                action = jnp.clip(action, env.action_space.low, env.action_space.high)
            out = step(env_keys[t, i], state, action)
            total += float(out.reward)
            t += 1
            if bool(out.terminated) or bool(out.truncated):
                break
            obs, state = out.obs, out.state
        returns.append(total)
        lengths.append(t)
    return np.array(returns), np.array(lengths)


@pytest.mark.parametrize("env_name, n, log_std", [("cartpole", 4, None), ("pendulum", 2, 1.5)])
def test_evaluate_matches_a_plain_python_loop(env_name, n, log_std):
    env = make_env(env_name)
    network = ActorCritic(env.action_space, len(env.obs_shape))
    params = network.init(jax.random.PRNGKey(3), jnp.zeros(env.obs_shape))
    if log_std is not None:  # a wide Gaussian: many samples fall outside the box and are clipped
        params = jax.tree_util.tree_map_with_path(
            lambda path, x: jnp.full_like(x, log_std) if "log_std" in jax.tree_util.keystr(path) else x, params)
    rng = np.random.default_rng(0)
    rms = RunningMeanStd(jnp.asarray(rng.normal(size=env.obs_shape) * 0.1, jnp.float32),
                         jnp.asarray(rng.uniform(0.5, 2.0, size=env.obs_shape), jnp.float32), jnp.float32(100.0))
    clip, key = jnp.float32(5.0), jax.random.PRNGKey(7)

    def env_action(a):
        space = env.action_space
        return jnp.clip(a, space.low, space.high) if isinstance(space, BoxSpace) else a

    run = jax.jit(lambda p, r, k: evaluation.evaluate(network, env, env_action, n, p, r, clip, k))
    returns, lengths = jax.device_get(run(params, rms, key))
    expected_returns, expected_lengths = python_episodes(network, env, params, rms, clip, key, n)
    assert lengths.dtype == np.int32 and returns.shape == lengths.shape == (n,)
    np.testing.assert_array_equal(lengths, expected_lengths)
    np.testing.assert_allclose(returns, expected_returns, rtol=1e-5)
    if env_name == "cartpole":  # episodes of their own lengths, each counted up to its first end only
        assert len(set(lengths.tolist())) > 1 and lengths.max() < env.max_episode_steps
        np.testing.assert_array_equal(returns, lengths)


def _trainer(tiny_config, *overrides):
    return trainer_of(tiny_config("env=cartpole", "bonus=none", *overrides))


@pytest.mark.extended
def test_the_window_evaluates_its_final_states_and_changes_none_of_them(tiny_config):
    trainer, hp = _trainer(tiny_config, "agent.eval_episodes=5")
    plain, _ = _trainer(tiny_config)
    assert plain.evaluate is None
    states = jax.jit(jax.vmap(trainer.init, in_axes=(0, None)))(jnp.stack([jax.random.PRNGKey(s) for s in (0, 1)]),
                                                                 hp)
    after, metrics = jax.jit(trainer.run_window)(states, hp)
    after_plain, metrics_plain = jax.jit(plain.run_window)(states, hp)
    for a, b in zip(jax.tree.leaves(after), jax.tree.leaves(after_plain)):
        np.testing.assert_array_equal(a, b)
    assert set(metrics) - set(metrics_plain) == set(EVAL)
    direct = jax.jit(trainer.evaluate)(after, hp)
    for k in EVAL:
        assert metrics[k].shape == (2,)
        np.testing.assert_allclose(metrics[k], direct[k], rtol=1e-6)
    # one seed alone (run_window's unbatched case) gives that seed's values
    one = jax.jit(trainer.evaluate)(jax.tree.map(lambda x: x[1:], after), hp)
    np.testing.assert_allclose(one[evaluation.RETURN], direct[evaluation.RETURN][1:], rtol=1e-6)


def read_rows(run):
    with open(run / "metrics.csv") as f:
        return list(csv.DictReader(f))


def training_columns(rows):
    return [{k: v for k, v in r.items() if k != "wall_time_s" and k not in EVAL} for r in rows]


@pytest.fixture(scope="module")
def with_and_without(tmp_path_factory):
    """Two seeds of CartPole trained without and with 3 evaluation episodes per window."""
    root = tmp_path_factory.mktemp("eval")
    runs = {}
    for n in (0, 3):
        cfg = compose_config(*TINY, "env=cartpole", "bonus=none", "num_seeds=2", f"agent.eval_episodes={n}",
                             f"results_dir={root / str(n)}")
        runs[n] = {s.seed: s for s in run_experiment(cfg)}
    return root, runs


@pytest.mark.extended
def test_training_metrics_are_identical_with_and_without_evaluation(with_and_without):
    root, runs = with_and_without
    for seed in (0, 1):
        plain, evaluated = (read_rows(find_run(root / str(n), "cartpole", "none", seed)) for n in (0, 3))
        assert len(plain) == len(evaluated) == 2
        assert training_columns(plain) == training_columns(evaluated)
        assert not set(EVAL) & set(plain[0])
        assert runs[0][seed].final_return == runs[3][seed].final_return
        assert runs[0][seed].eval_return_at_start is None


def test_eval_columns_and_the_step0_value_are_recorded(with_and_without, tiny_config):
    root, runs = with_and_without
    trainer, hp = _trainer(tiny_config, "agent.eval_episodes=3")
    initial = jax.jit(jax.vmap(trainer.init, in_axes=(0, None)))(jnp.stack([jax.random.PRNGKey(s) for s in (0, 1)]),
                                                                  hp)
    at_start = jax.device_get(jax.jit(trainer.evaluate)(initial, hp))
    for seed in (0, 1):
        run = find_run(root / "3", "cartpole", "none", seed)
        for row in read_rows(run):
            ret, length = float(row[evaluation.RETURN]), float(row[evaluation.LENGTH])
            assert np.isfinite(ret) and 1 <= length <= 500 and ret == length  # CartPole: +1 per step
        on_disk = json.loads((run / "summary.json").read_text())
        assert on_disk["eval_return_at_start"] == pytest.approx(float(at_start[evaluation.RETURN][seed]))
        assert on_disk["eval_length_at_start"] == pytest.approx(float(at_start[evaluation.LENGTH][seed]))
        assert runs[3][seed].eval_return_at_start == on_disk["eval_return_at_start"]
        plain = json.loads((find_run(root / "0", "cartpole", "none", seed) / "summary.json").read_text())
        assert "eval_return_at_start" not in plain


@pytest.mark.extended
def test_a_resumed_run_has_the_same_evaluations(tiny_config, tmp_path, monkeypatch):
    common = ("env=cartpole", "bonus=none", "agent.eval_episodes=4", "checkpoint.every_windows=1",
              "agent.total_timesteps=384", f"results_dir={tmp_path}")
    (reference,) = run_experiment(tiny_config(*common))
    run = find_run(tmp_path, "cartpole", "none")
    expected = read_rows(run)
    # Die right after window 2's checkpoint (as SIGKILL would), then relaunch: it resumes there.
    real_save = checkpoint.save
    monkeypatch.setattr(checkpoint, "save", _save_then_die(2))
    with pytest.raises(SystemExit):
        run_experiment(tiny_config(*common, "overwrite=true"))
    assert not (run / "summary.json").exists()
    monkeypatch.setattr(checkpoint, "save", real_save)
    (resumed,) = run_experiment(tiny_config(*common))
    assert resumed.resumed_from_windows == (2,)
    got = read_rows(run)
    assert [{k: v for k, v in r.items() if k != "wall_time_s"} for r in got] == \
        [{k: v for k, v in r.items() if k != "wall_time_s"} for r in expected]
    assert all(r[evaluation.RETURN] for r in got)
    assert reference.eval_return_at_start is not None
    assert resumed.eval_return_at_start == reference.eval_return_at_start
    assert resumed.eval_length_at_start == reference.eval_length_at_start
