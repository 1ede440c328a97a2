"""The agent's and the bonuses' settings: parsed and checked without JAX, typed, complete."""

import subprocess
import sys

import pytest

from conftest import compose_config
from rfig_exp.agents.ppo.config import AgentSettings, PPOHparams
from rfig_exp.bonuses import bonus_names, parse_bonus
from rfig_exp.bonuses.settings import SETTINGS, RFIGSettings
from rfig_exp.config import build_run_spec
from rfig_exp.errors import ConfigError


def test_a_whole_config_is_checked_without_importing_jax():
    code = ("import sys, rfig_exp; from conftest import compose_config; from rfig_exp.config import build_run_spec; "
            "[build_run_spec(compose_config(f'bonus={b}')) for b in ('none', 'rfig', 'rnd', 'vime', 'hashexplo')]; "
            "print(sorted(m for m in sys.modules if m == 'jax' or m.startswith(('jax.', 'optax', 'flax'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="tests")
    assert out.stdout.strip() == "[]"


def test_every_bonus_has_settings_and_the_run_spec_carries_them():
    assert sorted(SETTINGS) == bonus_names()
    for name in bonus_names():
        spec = build_run_spec(compose_config(f"bonus={name}"))
        assert spec.bonus.name == name and spec.bonus.beta == 0.5
        assert all(isinstance(v, float) for v in spec.bonus.hparams)
        assert spec.agent.batch_size == spec.train.batch_size


def test_an_unknown_bonus_name_lists_the_known_ones():
    with pytest.raises(ConfigError, match="bonus.name='ucb' is not a known bonus; valid names: hashexplo, none, rfig"):
        parse_bonus({"name": "ucb"}, 4096)


def test_rfig_checks_the_float32_values_it_computes_with():
    cfg = compose_config("bonus=rfig", "bonus.rho=0.1")
    settings = parse_bonus(cfg.bonus, 4096)
    assert isinstance(settings, RFIGSettings)
    assert settings.subsample == 409 and settings.hparams.reg == 1.0
    with pytest.raises(ConfigError, match=r"bonus.rho=0.10000000149011612 keeps floor\(4 \* rho\) = 0"):
        parse_bonus(cfg.bonus, 4)


def test_agent_hyperparameters_are_named_floats():
    agent = AgentSettings.parse(compose_config().agent)
    hp = agent.hparams(0.25, bonus=())
    assert isinstance(hp, PPOHparams) and hp.beta == 0.25 and hp.lr == 3e-4 and hp.gamma == 0.99
    assert all(isinstance(v, float) for v in hp[:-1])
