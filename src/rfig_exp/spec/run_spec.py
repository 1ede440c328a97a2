"""A composed config, validated once into a frozen :class:`RunSpec`, before anything is compiled.

The Hydra config is never mutated, and once the spec is built nothing reads it again except to
save it (``RunSpec.resolved_config``): every setting the run needs is a typed field here, in the
run's settings (``rfig_exp.config.run_settings``, the top level of ``conf/config.yaml``), the
agent's (its package's ``config.py``, found by name: ``rfig_exp.agents``), the bonus's (its module,
``rfig_exp.bonuses``) or the env's (its suite, ``rfig_exp.envs``). Each is declared once
(``rfig_exp.config.settings``); every check comes from :mod:`rfig_exp.config.validation` and names its
config key, and the variant is named against the declared defaults (``rfig_exp.spec.defaults``).
Nothing here imports JAX.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from rfig_exp.agents import settings_class
from rfig_exp.agents.contract import AgentSettingsBase, LoopSpec
from rfig_exp.bonuses import BonusSettings, parse_bonus
from rfig_exp.config import folders, variants
from rfig_exp.config.errors import ConfigError, unknown_choice
from rfig_exp.config.run_settings import (
    CheckpointSettings,
    PlacementSettings,
    RunSettings,
    WandbSettings,
    WatchSettings,
)
from rfig_exp.config.settings import declared
from rfig_exp.config.validation import select
from rfig_exp.envs.settings import EnvSettings, parse_env
from rfig_exp.spec import defaults


@dataclass(frozen=True)
class RunSpec:
    """Everything a run needs, validated and derived once from the composed config."""

    experiment: str
    results_dir: str
    seeds: tuple[int, ...]
    eval_frequency: int           # env steps per window (one metrics.csv row)
    overwrite: bool
    loop: LoopSpec                # the loop's lengths, what the run loop reads
    train: Any                    # the agent's static spec, what its make_trainer takes (PPO's TrainSpec)
    agent: AgentSettingsBase      # the agent's settings (agent.name: which agent)
    bonus: BonusSettings
    env: EnvSettings              # the env's suite settings (envs/settings.py)
    checkpoint: CheckpointSettings
    wandb: WandbSettings
    watch: WatchSettings
    placement: PlacementSettings
    variant: str = variants.BASE
    variant_overrides: dict = field(default_factory=dict)
    compile_cache: str | None = None
    tensorboard: bool = True      # each run's metrics also as TensorBoard events in its folder
    resolved_config: dict = field(default_factory=dict)  # saved with each run, never read by it

    @property
    def env_name(self) -> str:
        return self.env.name

    @property
    def bonus_name(self) -> str:
        return self.bonus.name

    @property
    def requested_timesteps(self) -> int:
        """agent.total_timesteps as asked (the run rounds it up to whole windows)."""
        return self.agent.total_timesteps

    @property
    def agent_name(self) -> str:
        return self.agent.name

    @property
    def num_windows(self) -> int:
        return self.loop.num_windows

    @property
    def total_env_steps(self) -> int:
        return self.loop.total_env_steps

    def hparams(self, bonus_hparams: BonusSettings) -> Any:
        """The agent's hyperparameters with the bonus's (``bonus_hparams``: as ``make_bonus`` returns
        them; the agent's ``train.as_arrays`` makes them all the compiled function's float32 arguments)."""
        return self.agent.hparams(self.bonus.beta, bonus_hparams)


def choices(cfg) -> dict[str, str]:
    """The config-group choices a run was composed from (each YAML's ``name`` is its file name)."""
    return {g: str(select(cfg, f"{g}.name")) for g in folders.GROUPS}


def check_names(cfg, conf_dirs: folders.ConfDirs = folders.CONF_DIR) -> None:
    """Group choices that exist (in ``conf_dirs``: conf/ and the user's folders), and no key that
    nothing reads."""
    for kind in ("env", "bonus"):  # a user's module under a built-in name: said before its keys look unknown
        module = select(cfg, kind).get("module")
        if module is not None:
            folders.check_own_name(kind, select(cfg, f"{kind}.name"), module)
    for kind, label in (("env", "environment"), ("bonus", "bonus"), ("agent", "agent")):
        name = str(select(cfg, f"{kind}.name"))
        options = folders.group_options(kind, conf_dirs)
        if name not in options:
            raise ConfigError(unknown_choice(kind, name, label, options))
    unknown = defaults.unknown_keys(cfg, choices(cfg), conf_dirs)
    if unknown:
        raise ConfigError(f"unknown config key{'s' if len(unknown) > 1 else ''}: {'; '.join(unknown)} "
                          "(nothing reads it; every key is documented in conf/)")


def resolved_config(cfg) -> dict:
    """The composed config as saved with each run (``hydra`` left out)."""
    from omegaconf import OmegaConf

    resolved = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(resolved, dict), "a composed config is a mapping"
    resolved.pop("hydra", None)
    return resolved


def build_run_spec(cfg, searchpath: Sequence[str] = ()) -> RunSpec:
    """Check the composed config and derive everything the run needs; ``searchpath``: the
    ``hydra.searchpath`` it was composed with (the user's folders of envs and bonuses)."""
    conf_dirs = folders.config_dirs(searchpath)
    check_names(cfg, conf_dirs)
    run = RunSettings.parse(cfg)
    agent = settings_class(str(select(cfg, "agent.name"))).parse(select(cfg, "agent"))
    loop = agent.loop_spec(run.eval_frequency)
    bonus = parse_bonus(select(cfg, "bonus"), agent.bonus_batch_size, agent.obs_clip)
    env = parse_env(select(cfg, "env"))
    overrides = defaults.variant_overrides(cfg, choices(cfg), conf_dirs)
    watch = WatchSettings(**{name: getattr(run, name) for name, _ in declared(WatchSettings)})
    return RunSpec(
        experiment=run.experiment, results_dir=run.results_dir, seeds=tuple(range(run.seed, run.seed + run.num_seeds)),
        eval_frequency=run.eval_frequency, overwrite=run.overwrite,
        loop=loop, train=agent.train_spec(loop), agent=agent, bonus=bonus,
        env=env, variant=variants.variant_name(overrides), variant_overrides=overrides,
        compile_cache=run.compile_cache, tensorboard=run.tensorboard, resolved_config=resolved_config(cfg),
        checkpoint=run.checkpoint, wandb=run.wandb, watch=watch, placement=run.placement,
    )
