"""Hydra through its public API, and submitit through its own (one internal, version-checked).

Hydra parses the command line's overrides (``OverridesParser``), composes configs
(``initialize_config_dir`` + ``compose``) and, for its own flags (``--cfg``, ``--info``,
``--hydra-help``, shell completion), runs its command line (``hydra.main``). What a sweep runs is
planned here as values (``rfig_exp.launch.preflight``): :func:`expand_sweep` expands a ``-m``
command line as Hydra's basic sweeper does (the cartesian product of each key's values, a later
override of a key replacing an earlier one), each job is composed once, and the jobs run from that
plan (``rfig_exp.launch.runner``) in this process, or as submitit tasks on this machine or on SLURM,
as ``hydra/launcher=...`` chooses: the launcher's config node (``conf/hydra/launcher/``, the
hydra-submitit-launcher's schema) becomes a submitit executor (:func:`submitit_executor`).

The submitit internal, for what its API does not offer: its sacct poll command
(``SlurmInfoWatcher._make_command``, wrapped to drop the poll's stderr). A stalled task needs none:
its supervisor starts the job's process again in the same task (``rfig_exp.launch.task``).
"""

from __future__ import annotations

import copy
import itertools
import logging.config
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

SUBMITIT_SERIES = "1.5."
JOB_NAME = "launch"  # a job's log file is <its output dir>/launch.log, as Hydra named it after launch.py

# Where a sweep's jobs run (``launcher_kind``): in the sweep's own process, or each a submitit task.
IN_PROCESS, LOCAL, SLURM = "in-process", "local", "slurm"


def parse_overrides(overrides: Sequence[str]) -> list:
    """Hydra's parsed overrides; :class:`HydraException` for a line it cannot parse."""
    return OverridesParser.create().parse_overrides(list(overrides))


def empty_sweep_error(override: Any) -> str:
    """The one line that refuses a sweep with no values (``seed=range(0)``): Hydra would expand the
    command line to no job at all, and the sweep would end at once having run nothing."""
    return (f"{override.key_or_group}: an empty sweep ({override.input_line} has no values), so there is no run "
            "to launch; give it one value or more")


def expand_sweep(overrides: Sequence[str]) -> list[list[str]]:
    """Every job's override list of a ``-m`` command line, as Hydra's basic sweeper expands it: one
    list of ``key=value`` per key (a sweep's values, or its one value), in the order each key first
    appears, a later override of a key replacing an earlier one; the jobs are their cartesian product.
    Raises :class:`HydraException` for a sweep Hydra's basic sweeper cannot expand, and for a key
    whose sweep, as the last override of that key leaves it, has no values (no job at all)."""
    per_key: dict[str, list[str]] = {}
    empty: dict[str, str] = {}
    for o in parse_overrides(overrides):
        key = o.get_key_element()
        empty.pop(key, None)
        if o.is_sweep_override():
            if not o.is_discrete_sweep():
                raise HydraException(f"{o.input_line}: only choice and range sweeps are supported")
            per_key[key] = [f"{key}={v}" for v in o.sweep_string_iterator()]
            if not per_key[key]:
                empty[key] = empty_sweep_error(o)
        else:
            per_key[key] = [f"{key}={o.get_value_element_as_str()}"]
    if empty:
        raise HydraException(next(iter(empty.values())))
    return [list(job) for job in itertools.product(*per_key.values())]


def compose(overrides: Sequence[str], conf_dir: Path, hydra_node: bool = False) -> DictConfig:
    """The config Hydra composes from ``conf_dir``'s ``config.yaml`` and ``overrides`` (``hydra_node``:
    with its ``hydra`` node: launcher, sweep folder, logging). Raises :class:`HydraException`."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(Path(conf_dir).resolve()), version_base="1.3"):
        return hydra_compose("config", overrides=list(overrides), return_hydra_config=hydra_node)


def without_hydra(cfg: DictConfig) -> DictConfig:
    """A copy of a job's config without its ``hydra`` node (what Hydra hands a task function)."""
    out = copy.deepcopy(cfg)
    with read_write(out), open_dict(out):
        out.pop("hydra", None)
    return out


def hydra_command_line(argv: Sequence[str], conf_dir: Path, task: Callable[[DictConfig], Any]) -> None:
    """Hydra's own command line for ``argv`` (``--cfg``, ``--info``, ``--hydra-help``, shell
    completion), as ``@hydra.main`` runs it: it reads ``sys.argv``, given ``argv`` for the call."""
    import hydra

    main = hydra.main(config_path=str(conf_dir), config_name="config", version_base="1.3")(task)
    saved = sys.argv
    sys.argv = [saved[0] if saved else JOB_NAME, *argv]
    try:
        main()
    finally:
        sys.argv = saved


# The launchers a sweep's jobs can run under, by the class name their config's ``_target_`` ends with:
# Hydra's basic launcher (the default: the sweep's own process) and hydra-submitit-launcher's two.
LAUNCHER_KINDS = {"BasicLauncher": IN_PROCESS, "LocalLauncher": LOCAL, "SlurmLauncher": SLURM}
SUPPORTED_LAUNCHERS = ("basic (the default: jobs one after another in this process)",
                       "local (submitit, each job its own process on this machine)", "slurm (submitit)")


