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

from rfig_exp.agents.ppo.train import AGENT_HPARAMS, TrainSpec
from rfig_exp import variants
from rfig_exp.errors import ConfigError

ACTIVATIONS = ("tanh", "relu")
WANDB_MODES = ("online", "offline", "disabled")
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


@dataclass(frozen=True)
class CheckpointSettings:
    """``checkpoint.*``: when each seed's whole run state is saved (None: that cadence is off)."""

    every_windows: int | None = None
    every_seconds: float | None = None
    keep: int = 2


@dataclass(frozen=True)
class WandbSettings:
    """``wandb.*``: the optional mirror of the metrics (metrics.csv stays the record)."""

    mode: str = "disabled"
    project: str = "rfig-exp"
    entity: str | None = None
    group: str | None = None  # None: <experiment>/<env>/<bonus>/<variant>
    tags: tuple[str, ...] = ()
    init_timeout: float = 5.0


@dataclass(frozen=True)
class WatchSettings:
    """How a job watches itself: the stall watchdog, its retries, the wait for a folder's owner."""

    stall_timeout_s: float = 0.0
    stall_retries: int = 0
    owner_grace_s: float = 0.0


@dataclass(frozen=True)
class PlacementSettings:
    """``placement.*``: where a local sweep job runs (its own GPU or block of cores)."""

    mode: str = "auto"
    cores_per_job: int | None = None
    gpus: list | None = None  # None: every GPU of the machine


@dataclass(frozen=True)
class RunSpec:
    """Everything a run needs, validated and derived once from the composed config.

    After it is built nothing reads the Hydra config again except to save it
    (``resolved_config`` is that saved copy, without ``hydra``)."""

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
    checkpoint: CheckpointSettings = CheckpointSettings()
    wandb: WandbSettings = WandbSettings()
    watch: WatchSettings = WatchSettings()
    placement: PlacementSettings = PlacementSettings()
    compile_cache: str | None = None
    resolved_config: dict = field(default_factory=dict)
    env_options: dict = field(default_factory=dict)  # the env node's keys other than name
    agent_hparams: dict = field(default_factory=dict)

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
    wandb_settings(cfg)
    if not isinstance(_select(cfg, "overwrite"), bool):
        raise ConfigError(f"overwrite={_select(cfg, 'overwrite')!r} must be true or false")
    placement_settings(cfg)
    checkpoint_settings(cfg)
    from rfig_exp import grouping

    try:
        grouping.validate(_select(cfg, "seeds_per_job"))
    except ValueError as err:
        raise ConfigError(str(err)) from None
    watch_settings(cfg)


def checkpoint_settings(cfg) -> CheckpointSettings:
    """``checkpoint.*``; a cadence of null or 0 is off."""
    windows = _select(cfg, "checkpoint.every_windows")
    seconds = _select(cfg, "checkpoint.every_seconds")
    windows = None if windows in (None, 0) else _int(cfg, "checkpoint.every_windows", 1)
    seconds = None if seconds in (None, 0) else _float(cfg, "checkpoint.every_seconds", 0.0, low_open=True)
    return CheckpointSettings(windows, seconds, _int(cfg, "checkpoint.keep", 1))


def wandb_settings(cfg) -> WandbSettings:
    mode = _select(cfg, "wandb.mode")
    if mode not in WANDB_MODES:
        raise ConfigError(f"wandb.mode={mode!r} is not known; valid: {', '.join(WANDB_MODES)}")
    tags = _select(cfg, "wandb.tags")
    if tags is not None and (isinstance(tags, str) or not all(isinstance(t, str) for t in tags)):
        raise ConfigError(f"wandb.tags={tags!r} must be a list of strings, e.g. wandb.tags=[ablation,v2]")
    entity, group = _select(cfg, "wandb.entity"), _select(cfg, "wandb.group")
    return WandbSettings(mode=mode, project=str(_select(cfg, "wandb.project")),
                         entity=None if entity is None else str(entity), group=group or None,
                         tags=tuple(tags or ()), init_timeout=_float(cfg, "wandb.init_timeout", 0.0, low_open=True))


def placement_settings(cfg) -> PlacementSettings:
    from rfig_exp import placement

    gpus = _select(cfg, "placement.gpus")
    gpus = list(gpus) if gpus is not None and not isinstance(gpus, str) else gpus
    mode, cores = str(_select(cfg, "placement.mode")), _select(cfg, "placement.cores_per_job")
    placement.validate(mode, None, cores, gpus)
    return PlacementSettings(mode, cores, gpus)


def watch_settings(cfg) -> WatchSettings:
    return WatchSettings(stall_timeout_s=_float(cfg, "stall_timeout_s", 0.0),
                         stall_retries=_int(cfg, "stall_retries", 0),
                         owner_grace_s=_float(cfg, "owner_grace_s", 0.0))


