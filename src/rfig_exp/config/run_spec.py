"""A composed config, validated once into a frozen :class:`RunSpec`, before anything is compiled.

The Hydra config is never mutated, and once the spec is built nothing reads it again except to
save it (``RunSpec.resolved_config``): every setting the run needs is a typed field here
(:class:`RunSettings`, the top level of ``conf/config.yaml``), in the agent's settings
(``agents/ppo/config.py``), the bonus's (its module, ``rfig_exp.bonuses``) or the env's
(``envs/settings.py``). Each is declared once (``rfig_exp.config.settings``); every check comes from
:mod:`rfig_exp.config.validation` and names its config key, and each declaration's doc says what
the setting is (``conf/`` and docs/configuration.md are written from them). Nothing here imports JAX.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from rfig_exp.agents.ppo.config import AgentSettings, PPOHparams, TrainSpec
from rfig_exp.bonuses import BonusSettings, parse_bonus
from rfig_exp.config import jobs, variants
from rfig_exp.config.errors import ConfigError
from rfig_exp.config.settings import Rule, Settings, declared, group, setting
from rfig_exp.config.validation import Boolean, Choice, Integer, Number, select
from rfig_exp.envs.settings import EnvSettings, parse_env

WANDB_MODES = ("online", "offline", "disabled")
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


def _off_or(rule: Rule) -> Rule:
    """null or 0 (a cadence that is off) as None, anything else by ``rule``."""
    def off_or(value: Any, key: str, earlier: Mapping[str, Any]) -> Any:
        return None if value in (None, 0) else rule(value, key, earlier)

    return off_or


def _text(value: Any, key: str, earlier: Mapping[str, Any]) -> str:
    return str(value)


def _text_or_none(value: Any, key: str, earlier: Mapping[str, Any]) -> str | None:
    return None if value is None else str(value)


def _text_if_set(value: Any, key: str, earlier: Mapping[str, Any]) -> str | None:
    return str(value) if value else None


def _tags(value: Any, key: str, earlier: Mapping[str, Any]) -> tuple[str, ...]:
    if value is not None and (isinstance(value, str) or not all(isinstance(t, str) for t in value)):
        raise ConfigError(f"{key}={value!r} must be a list of strings, e.g. {key}=[ablation,v2]")
    return tuple(value or ())


def _gpus(value: Any, key: str, earlier: Mapping[str, Any]) -> Any:
    """placement.gpus, a list as a tuple (checked with the group, by its last key)."""
    return tuple(value) if isinstance(value, Sequence) and not isinstance(value, str) else value


def _jobs_per_gpu(value: Any, key: str, earlier: Mapping[str, Any]) -> int | None:
    """placement.jobs_per_gpu, the group's last key: the group checked as a whole (``jobs.validate_placement``)."""
    gpus = earlier["gpus"]
    jobs.validate_placement(earlier["mode"], None, earlier["cores_per_job"],
                            list(gpus) if isinstance(gpus, tuple) else gpus, value)
    return value


def _seeds_per_job(value: Any, key: str, earlier: Mapping[str, Any]) -> Any:
    """Read by the sweeper (``rfig_exp.launch.grouping``), checked here with the rest of the run's settings."""
    try:
        jobs.validate_seeds_per_job(value)
    except ValueError as err:
        raise ConfigError(str(err)) from None
    return value


def _members_per_job(value: Any, key: str, earlier: Mapping[str, Any]) -> Any:
    """Read by the sweep's planner (``rfig_exp.launch.stacking``), checked here with the rest."""
    try:
        jobs.validate_members_per_job(value)
    except ValueError as err:
        raise ConfigError(str(err)) from None
    return value


def _folder_name(value: Any, key: str, earlier: Mapping[str, Any]) -> str:
    if not isinstance(value, str) or not _SAFE_NAME.match(value):
        raise ConfigError(f"{key}={value!r} must be a plain folder name (letters, digits, . _ + -)")
    return value


def _writable_dir(value: Any, key: str, earlier: Mapping[str, Any]) -> str:
    """Where results go, checked before anything is created."""
    results_dir = Path(str(value))
    for parent in (results_dir, *results_dir.parents):
        if parent.exists():
            if not parent.is_dir():
                raise ConfigError(f"{key}={results_dir} is not a directory ({parent} is a file)")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise ConfigError(f"{key}={results_dir} is not writable ({parent}: permission denied)")
            break
    return str(value)


def _path_or_none(value: Any, key: str, earlier: Mapping[str, Any]) -> Any:
    return value or None