class UnsupportedLauncher(ValueError):
    """A ``hydra/launcher`` choice whose jobs launch.py cannot run (its jobs are launch.py's own)."""


def launcher_kind(launcher) -> str:
    """Where a config's ``hydra.launcher`` node runs a sweep's jobs: :data:`IN_PROCESS` (Hydra's
    basic launcher: the sweep's own process), :data:`LOCAL` or :data:`SLURM` (each a submitit task).
    :class:`UnsupportedLauncher` for any other (a joblib or ray plugin's): launch.py runs the jobs it
    planned itself, so another launcher's settings would be ignored without a word."""
    target = str(OmegaConf.select(launcher, "_target_", default=""))
    kind = LAUNCHER_KINDS.get(target.rsplit(".", 1)[-1])
    if kind is None:
        raise UnsupportedLauncher(f"hydra/launcher: {target or 'a launcher without _target_'} is not supported; "
                                  f"valid: {', '.join(SUPPORTED_LAUNCHERS)}")
    return kind


def job_logging(primary: DictConfig, output_dir: Path) -> dict:
    """The logging config (``hydra.job_logging``, resolved) of a job whose output folder is
    ``output_dir``: its log file is ``<output_dir>/launch.log`` unless the config says otherwise."""
    whole = copy.deepcopy(primary)
    with read_write(whole.hydra), open_dict(whole.hydra):
        whole.hydra.runtime.output_dir = str(Path(output_dir).resolve())
        whole.hydra.job.name = JOB_NAME
    out = OmegaConf.to_container(whole.hydra.job_logging, resolve=True)
    assert isinstance(out, dict), "hydra.job_logging is a mapping"
    return out


def configure_logging(config: dict) -> None:
    """Logging as a job's config asks (what Hydra does for each job): handlers replaced, the log
    file's folder made."""
    for handler in config.get("handlers", {}).values():
        if isinstance(handler, dict) and handler.get("filename"):
            Path(handler["filename"]).parent.mkdir(parents=True, exist_ok=True)
    logging.config.dictConfig(config)


# -- submitit ---------------------------------------------------------------------------------
def _submitit():
    import submitit

    if not submitit.__version__.startswith(SUBMITIT_SERIES):
        raise ImportError(f"rfig-exp needs submitit {SUBMITIT_SERIES}x (pyproject.toml pins it), found "
                          f"{submitit.__version__}: rfig_exp/launch/hydra_adapter.py uses its internals")
    return submitit


# the launcher node's keys that every submitit executor takes under their own name; the others get
# the cluster's prefix (slurm_partition), as hydra-submitit-launcher maps them
_SHARED_KEYS = {"timeout_min", "cpus_per_task", "gpus_per_node", "tasks_per_node", "mem_gb", "nodes", "name",
                "stderr_to_stdout"}


def submitit_executor(launcher: DictConfig):
    """A submitit executor for a ``hydra.launcher`` node of kind :data:`LOCAL` or :data:`SLURM`
    (``conf/hydra/launcher/``: submitit_local / submitit_slurm and their keys), its tasks' files
    in the node's ``submitit_folder``."""
    kind = launcher_kind(launcher)
    cluster = {LOCAL: "local", SLURM: "slurm"}[kind]
    params = {str(k): v for k, v in dict(OmegaConf.to_container(launcher, resolve=True)).items()}  # type: ignore[arg-type]
    params.pop("_target_", None)
    init = {"folder": params.pop("submitit_folder")}
    if "max_num_timeout" in params:
        init[f"{cluster}_max_num_timeout"] = params.pop("max_num_timeout")
    executor = _submitit().AutoExecutor(cluster=cluster, **init)
    executor.update_parameters(**{k if k in _SHARED_KEYS else f"{cluster}_{k}": v for k, v in params.items()})
    return executor


def submitit_task_id() -> str | None:
    """This process's submitit task id (None outside a submitit task)."""
    try:
        return str(_submitit().JobEnvironment().job_id)
    except RuntimeError:
        return None


def quiet_sacct() -> None:
    """submitit's sacct polls without their stderr on the console (on a cluster without
    accounting storage every poll fails; its own warning still reaches the log once)."""
    _submitit()
    from submitit.slurm import slurm as submitit_slurm

    watcher = submitit_slurm.SlurmInfoWatcher
    if getattr(watcher, "_rfig_quiet", False):
        return
    make = watcher._make_command

    def make_command(self):
        command = make(self)
        return None if command is None else ["sh", "-c", 'exec "$0" "$@" 2>/dev/null', *command]

    watcher._make_command = make_command  # type: ignore[method-assign]
    watcher._rfig_quiet = True  # type: ignore[attr-defined]


__all__ = ["HydraException", "IN_PROCESS", "LOCAL", "SLURM", "compose", "configure_logging",
           "empty_sweep_error", "expand_sweep", "hydra_command_line", "job_logging", "launcher_kind",
           "parse_overrides", "quiet_sacct", "submitit_executor", "submitit_task_id", "without_hydra"]
