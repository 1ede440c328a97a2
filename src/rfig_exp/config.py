"""A composed config, validated once into a frozen :class:`RunSpec`, before anything is compiled.

The Hydra config is never mutated, and once the spec is built nothing reads it again except to
save it (``RunSpec.resolved_config``): every setting the run needs is a typed field here, in
the agent's settings (``agents/ppo/config.py``), the bonus's (``bonuses/settings.py``) or the
env's (``envs/settings.py``).
Every check comes from :mod:`rfig_exp.validation` and names its config key. Nothing here
imports JAX. Each key's meaning is documented next to its default in ``conf/``.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from rfig_exp import variants
from rfig_exp.agents.ppo.config import AgentSettings, PPOHparams, TrainSpec
from rfig_exp.bonuses.settings import BonusSettings, parse_bonus
from rfig_exp.envs.settings import EnvSettings, parse_env
from rfig_exp.errors import ConfigError
from rfig_exp.validation import boolean, choice, integer, number, select

WANDB_MODES = ("online", "offline", "disabled")
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


@dataclass(frozen=True)
class CheckpointSettings:
    """``checkpoint.*``: when each seed's whole run state is saved (None: that cadence is off)."""

    every_windows: int | None = None
    every_seconds: float | None = None
    keep: int = 2  # checkpoints kept per seed


@dataclass(frozen=True)
class WandbSettings:
    """``wandb.*``: the optional mirror of the metrics (metrics.csv stays the record)."""

    mode: str = "disabled"  # online | offline | disabled
    project: str = "rfig-exp"
    entity: str | None = None
    group: str | None = None  # None: <experiment>/<env>/<bonus>/<variant>
    tags: tuple[str, ...] = ()
    init_timeout: float = 5.0


@dataclass(frozen=True)
class WatchSettings:
    """How a job watches itself: the stall watchdog, its retries, the wait for a folder's owner."""

    stall_timeout_s: float = 0.0  # 0: no watchdog
    stall_retries: int = 0
    owner_grace_s: float = 0.0


@dataclass(frozen=True)
class PlacementSettings:
    """``placement.*``: where a local sweep job runs (its own GPU or block of cores)."""

    mode: str = "auto"
    cores_per_job: int | None = None
    gpus: tuple | None = None  # None: every GPU of the machine
    jobs_per_gpu: int | None = None  # None: one job per GPU


@dataclass(frozen=True)
class RunSpec:
    """Everything a run needs, validated and derived once from the composed config."""

    experiment: str
    results_dir: str
    seeds: tuple[int, ...]
    eval_frequency: int           # env steps per window (one metrics.csv row)
    overwrite: bool
    train: TrainSpec              # static structure of the compiled loop
    agent: AgentSettings
    bonus: BonusSettings
    env: EnvSettings              # the env's suite settings (envs/settings.py)
    variant: str = variants.BASE
    variant_overrides: dict = field(default_factory=dict)
    checkpoint: CheckpointSettings = CheckpointSettings()
    wandb: WandbSettings = WandbSettings()
    watch: WatchSettings = WatchSettings()
    placement: PlacementSettings = PlacementSettings()
    compile_cache: str | None = None
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
    def num_windows(self) -> int:
        return self.train.num_updates // self.train.updates_per_window

    @property
    def total_env_steps(self) -> int:
        return self.train.num_updates * self.train.batch_size

    def hparams(self, bonus_hparams=()) -> PPOHparams:
        """The agent's hyperparameters with the bonus's (Python floats; ``train.as_arrays`` makes
        them the compiled function's float32 arguments)."""
        return self.agent.hparams(self.bonus.beta, bonus_hparams)


def choices(cfg) -> dict[str, str]:
    """The config-group choices a run was composed from (each YAML's ``name`` is its file name)."""
    return {g: str(select(cfg, f"{g}.name")) for g in variants.GROUPS}


def check_names(cfg) -> None:
    """Group choices that exist, and no key that nothing reads."""
    for group, label in (("env", "environment"), ("bonus", "bonus"), ("agent", "agent")):
        name = str(select(cfg, f"{group}.name"))
        options = variants.group_options(group)
        if name not in options:
            raise ConfigError(f"{group}={name} is not a known {label}; valid: {', '.join(options)}")
    unknown = variants.unknown_keys(cfg, choices(cfg))
    if unknown:
        raise ConfigError(f"unknown config key{'s' if len(unknown) > 1 else ''}: {'; '.join(unknown)} "
                          "(nothing reads it; every key is documented in conf/)")


def check_storage(cfg) -> None:
    """Where results go, checked before anything is created."""
    experiment = select(cfg, "experiment")
    if not isinstance(experiment, str) or not _SAFE_NAME.match(experiment):
        raise ConfigError(f"experiment={experiment!r} must be a plain folder name (letters, digits, . _ + -)")
    results_dir = Path(str(select(cfg, "results_dir")))
    for parent in (results_dir, *results_dir.parents):
        if parent.exists():
            if not parent.is_dir():
                raise ConfigError(f"results_dir={results_dir} is not a directory ({parent} is a file)")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise ConfigError(f"results_dir={results_dir} is not writable ({parent}: permission denied)")
            break
    boolean(select(cfg, "overwrite"), "overwrite")