def resolved_config(cfg) -> dict:
    """The composed config as saved with each run (``hydra`` left out)."""
    from omegaconf import OmegaConf

    resolved = OmegaConf.to_container(cfg, resolve=True)
    resolved.pop("hydra", None)
    return resolved


def build_run_spec(cfg) -> RunSpec:
    """Check the composed config and derive the run's static structure."""
    check_names(cfg)
    check_storage(cfg)
    num_envs = _int(cfg, "agent.num_envs", 1)
    num_steps = _int(cfg, "agent.num_steps", 1)
    batch = num_envs * num_steps
    num_minibatches = _int(cfg, "agent.num_minibatches", 1)
    if batch % num_minibatches:
        raise ConfigError(f"agent.num_minibatches={num_minibatches} must divide the batch "
                          f"agent.num_envs * agent.num_steps = {batch}")
    total = _int(cfg, "agent.total_timesteps", 1)
    if total < batch:
        raise ConfigError(f"agent.total_timesteps={total} is smaller than one batch "
                          f"(agent.num_envs * agent.num_steps = {batch})")
    eval_frequency = _int(cfg, "eval_frequency", 1)
    if eval_frequency % batch:
        raise ConfigError(f"eval_frequency={eval_frequency} must be a multiple of the batch "
                          f"agent.num_envs * agent.num_steps = {batch}")
    if eval_frequency > total:
        raise ConfigError(f"eval_frequency={eval_frequency} exceeds agent.total_timesteps={total}")
    updates_per_window = eval_frequency // batch
    num_windows = math.ceil(total / eval_frequency)  # at least the requested budget, in whole windows

    hidden = _select(cfg, "agent.hidden")
    try:
        hidden = tuple(int(h) for h in hidden)
    except (TypeError, ValueError):
        raise ConfigError(f"agent.hidden={hidden!r} must be a list of layer widths") from None
    if not hidden or min(hidden) < 1:
        raise ConfigError(f"agent.hidden={list(hidden)} must be a non-empty list of positive widths")
    activation = _select(cfg, "agent.activation")
    if activation not in ACTIVATIONS:
        raise ConfigError(f"agent.activation={activation!r} is not known; valid: {', '.join(ACTIVATIONS)}")

    hparams = agent_hparams(cfg)  # validates every numeric value before anything compiles
    seed = _int(cfg, "seed", 0)
    num_seeds = _int(cfg, "num_seeds", 1)
    train = TrainSpec(
        num_envs=num_envs, num_steps=num_steps, num_minibatches=num_minibatches,
        update_epochs=_int(cfg, "agent.update_epochs", 1),
        num_updates=num_windows * updates_per_window, updates_per_window=updates_per_window,
        hidden=hidden, activation=activation, anneal_lr=bool(_select(cfg, "agent.anneal_lr")),
        obs_norm_init_steps=_int(cfg, "agent.obs_norm_init_steps", 1),
    )
    overrides = variants.variant_overrides(cfg, choices(cfg))
    resolved = resolved_config(cfg)
    return RunSpec(
        env_name=str(_select(cfg, "env.name")), bonus_name=str(_select(cfg, "bonus.name")),
        experiment=str(_select(cfg, "experiment")), results_dir=str(_select(cfg, "results_dir")),
        seeds=tuple(range(seed, seed + num_seeds)), eval_frequency=eval_frequency,
        overwrite=bool(_select(cfg, "overwrite")), train=train,
        variant=variants.variant_name(overrides), variant_overrides=overrides, requested_timesteps=total,
        checkpoint=checkpoint_settings(cfg), wandb=wandb_settings(cfg), watch=watch_settings(cfg),
        placement=placement_settings(cfg),
        compile_cache=cfg.get("compile_cache") or None, resolved_config=resolved,
        env_options={k: v for k, v in resolved["env"].items() if k != "name"}, agent_hparams=hparams,
    )


def agent_hparams(cfg) -> dict:
    """The agent's numeric hyperparameters (arguments of the jit, as float32 scalars)."""
    values = {
        "lr": _float(cfg, "agent.lr", 0.0, low_open=True),
        "clip_eps": _float(cfg, "agent.clip_eps", 0.0, low_open=True),
        "vf_coef": _float(cfg, "agent.vf_coef", 0.0),
        "ent_coef": _float(cfg, "agent.ent_coef", 0.0),
        "max_grad_norm": _float(cfg, "agent.max_grad_norm", 0.0, low_open=True),
        "gamma": _float(cfg, "agent.gamma", 0.0, 1.0),
        "gae_lambda": _float(cfg, "agent.gae_lambda", 0.0, 1.0),
        "gamma_int": _float(cfg, "agent.gamma_int", 0.0, 1.0),
        "ext_coef": _float(cfg, "agent.ext_coef", 0.0),
        "beta": _float(cfg, "bonus.beta", 0.0),
        "obs_clip": _float(cfg, "agent.obs_clip", 0.0, low_open=True),
    }
    assert set(values) == set(AGENT_HPARAMS)
    return values