@dataclass(frozen=True)
class CheckpointSettings(Settings):
    """``checkpoint.*``: when each seed's whole run state is saved (None: that cadence is off)."""

    every_seconds: float | None = setting(
        300, _off_or(Number(0.0, low_open=True)),
        doc=("save every seed's whole run state this often (wall-clock; null or 0: off): a short run writes none, a "
             "long one loses at most this much"))
    every_windows: int | None = setting(
        None, _off_or(Integer(1)),
        doc="or every this many evaluation windows (null or 0: off; tests and debugging)")
    keep: int = setting(2, Integer(1),
                        doc="checkpoints kept per seed (an older one is the fallback for a damaged newest)")


@dataclass(frozen=True)
class PlacementSettings(Settings):
    """``placement.*``: where a local sweep job runs (its own GPU or block of cores)."""

    mode: str = setting(
        "auto", _text,
        doc="auto: each local sweep job (hydra/launcher=local) gets its own GPU or block of CPU cores | off")
    cores_per_job: int | None = setting(
        None, lambda value, key, earlier: value,
        doc="CPU cores per local job (null: the cores divided by hydra.sweeper.max_batch_size)")
    gpus: tuple | None = setting(None, _gpus,
                                 doc="the GPU ids local jobs use, e.g. [0, 1] (null: every GPU of the machine)")
    jobs_per_gpu: int | None = setting(
        None, _jobs_per_gpu,
        doc=("local jobs sharing each GPU at once, each with 1/N of 90% of its memory and of the cores (null: one per "
             "GPU)"))


@dataclass(frozen=True)
class WandbSettings(Settings):
    """``wandb.*``: the optional mirror of the metrics (metrics.csv stays the record)."""

    mode: str = setting(
        "offline", Choice(WANDB_MODES),
        doc="online | offline | disabled; online falls back to offline without network (metrics.csv stays the record)")
    project: str = setting("rfig-exp", _text, doc="the wandb project")
    entity: str | None = setting(None, _text_or_none, doc="the wandb entity (null: wandb's default)")
    group: str | None = setting(
        None, _text_if_set,
        doc=("the runs' group (null: <experiment>/<env>/<bonus>/<variant>); runs are named "
             "<env>/<bonus>/<variant>/seed_<k>"))
    tags: tuple[str, ...] = setting(
        (), _tags,
        doc="tags added to env:<env>, bonus:<bonus>, variant:<variant>; the job type is the experiment")
    init_timeout: float = setting(5, Number(0.0, low_open=True),
                                  doc="seconds an online init may take before falling back to offline")


@dataclass(frozen=True)
class WatchSettings(Settings):
    """How a job watches itself: the stall watchdog, its retries, the wait for a folder's owner."""

    stall_timeout_s: float = setting(
        900, Number(0.0), hyperparameter=False,
        doc=("a process whose windows stop for max(this, 20 x its slowest window) s (3 x this before the first) is "
             "wedged: it exits 75, resumable (0: no watchdog)"))
    stall_retries: int = setting(
        2, Integer(0), hyperparameter=False,
        doc=("in a -m sweep, times a stalled job is retried from its checkpoint without a person before it counts "
             "failed (0: none)"))
    owner_grace_s: float = setting(
        30, Number(0.0), hyperparameter=False,
        doc=("seconds a seed folder that another live process trains (its owner.json) is waited for, then left to that"
             " process"))


@dataclass(frozen=True)
class RunSettings(WatchSettings):
    """Every top-level key of ``conf/config.yaml`` (each documented there), the groups included;
    all but ``eval_frequency`` say where, how or how often a run is stored, mirrored or watched,
    not what it computes, so they are no part of a variant's name (``rfig_exp.config.variants``)."""

    seed: int = setting(0, Integer(0), hyperparameter=False, doc="first seed of this job")
    num_seeds: int = setting(1, Integer(1), hyperparameter=False,
                             doc="seeds seed..seed+num_seeds-1, vmapped in one process")
    seeds_per_job: Any = setting(
        "auto", _seeds_per_job, hyperparameter=False,
        doc=("in a -m sweep, one-seed jobs that differ only in seed run as jobs of up to this many vmapped seeds "
             "(auto: a cell's seeds on a GPU, 8 on a CPU)"))
    members_per_job: Any = setting(
        "auto", _members_per_job, hyperparameter=False,
        doc=("in a -m sweep, jobs of one compiled program whose settings differ only in traced values (agent.lr, "
             "bonus.beta, ...) train stacked in one job of up to this many runs (auto: what memory allows, 48 on a "
             "CPU; 1: one job per setting)"))
    experiment: str = setting("default", _folder_name, hyperparameter=False,
                              doc="results land in <results_dir>/<experiment>/<env>/<bonus>/<variant>/seed_<k>/")
    results_dir: str = setting("results", _writable_dir, hyperparameter=False,
                               doc="the root folder of every experiment's results")
    eval_frequency: int = setting(24576, Integer(1),
                                  doc="env steps per evaluation window (one metrics.csv row); a multiple of the batch")
    overwrite: bool = setting(False, Boolean(), hyperparameter=False,
                              doc="re-run seeds that already have results (complete or partial), from scratch")
    compile_cache: str | None = setting(
        "${oc.env:RFIG_COMPILE_CACHE,${results_dir}/.jax_cache}", _path_or_none, hyperparameter=False,
        doc=("JAX's persistent compilation cache, shared by the jobs that see it (null: off); RFIG_COMPILE_CACHE moves"
             " the default"))
    checkpoint: CheckpointSettings = group(
        CheckpointSettings, hyperparameter=False,
        doc="when each seed's whole run state is saved (and always at SIGTERM/SIGUSR2), in the background")
    placement: PlacementSettings = group(
        PlacementSettings, hyperparameter=False,
        doc="where a local sweep job runs (hydra/launcher=local only; docs/scale-out.md)")
    wandb: WandbSettings = group(WandbSettings, hyperparameter=False, doc="the optional wandb mirror of the metrics")


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
    checkpoint: CheckpointSettings
    wandb: WandbSettings
    watch: WatchSettings
    placement: PlacementSettings
    variant: str = variants.BASE
    variant_overrides: dict = field(default_factory=dict)
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

    def hparams(self, bonus_hparams: BonusSettings) -> PPOHparams:
        """The agent's hyperparameters with the bonus's (``bonus_hparams``: as ``make_bonus`` returns
        them; ``train.as_arrays`` makes them all the compiled function's float32 arguments)."""
        return self.agent.hparams(self.bonus.beta, bonus_hparams)


