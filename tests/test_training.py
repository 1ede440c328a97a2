"""End-to-end training in-process: learning, determinism, vmap equivalence, refresh."""

import csv
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import assert_same_to_float32_rounding, find_run

from rfig_exp.agents.ppo.train import as_arrays, make_trainer
from rfig_exp.bonuses import make_bonus
from rfig_exp.envs import make_env
from rfig_exp.run.experiment import run_experiment
from rfig_exp.spec.run_spec import build_run_spec


def read_metrics(path):
    with open(path / "metrics.csv") as f:
        return list(csv.DictReader(f))


@pytest.mark.extended
def test_ppo_learns_cartpole(tiny_config, tmp_path):
    cfg = tiny_config("env=cartpole", "bonus=none", f"results_dir={tmp_path}", "num_seeds=2",
                      "agent.num_envs=16", "agent.num_steps=64", "agent.num_minibatches=8", "agent.update_epochs=4",
                      "agent.total_timesteps=49152", "eval_frequency=8192", "agent.obs_norm_init_steps=32")
    summaries = run_experiment(cfg)
    assert [s.seed for s in summaries] == [0, 1]
    for s in summaries:
        # A random policy scores ~22 on CartPole; PPO passes 150 within 50k steps.
        assert s.final_return > 150, s.final_return
        rows = read_metrics(find_run(tmp_path, "cartpole", "none", s.seed))
        assert float(rows[0]["episode_return"]) < 60


def test_results_contract_and_skip(tiny_config, tmp_path):
    cfg = tiny_config("env=mountaincar", "bonus=rfig", f"results_dir={tmp_path}", "experiment=contract")
    (summary,) = run_experiment(cfg)
    run = find_run(tmp_path, "mountaincar", "rfig", experiment="contract")
    events = [p.name for p in run.glob("events.out.tfevents.*")]  # the same rows for TensorBoard (tensorboard=true)
    assert sorted(p.name for p in run.iterdir() if p.name not in events) == ["config.yaml", "metrics.csv",
                                                                              "summary.json", "visits.npy"]
    assert len(events) == 1
    assert (run.parent / "variant.yaml").exists()
    rows = read_metrics(run)
    assert [int(r["env_steps"]) for r in rows] == [128, 256]
    for column in ("episode_return", "episodes_finished", "intrinsic_reward", "policy_loss", "value_loss_ext",
                   "value_loss_int", "entropy", "bonus/inverse_residual"):
        assert column in rows[0]
    assert float(rows[0]["intrinsic_reward"]) > 0
    on_disk = json.loads((run / "summary.json").read_text())
    assert on_disk["status"] == "complete" and on_disk["env_steps"] == 256
    for key in ("final_return", "wall_time_s", "compile_time_s", "env_steps_per_second", "versions",
                "bonus_lengthscale", "bonus_effective_dim"):
        assert key in on_disk
    assert on_disk["versions"]["jax"]
    assert run_experiment(cfg) == []                      # complete: skipped
    cfg_over = tiny_config("env=mountaincar", "bonus=rfig", f"results_dir={tmp_path}", "experiment=contract",
                           "overwrite=true")
    assert len(run_experiment(cfg_over)) == 1


@pytest.mark.extended
def test_same_seed_twice_is_identical_and_vmapped_seed_equals_alone(tiny_config, tmp_path):
    common = ("env=acrobot", "bonus=rfig", "bonus.inverse=woodbury", "bonus.refresh_every=1")
    run_experiment(tiny_config(*common, f"results_dir={tmp_path / 'a'}", "seed=1"))
    run_experiment(tiny_config(*common, f"results_dir={tmp_path / 'b'}", "seed=1"))
    run_experiment(tiny_config(*common, f"results_dir={tmp_path / 'c'}", "seed=0", "num_seeds=3"))
    a, b, c = (read_metrics(find_run(tmp_path / d, "acrobot", "rfig", seed=1)) for d in "abc")
    drop = {"wall_time_s"}
    strip = lambda rows: [{k: v for k, v in r.items() if k not in drop} for r in rows]  # noqa: E731
    assert strip(a) == strip(b)
    assert_same_to_float32_rounding(strip(a), strip(c))
    other = strip(read_metrics(find_run(tmp_path / "c", "acrobot", "rfig", seed=0)))
    assert other != strip(a)                               # different seeds really differ


def test_divergence_is_recovered_inside_the_loop_for_that_seed_only(tiny_config):
    cfg = tiny_config("env=mountaincar", "bonus=rfig", "bonus.inverse=woodbury", "bonus.refresh_every=100")
    spec = build_run_spec(cfg)
    env = make_env(cfg.env)
    bonus, bonus_hp = make_bonus(spec.bonus, env.obs_shape, env.action_space)
    hp = as_arrays(spec.agent.hparams(spec.bonus.beta, bonus_hp))
    trainer = make_trainer(spec.train, env, bonus)
    keys = jnp.stack([jax.random.PRNGKey(0), jax.random.PRNGKey(1)])
    states = jax.jit(jax.vmap(trainer.init, in_axes=(0, None)))(keys, hp)
    # A wrong (but finite) precision for seed 1: the next rank-k Woodbury update inherits
    # the error, the residual check flags it, and the refresh restores the exact inverse.
    poisoned = states.bonus_state.precision.at[1].multiply(1.5)
    states = states._replace(bonus_state=states.bonus_state._replace(precision=poisoned))
    states, metrics = jax.jit(trainer.run_window)(states, hp)
    assert np.asarray(states.bonus_state.recoveries).tolist() == [0, 1]
    assert np.isfinite(np.asarray(states.bonus_state.precision)).all()
    assert np.asarray(metrics["bonus/divergence_count"]).tolist() == [0.0, 1.0]
    assert np.isfinite(np.asarray(metrics["policy_loss"])).all()


def test_plain_ppo_has_no_intrinsic_stream(tiny_config, tmp_path):
    # bonus=none is plain PPO: beta and the intrinsic value head must not touch the update
    # (an all-zero intrinsic stream would still add beta * A_int noise from an untrained head).
    runs = {beta: tmp_path / f"beta{beta}" for beta in ("0.0", "2.0")}
    for beta, results in runs.items():
        run_experiment(tiny_config("env=cartpole", "bonus=none", f"bonus.beta={beta}", f"results_dir={results}"))
    a, b = (read_metrics(find_run(r, "cartpole", "none")) for r in runs.values())
    drop = {"wall_time_s"}
    assert [{k: v for k, v in r.items() if k not in drop} for r in a] == \
           [{k: v for k, v in r.items() if k not in drop} for r in b]
    assert all(float(r["intrinsic_reward"]) == 0.0 for r in a)


def test_reward_free_exploration_runs(tiny_config, tmp_path):
    (summary,) = run_experiment(tiny_config("env=mountaincar", "bonus=rfig", "agent.ext_coef=0",
                                            f"results_dir={tmp_path}"))
    assert summary.status == "complete"


def test_wandb_offline_mirrors_the_run_next_to_its_results(tiny_config, tmp_path, monkeypatch):
    monkeypatch.delenv("WANDB_MODE", raising=False)
    (summary,) = run_experiment(tiny_config("env=cartpole", "bonus=none", "wandb.mode=offline",
                                            f"results_dir={tmp_path}"))
    run = find_run(tmp_path, "cartpole", "none")
    offline = list((run / "wandb").glob("offline-run-*"))
    assert len(offline) == 1 and list(offline[0].glob("*.wandb")), "wandb wrote no offline run"
    assert summary.status == "complete"
