"""Validate a composed config into a frozen run spec, before anything is compiled.

The Hydra config is never mutated; every derived value (loop lengths, the seed list,
hyperparameter arrays) lives in :class:`RunSpec`. Each error names the config key.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rfig_exp import variants
from rfig_exp.agents.ppo.config import AgentSettings, TrainSpec
from rfig_exp.bonuses.settings import BonusSettings, parse_bonus
from rfig_exp.errors import ConfigError

WANDB_MODES = ("online", "offline", "disabled")
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


@dataclass(frozen=True)
class RunSpec:
    env_name: str
    bonus_name: str
    experiment: str
    results_dir: str
    seeds: tuple[int, ...]
    eval_frequency: int
    overwrite: bool
    train: TrainSpec
    variant: str = variants.BASE
    variant_overrides: dict = field(default_factory=dict)
    requested_timesteps: int = 0
    agent: AgentSettings | None = None   # [compiled_path] the checked agent and bonus settings
    bonus: BonusSettings | None = None

    @property
    def num_windows(self) -> int:
        return self.train.num_updates // self.train.updates_per_window

    @property
    def total_env_steps(self) -> int:
        return self.train.num_updates * self.train.batch_size


def _int(cfg, key: str, minimum: int) -> int:
    value = _select(cfg, key)
    if isinstance(value, float) and math.isfinite(value) and value == int(value):
        value = int(value)  # 1e6 on the command line is a float to Hydra, and an integer to us
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{key}={value!r} must be an integer")
    if value < minimum:
        raise ConfigError(f"{key}={value} must be >= {minimum}")
    return value


def _float(cfg, key: str, low: float | None = None, high: float | None = None,
           low_open: bool = False) -> float:
    value = _select(cfg, key)
    if isinstance(value, bool):
        raise ConfigError(f"{key}={value!r} must be a number")
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{key}={value!r} must be a number") from None
    if not math.isfinite(value):
        raise ConfigError(f"{key}={value} must be finite")
    if low is not None and (value <= low if low_open else value < low):
        raise ConfigError(f"{key}={value} must be {'>' if low_open else '>='} {low}")
    if high is not None and value > high:
        raise ConfigError(f"{key}={value} must be <= {high}")
    return value


def _select(cfg, key: str) -> Any:
    node = cfg
    for part in key.split("."):
        if part not in node:
            raise ConfigError(f"{key} is missing from the config")
        node = node[part]
    return node


def choices(cfg) -> dict[str, str]:
    """The config-group choices a run was composed from (each YAML's ``name`` is its file name)."""
    return {g: str(_select(cfg, f"{g}.name")) for g in variants.GROUPS}


def check_names(cfg) -> None:
    """Group choices that exist, and no key that nothing reads."""
    for group, label in (("env", "environment"), ("bonus", "bonus"), ("agent", "agent")):
        name = str(_select(cfg, f"{group}.name"))
        options = variants.group_options(group)
        if name not in options:
            raise ConfigError(f"{group}={name} is not a known {label}; valid: {', '.join(options)}")
    unknown = variants.unknown_keys(cfg, choices(cfg))
    if unknown:
        raise ConfigError(f"unknown config key{'s' if len(unknown) > 1 else ''}: {'; '.join(unknown)} "
                          "(nothing reads it; every key is documented in conf/)")


def check_storage(cfg) -> None:
    """Where results go and how they are mirrored, checked before anything is created."""
    experiment = _select(cfg, "experiment")
    if not isinstance(experiment, str) or not _SAFE_NAME.match(experiment):
        raise ConfigError(f"experiment={experiment!r} must be a plain folder name (letters, digits, . _ + -)")
    results_dir = Path(str(_select(cfg, "results_dir")))
    for parent in (results_dir, *results_dir.parents):
        if parent.exists():
            if not parent.is_dir():
                raise ConfigError(f"results_dir={results_dir} is not a directory ({parent} is a file)")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise ConfigError(f"results_dir={results_dir} is not writable ({parent}: permission denied)")
            break
    mode = _select(cfg, "wandb.mode")
    if mode not in WANDB_MODES:
        raise ConfigError(f"wandb.mode={mode!r} is not known; valid: {', '.join(WANDB_MODES)}")
    if not isinstance(_select(cfg, "overwrite"), bool):
        raise ConfigError(f"overwrite={_select(cfg, 'overwrite')!r} must be true or false")
    _float(cfg, "wandb.init_timeout", 0.0, low_open=True)
    tags = _select(cfg, "wandb.tags")
    if tags is not None and (isinstance(tags, str) or not all(isinstance(t, str) for t in tags)):
        raise ConfigError(f"wandb.tags={tags!r} must be a list of strings, e.g. wandb.tags=[ablation,v2]")
    from rfig_exp import placement

    gpus = _select(cfg, "placement.gpus")
    placement.validate(str(_select(cfg, "placement.mode")), None, _select(cfg, "placement.cores_per_job"),
                       list(gpus) if gpus is not None and not isinstance(gpus, str) else gpus)
    checkpoint_cadence(cfg)
    from rfig_exp import grouping

    try:
        grouping.validate(_select(cfg, "seeds_per_job"))
    except ValueError as err:
        raise ConfigError(str(err)) from None
    _float(cfg, "stall_timeout_s", 0.0)
    _float(cfg, "owner_grace_s", 0.0)
    _int(cfg, "stall_retries", 0)
    _int(cfg, "checkpoint.keep", 1)


def checkpoint_cadence(cfg) -> tuple[int | None, float | None]:
    """``(checkpoint.every_windows, checkpoint.every_seconds)``, each None when off (null or 0)."""
    windows = _select(cfg, "checkpoint.every_windows")
    seconds = _select(cfg, "checkpoint.every_seconds")
    windows = None if windows in (None, 0) else _int(cfg, "checkpoint.every_windows", 1)
    seconds = None if seconds in (None, 0) else _float(cfg, "checkpoint.every_seconds", 0.0, low_open=True)
    return windows, seconds


def build_run_spec(cfg) -> RunSpec:
    """Check the composed config and derive the run's static structure."""
    check_names(cfg)
    check_storage(cfg)
    agent = AgentSettings.parse(_select(cfg, "agent"))  # [compiled_path] every agent.* check
    batch, total = agent.batch_size, agent.total_timesteps
    eval_frequency = _int(cfg, "eval_frequency", 1)
    if eval_frequency % batch:
        raise ConfigError(f"eval_frequency={eval_frequency} must be a multiple of the batch "
                          f"agent.num_envs * agent.num_steps = {batch}")
    if eval_frequency > total:
        raise ConfigError(f"eval_frequency={eval_frequency} exceeds agent.total_timesteps={total}")
    updates_per_window = eval_frequency // batch
    num_windows = math.ceil(total / eval_frequency)  # at least the requested budget, in whole windows

    bonus = parse_bonus(_select(cfg, "bonus"), batch)  # [compiled_path] every bonus.* check, beta included
    seed = _int(cfg, "seed", 0)
    num_seeds = _int(cfg, "num_seeds", 1)
    train = agent.train_spec(num_windows * updates_per_window, updates_per_window)
    overrides = variants.variant_overrides(cfg, choices(cfg))
    return RunSpec(
        env_name=str(_select(cfg, "env.name")), bonus_name=str(_select(cfg, "bonus.name")),
        experiment=str(_select(cfg, "experiment")), results_dir=str(_select(cfg, "results_dir")),
        seeds=tuple(range(seed, seed + num_seeds)), eval_frequency=eval_frequency,
        overwrite=bool(_select(cfg, "overwrite")), train=train,
        variant=variants.variant_name(overrides), variant_overrides=overrides, requested_timesteps=total,
        agent=agent, bonus=bonus,
    )