def choices(cfg) -> dict[str, str]:
    """The config-group choices a run was composed from (each YAML's ``name`` is its file name)."""
    return {g: str(select(cfg, f"{g}.name")) for g in variants.GROUPS}


def check_names(cfg, conf_dirs: variants.ConfDirs = variants.CONF_DIR) -> None:
    """Group choices that exist (in ``conf_dirs``: conf/ and the user's folders), and no key that
    nothing reads."""
    for kind in ("env", "bonus"):  # a user's module under a built-in name: said before its keys look unknown
        module = select(cfg, kind).get("module")
        if module is not None:
            variants.check_own_name(kind, select(cfg, f"{kind}.name"), module)
    for kind, label in (("env", "environment"), ("bonus", "bonus"), ("agent", "agent")):
        name = str(select(cfg, f"{kind}.name"))
        options = variants.group_options(kind, conf_dirs)
        if name not in options:
            raise ConfigError(f"{kind}={name} is not a known {label}; valid: {', '.join(options)}")
    unknown = variants.unknown_keys(cfg, choices(cfg), conf_dirs)
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


def _windows(eval_frequency: int, agent: AgentSettings) -> tuple[int, int]:
    """``(updates_per_window, num_windows)``: the budget in whole windows."""
    batch, total = agent.batch_size, agent.total_timesteps
    if eval_frequency % batch:
        raise ConfigError(f"eval_frequency={eval_frequency} must be a multiple of the batch "
                          f"agent.num_envs * agent.num_steps = {batch}")
    if eval_frequency > total:
        raise ConfigError(f"eval_frequency={eval_frequency} exceeds agent.total_timesteps={total}")
    # at least the requested budget, in whole windows
    return eval_frequency // batch, math.ceil(total / eval_frequency)


def build_run_spec(cfg, searchpath: Sequence[str] = ()) -> RunSpec:
    """Check the composed config and derive everything the run needs; ``searchpath``: the
    ``hydra.searchpath`` it was composed with (the user's folders of envs and bonuses)."""
    conf_dirs = variants.config_dirs(searchpath)
    check_names(cfg, conf_dirs)
    run = RunSettings.parse(cfg)
    agent = AgentSettings.parse(select(cfg, "agent"))
    updates_per_window, num_windows = _windows(run.eval_frequency, agent)
    bonus = parse_bonus(select(cfg, "bonus"), agent.batch_size, agent.obs_clip)
    env = parse_env(select(cfg, "env"))
    overrides = variants.variant_overrides(cfg, choices(cfg), conf_dirs)
    watch = WatchSettings(**{name: getattr(run, name) for name, _ in declared(WatchSettings)})
    return RunSpec(
        experiment=run.experiment, results_dir=run.results_dir, seeds=tuple(range(run.seed, run.seed + run.num_seeds)),
        eval_frequency=run.eval_frequency, overwrite=run.overwrite,
        train=agent.train_spec(num_windows * updates_per_window, updates_per_window), agent=agent, bonus=bonus,
        env=env, variant=variants.variant_name(overrides), variant_overrides=overrides,
        compile_cache=run.compile_cache, resolved_config=resolved_config(cfg),
        checkpoint=run.checkpoint, wandb=run.wandb, watch=watch, placement=run.placement,
    )
