"""The run's own settings: every top-level key of ``conf/config.yaml``, declared once.

Storage, checkpoints, the wandb and TensorBoard mirrors, the stall clock and placement (:class:`RunSettings` and its
groups), each with its default, rule and doc (``rfig_exp.config.settings``). They sit on the ground
floor with the rules they use: the variant's naming (``rfig_exp.config.variants``) reads which of
them are hyperparameters, the run spec (``rfig_exp.spec.run_spec``) parses them, and the run
(``rfig_exp.run``) reads the groups it acts on. Nothing here imports JAX or a component.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from rfig_exp.config import jobs
from rfig_exp.config.errors import ConfigError
from rfig_exp.config.settings import Rule, Settings, group, setting
from rfig_exp.config.validation import Boolean, Choice, Integer, Number

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
    """How a job is watched: its supervisor's stall clock, its retries, the wait for a folder's owner."""

    stall_timeout_s: float = setting(
        900, Number(0.0), hyperparameter=False,
        doc=("a process whose windows stop for max(this, 20 x its slowest window) s (3 x this before the first) is "
             "wedged: its process is killed, exit 75, resumable (0: never)"))
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
    tensorboard: bool = setting(
        True, Boolean(), hyperparameter=False,
        doc=("also write each run's metrics as TensorBoard events in its folder: `tensorboard --logdir "
             "<results_dir>/<experiment>` shows every run of a sweep (false: off)"))
    checkpoint: CheckpointSettings = group(
        CheckpointSettings, hyperparameter=False,
        doc="when each seed's whole run state is saved (and always at SIGTERM/SIGUSR2), in the background")
    placement: PlacementSettings = group(
        PlacementSettings, hyperparameter=False,
        doc="where a local sweep job runs (hydra/launcher=local only; docs/scale-out.md)")
    wandb: WandbSettings = group(WandbSettings, hyperparameter=False, doc="the optional wandb mirror of the metrics")
