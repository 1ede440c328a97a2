"""The whole grid of configs: every env x every bonus composes, validates and builds (no training),
and a tiny run of each env completes (one per family in the default suite, the rest `slow`)."""

import json
from functools import lru_cache

import pytest
from conftest import compose_config, find_run

from rfig_exp.bonuses import bonus_names, make_bonus
from rfig_exp.config import folders
from rfig_exp.envs import env_names, make_env
from rfig_exp.run.experiment import run_experiment
from rfig_exp.spec.run_spec import build_run_spec

ENVS = folders.group_options("env")
BONUSES = folders.group_options("bonus")
# One env per family runs end to end in the default suite; `make test-all` runs them all.
DEFAULT_RUNS = {"cartpole", "minatar_breakout", "pendulum", "deepsea", "pointmaze_umaze"}
# Building a Brax env costs 10-20 s each; tests/test_brax.py builds and steps them in the default suite.
DEFAULT_BUILDS_BRAX: set[str] = set()


def test_config_files_and_registries_agree():
    assert set(BONUSES) == set(bonus_names())
    registered = set(env_names())
    for env in ENVS:
        cfg = compose_config(f"env={env}")
        assert cfg.env.name == env, f"conf/env/{env}.yaml must set name: {env}"
        assert env in registered, f"conf/env/{env}.yaml: no suite of rfig_exp/envs/suites/ declares {env}"
    assert registered <= set(ENVS), "every registered env needs its conf/env/<name>.yaml"


@lru_cache(maxsize=None)
def _env(name):
    return make_env(compose_config(f"env={name}").env)


@pytest.mark.parametrize("env", [pytest.param(e, marks=pytest.mark.slow if e.startswith("sparse_")
                                              and e not in DEFAULT_BUILDS_BRAX else ()) for e in ENVS])
def test_every_env_with_every_bonus_composes_and_builds(env):
    built = _env(env)
    assert built.obs_shape and built.max_episode_steps > 0
    for bonus in BONUSES:
        cfg = compose_config(f"env={env}", f"bonus={bonus}")
        spec = build_run_spec(cfg)
        assert spec.variant == "base", (env, bonus, spec.variant_overrides)
        made, hparams = make_bonus(spec.bonus, built.obs_shape, built.action_space)
        assert made.name == bonus


TINY_RUN = ["agent.num_envs=4", "agent.num_steps=16", "agent.num_minibatches=2", "agent.update_epochs=1",
            "agent.total_timesteps=128", "eval_frequency=128", "agent.obs_norm_init_steps=8", "wandb.mode=disabled",
            "bonus=none"]


@pytest.mark.extended
@pytest.mark.parametrize("env", [pytest.param(e, marks=() if e in DEFAULT_RUNS else pytest.mark.slow)
                                 for e in env_names()])
def test_a_tiny_run_of_every_env_completes(env, tmp_path):
    (summary,) = run_experiment(compose_config(f"env={env}", *TINY_RUN, f"results_dir={tmp_path}"))
    run = find_run(tmp_path, env, "none")
    assert json.loads((run / "summary.json").read_text())["status"] == "complete"
    assert summary.env_steps == 128