def checkpoint_settings(cfg) -> CheckpointSettings:
    """``checkpoint.*``; a cadence of null or 0 is off."""
    windows, seconds = select(cfg, "checkpoint.every_windows"), select(cfg, "checkpoint.every_seconds")
    return CheckpointSettings(
        every_windows=None if windows in (None, 0) else integer(windows, "checkpoint.every_windows", 1),
        every_seconds=None if seconds in (None, 0) else number(seconds, "checkpoint.every_seconds", 0.0,
                                                                low_open=True),
        keep=integer(select(cfg, "checkpoint.keep"), "checkpoint.keep", 1))


def wandb_settings(cfg) -> WandbSettings:
    mode = choice(select(cfg, "wandb.mode"), "wandb.mode", WANDB_MODES)
    init_timeout = number(select(cfg, "wandb.init_timeout"), "wandb.init_timeout", 0.0, low_open=True)
    tags = select(cfg, "wandb.tags")
    if tags is not None and (isinstance(tags, str) or not all(isinstance(t, str) for t in tags)):
        raise ConfigError(f"wandb.tags={tags!r} must be a list of strings, e.g. wandb.tags=[ablation,v2]")
    entity, group = select(cfg, "wandb.entity"), select(cfg, "wandb.group")
    return WandbSettings(mode=mode, project=str(select(cfg, "wandb.project")),
                         entity=None if entity is None else str(entity), group=str(group) if group else None,
                         tags=tuple(tags or ()), init_timeout=init_timeout)


def placement_settings(cfg) -> PlacementSettings:
    from rfig_exp import placement

    gpus = select(cfg, "placement.gpus")
    gpus = list(gpus) if gpus is not None and not isinstance(gpus, str) else gpus
    mode, cores = str(select(cfg, "placement.mode")), select(cfg, "placement.cores_per_job")
    per_gpu = select(cfg, "placement.jobs_per_gpu")
    placement.validate(mode, None, cores, gpus, per_gpu)
    return PlacementSettings(mode, cores, None if gpus is None else tuple(gpus), per_gpu)  # validated: not a str


def watch_settings(cfg) -> WatchSettings:
    from rfig_exp import grouping

    try:  # read by the sweeper, checked here with the rest of the run's settings
        grouping.validate(select(cfg, "seeds_per_job"))
    except ValueError as err:
        raise ConfigError(str(err)) from None
    return WatchSettings(stall_timeout_s=number(select(cfg, "stall_timeout_s"), "stall_timeout_s", 0.0),
                         stall_retries=integer(select(cfg, "stall_retries"), "stall_retries", 0),
                         owner_grace_s=number(select(cfg, "owner_grace_s"), "owner_grace_s", 0.0))


def resolved_config(cfg) -> dict:
    """The composed config as saved with each run (``hydra`` left out)."""
    from omegaconf import OmegaConf

    resolved = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(resolved, dict), "a composed config is a mapping"
    resolved.pop("hydra", None)
    return resolved


def _windows(cfg, agent: AgentSettings) -> tuple[int, int, int]:
    """``(eval_frequency, updates_per_window, num_windows)``: the budget in whole windows."""
    batch, total = agent.batch_size, agent.total_timesteps
    eval_frequency = integer(select(cfg, "eval_frequency"), "eval_frequency", 1)
    if eval_frequency % batch:
        raise ConfigError(f"eval_frequency={eval_frequency} must be a multiple of the batch "
                          f"agent.num_envs * agent.num_steps = {batch}")
    if eval_frequency > total:
        raise ConfigError(f"eval_frequency={eval_frequency} exceeds agent.total_timesteps={total}")
    # at least the requested budget, in whole windows
    return eval_frequency, eval_frequency // batch, math.ceil(total / eval_frequency)


def build_run_spec(cfg) -> RunSpec:
    """Check the composed config and derive everything the run needs."""
    check_names(cfg)
    check_storage(cfg)
    wandb, placement = wandb_settings(cfg), placement_settings(cfg)
    checkpoint, watch = checkpoint_settings(cfg), watch_settings(cfg)
    agent = AgentSettings.parse(select(cfg, "agent"))
    eval_frequency, updates_per_window, num_windows = _windows(cfg, agent)
    bonus = parse_bonus(select(cfg, "bonus"), agent.batch_size)
    env = parse_env(select(cfg, "env"))
    seed = integer(select(cfg, "seed"), "seed", 0)
    num_seeds = integer(select(cfg, "num_seeds"), "num_seeds", 1)
    overrides = variants.variant_overrides(cfg, choices(cfg))
    resolved = resolved_config(cfg)
    return RunSpec(
        experiment=str(select(cfg, "experiment")),
        results_dir=str(select(cfg, "results_dir")), seeds=tuple(range(seed, seed + num_seeds)),
        eval_frequency=eval_frequency, overwrite=select(cfg, "overwrite"),
        train=agent.train_spec(num_windows * updates_per_window, updates_per_window), agent=agent, bonus=bonus,
        env=env, variant=variants.variant_name(overrides), variant_overrides=overrides,
        compile_cache=resolved.get("compile_cache") or None, resolved_config=resolved,
        checkpoint=checkpoint, wandb=wandb, watch=watch, placement=placement,
    )
