"""The declared settings (the run's, the agent's, each bonus's): parsed and checked without JAX, typed,
complete, and the same defaults as the YAML files of conf/."""

import dataclasses
import math
import subprocess
import sys

import pytest
from conftest import CONF, compose_config
from omegaconf import OmegaConf

from rfig_exp.agents.ppo.config import AgentSettings, PPOHparams, PPOStructure, TrainSpec
from rfig_exp.agents.ppo.train import as_arrays
from rfig_exp.bonuses import bonus_names, declared_bonuses, parse_bonus
from rfig_exp.bonuses.rfig import RFIGSettings
from rfig_exp.bonuses.rnd import RNDSettings
from rfig_exp.config import folders, variants
from rfig_exp.config.errors import ConfigError
from rfig_exp.config.run_settings import RunSettings
from rfig_exp.config.settings import RUN, STATIC, TRACED, declared
from rfig_exp.spec import reference, registry
from rfig_exp.spec.run_spec import build_run_spec


def test_a_whole_config_is_checked_without_importing_jax():
    code = ("import sys, rfig_exp; from conftest import compose_config; "
            "from rfig_exp.spec.run_spec import build_run_spec; "
            "from rfig_exp.bonuses import bonus_names; "
            "[build_run_spec(compose_config(f'bonus={b}')) for b in bonus_names()]; "
            "print(sorted(m for m in sys.modules if m == 'jax' or m.startswith(('jax.', 'optax', 'flax'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="tests")
    assert out.stdout.strip() == "[]"


def test_every_bonus_has_settings_and_the_run_spec_carries_them():
    assert sorted(declared_bonuses()) == bonus_names() == folders.group_options("bonus")
    for name in bonus_names():
        spec = build_run_spec(compose_config(f"bonus={name}"))
        assert spec.bonus.name == name and spec.bonus.beta == 0.5
        leaves, _ = type(spec.bonus).pytree_fields()
        assert all(isinstance(getattr(spec.bonus, leaf), float) for leaf in leaves)
        assert spec.agent.batch_size == spec.train.batch_size == spec.bonus.batch_size


def test_conf_and_the_configuration_page_are_written_from_the_declarations():
    """conf/'s YAML files (each setting's default and doc), the run's settings in conf/config.yaml
    and docs/configuration.md are what the declarations write: a setting declared, changed or
    documented anew fails here until ``python -m rfig_exp.spec.reference`` rewrites them."""
    stale = [str(p.relative_to(reference.ROOT)) for p, text in reference.written_files().items()
             if not p.exists() or p.read_text() != text]
    assert not stale, f"out of date (python -m rfig_exp.spec.reference): {stale}"
    for path in CONF.rglob("*.yaml"):  # and every group file of conf/ is one of them (protocols set their values)
        assert path.parent.name in ("sweep", "launcher") or path.relative_to(CONF).parts[0] == "protocol" \
            or path in reference.written_files(), path


def _every_declaration():
    groups = registry.group_settings()
    classes = [RunSettings, *(cls for choices in groups.values() for cls, _ in choices.values())]
    for cls in classes:
        for name, d in declared(cls):
            yield f"{cls.__name__}.{name}", d
            if d.group is not None:
                yield from ((f"{d.group.__name__}.{n}", g) for n, g in declared(d.group))


def test_every_setting_is_documented_in_one_line_where_it_is_declared():
    undocumented = [name for name, d in _every_declaration() if not d.doc.strip() or "\n" in d.doc]
    assert not undocumented, f"settings without a one-line doc: {undocumented}"


def test_a_sweep_estimate_counts_every_static_setting_as_its_own_program():
    """A job of another static value compiles anew; a traced one does not."""
    from campaign.estimate_sweep import _program

    def key(*overrides):
        return _program(OmegaConf.to_container(compose_config(*overrides), resolve=False))

    base = key()
    statics = [f"bonus.{n}" for n, d in declared(RFIGSettings) if d.kind == STATIC]
    statics += [f"agent.{n}" for n, d in declared(PPOStructure)]
    changed = {"bonus.matmul_precision": "high", "bonus.inverse": "exact", "agent.activation": "relu",
               "bonus.lengthscale_method": "valko_fixed_point", "agent.anneal_lr": "false", "agent.hidden": "[32,32]"}
    for k, v in changed.items():
        assert k in statics and key(f"{k}={v}") != base, k
    assert key("bonus.reg=2.0") == base and key("agent.lr=1e-3") == base


@pytest.mark.parametrize("name", bonus_names())
def test_each_declared_default_passes_its_own_rule(name):
    cls = declared_bonuses()[name]
    settings = cls.parse(cls.defaults(), batch_size=4096)
    assert repr(settings) == repr(parse_bonus(compose_config(f"bonus={name}").bonus, 4096))  # repr: NaN == NaN
    assert AgentSettings.parse(AgentSettings.defaults()) == AgentSettings.parse(compose_config().agent)


def test_kinds_make_the_compiled_functions_arguments():
    """Traced settings are the hyperparameters' leaves (in declaration order), static ones the
    TrainSpec; nothing else."""
    import jax

    for name, cls in declared_bonuses().items():
        traced = [n for n, d in declared(cls) if d.kind == TRACED and n != "beta"]
        assert cls.pytree_fields()[0] == traced, name
        assert all(d.kind in (STATIC, TRACED) for _, d in declared(cls)), name
    agent = dict(declared(AgentSettings))
    assert [n for n, d in declared(PPOStructure)] == [n for n, d in agent.items() if d.kind == STATIC]
    assert [n for n, d in agent.items() if d.kind == RUN] == ["total_timesteps"]
    assert PPOHparams._fields == ("agent", "beta", "bonus")
    # the compiled function's arguments: the agent's traced settings, beta, the bonus's, in that order
    spec = build_run_spec(compose_config("bonus=rnd"))
    hp = as_arrays(spec.hparams(spec.bonus))
    paths = [jax.tree_util.keystr(path) for path, _ in jax.tree_util.tree_flatten_with_path(hp)[0]]
    assert paths == [*(f".agent.{n}" for n, d in agent.items() if d.kind == TRACED), ".beta",
                     *(f".bonus.{n}" for n in RNDSettings.pytree_fields()[0])]
    assert [f.name for f in dataclasses.fields(TrainSpec)] == [*dict(declared(PPOStructure)), "num_updates",
                                                               "updates_per_window"]


def test_what_names_a_variant_is_declared_with_the_run_settings():
    bookkeeping = {n for n, d in declared(RunSettings) if not d.hyperparameter}
    assert variants.not_hyperparameters() == bookkeeping
    assert "eval_frequency" not in bookkeeping and {"seed", "wandb", "checkpoint", "results_dir"} <= bookkeeping
    assert build_run_spec(compose_config("seed=3", "wandb.mode=disabled", "checkpoint.keep=5")).variant == "base"
    assert build_run_spec(compose_config("eval_frequency=49152")).variant == "eval_frequency=49152"


def test_an_unknown_bonus_name_lists_the_known_ones():
    valid = ", ".join(bonus_names())
    with pytest.raises(ConfigError, match=f"bonus.name='ucb' is not a known bonus; valid names: {valid} "):
        parse_bonus({"name": "ucb"}, 4096)


def test_rfig_checks_the_float32_values_it_computes_with():
    cfg = compose_config("bonus=rfig", "bonus.rho=0.1")
    settings = parse_bonus(cfg.bonus, 4096)
    assert isinstance(settings, RFIGSettings)
    assert settings.subsample == 409 and settings.reg == 1.0 and settings.auto_lengthscale
    assert math.isnan(settings.lengthscale)  # auto: a number, estimated when the bonus starts
    with pytest.raises(ConfigError, match=r"bonus.rho=0.10000000149011612 keeps floor\(4 \* rho\) = 0"):
        parse_bonus(cfg.bonus, 4)


@pytest.mark.parametrize("override,message", [
    # a bool is an int to Python: each integer setting refuses one by its own check
    ("bonus.num_features=true", "bonus.num_features=True must be a positive integer"),
    ("bonus.newton_schulz_iters=true", "bonus.newton_schulz_iters=True must be an integer >= 1"),
    ("bonus.refresh_every=true", "bonus.refresh_every=True must be an integer >= 0 (0: refresh only when the "
                                 "residual asks)"),
    ("bonus.quad_blocks=true", "bonus.quad_blocks=True must be a positive integer dividing bonus.num_features=1024"),
    ("agent.num_envs=true", "agent.num_envs=True must be an integer"),
    ("agent.anneal_lr=1", "agent.anneal_lr=1 must be true or false"),
    ("~bonus.reg", "bonus.reg is missing from the config"),
    ("bonus.refresh_tol=0.5", "bonus.refresh_tol=0.5 must be > 0 and <= bonus.divergence_tol=0.009999999776482582"),
    ("placement.gpus=1", "placement.gpus=1 must be null or a non-empty list of GPU ids (e.g. [0, 1])"),
])
def test_each_setting_refuses_a_bad_value_by_its_own_rule(override, message):
    with pytest.raises(ConfigError) as err:
        build_run_spec(compose_config("bonus=rfig", override))
    assert str(err.value) == message


def test_agent_hyperparameters_are_named_floats():
    agent = AgentSettings.parse(compose_config().agent)
    bonus = parse_bonus(compose_config("bonus=none").bonus, agent.batch_size)
    hp = agent.hparams(0.25, bonus)
    assert isinstance(hp, PPOHparams) and hp.beta == 0.25 and hp.agent.lr == 3e-4 and hp.agent.gamma == 0.99
    assert all(isinstance(getattr(hp.agent, leaf), float) for leaf in AgentSettings.pytree_fields()[0])
