"""Per-env options in a sweep over envs (rfig_exp.launch.env_options): they apply to the envs that
have them, preflight and Hydra agree, and the commands of docs/running.md run as written."""

from __future__ import annotations

import json

import pytest
from hydra import compose, initialize_config_dir

from rfig_exp.launch import env_options
from rfig_exp.launch.preflight import CONF_DIR, PreflightError, expand_jobs, validate_jobs

try:
    from test_launch import TINY, launch
except ImportError:  # tests/ imported as a package
    from tests.test_launch import TINY, launch


def test_an_option_applies_to_the_envs_that_have_it_and_says_so():
    jobs = [["env=sparse_ant", "++env.backend=spring", "bonus=rfig"],
            ["env=mountaincar", "++env.backend=spring", "bonus=rfig"],
            ["++env.backend=spring", "bonus=rfig"]]  # the default env, mountaincar
    out, notes = env_options.apply_to_envs_that_have_them(jobs)
    assert out == [["env=sparse_ant", "env.backend=spring", "bonus=rfig"], ["env=mountaincar", "bonus=rfig"],
                   ["bonus=rfig"]]
    assert notes == ["[sweep] env.backend=spring applies to sparse_ant; left out for mountaincar "
                     "(no env.backend there)"]


def test_an_option_no_env_has_stays_so_that_validation_names_it():
    jobs = [["env=cartpole", "++env.sise=5"], ["env=acrobot", "++env.sise=5"]]
    out, notes = env_options.apply_to_envs_that_have_them(jobs)
    assert out == [["env=cartpole", "env.sise=5"], ["env=acrobot", "env.sise=5"]] and notes == []
    with pytest.raises(PreflightError, match="env.sise"):
        validate_jobs(expand_jobs(["env=cartpole,acrobot", "env.sise=5"], multirun=True))


def test_hydras_primary_compose_accepts_the_forced_form_with_the_default_env():
    """What failed before: Hydra composes the sweep with mountaincar, which has no backend."""
    forced = env_options.for_primary_compose(["env=sparse_ant,mountaincar", "env.backend=spring", "seed=0"])
    assert forced == ["env=sparse_ant,mountaincar", "++env.backend=spring", "seed=0"]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        with pytest.raises(Exception, match="backend"):
            compose("config", overrides=["env.backend=spring"])
        assert compose("config", overrides=["++env.backend=spring"]).env.name == "mountaincar"


def test_preflight_expands_a_preset_with_an_env_option(capsys):
    jobs = expand_jobs(["sweep=paper", "env.backend=spring"], multirun=True)
    brax = [j for j in jobs if any(o.startswith("env=sparse_") for o in j)]
    others = [j for j in jobs if j not in brax]
    assert brax and others
    assert all("env.backend=spring" in j for j in brax)
    assert not any(o.startswith(("env.", "++env.")) for j in others for o in j)
    assert "env.backend=spring applies to sparse_ant" in capsys.readouterr().out


@pytest.mark.slow
def test_a_sweep_over_envs_with_an_option_runs_every_job(tmp_path):
    out = launch("-m", "env=deepsea,cartpole", "env.size=5", "bonus=none", *TINY, f"results_dir={tmp_path}")
    assert out.returncode == 0, out.stderr[-2000:]
    assert "2 completed" in out.stdout + out.stderr
    runs = {s["env"]: s for s in map(lambda p: json.loads(p.read_text()), tmp_path.rglob("summary.json"))}
    assert set(runs) == {"cartpole", "deepsea"}
    assert runs["deepsea"]["variant_overrides"]["env.size"] == 5
    assert not any(k.startswith("env.") for k in runs["cartpole"]["variant_overrides"])
